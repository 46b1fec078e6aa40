"""What outlives a perfgate killed outright: a watcher that cleans up after it.

perfgate killed by SIGKILL (or the OOM killer) runs no clean-up of its own: the scratch folder of a
run (the private keys and certificates of its DDS Security sub-experiments) stayed in /dev/shm until
the next run started. So the command that makes a scratch folder (perfgate.measure.scratch) first starts this
watcher: a process in a session of its own (a signal to perfgate's process group, a closed terminal,
does not reach it) whose standard input is the read end of a pipe whose write end only perfgate holds
(not inherited by the harness, closed in forked workers). It reads until the pipe closes, which is
when perfgate ends, however it ends: the system closes a dead process's files. Then it kills what
carries the run's id in its environment (harness processes; they die with perfgate on their own
through their parent-death signal: this is the second line) and removes the scratch folder, and exits.

A harness process killed (by the watcher, or dying with perfgate just as it starts) unlinks none of
its Fast DDS shared-memory files, and perfgate's own record of them (shm.ShmWitness) died with it:
a run killed as a shared-memory harness started left its segments in /dev/shm for good (the next run
removes only what appears while it runs). The harness ends cleanly when perfgate dies (its
parent-death signal asks it to stop; it ignores SIGPIPE: a write to dead perfgate's pipe killed 10 of
75 harnesses as they started, in parallel runs). So, after a perfgate killed outright, the watcher
first lets the run's processes end on their own for up to GRACE_S, noting the Fast DDS files each
holds while it lives (killed in the middle of its shutdown, between unmapping a segment and unlinking
it, a harness would leave a segment the watcher never saw). Then it stops each process left (SIGSTOP:
it makes nothing more), notes what it holds (the run's own: the witness's evidence), kills it, and
once none is left removes those files, and their companions, that no live process holds. The names
of those files and who holds what are defined here, standard library only, and perfgate.measure.shm
uses them.

When perfgate ends normally it writes one byte into the pipe and closes it, after its own clean-up, and
waits for the watcher to end: the watcher finds nothing left and is never left behind. A pipe that closes
without that byte is perfgate killed outright, maybe between forking a harness and its exec: such a child
carries no run id yet, so the watcher keeps looking until it has seen none of the run's processes for
SETTLE_S (a harness killed at 0 s of its start made its segments after a watcher that looked once).

The watcher runs as a file (`python -I -S watcher.py`): the standard library only, nothing of
perfgate imported, so that it starts fast and its environment (PYTHONPATH) cannot change what runs.
`carriers` is pure over a /proc folder; `clean_up` and `main` are the watcher, `watching` its start.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

KILL_ROUNDS = 20  # of /proc scans: a process found may still be starting another
SETTLE_S = 1.0  # after perfgate died outright: no process of the run seen for this long, then clean up
GRACE_S = 5.0  # after perfgate died outright: how long the run's processes may take to end on their own
SCAN_S = 0.05
ENDED_NORMALLY = b"e"  # what perfgate writes into the pipe before closing it at its normal end
ENDED_S = 30.0  # how long perfgate waits for a watcher that found nothing to do
_write_ends: set[int] = set()  # this process's ends of its watchers' pipes

# Shared-memory files Fast DDS creates: SHM transport segments, their mutexes and lock files,
# and data-sharing pools.
SHM_DIR = Path("/dev/shm")
SHM_PREFIXES = ("fastrtps_", "fastdds_", "fast_datasharing_", "sem.fastrtps_", "sem.fastdds_", "sem.fast_datasharing_")
# A segment's companions: its named mutex (sem.<name>_mutex) and its robust lock files (<name>_el, <name>_sl).
_COMPANION = re.compile(r"^(?:sem\.)?(?P<stem>.+?)(?:_el|_sl|_mutex)?$")


def segment_stem(name: str) -> str:
    """The segment a file belongs to: itself, or the segment whose mutex or lock file it is."""
    return _COMPANION.match(name)["stem"]


def fastdds_shm_files(shm_dir: Path = SHM_DIR) -> set[str]:
    try:
        return {p.name for p in shm_dir.iterdir() if p.name.startswith(SHM_PREFIXES)}
    except OSError:
        return set()


def shm_files_held_by(pid: int, shm_dir: Path = SHM_DIR, proc: Path = Path("/proc")) -> set[str]:
    """Names of the files under shm_dir that process `pid` has mapped or open (none once it is gone)."""
    held: set[str] = set()
    prefix = f"{shm_dir}/"
    with contextlib.suppress(OSError):
        for line in (proc / str(pid) / "maps").read_text(errors="replace").splitlines():
            fields = line.split(maxsplit=5)  # address perms offset dev inode [path]
            if len(fields) == 6 and fields[5].startswith(prefix):
                held.add(fields[5][len(prefix):].removesuffix(" (deleted)"))
    with contextlib.suppress(OSError):
        for fd in (proc / str(pid) / "fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith(prefix):
                    held.add(target[len(prefix):])
    return held


def shm_files_in_use(shm_dir: Path = SHM_DIR, proc: Path = Path("/proc")) -> set[str]:
    """Names of the files under shm_dir that a live process has mapped or open."""
    in_use: set[str] = set()
    for entry in proc.glob("[0-9]*"):
        in_use |= shm_files_held_by(int(entry.name), shm_dir, proc)
    return in_use


def left_segments(held: set[str], present: set[str], in_use: set[str]) -> set[str]:
    """Of the Fast DDS files `present`, those of a segment the run's processes held (`held`: a file or
    its companion) that no live process holds."""
    stems = {segment_stem(name) for name in held if name.startswith(SHM_PREFIXES)}
    return {name for name in present - in_use if segment_stem(name) in stems}


def carriers(variable: bytes, proc: Path = Path("/proc"), own: int | None = None) -> list[int]:
    """The processes whose environment holds `variable` (`NAME=value`, whole), this one left out."""
    found = []
    for entry in proc.glob("[0-9]*"):
        try:
            if int(entry.name) != own and variable in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except (OSError, ValueError):  # ended meanwhile, or another user's
            continue
    return sorted(found)


def clean_up(folder: Path, variable: bytes | None, shm_dir: Path = SHM_DIR, settle_s: float = 0.0,
             grace_s: float = 0.0) -> None:
    """Let the run's processes end on their own for up to `grace_s`, kill those left (first: they may
    write into the folder), then remove the Fast DDS files they held and the folder. `settle_s`: look on
    until none of them was seen for that long."""
    held: set[str] = set()
    if variable:
        held |= _watch_them_end(variable, shm_dir, grace_s)
        held |= _kill_them(variable, shm_dir, settle_s)
    if held:  # once the run's processes are gone: what they held is no longer in use by them
        for name in left_segments(held, fastdds_shm_files(shm_dir), shm_files_in_use(shm_dir)):
            with contextlib.suppress(OSError):
                (shm_dir / name).unlink()
    shutil.rmtree(folder, ignore_errors=True)


def _watch_them_end(variable: bytes, shm_dir: Path, grace_s: float) -> set[str]:
    """The Fast DDS files the run's processes hold while they end on their own, looked at until none is
    left or `grace_s` has passed."""
    held: set[str] = set()
    end = time.monotonic() + grace_s
    while time.monotonic() < end:
        found = carriers(variable, own=os.getpid())
        if not found:
            break
        for pid in found:
            held |= shm_files_held_by(pid, shm_dir)
        time.sleep(SCAN_S)
    return held


def _kill_them(variable: bytes, shm_dir: Path, settle_s: float) -> set[str]:
    """Stop, look at and kill the run's processes until none was seen for `settle_s`: the Fast DDS files
    they held."""
    held: set[str] = set()
    quiet_since = None
    for _ in range(KILL_ROUNDS + round(settle_s / SCAN_S)):
        found = carriers(variable, own=os.getpid())
        if not found:
            quiet_since = time.monotonic() if quiet_since is None else quiet_since
            if time.monotonic() - quiet_since >= settle_s:
                break
            time.sleep(SCAN_S)
            continue
        quiet_since = None
        for pid in found:  # stopped first: a process between a look and its kill could make a segment
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        for pid in found:
            held |= shm_files_held_by(pid, shm_dir)
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(SCAN_S)
    return held


def main(argv: list[str]) -> int:
    """watcher.py FOLDER [NAME=VALUE]: wait for standard input to close, then clean up."""
    if len(argv) not in (2, 3) or not Path(argv[1]).is_absolute():
        return 2  # never guess what to remove
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for perfgate: the pipe tells when it ended
    said = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(0, 4096):  # perfgate writes ENDED_NORMALLY at its normal end, else nothing
            said = (said + chunk)[-1:]
    killed_outright = said != ENDED_NORMALLY
    clean_up(Path(argv[1]), os.fsencode(argv[2]) if len(argv) == 3 and argv[2] else None,
             settle_s=SETTLE_S if killed_outright else 0.0, grace_s=GRACE_S if killed_outright else 0.0)
    return 0


@contextlib.contextmanager
def watching(folder: Path, variable: str | None = None) -> Iterator[None]:
    """While the block runs, a watcher that removes `folder` and kills the processes carrying
    `variable` (`NAME=value`) once this process has ended, however. Without a Python to start it with
    (an embedded interpreter) the block runs unwatched: the next scratch folder's sweep remains."""
    read_end, write_end = os.pipe()  # neither inherited by exec'd children (PEP 446)
    try:
        watcher = subprocess.Popen([sys.executable, "-I", "-S", __file__, str(Path(folder).resolve()), variable or ""],
                                   stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/",
                                   start_new_session=True)
    except OSError:
        watcher = None
    finally:
        os.close(read_end)
    if watcher is None:
        os.close(write_end)
        yield
        return
    _write_ends.add(write_end)
    try:
        yield
    finally:
        _write_ends.discard(write_end)
        with contextlib.suppress(OSError):
            os.write(write_end, ENDED_NORMALLY)  # alive to end its own children: no need to look on
        os.close(write_end)
        try:
            watcher.wait(ENDED_S)
        except subprocess.TimeoutExpired:
            watcher.kill()
            watcher.wait()


def _close_in_child() -> None:
    """A forked child (a plot worker) must not hold a watcher's pipe open: the watcher would wait for
    the worker as well as for perfgate."""
    for descriptor in _write_ends:
        with contextlib.suppress(OSError):
            os.close(descriptor)
    _write_ends.clear()


os.register_at_fork(after_in_child=_close_in_child)

if __name__ == "__main__":
    sys.exit(main(sys.argv))
