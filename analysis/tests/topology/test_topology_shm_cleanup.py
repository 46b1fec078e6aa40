"""A shared-memory topology run whose harness processes are SIGKILLed: a killed Fast DDS process
unlinks none of its segments in /dev/shm, so `perfgate topology` removes those its dead processes left
(measure.shm: appeared during the run, held by no live process), and records them in metadata.json."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, wait_until
from perfgate import schema as s
from perfgate.measure.shm import SHM_DIR, SHM_PREFIXES, fastdds_shm_files, shm_files_in_use
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
    names = set()
    prefix = f"{SHM_DIR}/"
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/maps").read_text(errors="replace").splitlines():
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].startswith(prefix):
                names.add(fields[5][len(prefix):].removesuffix(" (deleted)"))
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith(prefix):
                    names.add(target[len(prefix):])
    return {name for name in names if name.startswith(SHM_PREFIXES)}


@pytest.mark.parametrize("processes", ["one", "per-node"])
def test_segments_of_sigkilled_shm_harness_processes_are_removed_by_the_run(tmp_path, harness_paths, processes):
    output = tmp_path / "out"
    # a file there before (another run's, leaked or alive, of the same domain's port) is not the run's to remove
    before = fastdds_shm_files()
    run = subprocess.Popen([sys.executable, "-m", "perfgate", "topology", "--topology", str(LIGHT), "--time", "60",
                            "--output", str(output), "--transport", "shm", "--processes", processes],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    theirs: set[str] = set()
    expected = 1 if processes == "one" else 10
    try:
        def mapped() -> bool:
            children = harness_children(run.pid)
            segments = [fastdds_segments_of(pid) for pid in children]
            return len(children) == expected and all(any(not name.startswith("sem.") for name in found)
                                                     for found in segments)
        assert wait_until(mapped, WAIT_LIMIT_S), run.stderr.read() if run.poll() is not None else "no segments"
        children = harness_children(run.pid)
        theirs = set().union(*(fastdds_segments_of(pid) for pid in children)) - before
        assert theirs, "the killed processes made no segment of their own"
        for pid in children:
            os.kill(pid, signal.SIGKILL)
        _, error = run.communicate(timeout=WAIT_LIMIT_S)
        assert run.returncode == s.EXIT_INCOMPLETE, error
        # every segment the killed processes held is gone, but one a live process (another run) shares
        left = {name for name in theirs if (SHM_DIR / name).exists()} - shm_files_in_use()
        assert left == set()
        removed = set(read_topology_metadata(output).removed_shared_memory)
        assert theirs - shm_files_in_use() <= removed and removed  # recorded, each one named
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
        for name in theirs - shm_files_in_use():  # a failed check leaves nothing behind either
            with contextlib.suppress(OSError):
                (SHM_DIR / name).unlink()
