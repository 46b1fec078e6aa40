"""The one way perfgate runs work in worker processes (plots, raw files, history).

A CI job that is cancelled sends SIGINT or SIGTERM, often to the whole process group. Workers
ignore both: the main process decides (the gate turns them into a stop that still writes its
reports), cancels what has not started, and waits only for the tasks under way, so no worker is
orphaned and no half-written plot is left. A worker whose main process died outright (SIGKILL, the
OOM killer) is told by the system at once (the parent-death signal SIGUSR1, set as it starts): it removes
the temporary file it is writing and ends; it would otherwise draw on, orphaned, until its task ended, and
leave its temporary where no later run might write again. A worker killed outright itself leaves its
temporary file, which the main process removes when the pool ends (`output`), or the next writer there.
The parent-death signal follows the thread that started the worker: a pool is used from the thread
that made it (the main thread), which outlives it.
"""
from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from . import temporaries
from .errors import IncompleteError


_stop = None  # in a worker: the pool's stop event (set by the main process when it stops)


PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when its parent dies


def die_with_parent(parent: int, signal_number: int = signal.SIGKILL) -> None:
    """`signal_number` (workers ignore SIGTERM and SIGINT) when the process `parent` dies, however it dies. A
    parent already gone before the request was made left this process to another: it ends at once."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux's C library: the old behaviour
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal_number, 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal_number)


def _parent_died(signal_number, frame) -> None:
    """A worker's main process is gone: nobody will rename or remove what it writes. Remove it, end now."""
    temporaries.remove_own()
    os._exit(128 + signal_number)


def _start_worker(stop, parent: int) -> None:
    global _stop
    _stop = stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGUSR1, _parent_died)
    die_with_parent(parent, signal.SIGUSR1)


def stop_requested() -> bool:
    """In a worker: whether the main process is stopping. A task that draws many files asks between
    two of them and returns early, so that a stopped gate waits for one plot, not for a whole batch
    (a sub-experiment's 37 history plots took 15 s under load: past a CI job's grace period)."""
    return _stop is not None and _stop.is_set()


@contextlib.contextmanager
def worker_pool(workers: int, mp_context=None, *, output: Path | None = None) -> Iterator[ProcessPoolExecutor]:
    """`output`: the folder the workers write into; when the pool ends, however it ends, the
    temporary files of workers that died there (killed while writing) are removed. A worker that
    died is IncompleteError naming that folder: one line and exit 3, not a traceback."""
    stop = (mp_context or multiprocessing.get_context()).Event()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp_context, initializer=_start_worker,
                               initargs=(stop, os.getpid()))
    try:
        try:
            yield pool
        except BaseException:  # KeyboardInterrupt (SIGINT, or SIGTERM in the gate) included
            stop.set()  # tasks under way return at their next stop_requested()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
    except BrokenProcessPool as error:
        raise IncompleteError(f"a worker process died before its work was done ({error}); "
                              "its temporary files were removed", output) from None
    finally:
        if output is not None:
            temporaries.remove_abandoned(Path(output), recursive=True)
