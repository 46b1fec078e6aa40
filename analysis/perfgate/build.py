"""build: one Fast DDS source -> a persistent colcon workspace, built in Release with security and
performance tests, with perfgate's harness (native/) built in the same workspace against it.

    perfgate build --workspace WS (--source DIR | --git-url URL --commit REF) [--fastcdr-source DIR]
                   [--foonathan-memory-source DIR] [--jobs N] [--no-ccache] [--junit F]

REF is a commit, tag or branch, `parent:<rev>` (the first parent of <rev>) or
`merge-base:<rev>,<other>` (where <rev> branched off <other>), resolved with git in the checkout.

Workspace layout (kept between builds, so that a commit touching one file rebuilds in minutes):

    WS/src/fastdds/            the Fast DDS source: a git checkout, or a mirror of a local folder
    WS/src/perfgate_harness/   a mirror of native/
    WS/src/fastcdr/            Fast CDR when the system's does not fit: --fastcdr-source, else the
                               commit's own submodule pin (thirdparty/fastcdr), fetched from its URL
    WS/src/foonathan_memory_vendor/   only when given by option (else the system's)
    WS/build/ WS/install/ WS/log/   colcon's (merged install: the Fast DDS prefix is WS/install)
    WS/ccache/                 the compiler cache (unless CCACHE_DIR is set)
    WS/perfgate/               mirror manifests and the upstream engine's files
    WS/perfgate-build.json     the build record: what was built, from where, how, and whether it worked

Compiler warnings never fail the build (WARNINGS_LAUNCHER), and the harness is built against the
workspace's Fast DDS package, never a system copy: checked with ldd after the build.

The record is written for failed builds too: `perfgate run --workspace` and `perfgate gate
--workspace` read it, so every experiment names the Fast DDS commit, version and build options, and a
failed build becomes the JUnit error testcase "build" (exit 3).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from . import files
from . import schema as s
from .errors import IncompleteError, InputError, PerfgateError
# what the source is and needs: fastdds_source's; named here too, as part of build's interface
from .fastdds_source import (PACKAGE_BY_MAJOR, SYSTEM_PREFIXES, FastddsSource, SubmodulePin,  # noqa: F401
                             dependency_plan, detect_fastdds, fastcdr_major_needed, fastdds_identity,
                             installed_cmake_version, parse_cmake_project, parse_package_xml,
                             read_submodule_pin, release, source_version)
from .harness import FLOOR_EXECUTABLE, LATENCY_EXECUTABLE, NATIVE_DIR
from .harness import IGNORED_DIRS as HARNESS_IGNORED_DIRS

SOURCE_DIR = "fastdds"  # WS/src/fastdds whatever the package is called (fastrtps or fastdds)
HARNESS_DIR = "perfgate_harness"
FASTCDR_DIR = "fastcdr"
FOONATHAN_DIR = "foonathan_memory_vendor"
STATE_DIR = "perfgate"
CCACHE_DIR = "ccache"
LOCK_FILE = ".perfgate-build.lock"
LOG_TAIL_LINES = 40
GIT_TIMEOUT_S = 1800

# What every build gets: Release, DDS Security, the performance tests (test/performance), and an
# install RPATH, so the harness finds the workspace's Fast DDS without sourcing setup scripts.
CMAKE_OPTIONS = {
    "CMAKE_BUILD_TYPE": "Release",
    "SECURITY": "ON",
    "PERFORMANCE_TESTS": "ON",
    "CMAKE_INSTALL_RPATH_USE_LINK_PATH": "ON",
    "PERFGATE_BUILD_TESTS": "OFF",  # the harness's own unit tests run in ci/test.sh, not per commit
}
# Compiler warnings never fail a build: a gate must not break on a compiler version upstream's CI does
# not use. Fast DDS 3.5 and later set CMAKE_COMPILE_WARNING_AS_ERROR, which cmake's
# --compile-no-warning-as-error overrides (CMake 3.24+), but only in the configure it is given to: a
# regeneration during the build (a commit that touches a CMakeLists.txt) forgets it. 3.0 to 3.4
# append -Werror to CMAKE_CXX_FLAGS, which no CMake option undoes. So every compile also goes through
# a launcher that puts -Wno-error last on the compiler's command line (kept in CMake's cache, so
# regenerations keep it). perfgate's own harness adds -Werror only when asked (PERFGATE_WERROR,
# ci/test.sh's build), never in a workspace.
NO_WARNING_AS_ERROR_SINCE = (3, 24)
WARNINGS_LAUNCHER = "no-warning-as-error"  # WS/perfgate/<this>
WARNINGS_LAUNCHER_SCRIPT = """#!/bin/sh
# Written by `perfgate build` (docs/build.md "Warnings are never errors"): runs the compiler command
# it is given with -Wno-error last, so that no -Werror before it makes a warning fail the build.
exec "$@" -Wno-error
"""
_FAILED_LINE = re.compile(r"^Failed\s+<<<\s+(\S+)", re.MULTILINE)
# Terminal escapes (GCC colours: Fast DDS adds -fdiagnostics-color=always under ccache) and control
# characters, which XML 1.0 cannot hold: log tails go into JUnit, JSON and Markdown without them.
_ANSI_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_NOT_PRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


# --- the colcon command -------------------------------------------------------------------------
def cmake_arguments(ccache: bool, package: str | None = None, cmake_version: tuple[int, ...] | None = None,
                    warnings_launcher: Path | None = None) -> list[str]:
    """colcon's --cmake-args: CMAKE_OPTIONS; the Fast DDS package the harness must build against
    (native/CMakeLists.txt: never a system copy of another major); warnings not fatal (see above:
    --compile-no-warning-as-error where CMake knows it, and the launcher); ccache."""
    args = [f"-D{name}={value}" for name, value in CMAKE_OPTIONS.items()]
    if package is not None:
        args.append(f"-DPERFGATE_FASTDDS_PACKAGE={package}")
    if cmake_version is not None and cmake_version >= NO_WARNING_AS_ERROR_SINCE:
        args.append("--compile-no-warning-as-error")
    launchers = ([str(warnings_launcher)] if warnings_launcher is not None else []) + (["ccache"] if ccache else [])
    if launchers:  # a CMake list: the first runs the rest
        args += [f"-DCMAKE_C_COMPILER_LAUNCHER={';'.join(launchers)}",
                 f"-DCMAKE_CXX_COMPILER_LAUNCHER={';'.join(launchers)}"]
    return args


def write_warnings_launcher(workspace: Path) -> Path:
    launcher = workspace / STATE_DIR / WARNINGS_LAUNCHER
    launcher.parent.mkdir(parents=True, exist_ok=True)
    if not launcher.is_file() or launcher.read_text() != WARNINGS_LAUNCHER_SCRIPT:
        files.write_text(launcher, WARNINGS_LAUNCHER_SCRIPT)
    launcher.chmod(0o755)
    return launcher


def colcon_base(workspace: Path) -> list[str]:
    return ["colcon", "--log-base", str(workspace / "log")]


def colcon_paths(workspace: Path) -> list[str]:
    return ["--base-paths", str(workspace / "src"), "--build-base", str(workspace / "build"),
            "--install-base", str(workspace / "install"), "--merge-install"]


def colcon_build_command(workspace: Path, cmake_args: list[str]) -> list[str]:
    # --cmake-args takes everything after it: keep it last
    return colcon_base(workspace) + ["build"] + colcon_paths(workspace) + [
        "--event-handlers", "console_direct-", "console_cohesion-", "--cmake-args", *cmake_args]


def build_environment(environment: dict[str, str], workspace: Path, jobs: int | None, ccache: bool) -> dict[str, str]:
    env = dict(environment)
    if ccache:
        env.setdefault("CCACHE_DIR", str(workspace / CCACHE_DIR))
        env.setdefault("CCACHE_BASEDIR", str(workspace))  # paths inside the workspace hash as relative
    if jobs is not None:
        env["MAKEFLAGS"] = f"-j{jobs}"
    return env


def failed_packages(colcon_output: str) -> list[str]:
    """The packages colcon reports as `Failed <<< name`, in its order."""
    return _FAILED_LINE.findall(colcon_output)


def printable(text: str) -> str:
    """Text without terminal escapes and control characters (tabs and newlines kept): valid in XML."""
    return _NOT_PRINTABLE.sub("", _ANSI_ESCAPE.sub("", text))


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(printable(text.replace("\r\n", "\n")).splitlines()[-lines:])


# --- sources into the workspace -----------------------------------------------------------------
@dataclass(frozen=True)
class MirrorResult:
    copied: int
    removed: int
    unchanged: int


def _file_state(path: Path) -> list:
    info = path.lstat()
    if path.is_symlink():
        return ["link", os.readlink(path)]
    return ["file", info.st_size, info.st_mtime_ns, info.st_mode & 0o777]


def scan_tree(source: Path, skip: frozenset[str] = frozenset({".git"})) -> dict[str, list]:
    """relative path -> state (kind, size, mtime, mode) of every file and link under source."""
    states = {}
    for root, dirs, names in os.walk(source):
        links = [d for d in dirs if (Path(root) / d).is_symlink()]
        dirs[:] = sorted(d for d in dirs if d not in skip and d not in links)
        for name in sorted(names) + sorted(links):
            path = Path(root) / name
            states[str(path.relative_to(source))] = _file_state(path)
    return states


def mirror_tree(source: Path, dest: Path, manifest: Path, skip: frozenset[str] = frozenset({".git"})) -> MirrorResult:
    """Make dest a copy of source, touching only what changed since the last mirror.

    Changes are found by comparing the source with the manifest of the previous mirror (size, mtime,
    mode), not with dest: changed files are copied with a fresh mtime, so make rebuilds exactly what
    depends on them, even when the new content carries an older mtime (another checkout).
    """
    source, dest = Path(source), Path(dest)
    previous = json.loads(manifest.read_text()) if manifest.is_file() else {}
    current = scan_tree(source, skip)
    copied = unchanged = 0
    for relative, state in current.items():
        target = dest / relative
        if previous.get(relative) == state and (target.exists() or target.is_symlink()):
            unchanged += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
        if state[0] == "link":
            target.symlink_to(state[1])
        else:
            shutil.copyfile(source / relative, target)
            os.chmod(target, state[3])
        copied += 1
    removed = 0
    for relative in sorted(set(previous) - set(current), reverse=True):
        target = dest / relative
        if target.is_symlink() or target.is_file():
            target.unlink()
            removed += 1
    _remove_empty_dirs(dest)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    files.write_text(manifest, json.dumps(current, sort_keys=True))
    return MirrorResult(copied, removed, unchanged)


def _remove_empty_dirs(root: Path) -> None:
    for folder, dirs, names in os.walk(root, topdown=False):
        if folder != str(root) and not dirs and not names:
            with contextlib.suppress(OSError):
                os.rmdir(folder)


# --- which commit: what --commit asks for ----------------------------------------------------------
PARENT_PREFIX = "parent:"
MERGE_BASE_PREFIX = "merge-base:"
MERGE_BASE_DEPTHS = (100, 1000, 10000)  # history fetched, deeper and deeper, until the two meet
COMMIT_FORMS = "a commit, tag or branch, parent:<rev> or merge-base:<rev>,<other>"
# a revision fetch can take: no character git forbids in ref names, nothing git could read as an option
_PLAIN_REF = re.compile(r"[^\s~^:?*\[\\-][^\s~^:?*\[\\]*")


@dataclass(frozen=True)
class Revision:
    """What `--commit` asks for: kind "ref" (refs[0] as is), "parent" (the first parent of refs[0]) or
    "merge-base" (where refs[0] and refs[1] meet)."""
    kind: str
    refs: tuple[str, ...]


def parse_revision(text: str) -> Revision:
    """The --commit text as a Revision; InputError (nothing fetched yet) when it is none of the forms."""
    if text.startswith(PARENT_PREFIX):
        kind, refs, form = "parent", [text[len(PARENT_PREFIX):]], "parent:<rev> (<rev> a commit, tag or branch)"
    elif text.startswith(MERGE_BASE_PREFIX):
        kind, refs = "merge-base", text[len(MERGE_BASE_PREFIX):].split(",")
        form = "merge-base:<rev>,<other> (each a commit, tag or branch)"
    else:
        kind, refs, form = "ref", [text], COMMIT_FORMS
    if len(refs) != (2 if kind == "merge-base" else 1) or not all(_PLAIN_REF.fullmatch(ref) for ref in refs):
        raise InputError(f"--commit {text!r} is not {form}")
    return Revision(kind, tuple(refs))


# --- the git checkout -----------------------------------------------------------------------------
def _git(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise IncompleteError(f"git {args[0]} failed: {error}") from None


def _git_message(done: subprocess.CompletedProcess) -> str:
    """All git said on stderr (its last line alone often hides the cause: `fatal: ...` after an
    `error:` naming the real problem), or a note that it said nothing."""
    lines = [line.rstrip() for line in printable(done.stderr or "").splitlines() if line.strip()]
    return "\n".join(lines) or f"git exited {done.returncode} saying nothing"


def _fetch(checkout: Path, url: str, refs: list[str], depth: int, what: str) -> None:
    fetched = _git(["fetch", "--quiet", "--depth", str(depth), "origin", *refs], checkout)
    if fetched.returncode != 0:
        raise IncompleteError(f"cannot fetch {what} from {url}: {_git_message(fetched)}", checkout)


def _fetch_commit(checkout: Path, url: str, ref: str, depth: int = 1) -> str:
    """Fetch `ref` with `depth` commits of its history; returns its commit (a tag's too)."""
    _fetch(checkout, url, [ref], depth, ref)
    commit = _git(["rev-parse", "--verify", "--quiet", "FETCH_HEAD^{commit}"], checkout)
    if commit.returncode != 0:
        raise IncompleteError(f"{ref} from {url} is not a commit", checkout)
    return commit.stdout.strip()


def _shallow_boundary(checkout: Path) -> set[str]:
    """The commits whose parents a shallow fetch left out."""
    shallow = checkout / ".git" / "shallow"
    return set(shallow.read_text().split()) if shallow.is_file() else set()


def first_parent(checkout: Path, url: str, ref: str) -> str:
    """The first parent of `ref`: fetched two commits deep; IncompleteError for a root commit."""
    commit = _fetch_commit(checkout, url, ref, depth=2)
    parent = _git(["rev-parse", "--verify", "--quiet", f"{commit}^1"], checkout)
    if parent.returncode == 0:
        return parent.stdout.strip()
    if commit in _shallow_boundary(checkout):
        raise IncompleteError(f"parent:{ref}: cannot fetch the parent of {commit} from {url}", checkout)
    raise IncompleteError(f"parent:{ref}: {commit} has no parent (a root commit)", checkout)


def merge_base(checkout: Path, url: str, ref: str, other: str, depths: tuple[int, ...] = MERGE_BASE_DEPTHS) -> str:
    """`git merge-base` of `ref` and `other`, their histories fetched deeper and deeper (depths) until
    they meet; IncompleteError when they do not within the deepest."""
    commits = [_fetch_commit(checkout, url, ref), _fetch_commit(checkout, url, other)]
    for depth in depths:
        # by commit, not by name: a branch that moves meanwhile changes nothing
        _fetch(checkout, url, commits, depth, f"the history of {ref} and {other}")
        found = _git(["merge-base", *commits], checkout)
        if found.returncode == 0:
            return found.stdout.strip()
        if found.returncode != 1:  # 1: no common ancestor (yet)
            raise IncompleteError(f"git merge-base failed: {_git_message(found)}", checkout)
    raise IncompleteError(f"merge-base:{ref},{other}: no merge base of {commits[0]} and {commits[1]} within "
                          f"{depths[-1]} commits", checkout)


def resolve_revision(revision: Revision, url: str, checkout: Path) -> str:
    """The commit a Revision names, fetched from `url` (the remote origin of `checkout`)."""
    if revision.kind == "parent":
        return first_parent(checkout, url, revision.refs[0])
    if revision.kind == "merge-base":
        return merge_base(checkout, url, *revision.refs)
    return _fetch_commit(checkout, url, revision.refs[0])


def init_checkout(url: str, checkout: Path) -> None:
    """`checkout` as a git repository (created once) whose remote origin is `url`."""
    if checkout.exists() and not (checkout / ".git").exists():
        shutil.rmtree(checkout)  # a mirror of a local folder before: replaced by the checkout
    if not checkout.exists():
        checkout.parent.mkdir(parents=True, exist_ok=True)
        done = _git(["init", "--quiet", str(checkout)])
        if done.returncode != 0:
            raise IncompleteError(f"git init failed: {_git_message(done)}", checkout)
    for args in (["remote", "remove", "origin"], ["remote", "add", "origin", url]):
        _git(args, checkout)


def fetch_git(url: str, ref: str, checkout: Path) -> str:
    """Check out what `ref` names (a --commit text: a commit, tag or branch, parent:<rev> or
    merge-base:<rev>,<other>) of `url` in `checkout` (cloned once, then fetched); returns the commit."""
    revision = parse_revision(ref)
    init_checkout(url, checkout)
    commit = resolve_revision(revision, url, checkout)
    # --force: the checkout is the workspace's own; files that did not change keep their mtime
    for args in (["checkout", "--quiet", "--force", "--detach", commit], ["clean", "-ffdq"]):
        done = _git(args, checkout)
        if done.returncode != 0:
            raise IncompleteError(f"git {args[0]} failed: {_git_message(done)}", checkout)
    return _git(["rev-parse", "HEAD"], checkout).stdout.strip()


def local_commit(folder: Path) -> tuple[str | None, bool | None]:
    """(HEAD, has uncommitted changes) of a local source that is a git checkout; (None, None) otherwise."""
    if not (Path(folder) / ".git").exists():
        return None, None
    head = _git(["rev-parse", "HEAD"], folder)
    if head.returncode != 0:
        return None, None
    status = _git(["status", "--porcelain", "--untracked-files=no"], folder)
    return head.stdout.strip(), bool(status.stdout.strip())


# --- the build record ---------------------------------------------------------------------------
def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def record_path(workspace: Path) -> Path:
    return Path(workspace) / s.BUILD_RECORD_FILE


def read_record(workspace: Path) -> dict:
    """The build record of a workspace; InputError when there is none or it is malformed."""
    path = record_path(workspace)
    if not path.is_file():
        raise InputError(f"no build record ({s.BUILD_RECORD_FILE}): build the workspace first with "
                         f"`perfgate build --workspace {workspace}`", path)
    try:
        record = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"malformed build record: {error}", path) from None
    if not isinstance(record, dict) or record.get("status") not in (s.BUILD_OK, s.BUILD_FAILED):
        raise InputError("malformed build record: no status ok/failed", path)
    return record


