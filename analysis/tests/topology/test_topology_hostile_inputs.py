"""Issue 23's adversarial pass over `perfgate topology` and `perfgate check-topology`: a topology file, a
performance target and an experiment folder are untrusted. Numbers beyond float's range, a key given
twice and counts that are no measurement (empty, NaN, infinite, negative) are one line and exit 2 or 3,
never a traceback and never a pass."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import perfgate_in_process
from topology_inputs import write_topology_experiment
from perfgate import schema as s
from perfgate.topology import names as n

HUGE = "1" + "0" * 400  # a JSON integer: Python reads it whole, float() and math.isfinite() overflow on it


def _topology(publisher: str) -> str:
    return ('{"nodes": [{"node_name": "source", "publishers": [' + publisher + ']},\n'
            '{"node_name": "sink", "subscribers": [{"topic_name": "t", "msg_type": "int64"}]}]}')


def _experiment(folder, received="10000", lost="0"):
    """latency_total.csv, events.csv and resources.csv as `perfgate topology` writes them, one count chosen."""
    return write_topology_experiment(folder, {
        n.RECEIVED: received, n.MEAN: "300.0", n.LATE: "150", n.LATE_PERCENT: "1.5", n.TOO_LATE: "5",
        n.TOO_LATE_PERCENT: "0.05", n.LOST: lost, n.LOST_PERCENT: "0"})


def _check(tmp_path, target_text: str, experiment):
    target = tmp_path / "target.json"
    target.write_text(target_text)
    junit = tmp_path / "junit.xml"
    result = perfgate_in_process("check-topology", "--target", str(target), "--experiment-directory", str(experiment),
                                 "--junit", str(junit), "--no-plots")
    return result, junit


@pytest.mark.parametrize("publisher, problem", [
    ('{"topic_name": "t", "msg_type": "int64", "period_ms": ' + HUGE + '}', "period_ms must be a number from"),
    ('{"topic_name": "t", "msg_type": "int64", "period_ms": 10,\n "period_ms": 1000}',
     ":2: key 'period_ms' is given twice"),
])
def test_a_topology_with_a_huge_number_or_a_repeated_key_exits_2_in_one_line(tmp_path, publisher, problem):
    path = tmp_path / "topology.json"
    path.write_text(_topology(publisher))
    output = tmp_path / "out"
    result = perfgate_in_process("topology", "--topology", str(path), "--time", "1", "--output", str(output))
    assert result.returncode == s.EXIT_USAGE, result.stderr
    assert result.stderr.count("\n") == 1 and problem in result.stderr and "topology.json" in result.stderr
    assert not output.exists()


@pytest.mark.parametrize("target, problem", [
    ('{"resources": {"cpu[%]": ' + HUGE + '}}', ":1: resources: cpu[%] must be a non-negative number"),
    ('{"resources": {"cpu[%]": 1,\n "cpu[%]": 1e9}}', ":2: key 'cpu[%]' is given twice"),
])
def test_a_target_with_a_huge_limit_or_a_repeated_key_exits_2_in_one_line(tmp_path, target, problem):
    result, junit = _check(tmp_path, target, _experiment(tmp_path / "run"))
    assert result.returncode == s.EXIT_USAGE, result.stderr
    assert result.stderr.count("\n") == 1 and problem in result.stderr and "target.json" in result.stderr
    assert not junit.exists()


@pytest.mark.parametrize("received, lost", [("", "0"), ("nan", "0"), ("inf", "0"), ("-5", "0"), ("10000", "-3")])
def test_a_count_that_is_no_measurement_is_incomplete_never_a_pass(tmp_path, received, lost):
    result, junit = _check(tmp_path, json.dumps({n.TARGET_LATENCY_TOTAL: {n.LOST_PERCENT: 0}}),
                           _experiment(tmp_path / "run", received, lost))
    assert result.returncode == s.EXIT_INCOMPLETE, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and n.LATENCY_TOTAL_CSV in result.stderr
    assert "not a measured count or share" in result.stderr and "Traceback" not in result.stderr
    assert not junit.exists()


def _perfgate(*arguments: str) -> subprocess.CompletedProcess:
    """A real process with a bound: a reader that blocks on a FIFO or reads /dev/zero for ever is the bug."""
    return subprocess.run([sys.executable, "-m", "perfgate", *arguments], capture_output=True, text=True, timeout=60)


def test_a_target_or_topology_that_is_a_fifo_is_one_line_and_exit_2_not_a_hang(tmp_path):
    fifo = tmp_path / "target.json"
    os.mkfifo(fifo)
    experiment = _experiment(tmp_path / "e")
    result = _perfgate("check-topology", "--target", str(fifo), "--experiment-directory", str(experiment),
                       "--junit", str(tmp_path / "junit.xml"), "--no-plots")
    assert result.returncode == s.EXIT_USAGE, result.stderr
    assert result.stderr.count("\n") == 1 and "not a regular file" in result.stderr and "target.json" in result.stderr
    output = tmp_path / "out"
    result = _perfgate("topology", "--topology", str(fifo), "--time", "1", "--output", str(output))
    assert result.returncode == s.EXIT_USAGE and "not a regular file" in result.stderr and not output.exists()


def test_an_experiment_file_linked_to_a_device_is_a_missing_result_not_a_hang(tmp_path):
    experiment = _experiment(tmp_path / "e")
    (experiment / n.EVENTS_CSV).unlink()
    (experiment / n.EVENTS_CSV).symlink_to("/dev/zero")
    target = tmp_path / "target.json"
    target.write_text('{"latency_total": {"lost[%]": 1}}')
    result = _perfgate("check-topology", "--target", str(target), "--experiment-directory", str(experiment),
                       "--junit", str(tmp_path / "junit.xml"), "--no-plots")
    assert result.returncode == s.EXIT_INCOMPLETE, result.stderr
    assert result.stderr.count("\n") == 1 and "not a regular file" in result.stderr and n.EVENTS_CSV in result.stderr
