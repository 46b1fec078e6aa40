"""Slow integration test: a real Fast DDS 3.x (master or a release) built by `perfgate build` with Fast
CDR 2 from the commit's own submodule pin, then every sub-experiment through both engines. Outside
the default run; `ci/slow-test.sh` runs it after the 2.9.1 one (docs/build.md "Testing with a real
Fast DDS source"). What it builds:

    PERFGATE_FASTDDS3_SOURCE=DIR          a local Fast DDS 3.x source (a git checkout: its HEAD pins
                                          thirdparty/fastcdr), built with --source; else
    PERFGATE_FASTDDS3_GIT_URL, _COMMIT    --git-url and --commit (default: eProsima's repository, v3.6.2)
    PERFGATE_FASTDDS3_WORKSPACE=WS        the workspace (default: a temporary one, built from scratch)

Fast CDR comes from the URL in the source's .gitmodules; git's url.<base>.insteadOf (for example
through GIT_CONFIG_COUNT/KEY/VALUE) points it at a local copy where no git host is reached.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate import files, upstream
from perfgate import schema as s
from perfgate.fastdds_build import colcon
from perfgate.fastdds_build import git as build_git

pytestmark = pytest.mark.slow

DEFAULT_GIT_URL = "https://github.com/eProsima/Fast-DDS.git"
DEFAULT_COMMIT = "v3.6.2"
HARNESS_SAMPLES = 200


def perfgate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfgate.cli", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("PERFGATE_FASTDDS3_WORKSPACE") or tmp_path_factory.mktemp("workspace3"))
    source = os.environ.get("PERFGATE_FASTDDS3_SOURCE")
    origin = ["--source", source] if source else [
        "--git-url", os.environ.get("PERFGATE_FASTDDS3_GIT_URL") or DEFAULT_GIT_URL,
        "--commit", os.environ.get("PERFGATE_FASTDDS3_COMMIT") or DEFAULT_COMMIT]
    built = perfgate("build", "--workspace", str(folder), *origin, "--junit", str(folder / "build-junit.xml"))
    print(built.stdout[-2000:])
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return folder


def test_the_build_record_names_fast_dds_3_and_its_pinned_fast_cdr(workspace):
    record = json.loads((workspace / s.BUILD_RECORD_FILE).read_text())
    assert record["status"] == s.BUILD_OK
    fastdds = record["fastdds"]
    assert fastdds["package"] == "fastdds" and fastdds["version"].startswith("3.")
    fastcdr = record["dependencies"]["fastcdr"]
    assert fastcdr["from"] == "submodule" and fastcdr["version"].startswith("2.")
    assert fastcdr["commit"] == build_git.run_git(["rev-parse", "HEAD"], workspace / "src" / "fastcdr").stdout.strip()
    assert "-DPERFGATE_FASTDDS_PACKAGE=fastdds" in record["cmake_args"]
    if colcon.cmake_version() >= colcon.NO_WARNING_AS_ERROR_SINCE:
        assert "--compile-no-warning-as-error" in record["cmake_args"]
    # the harness loads the workspace's Fast DDS 3, never the system's 2.x
    library = Path(record["fastdds_library"])
    assert library.name.startswith("libfastdds.so") and library.resolve().is_relative_to(workspace.resolve())
    print(f"Fast DDS {fastdds['version']} ({fastdds.get('commit')}) with Fast CDR {fastcdr['version']}: "
          f"built in {record['duration_s']} s")


def test_the_harness_engine_measures_every_sub_experiment(workspace, tmp_path):
    output = tmp_path / "harness"
    done = perfgate("run", "--workspace", str(workspace), "--output", str(output), "--samples", str(HARNESS_SAMPLES))
    assert done.returncode == 0, done.stderr[-3000:]
    metadata = files.read_metadata(output)
    assert metadata["fastdds"]["package"] == "fastdds"
    outcomes = {sub: entry["outcome"] for sub, entry in metadata["subexperiments"].items()}
    # the ten of the contract (and the plain-socket floors a default run adds), all measured
    assert set(outcomes) == set(s.DEFAULT_SUBEXPERIMENT_NAMES) | set(s.FLOOR_SUBEXPERIMENT_NAMES)
    assert set(outcomes.values()) == {s.OUTCOME_OK}
    for sub in s.DEFAULT_SUBEXPERIMENT_NAMES:
        assert len(files.read_raw(output / s.raw_csv_name(sub))) == HARNESS_SAMPLES * len(s.PAYLOADS)


def test_the_upstream_engine_runs_every_latency_test_the_version_defines(workspace, tmp_path):
    ctest_file = workspace / "build" / "fastdds" / "test" / "performance" / "latency" / "CTestTestfile.cmake"
    measured_by = upstream.subexperiment_tests(upstream.latency_tests(ctest_file.read_text()))
    # 3.3.1 on: <name>_profile, with .security for UDP (TCP is commented out upstream)
    assert measured_by["interprocess_best_effort"] == "performance.latency.interprocess_best_effort_udp_profile"
    assert measured_by["interprocess_reliable_security"] == \
        "performance.latency.interprocess_reliable_udp_profile.security"
    output = tmp_path / "upstream"
    done = perfgate("run", "--engine", "upstream", "--workspace", str(workspace), "--output", str(output))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    metadata = files.read_metadata(output)
    entries = metadata["subexperiments"]
    # by default every one but zero copy, which runs only when named (as with the harness)
    assert measured_by["interprocess_reliable_zero_copy"] == \
        "performance.latency.interprocess_reliable_shm_profile.data_loans_and_sharing"
    assert {sub: entry["test"] for sub, entry in entries.items()} == {
        sub: test for sub, test in measured_by.items() if not s.KNOWN_SUBEXPERIMENTS[sub].zero_copy}
    assert all(entry["outcome"] == s.OUTCOME_OK for entry in entries.values())
    for sub, entry in entries.items():  # their interprocess tests really run two processes in 3.x
        assert entry["latency_test_processes"] == (2 if sub.startswith("interprocess") else 1), sub
    assert sorted(files.raw_files(output)) == sorted(measured_by)
