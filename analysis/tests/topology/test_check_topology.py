"""perfgate check-topology: a performance target (the benchmark's JSON) against a topology experiment's
latency_total.csv and resources.csv; JUnit testcases on the target's lines; exit 1 on a miss, 2 on a
bad target, 3 on a missing result."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pandas as pd

from conftest import perfgate_in_process
from perfgate.topology import names as n

TARGET = """{
    "topology_file": "light.json",
    "platform": "vm 2 cores",
    "additional_options": "--time 60 --ipc on",
    "resources": {
        "cpu[%]":   15,
        "rss[KB]":  60000
    },
    "latency_total": {
        "late[%]":      1.9,
        "too_late[%]":  0.1,
        "lost[%]":      0.0
    }
}
"""


def _experiment(folder, late_percent=1.5, too_late_percent=0.05, lost=0):
    folder.mkdir()
    pd.DataFrame([{n.RECEIVED: 10000, n.MEAN: 300.0, n.LATE: int(late_percent * 100), n.LATE_PERCENT: late_percent,
                   n.TOO_LATE: int(too_late_percent * 100), n.TOO_LATE_PERCENT: too_late_percent, n.LOST: lost,
                   n.LOST_PERCENT: 100 * lost / (10000 + lost)}]).to_csv(folder / n.LATENCY_TOTAL_CSV, index=False)
    # two processes, matched at 400 and 700 ms: publishing from 700 ms, when a's CPU is 5 % and b's 6 %
    # (before: start-up, 3 % and 6 %); RSS peaks 20000 + 30000 KB
    pd.DataFrame({n.EVENT_TIME: [400.0, 700.0, 900.0], n.EVENT_CALLER: ["SYSTEM", "SYSTEM", "t->a"],
                  n.EVENT_CODE: [0, 0, 1],
                  n.EVENT_DESCRIPTION: ["[discovery] a", "[discovery] b", "msg 3 late. 1us > 0us"]}).to_csv(folder / n.EVENTS_CSV, index=False)
    pd.DataFrame({n.RESOURCE_TIME: [500, 1000, 500, 1000], n.PROCESS: ["a", "a", "b", "b"],
                  n.RESOURCE_CPU: [3.0, 5.0, 6.0, 6.0], n.RESOURCE_RSS: [10000, 20000, 30000, 25000],
                  n.RESOURCE_VSZ: [1, 1, 1, 1]}).to_csv(folder / n.RESOURCES_CSV, index=False)
    return folder


def _cases(junit):
    return {case.get("name"): case for case in ET.parse(junit).getroot().iter("testcase")}


def test_an_experiment_within_its_target_passes_with_a_testcase_per_line(tmp_path):
    target = tmp_path / "target.json"
    target.write_text(TARGET)
    experiment = _experiment(tmp_path / "run")
    junit = tmp_path / "junit.xml"
    result = perfgate_in_process("check-topology", "--target", str(target), "--experiment-directory", str(experiment),
                                 "--junit", str(junit))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok   resources cpu[%]: 11 " in result.stdout and "ok   resources rss[KB]: 5e+04" in result.stdout
    assert (experiment / "plots" / n.RESOURCES_PLOT).stat().st_size > 0
    cases = _cases(junit)
    assert {name: case.get("line") for name, case in cases.items()} == {
        "resources.cpu[%]": "6", "resources.rss[KB]": "7", "latency_total.late[%]": "10",
        "latency_total.too_late[%]": "11", "latency_total.lost[%]": "12"}
    assert all(case.get("file") == str(target) and case.find("failure") is None for case in cases.values())


def test_a_missed_limit_fails_on_its_line_and_exits_1(tmp_path):
    target = tmp_path / "target.json"
    target.write_text(TARGET)
    experiment = _experiment(tmp_path / "run", too_late_percent=0.2, lost=1)
    junit = tmp_path / "out" / "junit.xml"
    result = perfgate_in_process("check-topology", "--target", str(target), "--experiment-directory", str(experiment),
                                 "--junit", str(junit))
    assert result.returncode == 1
    cases = _cases(junit)
    failed = {name for name, case in cases.items() if case.find("failure") is not None}
    assert failed == {"latency_total.too_late[%]", "latency_total.lost[%]"}
    assert "measured 0.2, target at most 0.1" in cases["latency_total.too_late[%]"].find("failure").text
    assert "FAIL latency_total too_late[%]: 0.2 (target at most 0.1" in result.stdout


def test_a_bad_target_is_exit_2_naming_file_line_and_field(tmp_path):
    experiment = _experiment(tmp_path / "run")
    for replaced, replacement, expected in (
            ('"cpu[%]":   15', '"cpu[%]":   "15"', ":6: resources: cpu[%] must be a non-negative number"),
            ('"lost[%]":      0.0', '"lost[%]":      -1', ":12: latency_total: lost[%] must be a non-negative"),
            ('"rss[KB]":  60000', '"pss[KB]":  60000', ":7: resources: 'pss[KB]' is not measured"),
            ('"latency_total": {', '"latency_total": [', "not JSON")):
        target = tmp_path / "bad.json"
        target.write_text(TARGET.replace(replaced, replacement))
        junit = tmp_path / "junit.xml"
        result = perfgate_in_process("check-topology", "--target", str(target), "--experiment-directory",
                                     str(experiment), "--junit", str(junit))
        assert result.returncode == 2 and expected in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1 and not junit.exists()


def test_a_missing_result_is_exit_3_never_a_pass(tmp_path):
    target = tmp_path / "target.json"
    target.write_text(TARGET)
    experiment = _experiment(tmp_path / "run")
    (experiment / n.RESOURCES_CSV).unlink()
    result = perfgate_in_process("check-topology", "--target", str(target), "--experiment-directory", str(experiment))
    assert result.returncode == 3 and "resources.csv" in result.stderr


def test_a_target_named_like_a_formula_or_a_workflow_command_is_drawn_and_printed_inert(tmp_path):
    folder = tmp_path / "::error::x"
    folder.mkdir()
    target = folder / "$\\frac$.json"
    target.write_text(TARGET)
    experiment = _experiment(tmp_path / "run")
    result = perfgate_in_process("check-topology", "--target", str(target), "--experiment-directory", str(experiment))
    assert result.returncode == 0, result.stderr
    assert (experiment / "plots" / n.RESOURCES_PLOT).stat().st_size > 0
    assert all(not line.startswith("::") for line in result.stdout.splitlines())
