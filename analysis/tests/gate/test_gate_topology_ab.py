"""The gate's topology options (--topology-ipc, --topology-transport) and its topology A/B with
--baseline-build: the A/B's verdict first in the Topologies headline, its testcases in junit.xml."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from gate_inputs import quick_gate, topology_gate_folder
from perfgate import schema as s
from perfgate.gate.topology_step import plan_topologies
from perfgate.topology import ab_verdict

SUB, PAYLOAD = "intraprocess_best_effort", 16


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A working folder with generous latency requirements for platform `bench` and the light topology."""
    return topology_gate_folder(tmp_path, monkeypatch, SUB, PAYLOAD)


def gate(*arguments: str) -> int:
    return quick_gate(SUB, PAYLOAD, *arguments)


@pytest.mark.parametrize("arguments", [["--topology-ipc", "off"], ["--topology-transport", "shm"]])
def test_topology_options_without_topologies_stop_the_gate_before_measuring(workspace, capsys, arguments):
    code = gate("--output", "out", *arguments)
    captured = capsys.readouterr()
    assert code == s.EXIT_USAGE and "Traceback" not in captured.err
    assert "--topology-ipc and --topology-transport are for a gate that runs topologies" in captured.err
    assert not (workspace / "out").exists()


@pytest.mark.parametrize("arguments, value", [(["--topology-transport", "tcp"], "tcp"),
                                              (["--topology-ipc", "maybe"], "maybe")])
def test_a_topology_option_value_that_is_no_choice_is_exit_2(workspace, capsys, arguments, value):
    with pytest.raises(SystemExit) as stopped:
        gate("--output", "out", "--experiments", "latency,topology", *arguments)
    captured = capsys.readouterr()
    assert stopped.value.code == s.EXIT_USAGE and f"invalid choice: '{value}'" in captured.err
    assert not (workspace / "out").exists()


def test_the_gate_s_topology_ipc_and_transport_reach_each_topology_s_run(workspace):
    planned = plan_topologies(None, 2.0, experiments=("latency", "topology"), quick=True, platform="bench",
                              output=workspace / "out", label="run", ipc="off", transport="shm")
    assert [(t.name, t.plan.ipc, t.plan.transport) for t in planned] == [("light", False, "shm")]
    defaults = plan_topologies(None, 2.0, experiments=("latency", "topology"), quick=True, platform="bench",
                               output=workspace / "out", label="run")
    assert [(t.plan.ipc, t.plan.transport, t.plan.reliability) for t in defaults] == [(True, "udpv4", "reliable")]


@pytest.mark.fastdds
@pytest.mark.heavy
def test_a_gate_with_a_baseline_build_decides_each_topology_by_an_a_b_on_the_real_fastdds(workspace, capsys):
    code = gate("--output", "out", "--experiments", "latency,topology", "--topology-time", "2",
                "--baseline-build", "system", "--summary-markdown", "summary.md")
    captured = capsys.readouterr()
    assert code in (s.EXIT_OK, s.EXIT_REGRESSION), captured.out + captured.err  # decided, never incomplete
    ab_dir = workspace / "out" / "topology" / "light" / s.AB_DIR
    record = json.loads((ab_dir / s.VERDICT_JSON).read_text())
    assert record["kind"] == "topology" and record["tests"] == 5 and record["failures"] == []
    assert len(record["rounds"]) == 8  # --quick: the fewest with which five tests can reject
    # the A/B's answer first in the topologies' headline, then the (unchecked) measurement
    markdown = (workspace / "out" / s.REPORT_MARKDOWN).read_text()
    line = next(text for text in markdown.splitlines() if text.startswith("Topologies: "))
    assert "A/B against the baseline build" in line and line.index("A/B against") < line.index("light measured")
    root = ET.parse(workspace / "out" / s.JUNIT_FILE).getroot()
    suite = next(suite for suite in root.iter("testsuite") if suite.get("name") == "topology.light.ab")
    assert [case.get("name") for case in suite.iter("testcase")] == [
        f"light {statistic} vs baseline" for statistic in ab_verdict.ROUND_STATISTICS]
    summary = (workspace / "summary.md").read_text()
    assert "perfgate topology A/B" in summary
    # the latency A/B's table once: in the gate's own summary, not again from the A/B's report.md (issue 45)
    assert summary.count("### A/B against the baseline build") == 1 and "## perfgate A/B verdict" not in summary
    page = (workspace / "out" / s.REPORT_HTML).read_text()
    assert "<title>perfgate report: " in page  # not "latency report": it covers the topologies too
