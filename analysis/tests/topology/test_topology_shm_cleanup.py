"""A shared-memory topology run whose harness processes are SIGKILLed: a killed Fast DDS process
unlinks none of its segments in /dev/shm, so `perfgate topology` removes those its dead processes left
(measure.shm: appeared during the run, held by no live process), and records them in metadata.json."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import REPO_ROOT, wait_until
from perfgate import schema as s
from perfgate.measure.shm import SHM_DIR, SHM_PREFIXES, fastdds_shm_files, shm_files_held_by, shm_files_in_use
from perfgate.topology.metadata import read_topology_metadata

LIGHT = REPO_ROOT / "topologies" / "light.json"
WAIT_LIMIT_S = 120.0  # for the run to get going on a loaded machine; never a timing the test asserts


def harness_children(parent: int) -> list[int]:
    """The perfgate-topology processes `parent` started (its children by /proc's PPid)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            status = (entry / "status").read_text()
            fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
            if fields.get("PPid", "").strip() == str(parent) and fields.get("Name", "").strip().startswith("perfgate-topo"):
                found.append(int(entry.name))
    return found


def fastdds_segments_of(pid: int) -> set[str]:
    """The Fast DDS files under /dev/shm a process has mapped or open."""
    return {name for name in shm_files_held_by(pid) if name.startswith(SHM_PREFIXES)}


class TopologyRun:
    """`perfgate topology` on the shm transport in the background, its stdout read as it comes."""

    def __init__(self, output: Path, processes: str, time_s: int):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "perfgate", "topology", "--topology", str(LIGHT), "--time", str(time_s),
             "--output", str(output), "--transport", "shm", "--processes", processes],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.error = ""
        self._readers = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip())

    def _read_stderr(self) -> None:
        self.error = self.process.stderr.read()

    def ready(self) -> bool:
        """Whether the run said all its processes are ready (so it has looked at their segments)."""
        return any(line.endswith(" processes ready") for line in self.lines)

    def wait(self) -> int:
        code = self.process.wait(timeout=WAIT_LIMIT_S)
        for reader in self._readers:
            reader.join(timeout=WAIT_LIMIT_S)
        return code

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def segments(self) -> set[str]:
        """The Fast DDS files its harness processes hold now."""
        return set().union(*(fastdds_segments_of(pid) for pid in harness_children(self.process.pid)))


def runs_no_more(pid: int) -> bool:
    """Stopped, or already dead (the run kills a process stopped for a second)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("T", "t", "Z", "X")


def kill_all_at_once(pids: list[int]) -> None:
    """SIGKILL the processes as one: all stopped first. Killed one by one, a process still running sees
    a killed peer's port as a zombie and Fast DDS removes that port's files itself (SharedMemGlobal's
    zombie check), so the run would find nothing of that port to remove or record."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    assert wait_until(lambda: all(runs_no_more(pid) for pid in pids), WAIT_LIMIT_S)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def remove_leftovers(names: set[str]) -> None:
    """A failed check leaves nothing behind either."""
    for name in names - shm_files_in_use():
        with contextlib.suppress(OSError):
            (SHM_DIR / name).unlink()


@pytest.mark.parametrize("processes", ["one", "per-node"])
def test_segments_of_sigkilled_shm_harness_processes_are_removed_by_the_run(tmp_path, harness_paths, processes):
    output = tmp_path / "out"
    # a file there before (another run's, leaked or alive, of the same domain's port) is not the run's to remove
    before = fastdds_shm_files()
    run = TopologyRun(output, processes, 60)
    theirs: set[str] = set()
    expected = 1 if processes == "one" else 10
    try:
        def mapped() -> bool:
            children = harness_children(run.process.pid)
            segments = [fastdds_segments_of(pid) for pid in children]
            return run.ready() and len(children) == expected and all(
                any(not name.startswith("sem.") for name in found) for found in segments)
        assert wait_until(mapped, WAIT_LIMIT_S), run.error if run.process.poll() is not None else "no segments"
        children = harness_children(run.process.pid)
        theirs = run.segments() - before
        assert theirs, "the killed processes made no segment of their own"
        kill_all_at_once(children)
        assert run.wait() == s.EXIT_INCOMPLETE, run.error
        # every segment the killed processes held is gone, but one a live process (another run) shares
        left = {name for name in theirs if (SHM_DIR / name).exists()} - shm_files_in_use()
        assert left == set()
        removed = set(read_topology_metadata(output).removed_shared_memory)
        assert theirs - shm_files_in_use() <= removed and removed  # recorded, each one named
    finally:
        run.stop()
        remove_leftovers(theirs)


def test_a_run_never_removes_what_another_runs_dead_processes_left(tmp_path, harness_paths):
    """Run B's processes are killed while run A measures, and B is held (SIGSTOP) until A has ended
    and cleaned up: B's files appeared during A and no live process holds them, yet they are not A's.
    A leaves them; B, resumed, removes them and names them."""
    before = fastdds_shm_files()
    first = TopologyRun(tmp_path / "a", "one", 6)
    second: TopologyRun | None = None
    theirs: set[str] = set()
    try:
        assert wait_until(first.ready, WAIT_LIMIT_S), first.error
        second = TopologyRun(tmp_path / "b", "one", 60)
        assert wait_until(second.ready, WAIT_LIMIT_S), second.error
        theirs = second.segments() - before
        assert theirs
        os.kill(second.process.pid, signal.SIGSTOP)
        for pid in harness_children(second.process.pid):
            os.kill(pid, signal.SIGKILL)
        assert first.wait() == 0, first.error
        assert not set(read_topology_metadata(tmp_path / "a").removed_shared_memory) & theirs
        assert {name for name in theirs if (SHM_DIR / name).exists()} == theirs  # all still there, B's to remove
        os.kill(second.process.pid, signal.SIGCONT)
        assert second.wait() == s.EXIT_INCOMPLETE, second.error
        assert {name for name in theirs if (SHM_DIR / name).exists()} - shm_files_in_use() == set()
        assert theirs - shm_files_in_use() <= set(read_topology_metadata(tmp_path / "b").removed_shared_memory)
    finally:
        for run in (first, second):
            if run is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(run.process.pid, signal.SIGCONT)
                run.stop()
        remove_leftovers(theirs)
