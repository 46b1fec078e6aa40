"""The gate's topology step (`perfgate gate --experiments latency,topology`): the platform's topologies
(topologies/<name>.json) run and checked against requirements/<platform>_topology_<name>.json where it
exists, measured and not checked where it does not; the checks join the gate's JUnit, report and exit code.
Usage errors are found before anything is measured."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from gate_inputs import quick_gate, topology_gate_folder
from perfgate import schema as s

SUB, PAYLOAD = "intraprocess_best_effort", 16


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A working folder with generous latency requirements for platform `bench` and the light topology."""
    return topology_gate_folder(tmp_path, monkeypatch, SUB, PAYLOAD)


def gate(*arguments: str) -> int:
    return quick_gate(SUB, PAYLOAD, *arguments)


def write_target(workspace, cpu_percent: float) -> None:
    (workspace / "requirements" / "bench_topology_light.json").write_text(json.dumps(
        {"topology_file": "light.json", "resources": {"cpu[%]": cpu_percent, "rss[KB]": 10000000},
         "latency_total": {"late[%]": 100, "too_late[%]": 100, "lost[%]": 100}}, indent=2))


@pytest.mark.parametrize("arguments, message", [
    (["--topologies", "light"], "--topologies and --topology-time are for a gate that runs topologies"),
    (["--experiments", "latency,topology", "--topologies", "mont_blanc"],
     "--topologies: no topologies/mont_blanc.json (found: light)"),
    (["--experiments", "latency,topology", "--topology-time", "0.0001"], "--topology-time must be whole milliseconds"),
])
def test_topology_options_that_cannot_work_stop_the_gate_before_measuring(workspace, capsys, arguments, message):
    code = gate("--output", "out", *arguments)
    captured = capsys.readouterr()
    assert code == s.EXIT_USAGE and message in captured.err and "Traceback" not in captured.err
    assert not (workspace / "out").exists()


def test_a_bad_platform_target_stops_the_gate_before_measuring(workspace, capsys):
    (workspace / "requirements" / "bench_topology_light.json").write_text('{"resources": {"cpu[%]": -1}}')
    code = gate("--output", "out", "--experiments", "latency,topology")
    captured = capsys.readouterr()
    assert code == s.EXIT_USAGE and "bench_topology_light.json" in captured.err
    assert "cpu[%] must be a non-negative number" in captured.err and not (workspace / "out").exists()


def _testcases(junit):
    root = ET.parse(junit).getroot()
    return root, {(suite.get("name"), case.get("name")): case for suite in root.iter("testsuite")
                  for case in suite.iter("testcase")}


@pytest.mark.fastdds
def test_a_missed_topology_target_fails_the_gate_and_joins_its_junit_on_the_real_fastdds(workspace, capsys):
    write_target(workspace, cpu_percent=0.001)  # no running system uses a thousandth of a percent of the CPU
    code = gate("--output", "out", "--experiments", "latency,topology", "--topology-time", "3",
                "--summary-markdown", "summary.md")
    captured = capsys.readouterr()
    assert code == s.EXIT_REGRESSION, captured.out + captured.err
    assert "topologies light (3 s, checked against requirements/bench_topology_light.json)" in captured.out
    headline = captured.out.splitlines()[-2]
    assert headline.startswith("perfgate gate: REGRESSION: all 3 checks passed") and "topologies found a regression" \
        in headline, headline
    folder = workspace / "out" / "topology" / "light"
    assert json.loads((folder / s.METADATA_FILE).read_text())["time_s"] == 3
    root, cases = _testcases(workspace / "out" / s.JUNIT_FILE)
    # the latency checks and the five topology limits, in one document with the totals of both
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("8", "1", "0")
    assert cases[("topology.light", "resources.cpu[%]")].find("failure") is not None
    for limit in ("resources.rss[KB]", "latency_total.late[%]", "latency_total.too_late[%]", "latency_total.lost[%]"):
        assert cases[("topology.light", limit)].find("failure") is None
    markdown = (workspace / "out" / s.REPORT_MARKDOWN).read_text()
    assert "Topologies: REGRESSION: light 1 of 5 target checks missed (`topology/`)" in markdown
    assert "Topologies: REGRESSION: light 1 of 5 target checks missed" in (workspace / "out" / s.REPORT_HTML).read_text()
    assert (folder / "plots" / "topology_resources.png").stat().st_size > 0


@pytest.mark.fastdds
def test_a_topology_without_a_platform_target_is_measured_and_said_not_checked_on_the_real_fastdds(workspace, capsys):
    code = gate("--output", "out", "--experiments", "latency,topology", "--topology-time", "2")
    captured = capsys.readouterr()
    assert code == s.EXIT_OK, captured.out + captured.err
    assert "light (2 s, no target for this platform: measured, not checked)" in captured.out
    assert captured.out.splitlines()[-2].startswith("perfgate gate: PASS: all 3 checks passed, topologies measured")
    assert "light measured, no target for this platform (not checked)" in (workspace / "out" / s.REPORT_MARKDOWN).read_text()
    assert (workspace / "out" / "topology" / "light" / "latency_total.csv").is_file()
    _, cases = _testcases(workspace / "out" / s.JUNIT_FILE)
    assert not [key for key in cases if key[0].startswith("topology")]
