"""An output folder claimed by one command at a time (docs/formats.md section 13).

`run`, `throughput`, `ab`, `ab-throughput` and `gate` write a fresh folder: "absent or empty" is
checked while the options are read (measure.options.check_output_folder), but two commands started at
the same moment both saw it empty and both measured into it. So before measuring, a command claims the
folder with one atomic operation: it makes the folder (when absent) and takes an exclusive flock on a
marker file in it, `.perfgate-claim`, holding its process id. Of two commands, exactly one gets the
lock; the other is exit 2, one line naming the folder and the holder. The winner then checks again
that the folder holds nothing else, so a command that comes after another one finished is refused as
before ("not empty").

The marker is removed when the command ends, however it ends short of being killed outright. A
command killed by SIGKILL leaves it; its lock died with the process (the system releases a dead
process's locks), so it never blocks: the folder holds the killed command's partial results anyway,
and is refused as not empty, and a folder holding only the marker is claimed by the next command.
Every reader of a folder ignores the marker (a dot file no reader, store or JUnit lists).
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from .errors import InputError

# in an output folder while a command writes it: its process id, under an exclusive lock (here, not in
# schema.py, which is at its size limit: no reader ever looks for it, they only leave it aside)
MARKER_FILE = ".perfgate-claim"
HOLDER_WRITTEN_S = 5.0  # how long a refused command waits for the holder to write its process id
_held: dict[Path, int] = {}  # this process's claims: folder (resolved) -> the locked marker's descriptor


def holder_pid(text: str) -> int | None:
    """The process id a marker holds, or None (not written yet, or not a marker perfgate wrote)."""
    text = text.strip()
    return int(text) if text.isdigit() else None


def other_entries(folder: Path) -> list[str]:
    """What the folder holds besides the claim marker, sorted."""
    return sorted(name for name in os.listdir(folder) if name != MARKER_FILE)


def is_unclaimed_empty(folder: Path) -> bool:
    """"Empty" as the output rule means it: nothing but, perhaps, a claim marker (a killed command's)."""
    return not other_entries(folder)


def _read_holder(descriptor: int) -> int | None:
    """The holder's id; it may have its lock and not yet have written it: waits a moment for it."""
    deadline = time.monotonic() + HOLDER_WRITTEN_S
    while True:
        pid = holder_pid(os.pread(descriptor, 32, 0).decode("ascii", "replace"))
        if pid is not None or time.monotonic() > deadline:
            return pid
        time.sleep(0.01)


def _lock_marker(folder: Path) -> tuple[int, bool]:
    """(the locked marker's descriptor, whether this process made the marker), or InputError naming the
    holder. The marker a holder removes as it ends may be the one opened here: then the lock is on a
    file no longer in the folder, and the claim is tried again on the folder's own marker."""
    marker = folder / MARKER_FILE
    flags = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW  # a link named like the marker is no marker: refused
    for _ in range(100):
        made = True
        try:
            descriptor = os.open(marker, flags | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            made = False
            try:
                descriptor = os.open(marker, flags)
            except FileNotFoundError:  # removed by its holder in between: try again
                continue
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):  # a FIFO or a device named like it: no marker
            os.close(descriptor)
            raise InputError(f"{MARKER_FILE} in the output folder is not a regular file (a claim marker "
                             "perfgate writes is); remove it", folder)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_holder(descriptor)
            os.close(descriptor)
            holder = f"process {pid}" if pid is not None else "another process"
            raise InputError(f"the output folder is already claimed by {holder} (another perfgate is writing "
                             "into it); give each command its own --output", folder) from None
        try:
            current = os.stat(marker, follow_symlinks=False)
        except FileNotFoundError:
            current = None
        opened = os.fstat(descriptor)
        if current is not None and (current.st_dev, current.st_ino) == (opened.st_dev, opened.st_ino):
            return descriptor, made
        os.close(descriptor)
    raise InputError("the output folder's claim marker keeps changing; another command is claiming it", folder)


def _release(folder: Path, descriptor: int) -> None:
    """Remove the marker, then let go of the lock: a command waiting on the old marker then finds it
    gone and claims afresh (and finds the folder not empty)."""
    with contextlib.suppress(OSError):
        os.unlink(folder / MARKER_FILE)
    os.close(descriptor)


@contextlib.contextmanager
def claimed(folder: Path) -> Iterator[Path]:
    """The folder, claimed by this process until the block ends; InputError (exit 2) when another
    process holds it or it is not empty. A folder this process has claimed already (the gate's, claimed
    again by the run inside it) is simply used."""
    folder = Path(folder)
    key = folder.resolve()
    if key in _held:
        yield folder
        return
    try:
        folder.mkdir(parents=True)
        made_folder = True
    except FileExistsError:
        made_folder = False
    except OSError as error:
        raise InputError(f"the output folder cannot be made: {error.strerror or error}", folder) from None
    try:
        descriptor, made_marker = _lock_marker(folder)
    except OSError as error:
        raise InputError(f"the output folder cannot be claimed: {error.strerror or error}", folder) from None
    try:
        if not is_unclaimed_empty(folder):
            if not made_marker:  # a killed command's marker stays where its results are
                os.close(descriptor)
                descriptor = None
            raise InputError("output folder is not empty (a run writes a fresh experiment folder)", folder)
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode("ascii"), 0)
        _held[key] = descriptor
        yield folder
    finally:
        _held.pop(key, None)
        if descriptor is not None:
            _release(folder, descriptor)
        if made_folder:  # a command that wrote nothing leaves no folder, as before it claimed one
            with contextlib.suppress(OSError):
                folder.rmdir()


def claims_output(measure):
    """`measure(options_or_plan, ...)` run with `options_or_plan.output` claimed (see `claimed`)."""
    @functools.wraps(measure)
    def measuring(plan, *args, **kwargs):
        with claimed(plan.output):
            return measure(plan, *args, **kwargs)
    return measuring


def _forget_in_child() -> None:
    """A forked child (a plot worker) is not the holder: its copies of the descriptors are closed, so
    that the lock ends with the holder, not with its last worker."""
    for descriptor in _held.values():
        with contextlib.suppress(OSError):
            os.close(descriptor)
    _held.clear()


os.register_at_fork(after_in_child=_forget_in_child)
