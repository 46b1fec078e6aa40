"""Slow integration test: a real Fast DDS source (Debian's 2.9.1) built with colcon by `perfgate build`,
then two sub-experiments through both engines. Outside the default run; run it with

    ci/slow-test.sh          (installs the build dependencies, fetches the source, ~12 min on 2 cores)

which sets PERFGATE_FASTDDS_SOURCE (the source folder) and PERFGATE_FASTDDS_WORKSPACE (a workspace
it built from that source while timing the first build and a rebuild). Without the workspace the
test builds one itself; without the source it fails, saying how to get one.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from junitparser import JUnitXml

from perfgate import files
from perfgate import schema as s
from perfgate.measure import platform_info, upstream

pytestmark = pytest.mark.slow

SUBS = ["intraprocess_best_effort", "interprocess_best_effort"]
HARNESS_SAMPLES = 1000


def perfgate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfgate.cli", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def source() -> Path:
    folder = os.environ.get("PERFGATE_FASTDDS_SOURCE")
    assert folder, "PERFGATE_FASTDDS_SOURCE is not set: run ci/slow-test.sh (it fetches Debian's Fast DDS source)"
    assert (Path(folder) / "CMakeLists.txt").is_file(), f"{folder} is not a Fast DDS source"
    return Path(folder)


@pytest.fixture(scope="module")
def workspace(source, tmp_path_factory) -> Path:
    folder = Path(os.environ.get("PERFGATE_FASTDDS_WORKSPACE") or tmp_path_factory.mktemp("workspace"))
    # an up-to-date workspace makes this a quick no-op build; an empty one a full build
    built = perfgate("build", "--workspace", str(folder), "--source", str(source),
                     "--junit", str(folder / "build-junit.xml"))
    assert built.returncode == 0, built.stderr[-3000:]
    return folder


def test_the_build_record_names_what_was_built(workspace, source):
    record = json.loads((workspace / s.BUILD_RECORD_FILE).read_text())
    assert record["status"] == s.BUILD_OK
    fastdds = record["fastdds"]
    assert (fastdds["package"], fastdds["version"], fastdds["kind"]) == ("fastrtps", "2.9.1", "local")
    assert fastdds["commit"] is None  # Debian's source is no git checkout
    assert fastdds["source_path"] == str(source.resolve())
    assert {"-DCMAKE_BUILD_TYPE=Release", "-DSECURITY=ON", "-DPERFORMANCE_TESTS=ON"} <= set(record["cmake_args"])
    assert record["ccache"]["enabled"] is True
    assert record["dependencies"]["fastcdr"] == {"from": "system", "version": "1.0.26"}
    assert record["dependencies"]["foonathan_memory"]["from"] == "system"
    # the harness loads the workspace's Fast DDS, not the system package
    assert Path(record["fastdds_library"]).resolve().is_relative_to(workspace / "install")
    assert Path(record["harness"]).is_file()
    assert (workspace / "build" / "fastrtps" / "test" / "performance" / "latency" / "LatencyTest").is_file()
    suites = list(JUnitXml.fromfile(str(workspace / "build-junit.xml")))
    cases = [case for suite in suites for case in suite]
    assert [case.name for case in cases] == [s.BUILD_TESTCASE] and cases[0].is_passed


def test_a_rebuild_compiles_only_the_touched_file(workspace, source):
    objects = workspace / "build" / "fastrtps" / "src" / "cpp" / "CMakeFiles" / "fastrtps.dir"
    touched_object = next(objects.rglob("ParticipantProxyData.cpp.o"))
    untouched_object = next(objects.rglob("StatefulWriter.cpp.o"))
    before = {p: p.stat().st_mtime_ns for p in (touched_object, untouched_object)}
    os.utime(source / "src" / "cpp" / "rtps" / "builtin" / "data" / "ParticipantProxyData.cpp")
    rebuilt = perfgate("build", "--workspace", str(workspace), "--source", str(source))
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    assert touched_object.stat().st_mtime_ns > before[touched_object]
    assert untouched_object.stat().st_mtime_ns == before[untouched_object]
    record = json.loads((workspace / s.BUILD_RECORD_FILE).read_text())
    assert record["fastdds"]["mirrored"] == {"copied": 1, "removed": 0}
    print(f"rebuild after touching ParticipantProxyData.cpp: {record['duration_s']} s")


def test_the_harness_engine_measures_the_built_fastdds(workspace, tmp_path):
    output = tmp_path / "harness"
    done = perfgate("run", "--workspace", str(workspace), "--output", str(output), "--subexperiments", ",".join(SUBS),
                    "--samples", str(HARNESS_SAMPLES))
    assert done.returncode == 0, done.stderr[-3000:]
    for sub in SUBS:
        raw = files.read_raw(output / s.raw_csv_name(sub))
        assert len(raw) == HARNESS_SAMPLES * len(s.PAYLOADS)
        assert list(raw[s.PAYLOAD].unique()) == list(s.PAYLOADS)
    metadata = files.read_metadata(output)
    assert metadata["latency_definition"] == s.ROUND_TRIP
    fastdds = metadata["fastdds"]
    assert (fastdds["version"], fastdds["source"], fastdds["package"]) == ("2.9.1", s.FASTDDS_SOURCE_COLCON, "fastrtps")
    assert "-DSECURITY=ON" in fastdds["build"]["cmake_args"]
    assert Path(metadata["harness"]["path"]).resolve().is_relative_to(workspace / "install")
    assert {sub: entry["outcome"] for sub, entry in metadata["subexperiments"].items()} == \
        {sub: s.OUTCOME_OK for sub in SUBS}


def test_the_upstream_engine_runs_their_latency_tests_on_loopback(workspace, tmp_path):
    output = tmp_path / "upstream"
    done = perfgate("run", "--engine", "upstream", "--workspace", str(workspace), "--output", str(output),
                    "--subexperiments", ",".join(SUBS))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for sub in SUBS:
        raw = files.read_raw(output / s.raw_csv_name(sub))
        # their payloads_demands.csv (16;16384) and latency_tests.py's 10000 samples
        assert raw.groupby(s.PAYLOAD, sort=False).size().to_dict() == {16: 10000, 16384: 10000}
        assert raw[s.SAMPLE].tolist() == list(range(1, 20001))
    metadata = files.read_metadata(output)
    assert metadata["latency_definition"] == s.HALF_ROUND_TRIP
    assert metadata["payloads"] == [16, 16384] and metadata["samples"] == 10000
    assert metadata["harness"]["name"] == "LatencyTest"
    assert metadata["fastdds"]["version"] == "2.9.1"
    entries = metadata["subexperiments"]
    assert {sub: entries[sub]["test"] for sub in SUBS} == {
        "intraprocess_best_effort": "performance.latency.intraprocess_best_effort",
        "interprocess_best_effort": "performance.latency.interprocess_best_effort_udp"}
    # ctest ran them with the loopback-only copies of their profiles
    ctest_file = workspace / "build" / "fastrtps" / "test" / "performance" / "latency" / "CTestTestfile.cmake"
    copies = workspace / "perfgate" / "upstream" / "xml"
    tests = upstream.latency_tests(ctest_file.read_text())
    for command in tests.values():
        assert Path(command.xml).parent == copies
        assert set(re.findall(r"<address>([^<]*)</address>", Path(command.xml).read_text())) <= {"127.0.0.1"}
    for sub in SUBS:  # the ones run here are on UDP: whitelisted to 127.0.0.1
        assert "<address>127.0.0.1</address>" in Path(tests[upstream.SUBEXPERIMENT_TESTS[sub]].xml).read_text()
    # and the folder is an experiment like any other
    processed = perfgate("process", "--experiment-directory", str(output), "--no-plots")
    assert processed.returncode == 0, processed.stderr
    assert sorted(files.summary_files(output)) == sorted(SUBS)


def latency_test_affinities(binary: Path) -> dict[str, frozenset[int]]:
    """role -> the CPUs every running LatencyTest may run on (Cpus_allowed_list in /proc)."""
    found = {}
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if len(argv) > 1 and Path(os.fsdecode(argv[0])).name == binary.name:
                status = (proc / "status").read_text()
                allowed = re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.M).group(1)
                found[os.fsdecode(argv[1])] = frozenset(platform_info.parse_cpu_list(allowed))
        except (OSError, AttributeError):
            continue  # gone meanwhile
    return found


def test_the_upstream_engine_pins_latency_test_by_role(workspace, tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")
    publisher, subscriber = cpus[-1], cpus[0]
    binary = workspace / "build" / "fastrtps" / "test" / "performance" / "latency" / upstream.LATENCY_TEST
    run = subprocess.Popen([sys.executable, "-m", "perfgate.cli", "run", "--engine", "upstream", "--workspace",
                            str(workspace), "--output", str(tmp_path / "pinned"), "--pin-cpus",
                            f"{publisher},{subscriber}", "--subexperiments", ",".join(SUBS)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen: dict[str, set[frozenset[int]]] = {}
    while run.poll() is None:
        for role, allowed in latency_test_affinities(binary).items():
            seen.setdefault(role, set()).add(allowed)
        time.sleep(0.05)
    assert run.returncode == 0, run.stderr.read()[-3000:]
    # their real LatencyTest processes, as latency_tests.py started them, on the CPUs asked for
    assert seen == {"both": {frozenset({publisher, subscriber})}, "publisher": {frozenset({publisher})},
                    "subscriber": {frozenset({subscriber})}}
    assert files.read_metadata(tmp_path / "pinned")["cpu_pinning"]["pinned"] is True
