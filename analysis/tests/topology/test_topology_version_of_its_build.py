"""A topology run records the Fast DDS of the executable that ran, not of this machine's own harness:
the topology A/B runs each arm's `perfgate-topology` from that arm's build, and a round's metadata.json
named the system's Fast DDS for both arms before."""
from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from conftest import REPO_ROOT
from perfgate import schema as s
from perfgate.topology import run as topology_run

LIGHT = REPO_ROOT / "topologies" / "light.json"


@pytest.mark.fastdds
def test_the_version_recorded_is_that_of_the_build_beside_the_executable(tmp_path, harness_paths):
    build = tmp_path / "other-build" / "bin"
    build.mkdir(parents=True)
    executable = shutil.copy2(harness_paths.build_dir / topology_run.EXECUTABLE, build / topology_run.EXECUTABLE)
    # the latency harness of that build answers `--version` with its Fast DDS: here a build whose headers
    # say 9.8.7 (a script in the harness's place: the topology executable itself is the real one)
    latency = build / "perfgate-latency"
    latency.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 9.8.7\n")
    latency.chmod(0o755)
    plan = topology_run.plan_from_options(
        topology=str(LIGHT), time=1, output=str(tmp_path / "out"), ipc="on", processes="one", transport="udpv4",
        reliability="reliable", sampling=100, late_percentage=20, late_absolute=5000, too_late_percentage=100,
        too_late_absolute=50000, history_depth=10, label="version-test")
    plan = dataclasses.replace(plan, harness=executable, plots=False)
    assert topology_run.measure_topology(plan) == s.EXIT_OK
    metadata = json.loads((tmp_path / "out" / s.METADATA_FILE).read_text())
    assert metadata["fastdds_version"] == "9.8.7" and metadata["harness"] == str(executable)
