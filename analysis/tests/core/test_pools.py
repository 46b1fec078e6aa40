"""Worker pools on a stop: what has not started is cancelled, the workers end, none is orphaned,
and a stop signal sent to the workers (a cancelled CI job signals the whole group) is left to the
main process."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from perfgate.pools import stop_requested, worker_pool

TASKS = 40


def slow_task(folder: str, index: int) -> int:
    time.sleep(0.2)
    Path(folder, f"done-{index}").write_text("")
    return os.getpid()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"


def test_a_stop_in_the_main_process_cancels_the_rest_and_ends_the_workers(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with worker_pool(2) as pool:
            futures = [pool.submit(slow_task, str(tmp_path), i) for i in range(TASKS)]
            worker_pid = futures[0].result()
            workers = {p.pid for p in pool._processes.values()}  # noqa: SLF001 - to check they end
            raise KeyboardInterrupt  # what SIGINT, or SIGTERM in the gate, raises here
    finished = len(list(tmp_path.glob("done-*")))
    assert 1 <= finished < TASKS  # the tasks not yet started were cancelled, not run out
    assert worker_pid in workers and not any(alive(pid) for pid in workers)


def test_workers_leave_stop_signals_to_the_main_process(tmp_path):
    with worker_pool(2) as pool:
        futures = [pool.submit(slow_task, str(tmp_path), i) for i in range(6)]
        futures[0].result()
        for pid in {p.pid for p in pool._processes.values()}:  # noqa: SLF001
            os.kill(pid, signal.SIGTERM)
            os.kill(pid, signal.SIGINT)
        assert len({future.result() for future in futures}) >= 1  # every task finished, no broken pool
    assert len(list(tmp_path.glob("done-*"))) == 6


def many_files_task(folder: str, count: int) -> int:
    """A long task as the plot tasks are: many files, asking between two whether to stop."""
    written = 0
    for index in range(count):
        if stop_requested():
            break
        time.sleep(0.05)
        Path(folder, f"file-{index}").write_text("")
        written += 1
    return written


def test_a_long_task_under_way_returns_early_when_the_main_process_stops(tmp_path):
    assert not stop_requested()  # the main process is no worker
    with pytest.raises(KeyboardInterrupt):
        with worker_pool(2) as pool:
            futures = [pool.submit(many_files_task, str(tmp_path), TASKS) for _ in range(2)]
            while not list(tmp_path.glob("file-*")):
                time.sleep(0.01)
            raise KeyboardInterrupt
    assert all(future.done() for future in futures)
    assert sum(future.result() for future in futures) < TASKS  # neither ran to the end
    (tmp_path / "whole").mkdir()
    with worker_pool(2) as pool:  # a pool that is not stopped runs its tasks whole
        assert pool.submit(many_files_task, str(tmp_path / "whole"), 3).result() == 3
