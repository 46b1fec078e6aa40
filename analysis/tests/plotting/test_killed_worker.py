"""A plot worker killed outright (SIGKILL) leaves no temporary PNG behind: its main process removes
what it left when the pool ends, and a later run removes what a dead run left (issue 14).

Real processes: `perfgate process` drawing the published Fast DDS measurements with two workers,
one of which is stopped while its temporary PNG exists, then killed; and `perfgate history` drawing
a synthetic store of two sub-experiments with two workers, the same way."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from perfgate import files, temporaries
from perfgate import schema as s
from history_synthetic import SUBS as HISTORY_SUBS, write_store
from conftest import wait_until

SOURCES = {"intraprocess_best_effort": "measurements_intraprocess.csv",
           "interprocess_best_effort": "measurements_interprocess.csv"}


def experiment_folder(fastdds_fixtures: Path, folder: Path) -> Path:
    folder.mkdir()
    for sub, name in SOURCES.items():
        files.write_csv(folder / s.raw_csv_name(sub), files.read_raw(fastdds_fixtures / "v193" / name))
    return folder


def temporary_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if temporaries.MARK in p.name)


def perfgate_process(experiment: Path, output=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "perfgate.cli", "process", "--experiment-directory", str(experiment),
                             "--jobs", "2"], stdout=output, stderr=output, text=True)


def kill_a_worker_while_it_writes(command: subprocess.Popen, plots: Path, deadline_s: float = 60.0) -> Path:
    """Stop a worker, and kill it if its temporary PNG exists while it is stopped: it dies mid-write."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and command.poll() is None:
        for path in temporary_files(plots):
            pid = temporaries.writer_pid(path.name)
            if pid is None or pid == command.pid:
                continue
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                continue
            if path.exists():
                os.kill(pid, signal.SIGKILL)
                return path
            os.kill(pid, signal.SIGCONT)
        time.sleep(0.005)
    raise AssertionError("no worker was caught writing a PNG")


@pytest.mark.heavy
def test_a_worker_killed_while_writing_a_png_leaves_no_temporary_file(fastdds_fixtures, tmp_path):
    experiment = experiment_folder(fastdds_fixtures, tmp_path / "experiment")
    command = perfgate_process(experiment)
    killed = kill_a_worker_while_it_writes(command, experiment / s.PLOTS_DIR)
    _, err = command.communicate(timeout=120)
    assert command.returncode == s.EXIT_INCOMPLETE, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"perfgate process: error: {experiment / s.PLOTS_DIR}: a worker process died")
    assert not killed.exists() and temporary_files(experiment) == []
    assert all(png.stat().st_size > 0 for png in (experiment / s.PLOTS_DIR).rglob("*.png"))


def dead_pid() -> int:
    finished = subprocess.Popen(["true"])
    finished.wait()
    return finished.pid


@pytest.mark.heavy
def test_a_later_run_removes_what_a_dead_writer_left_and_keeps_a_live_ones(fastdds_fixtures, tmp_path):
    experiment = experiment_folder(fastdds_fixtures, tmp_path / "experiment")
    plots = experiment / s.PLOTS_DIR / "intraprocess_best_effort"
    plots.mkdir(parents=True)
    left = plots / f".16_bytes_histogram.png{temporaries.MARK}{dead_pid()}-k2j4x.tmp.png"
    left.write_bytes(b"")
    summary_left = experiment / f".{s.summary_csv_name('interprocess_best_effort')}{temporaries.MARK}{dead_pid()}-q.tmp.csv"
    summary_left.write_bytes(b"Bytes,Samp")
    live = plots / f".32_bytes_histogram.png{temporaries.MARK}{os.getpid()}-abc.tmp.png"  # this test's: alive
    live.write_bytes(b"")
    command = perfgate_process(experiment)
    _, err = command.communicate(timeout=120)
    assert command.returncode == s.EXIT_OK, err
    assert not left.exists() and not summary_left.exists()
    assert temporary_files(experiment) == [live]
    summary = pd.read_csv(experiment / s.summary_csv_name("interprocess_best_effort"))
    assert len(summary) == 11


