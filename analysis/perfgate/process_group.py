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
from contextlib import contextmanager
from typing import Iterator


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
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
