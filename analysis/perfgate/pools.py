"""The one way perfgate runs work in worker processes (plots, raw files, history).

A CI job that is cancelled sends SIGINT or SIGTERM, often to the whole process group. Workers
ignore both: the main process decides (the gate turns them into a stop that still writes its
reports), cancels what has not started, and waits only for the tasks under way, so no worker is
orphaned and no half-written plot is left. A worker whose main process died outright (SIGKILL)
ends when its task queue closes; a worker killed outright leaves its temporary file, which the main
process removes when the pool ends (`output`), or the next writer in that folder.
"""
from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from . import temporaries
from .errors import IncompleteError


def _ignore_stop_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


@contextlib.contextmanager
def worker_pool(workers: int, mp_context=None, *, output: Path | None = None) -> Iterator[ProcessPoolExecutor]:
    """`output`: the folder the workers write into; when the pool ends, however it ends, the
    temporary files of workers that died there (killed while writing) are removed. A worker that
    died is IncompleteError naming that folder: one line and exit 3, not a traceback."""
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp_context, initializer=_ignore_stop_signals)
    try:
        try:
            yield pool
        except BaseException:  # KeyboardInterrupt (SIGINT, or SIGTERM in the gate) included
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
    except BrokenProcessPool as error:
        raise IncompleteError(f"a worker process died before its work was done ({error}); "
                              "its temporary files were removed", output) from None
    finally:
        if output is not None:
            temporaries.remove_abandoned(Path(output), recursive=True)