def fastdds_metadata(record: dict) -> dict:
    """The `fastdds` part of metadata.json for an experiment run against this build."""
    fastdds = record.get("fastdds") or {}
    return {
        "version": fastdds.get("version"),
        "commit": fastdds.get("commit"),
        "source": s.FASTDDS_SOURCE_COLCON,
        "prefix": record.get("prefix"),
        "package": fastdds.get("package"),
        "repository": fastdds.get("repository"),
        "source_path": fastdds.get("source_path"),
        "uncommitted_changes": fastdds.get("uncommitted_changes"),
        "build": {
            "workspace": record.get("workspace"),
            "finished_utc": record.get("finished_utc"),
            "duration_s": record.get("duration_s"),
            "cmake_args": record.get("cmake_args"),
            "ccache": record.get("ccache"),
            "dependencies": record.get("dependencies"),
        },
    }


def harness_paths(record: dict, workspace: Path) -> tuple[Path, Path]:
    """(perfgate-latency, Fast DDS prefix) of a finished build; IncompleteError for a failed one."""
    if record.get("status") != s.BUILD_OK:
        raise IncompleteError(f"the Fast DDS build failed: {record.get('error')}", record_path(workspace))
    harness = Path(record["harness"])
    if not harness.is_file():
        raise IncompleteError("the workspace's harness is missing: build it again", harness)
    return harness, Path(record["prefix"])