def test_abandoned_picks_dead_writers_of_perfgate_temporaries_only():
    names = [f".a.png{temporaries.MARK}12-x.tmp.png", f".b.csv{temporaries.MARK}34-y.tmp.csv", ".c.png.x1y2.tmp.png",
             "d.png", f"e{temporaries.MARK}12-x.tmp.png"]
    assert temporaries.abandoned(names, lambda pid: pid == 34) == [f".a.png{temporaries.MARK}12-x.tmp.png"]
    assert temporaries.process_alive(os.getpid()) and not temporaries.process_alive(dead_pid())


def start_history_of_two_subexperiments(tmp_path: Path, **popen_options) -> tuple[subprocess.Popen, Path]:
    """`perfgate history` started on a store of two sub-experiments (two plot workers); its plots folder."""
    write_store(tmp_path / "store", 30, 20)
    requirements = tmp_path / "requirements.csv"
    files.write_csv(requirements, pd.DataFrame([{s.EXPERIMENT_TYPE: sub, s.BYTES: 16, s.MEDIAN: 100.0, s.P99: 200.0,
                                                 s.MAX: 900.0} for sub in HISTORY_SUBS[:2]]))
    plots = tmp_path / "plots"
    popen_options = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **popen_options}
    command = subprocess.Popen([sys.executable, "-m", "perfgate.cli", "history", "--requirements", str(requirements),
                                "--experiments-results", str(tmp_path / "store"), "--plots-directory", str(plots)],
                               text=True, **popen_options)
    return command, plots


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="history draws in worker processes only with 2 CPUs or more")
@pytest.mark.heavy
def test_a_history_plot_worker_killed_while_writing_leaves_no_temporary_file(tmp_path):
    command, plots = start_history_of_two_subexperiments(tmp_path)
    killed = kill_a_worker_while_it_writes(command, plots)
    _, err = command.communicate(timeout=120)
    assert command.returncode == s.EXIT_INCOMPLETE, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"perfgate history: error: {plots}: a worker process died")
    assert not killed.exists() and temporary_files(tmp_path) == []
    assert all(png.stat().st_size > 0 for png in plots.rglob("*.png"))


