"""What a Fast DDS source is and what it needs, read from the source itself.

- which Fast DDS: the package (fastrtps for 2.x, fastdds for 3.x) and version, from package.xml and
  the top CMakeLists.txt;
- which Fast CDR major it needs (1 up to Fast DDS 2.11, 2 from 2.12 on) and which Fast CDR its commit
  pins: the git submodule thirdparty/fastcdr (its URL in .gitmodules, its commit in the tree);
- where Fast CDR and foonathan memory come from for a build (dependency_plan): a source given by
  option, else the system's where it fits, else (Fast CDR) the commit's own pin;
- which of its own CMake options the source needs set (source_cmake_options): SQLite support off
  when the bundled SQLite source is missing.

Pure functions over texts; the readers of files and of git are thin.
"""
from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

# Fast DDS 2.x is the CMake/colcon package fastrtps, 3.x the package fastdds.
PACKAGE_BY_MAJOR = {2: "fastrtps", 3: "fastdds"}
# Fast DDS 2.12.0 moved to Fast CDR 2 (its CMake asks for `fastcdr 2.0`; 2.12.1 to 2.14.x no longer
# say so, but pin and use Fast CDR 2), and 3.x kept it.
FASTCDR_2_SINCE = (2, 12)
FASTCDR_SUBMODULE = "thirdparty/fastcdr"
# Where installed CMake packages are looked up to tell whether a system package fits.
SYSTEM_PREFIXES = (Path("/usr"), Path("/usr/local"))
GIT_TIMEOUT_S = 60


# --- which Fast DDS ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class FastddsSource:
    package: str  # "fastrtps" (2.x) or "fastdds" (3.x)
    version: str  # "2.9.1"
    major: int


def release(version: str) -> tuple[int, ...]:
    """"2.14.6" -> (2, 14, 6); parts that are no number end it."""
    parts = []
    for part in version.split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def parse_cmake_project(text: str) -> tuple[str, str | None] | None:
    """(name, VERSION) of the first `project(...)` of a CMakeLists.txt, or None."""
    match = re.search(r"^\s*project\s*\(\s*([A-Za-z0-9_.-]+)([^)]*)\)", text, re.MULTILINE | re.IGNORECASE)
    if match is None:
        return None
    version = re.search(r"\bVERSION\s+\"?([0-9][0-9.]*)\"?", match.group(2))
    return match.group(1), version.group(1) if version else None


