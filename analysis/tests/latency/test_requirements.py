"""determine-requirements: percentile across runs, the CSV, and the leave-one-out false-alarm figures."""
from __future__ import annotations

import json

import numpy as np
import pytest

from perfgate import cli, files
from perfgate.latency import requirements as rq
from perfgate import schema as s
from conftest import metadata, scaled, tiny_summary, write_experiment

SUB = "interprocess_reliable"


def three_tiny_runs(root, commits=("c0ffee", "c0ffee", "c0ffee")):
    """Hand-checkable runs, one payload each of two sub-experiments: (Median, 99%, Max)."""
    runs = [
        {SUB: tiny_summary({16: (10, 20, 30)}), "intraprocess_reliable": tiny_summary({16: (1, 2, 3)})},
        {SUB: tiny_summary({16: (12, 20, 45)}), "intraprocess_reliable": tiny_summary({16: (1, 2, 3)})},
        {SUB: tiny_summary({16: (11, 20, 31)}), "intraprocess_reliable": tiny_summary({16: (1, 2, 3)})},
    ]
    for index, (summaries, commit) in enumerate(zip(runs, commits)):
        # folder names against time order: the result must not depend on it
        write_experiment(root / s.STORE_EXPERIMENTS_DIR / f"run_{9 - index}", summaries,
                         metadata(f"run-{index}", f"2024-02-0{index + 1}T00:00:00Z", commit=commit))
    return root


def test_requirements_are_the_percentile_across_runs_ordered_by_sub_then_payload(tmp_path):
    run = rq.run_values([
        {SUB: tiny_summary({32: (10, 20, 30), 16: (5, 6, 7)}), "intraprocess_reliable": tiny_summary({16: (1, 2, 3)})},
        {SUB: tiny_summary({32: (14, 24, 34), 16: (5, 6, 9)}), "intraprocess_reliable": tiny_summary({16: (3, 4, 5)})},
    ])
    table = rq.requirements_from_values(run, 50)
    assert list(table.columns) == list(s.REQUIREMENT_COLUMNS)
    assert table[[s.EXPERIMENT_TYPE, s.BYTES]].values.tolist() == [
        ["intraprocess_reliable", 16], [SUB, 16], [SUB, 32]]
    assert table[s.MEDIAN].tolist() == [2.0, 5.0, 12.0]
    assert table[s.P99].tolist() == [3.0, 6.0, 22.0]
    assert table[s.MAX].tolist() == [4.0, 8.0, 32.0]


def test_leave_one_out_by_hand_on_three_runs(tmp_path):
    root = three_tiny_runs(tmp_path / "store")
    from perfgate.latency import experiments as ex

    experiments = ex.load_store(root)
    run = rq.run_values([{sub: e.summary(sub) for sub in e.subexperiments} for e in experiments])
    alarms = rq.leave_one_out(run, 99)
    # run 0 against 99th of runs 1, 2: Median 11.99, 99% 20, Max 44.86 -> 10, 20, 30 pass
    # run 1 against runs 0, 2: Median 10.99 < 12 fails, 99% 20 = 20 passes, Max 30.99 < 45 fails
    # run 2 against runs 0, 1: Median 11.98, Max 44.85 -> 11 and 31 pass
    # intraprocess_reliable is identical in every run: never above
    assert alarms.failed_checks_per_run == [0, 2, 0]
    assert alarms.checks_per_run == [6, 6, 6]
    assert alarms.mean_failed_checks == pytest.approx(2 / 3)
    assert alarms.failing_run_fraction == pytest.approx(1 / 3)