def build_junit_xml(record: dict, properties: dict[str, str]) -> str:
    """JUnit with one testcase "build": passed, or an <error> with the failing package and its log tail."""
    failed = record.get("status") != s.BUILD_OK
    suite = ET.Element("testsuite", name=s.BUILD_TESTCASE, tests="1", failures="0", errors=str(int(failed)),
                       skipped="0", time=f"{float(record.get('duration_s') or 0):.3f}",
                       timestamp=str(record.get("started_utc") or ""))
    props = ET.SubElement(suite, "properties")
    for name, value in properties.items():
        ET.SubElement(props, "property", name=name, value=value)
    case = ET.SubElement(suite, "testcase", name=s.BUILD_TESTCASE, classname=s.BUILD_TESTCASE,
                         time=f"{float(record.get('duration_s') or 0):.3f}")
    if failed:  # no file/line: the log is no file of the repository that an annotation could point at
        # printable again: a record written by an older perfgate may hold a raw tail
        error = ET.SubElement(case, "error", type="build_failed", message=printable(str(record.get("error"))))
        error.text = printable(f"{record.get('log')}:\n{record.get('log_tail') or ''}")
    root = ET.Element("testsuites", name="perfgate", tests="1", failures="0", errors=str(int(failed)))
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def junit_properties(record: dict) -> dict[str, str]:
    fastdds = record.get("fastdds") or {}
    return {"fastdds.commit": str(fastdds.get("commit") or "unknown"),
            "fastdds.version": str(fastdds.get("version") or "unknown")}


