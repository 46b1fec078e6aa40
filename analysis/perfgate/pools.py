"""The one way perfgate runs work in worker processes (plots, raw files, history).

A CI job that is cancelled sends SIGINT or SIGTERM, often to the whole process group. Workers
ignore both: the main process decides (the gate turns them into a stop that still writes its
reports), cancels what has not started, and waits only for the tasks under way, so no worker is
orphaned and no half-written plot is left. A worker whose main process died outright (SIGKILL)
ends when its task queue closes.
"""
from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor


def _ignore_stop_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


@contextlib.contextmanager
def worker_pool(workers: int, mp_context=None) -> Iterator[ProcessPoolExecutor]:
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp_context, initializer=_ignore_stop_signals)
    try:
        yield pool
    except BaseException:  # KeyboardInterrupt (SIGINT, or SIGTERM in the gate) included
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