def test_command_writes_csv_and_provenance(tmp_path, capsys):
    root = three_tiny_runs(tmp_path / "store")
    output = tmp_path / "out" / "platform-a.csv"
    code = cli.main(["determine-requirements", "--experiments-results", str(root), "--output-file", str(output)])
    assert code == s.EXIT_OK
    # 99th percentile of all three: Median [10, 11, 12] -> 11.98; Max [30, 31, 45] -> 31 + 0.98 * 14 = 44.72
    assert output.read_text() == (
        "Experiment type,Bytes,Median,99%,Max\n"
        "intraprocess_reliable,16,1.000,2.000,3.000\n"
        "interprocess_reliable,16,11.980,20.000,44.720\n"
    )
    record = json.loads((tmp_path / "out" / "platform-a_provenance.json").read_text())
    assert record["runs"] == 3 and record["percentile"] == 99.0 and record["commits"] == ["c0ffee"]
    assert record["platform"]["id"] == "platform-a" and record["latency_definition"] == s.ROUND_TRIP
    assert record["cpu_pinning"] == []  # these runs recorded no placement
    alarms = record["expected_false_alarms"]
    assert alarms["failed_checks_per_unchanged_run"] == 0.667
    assert alarms["unchanged_runs_failing_gate_fraction"] == 0.333
    assert alarms["checks_per_run"] == 6
    # keyed by folder; the oldest run (run-0) is in folder run_9
    assert alarms["failed_checks_by_left_out_run"] == {"run_9": 0, "run_8": 2, "run_7": 0}
    printed = capsys.readouterr()
    assert "0.667 of 6 checks fail per unchanged run; 33.3% of unchanged runs would fail the gate" in printed.out
    assert printed.err == ""


def test_requirements_written_at_three_decimals_are_what_leave_one_out_checks_against():
    # requirements from the other run are 10.0004 -> written 10.000; 10.0004 itself is not above it
    run = rq.RunValues(keys=None, values=np.array([[10.0004], [10.0004], [10.0014]]))
    assert rq.leave_one_out(run, 100).failed_checks_per_run == [0, 0, 1]


def test_real_runs_of_one_commit(tmp_path, real_summary):
    root = tmp_path / "store"
    for index, factor in enumerate((1.0, 1.02, 0.99, 1.05)):
        write_experiment(root / f"r{index}", {SUB: scaled(real_summary, factor)},
                         metadata(f"r{index}", f"2024-02-0{index + 1}T00:00:00Z"))
    output = tmp_path / "requirements.csv"
    assert cli.main(["determine-requirements", "--experiments-results", str(root), "--output-file", str(output),
                     "--percentile", "100"]) == s.EXIT_OK
    written = files.read_requirements(output)
    assert written[s.BYTES].tolist() == list(s.PAYLOADS)
    expected = [float(files.format_float(v * 1.05)) for v in real_summary[s.MEDIAN]]
    assert written[s.MEDIAN].tolist() == expected
    record = json.loads((tmp_path / "requirements_provenance.json").read_text())
    # with the maximum of the others, only the slowest run (1.05) fails, on every one of its 33 checks
    assert record["expected_false_alarms"]["failed_checks_by_left_out_run"] == {"r0": 0, "r1": 0, "r2": 0, "r3": 33}


def test_fewer_than_two_runs_is_a_usage_error(tmp_path, capsys):
    root = tmp_path / "store"
    write_experiment(root / "only", {SUB: tiny_summary({16: (10, 20, 30)})}, metadata("only", "2024-01-01T00:00:00Z"))
    output = tmp_path / "requirements.csv"
    code = cli.main(["determine-requirements", "--experiments-results", str(root), "--output-file", str(output)])
    assert code == s.EXIT_USAGE
    assert "needs at least 2 runs" in capsys.readouterr().err
    assert not output.exists()


def test_runs_of_different_commits_are_warned_about(tmp_path, capsys):
    root = three_tiny_runs(tmp_path / "store", commits=("aaa", "bbb", "aaa"))
    code = cli.main(["determine-requirements", "--experiments-results", str(root), "--output-file",
                     str(tmp_path / "r.csv")])
    assert code == s.EXIT_OK
    error = capsys.readouterr().err
    assert "warning: the runs measured 2 different Fast DDS commits (aaa, bbb)" in error
    assert json.loads((tmp_path / "r_provenance.json").read_text())["commits"] == ["aaa", "bbb"]