# --- the command --------------------------------------------------------------------------------
@contextlib.contextmanager
def workspace_lock(workspace: Path) -> Iterator[None]:
    """One build or test run at a time per workspace."""
    workspace.mkdir(parents=True, exist_ok=True)
    with open(workspace / LOCK_FILE, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def check_tools(ccache: bool) -> None:
    for tool in ("colcon", "cmake", "git") + (("ccache",) if ccache else ()):
        if shutil.which(tool) is None:
            raise InputError(f"{tool} is not installed (see docs/build.md; --no-ccache builds without ccache)")


def _resolve_inputs(source, git_url, commit, fastcdr_source, foonathan_source) -> tuple[Path | None, Path | None, Path | None]:
    if source is not None and git_url is not None:
        raise InputError("give either --source or --git-url, not both")
    if (git_url is None) != (commit is None):
        raise InputError("--git-url and --commit go together")
    if commit is not None:
        parse_revision(commit)  # a malformed --commit is refused before anything is fetched
    folders = []
    for option, value in (("--source", source), ("--fastcdr-source", fastcdr_source),
                          ("--foonathan-memory-source", foonathan_source)):
        if value is not None and not Path(value).is_dir():
            raise InputError(f"{option}: not a folder", value)
        folders.append(Path(value).resolve() if value is not None else None)
    return folders[0], folders[1], folders[2]


def prepare_sources(workspace: Path, source: Path | None, git_url: str | None, commit: str | None,
                    extra: dict[str, Path | None]) -> dict:
    """Put every source in WS/src; returns what the Fast DDS source is and where it came from."""
    src, state = workspace / "src", workspace / STATE_DIR
    checkout = src / SOURCE_DIR
    origin: dict = {"repository": None, "commit": None, "uncommitted_changes": None}
    if git_url is not None:
        origin.update(kind="git", repository=git_url, requested_ref=commit,
                      commit=fetch_git(git_url, commit, checkout), source_path=str(checkout))
        if parse_revision(commit).kind != "ref":
            print(f"perfgate build: --commit {commit} is {origin['commit']}", flush=True)
        (state / f"mirror-{SOURCE_DIR}.json").unlink(missing_ok=True)
    elif source is not None:
        if (checkout / ".git").exists():
            shutil.rmtree(checkout)  # a git checkout before: replaced by the mirror
        head, dirty = local_commit(source)
        mirrored = mirror_tree(source, checkout, state / f"mirror-{SOURCE_DIR}.json")
        origin.update(kind="local", source_path=str(source), commit=head, uncommitted_changes=dirty,
                      mirrored={"copied": mirrored.copied, "removed": mirrored.removed})
    elif checkout.is_dir():
        head, dirty = local_commit(checkout)
        origin.update(kind="workspace", source_path=str(checkout), commit=head, uncommitted_changes=dirty)
    else:
        raise InputError("the workspace has no Fast DDS source yet: give --source or --git-url and --commit",
                         checkout)
    mirror_tree(NATIVE_DIR, src / HARNESS_DIR, state / f"mirror-{HARNESS_DIR}.json", frozenset(HARNESS_IGNORED_DIRS))
    for name, folder in extra.items():
        if folder is not None:
            mirror_tree(folder, src / name, state / f"mirror-{name}.json")
        elif (src / name).exists():  # given for an earlier build, not this one: the system's is used
            shutil.rmtree(src / name)
            (state / f"mirror-{name}.json").unlink(missing_ok=True)
    return origin


def place_fastcdr(workspace: Path, plan: dict, needed_major: int) -> dict:
    """WS/src/fastcdr as the plan says: a mirror of a source folder (--fastcdr-source, or the submodule
    checked out in a local source), the pinned commit fetched from the submodule's URL, or nothing
    (the system's). Returns the plan with the version found in the source."""
    folder, manifest = workspace / "src" / FASTCDR_DIR, workspace / STATE_DIR / f"mirror-{FASTCDR_DIR}.json"
    origin = plan.get("path")
    if plan["from"] == "system":
        if folder.exists():  # given for an earlier build, not this one
            shutil.rmtree(folder)
        manifest.unlink(missing_ok=True)
        return plan
    if origin is not None:
        if (folder / ".git").exists():
            shutil.rmtree(folder)  # a fetched checkout before: replaced by the mirror
        mirror_tree(Path(origin), folder, manifest)
    else:
        manifest.unlink(missing_ok=True)
        try:
            fetch_git(plan["url"], plan["commit"], folder)
        except IncompleteError as error:
            raise IncompleteError(f"Fast CDR pinned as {plan['submodule']}: {error.message}", error.path) from None
    version = source_version(folder)
    if version is not None and release(version)[:1] != (needed_major,):
        raise IncompleteError(f"Fast CDR {version} is not the {needed_major}.x this Fast DDS needs", folder)
    return {**plan, "version": version}


def harness_link_problem(library: str | None, workspace: Path, package: str) -> str | None:
    """Why the harness's Fast DDS library is not the workspace's (None when it is): a harness built
    against a system copy would measure another Fast DDS under this commit's name."""
    expected = f"lib{package}.so"
    prefix = Path(workspace) / "install"
    if library is None:
        return f"the harness loads no Fast DDS library (ldd lists no lib{package}.so)"
    if not Path(library).resolve().is_relative_to(Path(workspace).resolve()) or \
            not Path(library).name.startswith(expected):
        return (f"the harness loads {library}, not the workspace's {expected} under {prefix}: it was built "
                "against another Fast DDS (a system package?); see PERFGATE_FASTDDS_PACKAGE in native/CMakeLists.txt")
    return None


def cmake_version() -> tuple[int, ...]:
    """The installed cmake's version, (0,) when it does not say."""
    try:
        output = subprocess.run(["cmake", "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return (0,)
    match = re.search(r"cmake version (\d+(?:\.\d+)*)", output)
    return release(match.group(1)) if match else (0,)


def linked_fastdds_library(executable: Path) -> str | None:
    """The Fast DDS library the dynamic linker picks for an executable (ldd), or None."""
    try:
        listing = subprocess.run(["ldd", str(executable)], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in listing.splitlines():
        match = re.match(r"\s*lib(fastrtps|fastdds)\.so\S*\s+=>\s+(\S+)", line)
        if match:
            return match.group(2)
    return None


def run_colcon(command: list[str], environment: dict[str, str], log_path: Path) -> tuple[int, str]:
    """Run colcon with its output to the terminal and to log_path; (exit code, output)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    output: list[str] = []
    with open(log_path, "w") as log:
        log.write(f"$ {' '.join(command)}\n")
        process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, errors="replace")
        for line in process.stdout:
            output.append(line)
            log.write(line)
            print(line, end="", flush=True)
        code = process.wait()
    return code, "".join(output)


def command_build(*, workspace, source=None, git_url=None, commit=None, fastcdr_source=None,
                  foonathan_memory_source=None, jobs=None, no_ccache=False, junit=None) -> int:
    workspace = Path(workspace).resolve()
    source, fastcdr, foonathan = _resolve_inputs(source, git_url, commit, fastcdr_source, foonathan_memory_source)
    ccache = not no_ccache
    check_tools(ccache)
    started, started_utc = time.monotonic(), utc_now()
    record = {"status": s.BUILD_FAILED, "workspace": str(workspace), "started_utc": started_utc,
              "prefix": str(workspace / "install"), "fastdds": {"repository": git_url, "requested_ref": commit}}
    with workspace_lock(workspace):
        record_path(workspace).unlink(missing_ok=True)  # no stale record survives a build that breaks
        try:
            _build(workspace, source, git_url, commit, fastcdr, foonathan, jobs, ccache, record)
            record["status"] = s.BUILD_OK
        except InputError:
            raise  # usage: nothing was built, no record
        except PerfgateError as error:
            record["error"] = record.get("error") or error.message
            record.setdefault("log", str(error.path) if error.path else None)
            raise
        finally:
            record["finished_utc"] = utc_now()
            record["duration_s"] = round(time.monotonic() - started, 1)
            if record["status"] == s.BUILD_OK or record.get("error"):
                files.write_text(record_path(workspace), json.dumps(record, indent=2, sort_keys=True) + "\n")
                if junit is not None:
                    files.write_text(Path(junit), build_junit_xml(record, junit_properties(record)))
    fastdds = record["fastdds"]
    print(f"perfgate build: Fast DDS {fastdds['version']} ({fastdds['package']}, commit "
          f"{fastdds.get('commit') or 'unknown'}) built in {record['duration_s']:.0f} s; prefix {record['prefix']}; "
          f"harness {record['harness']}")
    return s.EXIT_OK


def _build(workspace: Path, source: Path | None, git_url: str | None, commit: str | None, fastcdr: Path | None,
           foonathan: Path | None, jobs: int | None, ccache: bool, record: dict) -> None:
    origin = prepare_sources(workspace, source, git_url, commit, {FOONATHAN_DIR: foonathan})
    checkout = workspace / "src" / SOURCE_DIR
    identity = detect_fastdds(checkout)
    record["fastdds"] = {**origin, "package": identity.package, "version": identity.version}
    # the Fast CDR the commit pins: .gitmodules in the checkout, the gitlink in the git history of the
    # source (a local source's own, the mirror in WS/src/fastdds has none)
    pin = read_submodule_pin(source or checkout, source or checkout, git_url)
    plan = dependency_plan(identity, fastcdr, foonathan, installed_cmake_version("fastcdr"),
                           installed_cmake_version("foonathan_memory"), pin)
    record["dependencies"] = plan
    plan["fastcdr"] = place_fastcdr(workspace, plan["fastcdr"], fastcdr_major_needed(identity))
    cmake_args = cmake_arguments(ccache, identity.package, cmake_version(), write_warnings_launcher(workspace))
    command = colcon_build_command(workspace, cmake_args)
    environment = build_environment(dict(os.environ), workspace, jobs, ccache)
    record.update(cmake_args=cmake_args, colcon_command=command, jobs=jobs,
                  ccache={"enabled": ccache, "dir": environment.get("CCACHE_DIR") if ccache else None})
    print(f"perfgate build: Fast DDS {identity.version} ({identity.package}) in {workspace}; Fast CDR "
          f"{_fastcdr_origin(plan['fastcdr'])}", flush=True)
    code, output = run_colcon(command, environment, workspace / STATE_DIR / "colcon-build.log")
    if code != 0:
        failing = failed_packages(output)
        package = failing[0] if failing else None
        log = (workspace / "log" / "latest_build" / package / "stdout_stderr.log") if package else \
            workspace / STATE_DIR / "colcon-build.log"
        tail = log_tail(log)
        record.update(failed_package=package, log=str(log), log_tail=tail,
                      error=f"colcon build failed (exit {code})" + (f" in package {package}" if package else ""))
        raise IncompleteError(f"{record['error']}; last lines of its log:\n{tail}", log)
    harness = workspace / "install" / "bin" / LATENCY_EXECUTABLE
    for executable in (harness, harness.with_name(FLOOR_EXECUTABLE)):
        if not executable.is_file():
            raise IncompleteError(f"colcon build did not install {executable.name}", executable)
    library = linked_fastdds_library(harness)
    problem = harness_link_problem(library, workspace, identity.package)
    if problem is not None:
        record.update(fastdds_library=library, error=problem)
        raise IncompleteError(problem, harness)
    record.update(harness=str(harness), fastdds_library=library, log=str(workspace / "log" / "latest_build"))


def _fastcdr_origin(plan: dict) -> str:
    if plan["from"] == "system":
        return f"{plan.get('version')} (system)"
    if plan["from"] == "submodule":
        where = plan.get("path") or f"{plan.get('url')} at {plan.get('commit')}"
        return f"{plan.get('version') or ''} pinned as {plan['submodule']} ({where})".lstrip()
    return f"{plan.get('version') or ''} from {plan['path']}".lstrip()


# --- a gate whose build failed ------------------------------------------------------------------
def failed_build_metadata(record: dict, label: str, platform: dict) -> dict:
    return {
        s.META_LABEL: label,
        s.META_CREATED: utc_now(),
        s.META_FASTDDS: fastdds_metadata(record),
        s.META_LATENCY_DEFINITION: s.ROUND_TRIP,
        s.META_SUBEXPERIMENTS: {},
        s.META_PLATFORM: platform,
        "build_failed": {"error": record.get("error"), "failed_package": record.get("failed_package"),
                         "log": record.get("log")},
    }


def failed_build_markdown(record: dict) -> str:
    fastdds = record.get("fastdds") or {}
    return (f"## perfgate: INCOMPLETE: the Fast DDS build failed\n\n"
            f"Fast DDS {fastdds.get('version') or ''} commit `{fastdds.get('commit') or 'unknown'}`: "
            f"{record.get('error')}. Nothing was measured.\n\n"
            f"Last lines of `{record.get('log')}`:\n\n```\n{record.get('log_tail') or ''}\n```\n")


def gate_failed_build(record: dict, *, output: str, label: str | None, summary_markdown: str | None) -> int:
    """What `perfgate gate --workspace` does when the build failed: metadata.json, junit.xml with the
    error testcase "build", report.md (and the step summary), exit 3."""
    from .junit import suite_properties
    from .platform_info import this_machine
    from .run import check_output_folder

    output_dir = Path(output)
    check_output_folder(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    metadata = failed_build_metadata(record, label or output_dir.resolve().name, this_machine())
    files.write_metadata(output_dir, metadata)
    files.write_text(output_dir / s.JUNIT_FILE, build_junit_xml(record, suite_properties(metadata)))
    markdown = failed_build_markdown(record)
    files.write_text(output_dir / s.REPORT_MARKDOWN, markdown)
    if summary_markdown:
        with open(summary_markdown, "a", encoding="utf-8") as summary:
            summary.write(markdown)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        print(f"::error title=Fast DDS build failed::{record.get('error')}")
    print(f"perfgate gate: error: {record_path(Path(record['workspace']))}: {record.get('error')}", file=sys.stderr)
    print("perfgate gate: INCOMPLETE: the Fast DDS build failed; nothing was measured")
    return s.EXIT_INCOMPLETE