def parse_package_xml(text: str, path: Path) -> tuple[str, str | None]:
    """(name, version) of a package.xml."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as error:
        raise InputError(f"malformed package.xml: {error}", path) from None
    name = (root.findtext("name") or "").strip()
    if not name:
        raise InputError("package.xml has no <name>", path)
    version = (root.findtext("version") or "").strip() or None
    return name, version


def fastdds_identity(cmake_project: tuple[str, str | None] | None, package_xml: tuple[str, str | None] | None,
                     where: Path) -> FastddsSource:
    """Which Fast DDS a source is, from its CMake project and package.xml (either may be missing)."""
    found = [pair for pair in (package_xml, cmake_project) if pair is not None]
    names = {name for name, _ in found}
    packages = names & set(PACKAGE_BY_MAJOR.values())
    if not packages:
        found = ", ".join(sorted(names)) or "no project name"
        raise InputError(f"not a Fast DDS source: the package is {found}, not fastrtps (2.x) or fastdds (3.x)", where)
    if len(packages) > 1:
        raise InputError("CMakeLists.txt and package.xml name different packages (fastrtps and fastdds)", where)
    package = packages.pop()
    # package.xml says x.y.z; CMake may say x.y.z.w (3.x): the first three parts are the release
    versions = [version for _, version in found if version]
    if not versions:
        raise InputError("no version in package.xml nor in CMakeLists.txt's project()", where)
    version = ".".join(versions[0].split(".")[:3])
    major = int(version.split(".")[0])
    if PACKAGE_BY_MAJOR.get(major) != package:
        raise InputError(f"package {package} with version {version}: Fast DDS {major}.x is package "
                         f"{PACKAGE_BY_MAJOR.get(major, 'unknown')}", where)
    return FastddsSource(package, version, major)


def package_identity(source_dir: Path) -> tuple[tuple[str, str | None] | None, tuple[str, str | None] | None]:
    """(CMake project, package.xml (name, version)) of a source folder; either None when absent."""
    cmake_lists, package_xml = Path(source_dir) / "CMakeLists.txt", Path(source_dir) / "package.xml"
    project = parse_cmake_project(cmake_lists.read_text(errors="replace")) if cmake_lists.is_file() else None
    package = parse_package_xml(package_xml.read_text(errors="replace"), package_xml) if package_xml.is_file() else None
    return project, package


def detect_fastdds(source_dir: Path) -> FastddsSource:
    source_dir = Path(source_dir)
    if not (source_dir / "CMakeLists.txt").is_file():
        raise InputError("not a Fast DDS source: no CMakeLists.txt", source_dir)
    return fastdds_identity(*package_identity(source_dir), source_dir)


# Fast DDS compiles its persistence service with a bundled SQLite amalgamation (8-9 MB) when its
# option SQLITE3_SUPPORT is ON, the default, and has no switch for a system SQLite (Debian patches its
# CMake files for that, and then lists no bundled file). A checkout without that file (a sparse one,
# or a copy that drops large files) configures only with SQLITE3_SUPPORT=OFF; the latency tests and
# the harness use no persistence (no TRANSIENT or PERSISTENT durability), so they measure the same code.
BUNDLED_SQLITE = "src/cpp/rtps/persistence/sqlite3.c"
SQLITE_OPTION = "SQLITE3_SUPPORT"
# where Fast DDS lists its library's sources: src/cpp/CMakeLists.txt up to 3.x, src/cpp/source.cmake later
SOURCE_LISTS = ("src/cpp/CMakeLists.txt", "src/cpp/source.cmake")


def sqlite_option_needed(top_cmake_lists: str, source_lists: list[str], bundled_present: bool) -> dict[str, str]:
    """{SQLITE_OPTION: "OFF"} when the source defines that option and lists the bundled SQLite, which
    it lacks; {} otherwise."""
    defines = re.search(rf"^\s*option\(\s*{SQLITE_OPTION}\b", top_cmake_lists, re.MULTILINE) is not None
    lists = any(BUNDLED_SQLITE.removeprefix("src/cpp/") in text for text in source_lists)
    return {SQLITE_OPTION: "OFF"} if defines and lists and not bundled_present else {}


def source_cmake_options(source_dir: Path) -> dict[str, str]:
    """The CMake options this Fast DDS source needs to configure at all (see BUNDLED_SQLITE)."""
    source_dir = Path(source_dir)
    top = source_dir / "CMakeLists.txt"
    lists = [(source_dir / name).read_text(errors="replace") for name in SOURCE_LISTS if (source_dir / name).is_file()]
    return sqlite_option_needed(top.read_text(errors="replace") if top.is_file() else "", lists,
                                (source_dir / BUNDLED_SQLITE).is_file())


def fastcdr_major_needed(fastdds: FastddsSource) -> int:
    return 2 if release(fastdds.version)[:2] >= FASTCDR_2_SINCE else 1


# Fast CDR 1.x (and eProsima's older sources) keep their version in configure.ac, which their
# CMakeLists.txt reads: m4_define([version_major],[1]) and _minor, _micro
_M4_VERSION = re.compile(r"m4_define\(\[?version_(major|minor|micro)\]?\s*,\s*\[?([0-9]+)\]?\)")


def configure_ac_version(text: str) -> str | None:
    """major.minor.micro of a configure.ac's m4_define lines, or None when one is missing."""
    parts = dict(_M4_VERSION.findall(text))
    return ".".join(parts[p] for p in ("major", "minor", "micro")) if len(parts) == 3 else None


def source_version(source_dir: Path) -> str | None:
    """The version a CMake package source declares (package.xml first, else its project(), else its
    configure.ac), or None."""
    try:
        project, package = package_identity(source_dir)
    except InputError:
        return None
    # either may be absent: Fast CDR 1.x has no package.xml, and a project() without VERSION
    found = next((pair[1] for pair in (package, project) if pair is not None and pair[1]), None)
    configure_ac = Path(source_dir) / "configure.ac"
    if found is None and configure_ac.is_file():
        found = configure_ac_version(configure_ac.read_text(errors="replace"))
    return found


# --- the Fast CDR the commit pins -------------------------------------------------------------------
@dataclass(frozen=True)
class SubmodulePin:
    """A submodule of a Fast DDS source: where it is, the URL it is fetched from, the commit its
    superproject's commit pins (None when the source has no git history), and the folder it is
    already checked out in (None when the submodule is not initialised)."""
    path: str
    url: str
    commit: str | None
    folder: str | None = None


def parse_gitmodules(text: str) -> dict[str, str]:
    """path -> url of every submodule a .gitmodules declares (git-config syntax)."""
    modules: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            current = {} if re.fullmatch(r'\[\s*submodule\s+"[^"]*"\s*\]', line) else None
            if current is not None:
                modules.append(current)
            continue
        pair = re.fullmatch(r"([A-Za-z][\w-]*)\s*=\s*(.*)", line)
        if pair and current is not None:
            current[pair.group(1).lower()] = pair.group(2).strip().strip('"')
    return {module["path"]: module["url"] for module in modules if module.get("path") and module.get("url")}


def resolve_submodule_url(url: str, superproject_url: str | None) -> str | None:
    """The URL git fetches a submodule from: a relative one (`../Fast-CDR.git`) is relative to the
    superproject's remote URL; None when it is relative and that URL is unknown."""
    if not url.startswith(("./", "../")):
        return url
    if not superproject_url:
        return None
    base = superproject_url.rstrip("/")
    rest = url
    while rest.startswith(("./", "../")):
        if rest.startswith("../"):
            base = base.rsplit("/", 1)[0] if "/" in base.split("://", 1)[-1] else base
            rest = rest[3:]
        else:
            rest = rest[2:]
    return f"{base}/{rest}"