def test_mixed_latency_definitions_are_refused(tmp_path, capsys):
    root = three_tiny_runs(tmp_path / "store")
    write_experiment(root / s.STORE_EXPERIMENTS_DIR / "half", {SUB: tiny_summary({16: (5, 10, 15)})},
                     metadata("half", "2024-03-01T00:00:00Z", latency_definition=s.HALF_ROUND_TRIP))
    output = tmp_path / "r.csv"
    code = cli.main(["determine-requirements", "--experiments-results", str(root), "--output-file", str(output)])
    assert code == s.EXIT_USAGE
    assert "latency definitions differ" in capsys.readouterr().err and not output.exists()


def test_payload_measured_by_one_run_only_is_a_usage_error(tmp_path, capsys):
    root = three_tiny_runs(tmp_path / "store")
    write_experiment(root / s.STORE_EXPERIMENTS_DIR / "extra", {SUB: tiny_summary({16: (10, 20, 30), 64: (1, 2, 3)})},
                     metadata("extra", "2024-03-01T00:00:00Z"))
    code = cli.main(["determine-requirements", "--experiments-results", str(root), "--output-file",
                     str(tmp_path / "r.csv")])
    assert code == s.EXIT_USAGE
    assert "interprocess_reliable at 64 B is measured by only one of the 4 runs" in capsys.readouterr().err


def test_a_margin_raises_every_requirement_and_its_false_alarm_cost_is_reported(tmp_path, capsys):
    root = three_tiny_runs(tmp_path / "store")
    output = tmp_path / "out" / "platform-a.csv"
    code = cli.main(["determine-requirements", "--experiments-results", str(root), "--output-file", str(output),
                     "--percentile", "100", "--margin", "0.5"])
    assert code == s.EXIT_OK
    # max of the three runs, times 1.5: Median 12 -> 18, 99% 20 -> 30, Max 45 -> 67.5
    assert output.read_text() == (
        "Experiment type,Bytes,Median,99%,Max\n"
        "intraprocess_reliable,16,1.500,3.000,4.500\n"
        "interprocess_reliable,16,18.000,30.000,67.500\n"
    )
    record = json.loads((tmp_path / "out" / "platform-a_provenance.json").read_text())
    assert record["margin"] == 0.5
    # leave-one-out at +50%: run 1's Max 45 against 1.5 * max(30, 31) = 46.5 passes: no false alarm
    assert record["expected_false_alarms"]["failed_checks_by_left_out_run"] == {"run_9": 0, "run_8": 0, "run_7": 0}
    # without a margin, run 1 fails Median (12 > 11) and Max (45 > 31)
    by_margin = {entry["margin"]: entry for entry in record["expected_false_alarms_by_margin"]}
    assert by_margin[0.0]["failed_checks_per_unchanged_run"] == 0.667
    assert by_margin[0.5]["unchanged_runs_failing_gate_fraction"] == 0.0
    printed = capsys.readouterr().out
    assert "plus 50%" in printed
    assert "with --margin 0 instead: 0.667 of 6 checks fail per unchanged run; 33.3% of unchanged runs" in printed


def test_provenance_names_every_fastdds_the_runs_measured(tmp_path, capsys):
    # a file derived for two supported versions must say both, not only the first run's
    root = three_tiny_runs(tmp_path / "store", commits=("c0ffee", "bead00", "bead00"))
    output = tmp_path / "out" / "platform-a.csv"
    assert cli.main(["determine-requirements", "--experiments-results", str(root), "--output-file", str(output)]) \
        == s.EXIT_OK
    record = json.loads((tmp_path / "out" / "platform-a_provenance.json").read_text())
    assert [(b["fastdds"]["commit"], b["runs"]) for b in record["fastdds_builds"]] == [("c0ffee", 1), ("bead00", 2)]
    assert record["fastdds"]["commit"] == "c0ffee"
    assert "2 different Fast DDS commits" in capsys.readouterr().err
