"""fastdds.kept: the last few installs of a workspace, one per commit, in WS/installs/<sha>/, so
that an A/B's baseline (usually the parent of the previous candidate) is already built.

A kept folder is a copy of the merged install WS/install plus its own build record (perfgate-build.json,
its paths pointing into the copy, `kept_from` naming the workspace): `perfgate run --workspace`, `ab`
and `gate` read it as they read a workspace. The copy loads its own libraries through the install
RPATH $ORIGIN/../lib (colcon.ORIGIN_RPATH); a copy whose harness loads anything from elsewhere in the
workspace (an install from before that RPATH) is not kept. WS/installs/<NAME> (--keep-as) is a
symbolic link to one of them, replaced atomically; pruning keeps the N most recently built or reused
and every folder a name points to.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

from .. import files
from .. import schema as s
from ..clock import utc_now
from ..errors import IncompleteError, InputError
from ..escape.workflow import log_text
from .harness import LATENCY_EXECUTABLE
from .colcon import linked_libraries
from .layouts import make_layouts

INSTALLS_DIR = "installs"
DEFAULT_KEEP = 3
_COMMIT = re.compile(r"[0-9a-f]{40}")
# a name beside the commits: one path component that cannot be taken for a commit or a temporary
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_PARTIAL = ".partial-"  # a copy being written; renamed into place only once complete and checked
_OLD = ".old-"  # a kept folder being replaced


def installs_dir(workspace: Path) -> Path:
    return Path(workspace) / INSTALLS_DIR


def check_options(keep_installs: int, keep_as: str | None) -> None:
    """--keep-installs and --keep-as, before anything is built (InputError: exit 2)."""
    if keep_installs < 0:
        raise InputError(f"--keep-installs must be 0 (keep none) or more, got {keep_installs}")
    if keep_as is None:
        return
    if not _NAME.fullmatch(keep_as) or _COMMIT.fullmatch(keep_as.lower()):  # git takes a commit in either case
        raise InputError(f"--keep-as {keep_as!r} is not a plain name (letters, digits, '.', '_', '-', starting "
                         "with a letter or digit; not a 40-digit commit)")
    if keep_installs == 0:
        raise InputError(f"--keep-as {keep_as} names a kept install, and --keep-installs 0 keeps none")


def check_name(workspace: Path, keep_as: str | None, keep_installs: int) -> None:
    """WS/installs is a folder, and WS/installs/<keep_as> a link perfgate made, or nothing: anything else
    would only be found after the build, when keeping or naming fails (InputError: exit 2)."""
    installs = installs_dir(workspace)
    if keep_installs > 0 and (installs.is_symlink() or installs.exists()) and not installs.is_dir():
        raise InputError("is not a folder: no install can be kept in it", installs)
    entry = installs / keep_as if keep_as is not None else None
    if entry is not None and entry.exists() and not entry.is_symlink():
        raise InputError(f"--keep-as {keep_as}: {entry} is a {'folder' if entry.is_dir() else 'file'}, not a name "
                         "perfgate made; move it away or choose another name", entry)


def check_workspace(workspace: Path) -> None:
    """A kept folder is measured, never built in: its own record says so (InputError: exit 2)."""
    try:
        record = json.loads((Path(workspace) / s.BUILD_RECORD_FILE).read_text())
    except (OSError, ValueError):
        return
    if isinstance(record, dict) and record.get("kept_from") and record.get("prefix") == record.get("workspace"):
        raise InputError(f"--workspace {workspace} is an install kept by `perfgate build --workspace "
                         f"{record['kept_from']}`: build in that workspace (a kept install is measured, not built in)")


def keepable_commit(record: dict) -> str | None:
    """The commit a finished build can be kept under: a full commit, with no uncommitted changes."""
    fastdds = record.get("fastdds") or {}
    commit = fastdds.get("commit")
    if record.get("status") != s.BUILD_OK or not isinstance(commit, str) or not _COMMIT.fullmatch(commit):
        return None
    return None if fastdds.get("uncommitted_changes") else commit


# --- the copy ---------------------------------------------------------------------------------------
def copy_problem(libraries: dict[str, str | None], copy: Path, workspace: Path, record: dict) -> str | None:
    """Why the harness of `copy`, which loads `libraries` (colcon.linked_libraries), would not run on the
    copy's own (None when it does): a library resolved elsewhere in the workspace (WS/install changes
    with the next build), one not found, or the Fast DDS (and a Fast CDR built in the workspace)
    outside the copy."""
    if not libraries:
        return "ldd lists no library of its harness"
    copy, workspace = copy.resolve(), Path(workspace).resolve()
    own = own_library_names(record)
    for name, path in sorted(libraries.items()):
        if path is None:
            return f"its harness finds no {name}"
        where = Path(path).resolve()
        if not where.is_relative_to(copy) and (where.is_relative_to(workspace) or name.startswith(own)):
            return (f"its harness loads {path}, outside the copy (an install without the RPATH $ORIGIN/../lib: "
                    "built before perfgate set it?)")
    missing = [o for o in own if not any(name.startswith(o) for name in libraries)]
    return f"its harness loads no {missing[0]}" if missing else None


def own_library_names(record: dict) -> tuple[str, ...]:
    """The libraries a kept copy must bring itself: Fast DDS, and Fast CDR when the workspace built it."""
    package = (record.get("fastdds") or {}).get("package") or "fastrtps"
    fastcdr = ((record.get("dependencies") or {}).get("fastcdr") or {}).get("from", "system")
    return (f"lib{package}.so",) + (("libfastcdr.so",) if fastcdr != "system" else ())


def kept_record(record: dict, folder: Path, workspace: Path, library: str | None) -> dict:
    """The build record of a kept folder: the workspace's, its paths pointing into the folder."""
    return {**record, "workspace": str(folder), "prefix": str(folder),
            "harness": str(folder / "bin" / LATENCY_EXECUTABLE), "fastdds_library": library,
            "kept_from": str(workspace), "kept_utc": utc_now()}