def gitlink_commit(ls_tree_output: str, path: str) -> str | None:
    """The commit a tree pins at `path`, from `git ls-tree <tree> <path>`."""
    match = re.search(rf"^160000 commit ([0-9a-f]{{40}})\t{re.escape(path)}$", ls_tree_output, re.MULTILINE)
    return match.group(1) if match else None


def read_submodule_pin(source_dir: Path, git_dir: Path | None, superproject_url: str | None,
                       path: str = FASTCDR_SUBMODULE, fetch_url: str | None = None) -> SubmodulePin | None:
    """The pin of submodule `path` of a Fast DDS source: URL from `source_dir`/.gitmodules, commit from
    the HEAD of `git_dir` (a git checkout of that source, if any), folder if checked out there.
    fetch_url (--fastcdr-url): where the commit will be fetched from, so a pin needs no URL of its own."""
    gitmodules = Path(source_dir) / ".gitmodules"
    url = parse_gitmodules(gitmodules.read_text(errors="replace")).get(path) if gitmodules.is_file() else None
    resolved = resolve_submodule_url(url, superproject_url) if url else None
    folder = Path(source_dir) / path
    checked_out = str(folder) if (folder / "CMakeLists.txt").is_file() else None
    commit = None
    if git_dir is not None and (Path(git_dir) / ".git").exists():
        try:
            listing = subprocess.run(["git", "ls-tree", "HEAD", path], cwd=git_dir, capture_output=True, text=True,
                                     timeout=GIT_TIMEOUT_S).stdout
        except (OSError, subprocess.TimeoutExpired):
            listing = ""
        commit = gitlink_commit(listing, path)
    if checked_out is None and ((resolved is None and fetch_url is None) or commit is None):
        return None  # nothing to build from
    return SubmodulePin(path, resolved or "", commit, checked_out)


# --- dependencies: system packages where they fit ---------------------------------------------------
def installed_cmake_version(package: str, prefixes: tuple[Path, ...] = SYSTEM_PREFIXES) -> str | None:
    """PACKAGE_VERSION of an installed CMake package config (`<package>-config-version.cmake`)."""
    for prefix in prefixes:
        for config in sorted(prefix.glob(f"lib*/**/cmake/{package}/{package}-config-version.cmake")) + \
                sorted(prefix.glob(f"share/{package}/cmake/{package}-config-version.cmake")):
            match = re.search(r'set\(PACKAGE_VERSION\s+"([^"]+)"\)', config.read_text(errors="replace"))
            if match:
                return match.group(1)
    return None


def dependency_plan(fastdds: FastddsSource, fastcdr_source: Path | None, foonathan_source: Path | None,
                    system_fastcdr: str | None, system_foonathan: str | None,
                    fastcdr_pin: SubmodulePin | None = None, fastcdr_url: str | None = None) -> dict:
    """Where Fast CDR and foonathan memory come from; InputError when nothing can do.

    Fast CDR: --fastcdr-source; else the system's when its major fits; else the commit's own
    submodule pin (thirdparty/fastcdr: its checked-out folder, or its commit fetched from its URL, or
    from fastcdr_url, --fastcdr-url, with the URL .gitmodules gives kept as `gitmodules_url`)."""
    needed = fastcdr_major_needed(fastdds)
    plan = {}
    system_fits = system_fastcdr is not None and release(system_fastcdr)[:1] == (needed,)
    if fastcdr_source is not None:
        plan["fastcdr"] = {"from": "source", "path": str(fastcdr_source)}
    elif system_fits:
        plan["fastcdr"] = {"from": "system", "version": system_fastcdr}
    elif fastcdr_pin is not None:
        plan["fastcdr"] = {"from": "submodule", "submodule": fastcdr_pin.path, "url": fastcdr_pin.url or None,
                           "commit": fastcdr_pin.commit, "path": fastcdr_pin.folder}
        if fastcdr_url is not None and fastcdr_pin.folder is None:
            plan["fastcdr"].update(url=fastcdr_url, gitmodules_url=fastcdr_pin.url or None)
    elif system_fastcdr is None:
        raise InputError(f"Fast DDS {fastdds.version} needs Fast CDR {needed}.x: none is installed and the source "
                         f"pins none ({FASTCDR_SUBMODULE}); install libfastcdr-dev, or give its source with "
                         "--fastcdr-source")
    else:
        raise InputError(f"Fast DDS {fastdds.version} needs Fast CDR {needed}.x, the system has {system_fastcdr}: "
                         f"give a Fast CDR {needed}.x source with --fastcdr-source (the source pins none as "
                         f"{FASTCDR_SUBMODULE})")
    if foonathan_source is not None:
        plan["foonathan_memory"] = {"from": "source", "path": str(foonathan_source)}
    elif system_foonathan is None:
        raise InputError("foonathan memory is not installed (libfoonathan-memory-dev): give the source of "
                         "foonathan_memory_vendor with --foonathan-memory-source")
    else:
        plan["foonathan_memory"] = {"from": "system", "version": system_foonathan}
    return plan
