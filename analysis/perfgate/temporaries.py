"""The temporary files of atomic writes, and removing those a dead process left behind.

Every output is written to a temporary file beside it and renamed over it (files.atomic_path), so a
reader never sees half a file. A process killed outright (SIGKILL, the OOM killer) runs no clean-up
and leaves its temporary file; a plot worker killed while drawing leaves a 0-byte or partial PNG.
So a temporary file's name carries its writer's process id, and the files of writers that are
gone are removed: by the main process when its worker pool ends (pools.worker_pool), and by any
later process before it first writes into the same folder.

`abandoned` is pure; the rest is the thin part.
"""
from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path

MARK = ".perfgate-tmp-"
# .<target name, or a hash of it when too long>.perfgate-tmp-<pid>-<random>.tmp<suffix>
_NAME = re.compile(rf"^\..*{re.escape(MARK)}(\d+)-[^/]*\.tmp[^/]*$")
_swept: set[Path] = set()  # folders this process has already cleaned
_writing: set[Path] = set()  # this process's temporaries not yet renamed or removed (remove_own)


NAME_MAX = 255  # bytes in one file name (Linux's file systems)
RANDOM_PART = 8  # what tempfile.mkstemp puts between the prefix and the suffix
LONGEST_SUFFIX = 16  # a longer "suffix" is no file type (`a.<200 characters>`): left out of the temporary's name


def prefix(target: Path) -> str:
    """The temporary's name before mkstemp's random part: the target's name when the whole temporary name
    fits in NAME_MAX bytes, else a short hash of it, so that every name that fits as an output also fits as
    its temporary (a 244-byte JUnit name was refused: its temporary had 280)."""
    readable = f".{target.name}{MARK}{os.getpid()}-"
    if len(os.fsencode(readable + suffix(target))) + RANDOM_PART <= NAME_MAX:
        return readable
    return f".{hashlib.sha256(os.fsencode(target.name)).hexdigest()[:16]}{MARK}{os.getpid()}-"


def suffix(target: Path) -> str:
    """`.tmp` and the target's extension (matplotlib picks a plot's format by it)."""
    extension = target.suffix if len(os.fsencode(target.suffix)) <= LONGEST_SUFFIX else ""
    return ".tmp" + extension


def writer_pid(name: str) -> int | None:
    match = _NAME.match(name)
    return int(match.group(1)) if match else None


def abandoned(names: Iterable[str], is_alive) -> list[str]:
    """The temporary files among `names` whose writer `is_alive(pid)` says is gone."""
    return sorted(n for n in names if (pid := writer_pid(n)) is not None and not is_alive(pid))


def process_alive(pid: int) -> bool:
    """Alive and not a zombie (a killed worker its parent has not reaped yet is gone for good)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def remove_abandoned(folder: Path, recursive: bool = False) -> list[Path]:
    """Remove the temporary files of dead writers in `folder` (and below it, when recursive)."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:  # gone, or not ours to read: nothing to clean
        return removed
    for name in abandoned((e.name for e in entries if e.is_file(follow_symlinks=False)), process_alive):
        try:
            os.unlink(Path(folder, name))
            removed.append(Path(folder, name))
        except FileNotFoundError:  # another process cleaned it first
            pass
        except OSError:
            pass
    if recursive:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                removed += remove_abandoned(Path(entry.path), recursive=True)
    return removed


def sweep_once(folder: Path) -> None:
    """Before this process first writes into `folder`: clear what dead writers left there."""
    if folder not in _swept:
        _swept.add(folder)
        remove_abandoned(folder)


def started(temporary: Path) -> None:
    """A temporary this process is writing (files.atomic_path): remove_own removes it if the process must end."""
    _writing.add(Path(temporary))


def finished(temporary: Path) -> None:
    _writing.discard(Path(temporary))


def remove_own() -> None:
    """Remove the temporaries this process is writing: a plot worker whose main process died (pools) ends
    with this, so that no half-written PNG outlives it where no later run may ever write again. Its own
    temporaries in every folder it wrote into too: one made a moment before `started` could record it."""
    own = os.getpid()
    found = set(_writing)
    for folder in _swept:
        try:
            found.update(Path(entry.path) for entry in os.scandir(folder) if writer_pid(entry.name) == own)
        except OSError:
            continue
    for temporary in found:
        try:
            os.unlink(temporary)
        except OSError:  # renamed a moment ago, or already gone
            pass
        _writing.discard(temporary)
