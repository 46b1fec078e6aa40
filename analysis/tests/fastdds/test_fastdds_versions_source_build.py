"""Slow integration test: real Fast DDS sources of each maintained line, Fast DDS master (3.x) and the
newest 2.14.x release, built by `perfgate build` with Fast CDR 2 from each commit's own submodule pin,
then every sub-experiment each version defines through both engines. Outside the default run;
`ci/slow-test.sh` runs it after the 2.9.1 one (docs/build.md "Testing with a real Fast DDS source").

Each version is built from eProsima's repository by default (master; v2.14.6) or as the environment
says, <V> being MASTER or 2_14:

    PERFGATE_FASTDDS_<V>_SOURCE=DIR        a local source (a git checkout: its HEAD pins thirdparty/fastcdr),
                                           built with --source; else
    PERFGATE_FASTDDS_<V>_GIT_URL, _COMMIT  --git-url and --commit
    PERFGATE_FASTDDS_<V>_WORKSPACE=WS      the workspace (default: a temporary one, built from scratch;
                                           in a kept one a second run's colcon finds nothing to rebuild)
    PERFGATE_FASTCDR_URL=URL               --fastcdr-url: where the pinned Fast CDR commit is fetched
                                           (default: the URL in the source's .gitmodules)

`pytest -k master` or `-k 2_14` runs one version.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from perfgate import files
from perfgate.measure import upstream
from perfgate import schema as s
from perfgate.fastdds import colcon
from perfgate.fastdds import git as build_git

pytestmark = pytest.mark.slow

DEFAULT_GIT_URL = "https://github.com/eProsima/Fast-DDS.git"
HARNESS_SAMPLES = 200
SHM_SUBS = ("interprocess_best_effort_shm", "interprocess_reliable_shm")
ZERO_COPY_SUBS = ("interprocess_best_effort_zero_copy", "interprocess_reliable_zero_copy")


@dataclass(frozen=True)
class Version:
    key: str  # <V> of the environment variables
    commit: str  # --commit by default
    package: str
    major: int
    # the latency tests it defines that perfgate maps, as its CMake names them (written out here from
    # its test/performance/latency/CMakeLists.txt, not computed by the engine under test)
    tests: dict[str, str]
    interprocess_processes: int  # how many processes their "interprocess" tests start


def _tests(pattern: str, subs: dict[str, str]) -> dict[str, str]:
    return {sub: "performance.latency." + pattern.format(name) + variant for sub, (name, variant) in subs.items()}


# 3.3.1 on: <name>_profile, with .security (UDP and SHM) and shared-memory data-sharing/loan variants;
# TCP is commented out in their CMakeLists.txt
MASTER = Version("MASTER", "master", "fastdds", 3, _tests("{}_profile", {
    "intraprocess_best_effort": ("intraprocess_best_effort", ""),
    "intraprocess_reliable": ("intraprocess_reliable", ""),
    "interprocess_best_effort": ("interprocess_best_effort_udp", ""),
    "interprocess_best_effort_security": ("interprocess_best_effort_udp", ".security"),
    "interprocess_reliable": ("interprocess_reliable_udp", ""),
    "interprocess_reliable_security": ("interprocess_reliable_udp", ".security"),
    "interprocess_best_effort_shm": ("interprocess_best_effort_shm", ""),
    "interprocess_reliable_shm": ("interprocess_reliable_shm", ""),
    "interprocess_best_effort_zero_copy": ("interprocess_best_effort_shm", ".data_loans_and_sharing"),
    "interprocess_reliable_zero_copy": ("interprocess_reliable_shm", ".data_loans_and_sharing"),
}), interprocess_processes=2)
# 2.10 to 3.3.0: latency_<name>_profile, no variants (so no security), "interprocess" in one process
V2_14 = Version("2_14", "v2.14.6", "fastrtps", 2, _tests("latency_{}_profile", {
    "intraprocess_best_effort": ("intraprocess_best_effort", ""),
    "intraprocess_reliable": ("intraprocess_reliable", ""),
    "interprocess_best_effort": ("interprocess_best_effort_udp", ""),
    "interprocess_reliable": ("interprocess_reliable_udp", ""),
    "interprocess_best_effort_shm": ("interprocess_best_effort_shm", ""),
    "interprocess_reliable_shm": ("interprocess_reliable_shm", ""),
}), interprocess_processes=1)
VERSIONS = (MASTER, V2_14)


def perfgate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfgate.cli", *args], capture_output=True, text=True)


def setting(version: Version, name: str) -> str | None:
    return os.environ.get(f"PERFGATE_FASTDDS_{version.key}_{name}") or None


@pytest.fixture(scope="module", params=VERSIONS, ids=lambda v: v.key.lower())
def version(request) -> Version:
    return request.param


@pytest.fixture(scope="module")
def workspace(version, tmp_path_factory) -> Path:
    folder = Path(setting(version, "WORKSPACE") or tmp_path_factory.mktemp(f"workspace-{version.key}"))
    source = setting(version, "SOURCE")
    origin = ["--source", source] if source else ["--git-url", setting(version, "GIT_URL") or DEFAULT_GIT_URL,
                                                  "--commit", setting(version, "COMMIT") or version.commit]
    fastcdr = ["--fastcdr-url", os.environ["PERFGATE_FASTCDR_URL"]] if os.environ.get("PERFGATE_FASTCDR_URL") else []
    # --keep-installs 0: colcon always runs (a kept workspace: it finds nothing to rebuild), so the
    # workspace's record is its build tree's, which the upstream engine needs (a reused kept install
    # it refuses)
    built = perfgate("build", "--workspace", str(folder), *origin, *fastcdr, "--keep-installs", "0",
                     "--junit", str(folder / "build-junit.xml"))
    print(built.stdout[-2000:])
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return folder


def test_the_build_record_names_the_version_and_its_pinned_fast_cdr(version, workspace):
    record = json.loads((workspace / s.BUILD_RECORD_FILE).read_text())
    assert record["status"] == s.BUILD_OK
    fastdds = record["fastdds"]
    assert fastdds["package"] == version.package and fastdds["version"].startswith(f"{version.major}.")
    if version is V2_14:
        assert fastdds["version"].startswith("2.14.")
    fastcdr = record["dependencies"]["fastcdr"]
    assert fastcdr["from"] == "submodule" and fastcdr["version"].startswith("2.")
    assert fastcdr["commit"] == build_git.run_git(["rev-parse", "HEAD"], workspace / "src" / "fastcdr").stdout.strip()
    assert f"-DPERFGATE_FASTDDS_PACKAGE={version.package}" in record["cmake_args"]
    if colcon.cmake_version() >= colcon.NO_WARNING_AS_ERROR_SINCE:
        assert "--compile-no-warning-as-error" in record["cmake_args"]
    # the harness loads the workspace's Fast DDS, never the system's (Debian's 2.9.1 libfastrtps)
    library = Path(record["fastdds_library"])
    assert library.name.startswith(f"lib{version.package}.so") and library.resolve().is_relative_to(workspace.resolve())
    print(f"Fast DDS {fastdds['version']} ({fastdds.get('commit')}) with Fast CDR {fastcdr['version']}: "
          f"built in {record['duration_s']} s")


def harness_run(workspace: Path, output: Path, *args: str) -> dict:
    done = perfgate("run", "--workspace", str(workspace), "--output", str(output), "--samples", str(HARNESS_SAMPLES),
                    *args)
    assert done.returncode == 0, done.stderr[-3000:]
    metadata = files.read_metadata(output)
    outcomes = {sub: entry["outcome"] for sub, entry in metadata["subexperiments"].items()}
    assert set(outcomes.values()) == {s.OUTCOME_OK}, outcomes
    for sub in outcomes:
        if not s.KNOWN_SUBEXPERIMENTS[sub].is_floor:
            assert len(files.read_raw(output / s.raw_csv_name(sub))) == HARNESS_SAMPLES * len(s.PAYLOADS), sub
    return metadata


def test_the_harness_engine_measures_the_ten_and_the_floors(version, workspace, tmp_path):
    metadata = harness_run(workspace, tmp_path / "harness")
    assert metadata["fastdds"]["package"] == version.package
    assert set(metadata["subexperiments"]) == set(s.DEFAULT_SUBEXPERIMENT_NAMES) | set(s.FLOOR_SUBEXPERIMENT_NAMES)


def test_the_harness_engine_measures_shared_memory_and_zero_copy_when_named(version, workspace, tmp_path):
    named = SHM_SUBS + ZERO_COPY_SUBS
    metadata = harness_run(workspace, tmp_path / "extras", "--subexperiments", ",".join(named))
    assert set(metadata["subexperiments"]) == set(named)


def test_the_upstream_engine_runs_every_latency_test_the_version_defines(version, workspace, tmp_path):
    ctest_file = workspace / "build" / version.package / "test" / "performance" / "latency" / "CTestTestfile.cmake"
    assert upstream.subexperiment_tests(upstream.latency_tests(ctest_file.read_text())) == version.tests
    output = tmp_path / "upstream"
    done = perfgate("run", "--engine", "upstream", "--workspace", str(workspace), "--output", str(output))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    entries = files.read_metadata(output)["subexperiments"]
    # by default every one but zero copy, which runs only when named (as with the harness)
    expected = {sub: test for sub, test in version.tests.items() if not s.KNOWN_SUBEXPERIMENTS[sub].zero_copy}
    assert {sub: entry["test"] for sub, entry in entries.items()} == expected
    assert all(entry["outcome"] == s.OUTCOME_OK for entry in entries.values())
    for sub, entry in entries.items():
        assert entry["latency_test_processes"] == (version.interprocess_processes if sub.startswith("interprocess")
                                                   else 1), sub
    assert sorted(files.raw_files(output)) == sorted(expected)


def test_the_upstream_engine_runs_zero_copy_when_named_where_the_version_defines_it(version, workspace, tmp_path):
    output = tmp_path / "zero-copy"
    done = perfgate("run", "--engine", "upstream", "--workspace", str(workspace), "--output", str(output),
                    "--subexperiments", ",".join(ZERO_COPY_SUBS))
    if not set(ZERO_COPY_SUBS) <= set(version.tests):  # 2.10 to 3.3.0 define no shared-memory variant
        assert done.returncode == s.EXIT_USAGE and "defines no" in done.stderr, done.stderr
        assert not output.exists()
        return
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    entries = files.read_metadata(output)["subexperiments"]
    assert {sub: entry["test"] for sub, entry in entries.items()} == {sub: version.tests[sub] for sub in ZERO_COPY_SUBS}
    assert all(entry["outcome"] == s.OUTCOME_OK and entry["latency_test_processes"] == 2 for entry in entries.values())
    assert sorted(files.raw_files(output)) == sorted(ZERO_COPY_SUBS)