def children_of(pid: int) -> set[int]:
    return {int(child) for task in Path(f"/proc/{pid}/task").iterdir()
            for child in (task / "children").read_text().split()}


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="history draws in worker processes only with 2 CPUs or more")
@pytest.mark.heavy
@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT])
def test_a_history_stopped_while_drawing_ends_its_workers_and_leaves_no_temporary_file(tmp_path, signal_number):
    # SIGTERM's default action killed the main process alone: its two plot workers drew on, orphaned
    command, plots = start_history_of_two_subexperiments(
        tmp_path, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    end = time.monotonic() + 120
    while time.monotonic() < end and command.poll() is None and not list(plots.rglob("*.png")):
        time.sleep(0.01)
    workers = children_of(command.pid)
    assert len(workers) == 2, command.communicate()
    command.send_signal(signal_number)
    _, err = command.communicate(timeout=120)
    assert command.returncode == 130, err
    assert err.strip().splitlines() == ["perfgate history: interrupted"]
    assert not any(alive(pid) for pid in workers)
    assert temporary_files(tmp_path) == []
    drawn = list(plots.rglob("*.png"))
    assert drawn and all(png.stat().st_size > 0 for png in drawn)
    assert len(drawn) < 2 * (4 + 2 * 3)  # stopped: the workers returned early instead of drawing everything


@pytest.mark.heavy
def test_the_plot_workers_of_a_killed_process_die_with_it(fastdds_fixtures, tmp_path):
    """SIGKILL of the main process (no clean-up of its own): its two workers, caught drawing, were
    orphaned and drew on for over a minute (issue 23); the parent-death signal ends them."""
    experiment = experiment_folder(fastdds_fixtures, tmp_path / "experiment")
    command = perfgate_process(experiment, output=subprocess.DEVNULL)  # an orphan would hold a pipe open
    try:
        drawing = lambda: command.poll() is None and len(children_of(command.pid)) == 2 and any(  # noqa: E731
            temporaries.writer_pid(p.name) not in (None, command.pid) for p in temporary_files(experiment))
        assert wait_until(drawing, 60.0), command.poll()
        workers = children_of(command.pid)
    finally:
        command.kill()
        command.wait()
    # a bound for a loaded machine; unkilled, they draw on for a minute or more
    try:
        assert wait_until(lambda: not any(alive(pid) for pid in workers), 20.0), [p for p in workers if alive(p)]
    finally:  # what the assertion found orphaned: not left to draw on
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_worker_whose_parent_is_already_gone_ends_at_once():
    """The race: a parent killed before its worker asked for the parent-death signal left the worker to
    another process, and no signal would ever come; the worker sees it and ends."""
    child = subprocess.run([sys.executable, "-c", "import os; from perfgate import pools; "
                            "pools.die_with_parent(os.getppid() + 1000000); print('survived')"],
                           capture_output=True, text=True, timeout=60)
    assert child.returncode == -signal.SIGKILL and "survived" not in child.stdout


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="history draws in worker processes only with 2 CPUs or more")
@pytest.mark.heavy
def test_the_plot_workers_of_a_killed_history_die_with_it(tmp_path):
    command, plots = start_history_of_two_subexperiments(tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_until(lambda: command.poll() is None and len(children_of(command.pid)) == 2
                          and list(plots.rglob("*.png")), 120.0), command.poll()
        workers = children_of(command.pid)
    finally:
        command.kill()
        command.wait()
    try:
        assert wait_until(lambda: not any(alive(pid) for pid in workers), 20.0), [p for p in workers if alive(p)]
    finally:
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.heavy
def test_what_a_killed_process_and_its_workers_left_the_next_run_removes(fastdds_fixtures, tmp_path):
    """Issue 44: SIGKILL of the main process (its workers die with it) leaves their temporary PNGs, and the
    main process's own, where they were being written; killed at several moments, the next `perfgate
    process` of the experiment removes every one of them as it draws there again."""
    experiment = experiment_folder(fastdds_fixtures, tmp_path / "experiment")
    left = set()
    for delay_s in (0.0, 0.3, 1.0):
        command = perfgate_process(experiment, output=subprocess.DEVNULL)
        try:
            assert wait_until(lambda: command.poll() is not None or temporary_files(experiment), 60.0)
            time.sleep(delay_s)
            left |= set(temporary_files(experiment))
        finally:
            command.kill()
            command.wait()
        left |= set(temporary_files(experiment))
    assert left  # killed while writing: what the next run must remove
    later = perfgate_process(experiment)
    _, err = later.communicate(timeout=300)
    assert later.returncode == s.EXIT_OK, err
    assert temporary_files(experiment) == []


def test_a_worker_whose_main_process_is_killed_removes_the_png_it_was_writing(fastdds_fixtures, tmp_path):
    """Issue 44: SIGKILL of the main process while a worker writes its temporary PNG. The worker, told by the
    parent-death signal, removes that temporary as it ends: nothing of it is left for a later run that may
    never come (only the main process's own temporary can remain, which it could not remove)."""
    experiment = experiment_folder(fastdds_fixtures, tmp_path / "experiment")
    command = perfgate_process(experiment, output=subprocess.DEVNULL)
    caught = None
    try:
        end = time.monotonic() + 60.0
        while caught is None and time.monotonic() < end and command.poll() is None:
            for path in temporary_files(experiment):
                pid = temporaries.writer_pid(path.name)
                if pid is None or pid == command.pid:
                    continue
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)  # held while its temporary exists: it dies mid-write
                    if path.exists():
                        caught = (pid, path)
                        break
                    os.kill(pid, signal.SIGCONT)
        assert caught is not None, command.poll()
    finally:
        command.kill()
        command.wait()
    pid, path = caught
    os.kill(pid, signal.SIGCONT)  # the parent-death signal waits for it
    try:
        assert wait_until(lambda: not alive(pid), 20.0)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not path.exists()
    assert [p for p in temporary_files(experiment) if temporaries.writer_pid(p.name) != command.pid] == []
