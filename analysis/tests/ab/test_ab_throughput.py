"""The throughput A/B: a drop of the candidate's subscription throughput is the regression (higher is better)."""
from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from conftest import perfgate_in_process
from throughput_inputs import throughput_ab_table
from perfgate.ab import throughput_report as tr
from perfgate import files
from perfgate.gate import run as gate
from perfgate import schema as s
from perfgate.throughput.files import read_throughput
from perfgate.throughput.table import throughput_table

SUBS = ["intraprocess_best_effort", "interprocess_best_effort", "interprocess_reliable"]


def write_ab(folder, rounds: int, candidate_factor: dict[str, float], seed: int = 0, metadata: bool = True) -> None:
    rng = np.random.default_rng(seed)
    for r in range(rounds):
        for arm in s.AB_ARMS:
            arm_dir = folder / s.AB_ROUNDS_DIR / f"{r + 1:02d}" / arm
            arm_dir.mkdir(parents=True)
            for sub in SUBS:
                factor = candidate_factor.get(sub, 1.0) if arm == "candidate" else 1.0
                files.write_csv(arm_dir / s.throughput_csv_name(sub), throughput_ab_table(factor, rng))
    if metadata:
        files.write_metadata(folder, {"kind": tr.KIND, "requested_subexperiments": SUBS, "payloads": [16, 16384],
                                      "throughput": {"demands": [1000], "recovery_times_ms": [0], "time_s": 1.0}})


def verdict(folder, *args: str) -> subprocess.CompletedProcess:
    return perfgate_in_process("verdict", "--ab-directory", str(folder), *args)


def test_a_drop_of_one_sub_experiment_fails_it_alone(tmp_path):
    write_ab(tmp_path, 13, {SUBS[1]: 0.90})
    done = verdict(tmp_path)
    assert done.returncode == s.EXIT_REGRESSION, done.stderr
    table = pd.read_csv(tmp_path / s.VERDICT_CSV)
    assert list(table.columns) == list(tr.VERDICT_COLUMNS) + [
        "Threshold", "Rounds above threshold", "Baseline median", "Candidate median", "Reason"]
    row = table.set_index(s.EXPERIMENT_TYPE).loc[SUBS[1]]
    assert row[s.STATUS] == s.FAILED
    assert 0.87 < row["Ratio"] < 0.93  # candidate / baseline, a throughput ratio
    assert row["Upper bound"] < 1 / 1.01
    # the arms' own values in Mb/s: 50 000 messages a second of 16 B and of 16384 B, geometric mean 204.8
    assert row["Baseline median"] == pytest.approx(204.8, rel=0.03)
    assert row["Candidate median"] / row["Baseline median"] == pytest.approx(0.90, abs=0.02)
    assert row["Threshold"] == 0.01 and row["Rounds above threshold"] >= 12
    assert row["Reason"] == f"{row['Rounds above threshold']} of 13 rounds down more than 1.0%: lower beyond chance"
    passed = table.set_index(s.EXPERIMENT_TYPE).loc[SUBS[0]]
    assert passed["Reason"].startswith(f"{passed['Rounds above threshold']} of 13 rounds down more than 1.0%: ")
    report_md = (tmp_path / s.REPORT_MARKDOWN).read_text()
    assert "| Baseline [Mb/s] | Candidate [Mb/s] | Change | Threshold |" in report_md and "| -1.0 % |" in report_md
    assert set(table.loc[table[s.STATUS] == s.FAILED, s.EXPERIMENT_TYPE]) == {SUBS[1]}
    record = json.loads((tmp_path / s.VERDICT_JSON).read_text())
    assert record["kind"] == "throughput" and record["status"] == "REGRESSION"
    assert [f["subexperiment"] for f in record["failed"]] == [SUBS[1]]
    assert f"REGRESSION: {SUBS[1]} subscription throughput -1" in done.stdout
    drill = pd.read_csv(tmp_path / tr.VERDICT_TESTS_CSV)
    assert list(drill[drill[s.EXPERIMENT_TYPE] == SUBS[0]][tr.TEST]) == ["16 B x 1000, 0 ms", "16384 B x 1000, 0 ms"]
    suite = ET.parse(tmp_path / s.JUNIT_FILE).getroot().find("testsuite")
    failures = [case.get("classname") for case in suite.iter("testcase") if case.find("failure") is not None]
    assert failures == [SUBS[1]] and suite.get("tests") == str(len(SUBS))
    assert (tmp_path / s.PLOTS_DIR / s.VERDICT_HEATMAP_PNG).stat().st_size > 0
    assert "throughput A/B verdict: **REGRESSION**" in (tmp_path / s.REPORT_MARKDOWN).read_text()


