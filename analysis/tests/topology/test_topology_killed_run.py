"""`perfgate topology` killed by SIGKILL, its scratch folder's watcher killed too (what no clean-up
survives): its harness processes follow it, and the next topology run removes the folder it left
(measure.scratch), as for the other commands."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT, processes_working_in, wait_until
from perfgate.measure import scratch

LIGHT = REPO_ROOT / "topologies" / "light.json"
START_LIMIT_S = 120.0  # for the run to get going on a loaded machine; not a timing assertion
FOLLOW_LIMIT_S = 20.0


def topology_run(output: Path, temporary: Path, time_s: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "perfgate", "topology", "--topology", str(LIGHT), "--time", time_s,
                             "--output", str(output), "--processes", "per-node"],
                            env=dict(os.environ, TMPDIR=str(temporary)), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def watchers_of(folder: Path) -> list[int]:
    """The watcher processes (measure.watcher) that would remove `folder`."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(arg.endswith(b"watcher.py") for arg in argv) and os.fsencode(folder.resolve()) in argv:
            found.append(int(entry.name))
    return found


def test_a_killed_topology_runs_scratch_folder_is_removed_by_the_next_run(tmp_path, harness_paths):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    killed = topology_run(tmp_path / "killed", temporary, "60")
    try:
        assert wait_until(lambda: len(processes_working_in(temporary)) >= 3, START_LIMIT_S), \
            killed.stderr.read() if killed.poll() is not None else "not running"
        folders = list(temporary.glob(f"{scratch.PREFIX}{killed.pid}-topology-*"))
        assert len(folders) == 1, sorted(temporary.iterdir())
        watchers = watchers_of(folders[0])
        assert len(watchers) == 1
        os.kill(watchers[0], signal.SIGKILL)  # no one left to clean up after the run
    finally:
        killed.kill()
        killed.wait()
        killed.stderr.close()
    assert wait_until(lambda: processes_working_in(temporary) == {}, FOLLOW_LIMIT_S), processes_working_in(temporary)
    assert folders[0].is_dir()  # left behind: its owner and its watcher are dead

    later = topology_run(tmp_path / "later", temporary, "1")
    _, stderr = later.communicate(timeout=300)
    assert later.returncode == 0, stderr
    assert not folders[0].exists()
    assert not list(temporary.glob(f"{scratch.PREFIX}*"))  # the later run's own folder is removed as it ends
