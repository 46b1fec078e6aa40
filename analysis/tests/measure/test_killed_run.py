"""`perfgate run` killed by SIGKILL (no clean-up of its own runs): its harness processes follow it,
and the DDS Security keys it made live only in RAM, until the next run removes them."""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import live_processes_of, wait_until
from perfgate import files
from perfgate.measure import scratch
from perfgate import schema as s

WAIT_LIMIT_S = 60.0  # for the run to get going on a loaded machine; not a timing assertion
# a bound for a loaded machine, below the 25 s after which a publisher whose peer is gone gives up on
# its own: within it, only the parent-death signal ends the harness
FOLLOW_LIMIT_S = 20.0


def test_abandoned_scratch_folders_are_the_ones_whose_owner_is_gone():
    names = [f"{scratch.PREFIX}100-run-abc", f"{scratch.PREFIX}200-ab-def", "perfgate-domains", "fastrtps_port7400"]
    assert scratch.abandoned(names, alive={200}) == [f"{scratch.PREFIX}100-run-abc"]
    assert scratch.abandoned(names, alive={100, 200}) == []


def perfgate_run(output: Path, harness: Path, *options: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "perfgate.cli", "run", "--output", str(output),
                             "--harness", str(harness), *options],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def measuring_security_run(harness: Path, output: Path) -> tuple[subprocess.Popen, str]:
    """A long run of a DDS Security sub-experiment, once both its harness processes measure (its keys
    made): the run and its id. A run that never gets there is killed and the test fails."""
    run = perfgate_run(output, harness, "--subexperiments", "interprocess_reliable_security", "--payloads", "16",
                       "--samples", "1000000")

    def measuring() -> bool:
        if not (output / s.METADATA_FILE).exists():
            return False
        return len(live_processes_of(files.read_metadata(output)["run_id"])) == 2

    try:
        assert wait_until(measuring, WAIT_LIMIT_S), run.stderr.read() if run.poll() is not None else "not measuring"
    except BaseException:
        run.kill()
        run.wait()
        raise
    return run, files.read_metadata(output)["run_id"]


@pytest.mark.fastdds
def test_a_killed_run_leaves_no_harness_and_its_keys_only_in_ram_until_the_next_run(harness_paths, tmp_path):
    base = scratch.root() or Path(tempfile.gettempdir())
    killed, run_id = measuring_security_run(harness_paths.latency, tmp_path / "killed")
    try:
        keys = list(base.glob(f"{scratch.PREFIX}{killed.pid}-run-*/*/security/*key*"))
        assert keys, f"no key files under {base}"  # (another test's run may remove them once we are dead)
    finally:
        killed.kill()
        killed.wait()

    assert wait_until(lambda: live_processes_of(run_id) == [], FOLLOW_LIMIT_S), live_processes_of(run_id)
    if base != Path(tempfile.gettempdir()):  # nothing of it on the disk-backed temporary folder
        assert not list(Path(tempfile.gettempdir()).glob(f"{scratch.PREFIX}{killed.pid}-*"))

    later = perfgate_run(tmp_path / "later", harness_paths.latency, "--subexperiments", "interprocess_best_effort",
                         "--payloads", "16", "--samples", "20")
    _, stderr = later.communicate(timeout=300)
    assert later.returncode == 0, stderr
    assert not list(base.glob(f"{scratch.PREFIX}{killed.pid}-*"))
    assert not any(key.exists() for key in keys)


@pytest.mark.fastdds
def test_a_killed_runs_keys_and_harness_are_gone_within_moments_without_another_run(harness_paths, tmp_path):
    """Issue 23: the keys stayed in RAM until the next run started; the scratch folder's watcher removes
    them, and kills any harness process of the run left, as soon as the run is dead."""
    base = scratch.root() or Path(tempfile.gettempdir())
    killed, run_id = measuring_security_run(harness_paths.latency, tmp_path / "killed")
    try:
        folders = list(base.glob(f"{scratch.PREFIX}{killed.pid}-run-*"))
        assert len(folders) == 1 and list(folders[0].glob("*/security/*key*")), f"no key files under {base}"
    finally:
        killed.kill()
        killed.wait()
        killed.stderr.close()
    assert wait_until(lambda: not folders[0].exists(), FOLLOW_LIMIT_S), sorted(folders[0].rglob("*"))
    assert wait_until(lambda: live_processes_of(run_id) == [], FOLLOW_LIMIT_S), live_processes_of(run_id)