def test_a_faster_candidate_is_improved_never_failed_and_equal_builds_pass(tmp_path):
    write_ab(tmp_path / "faster", 13, {SUBS[0]: 1.10}, seed=1)
    done = verdict(tmp_path / "faster", "--no-plots")
    assert done.returncode == s.EXIT_OK, done.stdout + done.stderr
    record = json.loads((tmp_path / "faster" / s.VERDICT_JSON).read_text())
    assert [f["subexperiment"] for f in record["improved"]] == [SUBS[0]] and record["failed"] == []
    write_ab(tmp_path / "same", 13, {}, seed=2)
    assert verdict(tmp_path / "same", "--no-plots").returncode == s.EXIT_OK


def test_rounds_are_recognised_as_throughput_without_metadata(tmp_path):
    write_ab(tmp_path, 13, {SUBS[2]: 0.8}, metadata=False)
    assert tr.is_throughput_ab(tmp_path)
    assert verdict(tmp_path, "--no-plots").returncode == s.EXIT_REGRESSION
    assert pd.read_csv(tmp_path / s.VERDICT_CSV).set_index(s.EXPERIMENT_TYPE).loc[SUBS[2], s.STATUS] == s.FAILED


def test_too_few_rounds_is_incomplete_not_a_pass(tmp_path):
    write_ab(tmp_path, 4, {SUBS[1]: 0.5})
    done = verdict(tmp_path, "--no-plots")
    assert done.returncode == s.EXIT_INCOMPLETE
    assert "too few usable rounds" in done.stderr


def test_a_test_where_the_candidate_received_nothing_counts_against_it(tmp_path):
    write_ab(tmp_path, 13, {})
    for path in (tmp_path / s.AB_ROUNDS_DIR).glob(f"*/candidate/{s.throughput_csv_name(SUBS[0])}"):
        counted = read_throughput(path)
        counted[s.RECEIVED] = 0
        files.write_csv(path, throughput_table(counted))
    assert verdict(tmp_path, "--no-plots").returncode == s.EXIT_REGRESSION
    row = pd.read_csv(tmp_path / s.VERDICT_CSV).set_index(s.EXPERIMENT_TYPE).loc[SUBS[0]]
    assert row[s.STATUS] == s.FAILED and row["Ratio"] == 0


def test_the_gate_joins_the_throughput_check_and_its_ab_worst_first():
    assert gate.joined_headline("PASS: 40 checks passed", "REGRESSION: 1 of 8 tests failed").startswith("REGRESSION: ")
    # a proven regression outranks what could not be decided (issue 44)
    assert gate.joined_headline("REGRESSION: 2 failed", "INCOMPLETE: too few").startswith("REGRESSION: ")
    assert gate.joined_headline("PASS: 2 passed", "INCOMPLETE: too few").startswith("INCOMPLETE: ")
    assert gate.joined_headline("MEASURED: 8 sub-experiments", "PASS: none").startswith("MEASURED: ")
    # each status once: the worst first, the check's own only where it differs
    assert gate.joined_headline("PASS: all 4 throughput checks passed", "PASS: no drop") == \
        "PASS: all 4 throughput checks passed; A/B against the baseline build passed: no drop"
    # one verdict word per banner (issue 28): the worst first, the A/B's own said in words
    assert gate.joined_headline("PASS: all 4 checks passed", "REGRESSION: 1 failed") == \
        "REGRESSION: all 4 checks passed; A/B against the baseline build found a regression: 1 failed"