def keep(workspace: Path, record: dict, layouts: int = 0) -> Path | None:
    """Copy WS/install to WS/installs/<commit>/ with its record and `layouts` layouts (fastdds/layouts.py);
    None (and a warning) when the copy would not load its own libraries or a layout cannot be linked. A
    copy is written beside and renamed into place: never half there."""
    commit = keepable_commit(record)
    if commit is None:
        return None
    installs = installs_dir(workspace)
    installs.mkdir(parents=True, exist_ok=True)
    folder, partial = installs / commit, installs / f"{_PARTIAL}{commit}"
    _remove(partial)
    try:
        shutil.copytree(Path(workspace) / "install", partial, symlinks=True)
        libraries = linked_libraries(partial / "bin" / LATENCY_EXECUTABLE)
        problem = copy_problem(libraries, partial, workspace, record)
        if problem is not None:
            _remove(partial)
            print(f"perfgate build: warning: {commit} not kept in {log_text(folder)}: {log_text(problem)}", file=sys.stderr, flush=True)
            return None
        library = _library_in(folder, partial, libraries, record)
        own = kept_record(record, folder, workspace, library)
        if layouts:
            own["layouts"] = make_layouts(workspace, record, partial, folder, layouts, kept_record)
        files.write_text(partial / s.BUILD_RECORD_FILE, json.dumps(own, indent=2, sort_keys=True) + "\n")
        old = installs / f"{_OLD}{commit}"
        if folder.is_dir():  # the same commit built again (other harness sources or options): replaced
            _remove(old)
            folder.rename(old)
        partial.rename(folder)
        _remove(old)
    except (OSError, IncompleteError) as error:  # a full disk, a layout not linked: the build itself stands
        _remove(partial)
        print(f"perfgate build: warning: {commit} not kept in {log_text(folder)}: {log_text(error)}", file=sys.stderr, flush=True)
        return None
    touch(folder)
    return folder


def _library_in(folder: Path, copy: Path, libraries: dict[str, str | None], record: dict) -> str | None:
    """Where the copy's Fast DDS library will be once the copy is `folder` (its file name kept: the
    soname link, as a workspace's record names it)."""
    fastdds = own_library_names(record)[0]
    for name, path in libraries.items():
        if name.startswith(fastdds) and path is not None:
            return str(folder / Path(path).parent.resolve().relative_to(copy.resolve()) / Path(path).name)
    return None


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def touch(folder: Path) -> None:
    """Mark a kept folder as just built or used: pruning goes by this time."""
    os.utime(folder)


