"""fastdds.workspace: the workspace's folders, its lock, and the sources put into WS/src: Fast DDS
(a git checkout or a mirror of a local folder), the harness (a mirror of native/), Fast CDR and
foonathan_memory when the system's do not fit. Mirrors touch only what changed, so that a commit
touching one file rebuilds in minutes."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .. import files
from ..errors import IncompleteError, InputError
from .source import release, source_version
from .harness import IGNORED_DIRS as HARNESS_IGNORED_DIRS
from .harness import NATIVE_DIR
from .git import fetch_git, local_commit, parse_revision

SOURCE_DIR = "fastdds"  # WS/src/fastdds whatever the package is called (fastrtps or fastdds)
HARNESS_DIR = "perfgate_harness"
FASTCDR_DIR = "fastcdr"
FOONATHAN_DIR = "foonathan_memory_vendor"
STATE_DIR = "perfgate"
CCACHE_DIR = "ccache"
LOCK_FILE = ".perfgate-build.lock"


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