@pytest.mark.parametrize("options, says", [
    (["--subexperiments", "interprocess_best_effort_zero_copy"], "zero-copy"),
    (["--subexperiments", "floor_udp"], "plain sockets"),
    (["--time", "0"], "--time"),
    (["--demands", "0"], "--demands"),
])
def test_what_the_throughput_ab_cannot_measure_is_refused_before_measuring(tmp_path, options, says):
    done = perfgate_in_process("ab-throughput", "--output", str(tmp_path / "ab"), "--baseline", "system",
                               "--candidate", "system", *options)
    assert done.returncode == s.EXIT_USAGE, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and says in done.stderr
    assert not (tmp_path / "ab").exists()


@pytest.mark.fastdds
def test_a_real_throughput_ab_writes_both_arms_of_every_round(tmp_path, harness_paths):
    out = tmp_path / "ab"
    done = subprocess.run([sys.executable, "-m", "perfgate.cli", "ab-throughput", "--output", str(out), "--baseline",
                           "system", "--candidate", "system", "--rounds", "2", "--time", "0.1", "--demands", "100",
                           "--subexperiments", "intraprocess_best_effort", "--payloads", "16", "--no-plots"],
                          capture_output=True, text=True, timeout=300)
    # two rounds can never reject for one test at 2 %: the verdict says so, it does not pass
    assert done.returncode == s.EXIT_INCOMPLETE, done.stdout + done.stderr
    for round_name in ("01", "02"):
        for arm in s.AB_ARMS:
            table = pd.read_csv(out / s.AB_ROUNDS_DIR / round_name / arm / s.throughput_csv_name("intraprocess_best_effort"))
            assert list(table[s.PAYLOAD]) == [16] and table[s.RECEIVED].iloc[0] > 0
            assert table[s.SUBSCRIPTION_THROUGHPUT].iloc[0] > 0
    record = json.loads((out / s.VERDICT_JSON).read_text())
    assert record["kind"] == "throughput" and record["status"] == "INCOMPLETE"
    assert json.loads((out / s.METADATA_FILE).read_text())["kind"] == tr.KIND


def test_the_store_keeps_the_throughput_ab_verdict_beside_the_latency_ones(tmp_path):
    from perfgate.store import experiments as store

    write_ab(tmp_path / s.THROUGHPUT_DIR / s.AB_DIR, 13, {SUBS[1]: 0.9})
    assert verdict(tmp_path / s.THROUGHPUT_DIR / s.AB_DIR, "--no-plots").returncode == s.EXIT_REGRESSION
    files.write_metadata(tmp_path, {"label": "run"})
    kept = gate.store_files(tmp_path)
    assert {f"{s.THROUGHPUT_DIR}/{s.AB_DIR}/{s.VERDICT_CSV}", f"{s.THROUGHPUT_DIR}/{s.AB_DIR}/{s.VERDICT_JSON}"} <= set(kept)
    assert all(store.is_kept(name) for name in kept)
    # the rounds and the reports are not kept; push and pull carry only what is
    assert not store.is_kept(f"{s.THROUGHPUT_DIR}/{s.AB_DIR}/{s.REPORT_HTML}")
    assert not store.is_kept(f"{s.THROUGHPUT_DIR}/{s.AB_DIR}/{s.AB_ROUNDS_DIR}/01/baseline/{s.VERDICT_CSV}")
    stored = store.add_experiment(tmp_path / "store", "run", kept)
    record = json.loads((stored / s.THROUGHPUT_DIR / s.AB_DIR / s.VERDICT_JSON).read_text())
    assert record["kind"] == "throughput" and record["failed"][0]["subexperiment"] == SUBS[1]