# --- reuse ------------------------------------------------------------------------------------------
def reusable(workspace: Path, commit: str | None, harness_source: str, cmake_args: list[str],
             layouts: int = 0) -> Path | None:
    """The kept folder of this commit when it was built from the same harness sources with the same CMake
    arguments (and its harness is there) and kept at least `layouts` layouts; else None.

    Only a folder perfgate kept counts: WS/installs/<commit> that is a symbolic link (perfgate makes
    none under a commit's name: --keep-as refuses one) is not reused but built over, with a warning.
    Reused, it would make the workspace's record name whatever it points to, anywhere, as that commit's
    build, and be measured as such; building costs minutes and is always right."""
    if commit is None or not _COMMIT.fullmatch(commit):
        return None
    folder = installs_dir(workspace) / commit
    if folder.is_symlink():
        print(f"perfgate build: warning: {folder} is a link, not an install perfgate kept: not reused, the "
              "commit is built", file=sys.stderr, flush=True)
        return None
    try:
        record = json.loads((folder / s.BUILD_RECORD_FILE).read_text())
    except (OSError, ValueError):
        return None
    same = (isinstance(record, dict) and record.get("status") == s.BUILD_OK
            and (record.get("fastdds") or {}).get("commit") == commit
            and record.get("harness_source") == harness_source and record.get("cmake_args") == cmake_args
            and ((record.get("layouts") or {}).get("count") or 0) >= layouts)
    return folder if same and (folder / "bin" / LATENCY_EXECUTABLE).is_file() else None


def install_of(folder: Path) -> Path:
    """A workspace's own install for its record's commit when that commit is kept (WS/installs/<commit>:
    its layouts are there), else the folder itself."""
    try:
        record = json.loads((Path(folder) / s.BUILD_RECORD_FILE).read_text())
        commit = record["fastdds"]["commit"] if isinstance(record, dict) and "layouts" not in record else None
    except (OSError, ValueError, KeyError, TypeError):
        commit = None
    own = installs_dir(folder) / commit if isinstance(commit, str) and _COMMIT.fullmatch(commit) else None
    return own if own is not None and (own / s.BUILD_RECORD_FILE).is_file() and not own.is_symlink() else Path(folder)


# --- names and pruning -------------------------------------------------------------------------------
def name(workspace: Path, keep_as: str, folder: Path | None) -> None:
    """WS/installs/<keep_as> -> folder, replaced atomically; removed when there is no folder (this build
    kept nothing), so that a name never points at another commit than the last one built under it."""
    link = installs_dir(workspace) / keep_as
    if folder is None:
        if link.is_symlink():
            link.unlink()
            print(f"perfgate build: warning: --keep-as {keep_as}: nothing kept, {link} removed", file=sys.stderr)
        return
    temporary = link.with_name(f"{_PARTIAL}{keep_as}")
    _remove(temporary)
    temporary.symlink_to(folder.name)  # relative: the installs folder can move with its workspace
    temporary.replace(link)


def kept_folders(workspace: Path) -> list[Path]:
    installs = installs_dir(workspace)
    if not installs.is_dir():
        return []
    return [p for p in installs.iterdir() if _COMMIT.fullmatch(p.name) and p.is_dir() and not p.is_symlink()]


def prune(workspace: Path, keep_last: int) -> list[Path]:
    """Remove the kept folders beyond the `keep_last` most recently built or used, except those a name
    points to, and what an interrupted copy left; returns what was removed."""
    installs = installs_dir(workspace)
    if not installs.is_dir():
        return []
    named = set()
    for entry in installs.iterdir():
        if entry.name.startswith((_PARTIAL, _OLD)):
            _remove(entry)  # the workspace lock is held: no other build is writing it
        elif entry.is_symlink():
            with contextlib.suppress(OSError):
                named.add(entry.resolve())
    by_use = sorted(kept_folders(workspace), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    removed = [p for p in by_use[keep_last:] if p.resolve() not in named]
    for folder in removed:
        _remove(folder)
    return removed
