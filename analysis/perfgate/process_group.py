"""process_group: a child (cmake, make, colcon and what they start) in a process group of its own,
ended whole when perfgate is stopped.

Ctrl-C in a terminal reaches the whole foreground group, but a cancelled CI job's SIGTERM, or a
SIGINT sent to perfgate alone, reaches perfgate only: make, colcon and the compilers would build on,
reparented to init (found by adversarial passes, for the harness build and for `perfgate build`). So
the child gets its own group, and any exception while it runs (KeyboardInterrupt included) kills the
group before it propagates.

SIGINT and SIGTERM are held back while the child starts: raised inside Popen (after the fork, before
it returns) the KeyboardInterrupt would lose the new group's pid, and SIGTERM's default action between
Popen and a handler would end perfgate with the group still running. A signal ignored when perfgate
started (a background job's SIGINT) stays ignored.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


GROUP_END_WAIT_S = 5.0  # SIGKILLed members end within milliseconds; the bound is for a machine that stalls


def living_members(pgid: int, proc: Path = Path("/proc")) -> list[int]:
    """The processes of group `pgid` that are not yet zombies (a zombie runs nothing; init reaps it)."""
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:  # ended while listed
            continue
        fields = text[text.rfind(")") + 2:].split()  # after the command name, which may hold spaces
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def wait_until_group_ended(pgid: int, limit_s: float = GROUP_END_WAIT_S) -> None:
    """After a SIGKILL to the group: the leader's wait() returns while the others (a linker, a compiler)
    may still be ending; a caller that returns then would leave them visible, and a rebuild could meet
    their half-written files."""
    deadline = time.monotonic() + limit_s
    while living_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.01)


@contextmanager
def own_group(command: list[str], **popen_options) -> Iterator[subprocess.Popen]:
    """subprocess.Popen(command, **popen_options) in a new session; the whole group killed and reaped
    if the body raises, and on SIGINT or SIGTERM (as KeyboardInterrupt) while it runs."""
    held: list[int] = []
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(signum) is not signal.SIG_IGN:
                previous[signum] = signal.signal(signum, lambda signum, frame: held.append(signum))

    def stop(signum, frame):
        raise KeyboardInterrupt

    process = None
    try:
        process = subprocess.Popen(command, start_new_session=True, **popen_options)
        for signum in previous:
            signal.signal(signum, stop)
        if held:
            raise KeyboardInterrupt
        yield process
    except BaseException:
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            wait_until_group_ended(process.pid)
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
