"""Stored A/B rounds replayed at fewer samples per payload (perfgate.ab.samples, perfgate.ab.resample,
benchmarks/bench_ab_samples.py), on real raw rounds (tests/data/ab-samples)."""
from __future__ import annotations

import gzip
import json
import math
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import conftest
from perfgate import files
from perfgate import schema as s
from perfgate.ab import resample as rs
from perfgate.ab import samples as sm
from perfgate.ab import verdict as v

STORED = conftest.FASTDDS_FIXTURES.parent / "ab-samples"
SUBS = ["intraprocess_best_effort", "interprocess_reliable_tcp_security"]
BENCH = conftest.REPO_ROOT / "benchmarks" / "bench_ab_samples.py"


def raw_of(round_name: str, arm: str, sub: str) -> pd.DataFrame:
    return files.read_raw(STORED / s.AB_ROUNDS_DIR / round_name / arm / f"{s.raw_csv_name(sub)}.gz")


def test_cutting_keeps_exactly_the_first_n_samples_of_every_payload_whatever_the_row_order():
    raw = raw_of("03", "candidate", SUBS[1])
    shuffled = raw.sample(frac=1.0, random_state=5)  # the rows out of Sample order: no head() will do
    cut = sm.first_samples(shuffled, 30)
    assert len(cut) == 3 * 30
    for payload, rows in cut.groupby(s.PAYLOAD):
        # the raw files number samples through the run (payload 1024 is 601-700 here), so "first" is by
        # the Sample number within the payload, in measured order
        first_number = raw[raw[s.PAYLOAD] == payload][s.SAMPLE].iloc[0]
        assert sorted(rows[s.SAMPLE]) == list(range(first_number, first_number + 30)), payload
        # the very latencies those samples measured
        original = raw[raw[s.PAYLOAD] == payload].iloc[:30]
        assert sorted(rows[s.LATENCY]) == sorted(original[s.LATENCY])
    statistics = sm.tested_statistics(raw, 30).set_index(s.BYTES)
    first = raw[raw[s.PAYLOAD] == 1024][s.LATENCY].to_numpy()[:30]
    assert statistics.loc[1024, s.MEDIAN] == pytest.approx(np.median(first), rel=1e-12)
    assert statistics.loc[1024, s.P90] == pytest.approx(np.quantile(first, 0.9), rel=1e-12)
    whole = raw[raw[s.PAYLOAD] == 1024][s.LATENCY].to_numpy()
    assert statistics.loc[1024, s.MEDIAN] != pytest.approx(np.median(whole), rel=1e-9)


def test_replay_at_every_sample_held_is_the_stored_verdict_and_writes_nothing():
    before = sorted(p.relative_to(STORED) for p in STORED.rglob("*"))
    stored = sm.read_stored_ab(STORED, [1000, 100, 50])
    assert sorted(p.relative_to(STORED) for p in STORED.rglob("*")) == before
    assert stored.held == 100 and list(stored.tables) == [100, 50]  # 1000 is more than the rounds hold
    assert stored.round_names == [f"{i:02d}" for i in range(1, 11)] and stored.unfinished == []
    assert stored.subexperiments == SUBS
    decision = sm.replayed_decision(stored, 100)
    verdict = json.loads((STORED / s.VERDICT_JSON).read_text())
    assert sm.status_of(decision) == verdict["status"] == "PASS"
    assert sm.failed_tests(decision) == ()
    stored_table = pd.read_csv(STORED / s.VERDICT_CSV)
    assert decision.table[v.P_VALUE].tolist() == pytest.approx(stored_table[v.P_VALUE].tolist(), rel=1e-5)
    assert decision.table[v.RATIO].tolist() == pytest.approx(stored_table[v.RATIO].tolist(), abs=5e-4)
    # fewer samples: other statistics, so other d
    fewer = rs.round_means(stored.tables[50])
    assert not np.allclose(fewer["d"], rs.round_means(stored.tables[100])["d"])


def test_a_round_being_measured_is_left_out(tmp_path):
    copy = tmp_path / "ab"
    shutil.copytree(STORED, copy)
    meta = json.loads((copy / s.METADATA_FILE).read_text())
    (copy / s.METADATA_FILE).write_text(json.dumps({**meta, "finished_utc": None}))  # still measuring
    for round_dir in sorted((copy / s.AB_ROUNDS_DIR).iterdir()):
        # an arm's metadata.json is written after each sub-experiment; finished_utc after its last
        finished = None if round_dir.name == "10" else "2026-11-27T07:32:00Z"
        for arm in s.AB_ARMS:
            (round_dir / arm / s.METADATA_FILE).write_text(json.dumps({"finished_utc": finished}))
    stored = sm.read_stored_ab(copy, [100])
    assert stored.round_names == [f"{i:02d}" for i in range(1, 10)] and stored.unfinished == ["10"]
    assert set(stored.tables[100][v.ROUND]) == set(stored.round_names)


def regressed_copy(tmp_path, factor: float):
    """The stored A/B with every candidate sample of intraprocess_best_effort multiplied by factor."""
    copy = tmp_path / "ab"
    shutil.copytree(STORED, copy)
    for path in copy.glob(f"{s.AB_ROUNDS_DIR}/*/candidate/{s.raw_csv_name(SUBS[0])}.gz"):
        raw = files.read_raw(path)
        raw[s.LATENCY] = raw[s.LATENCY] * factor
        with gzip.open(path, "wt") as out:
            raw.to_csv(out, index=False, float_format="%.17g")
    for name in (s.VERDICT_JSON, s.VERDICT_CSV):
        (copy / name).unlink()
    return copy


def test_replay_of_a_regression_is_perfgate_verdicts_and_a_slower_candidate_shifts_d_by_its_log(tmp_path):
    copy = regressed_copy(tmp_path, 1.10)
    plain = rs.round_means(sm.read_stored_ab(STORED, [100]).tables[100])
    assert sm.read_stored_ab(copy, [100]).verdict is None
    done = conftest.perfgate_in_process("verdict", "--ab-directory", str(copy), "--no-plots")
    assert done.returncode == 1, done.stdout + done.stderr
    stored = sm.read_stored_ab(copy, [100])
    decision = sm.replayed_decision(stored, 100)
    assert sm.status_of(decision) == stored.verdict.status == "REGRESSION"
    assert set(sm.failed_tests(decision)) == set(stored.verdict.failed) == {(SUBS[0], s.MEDIAN), (SUBS[0], s.P90)}
    # what ab.resample does to a regressed sub-experiment's d is what multiplying its samples does
    slower = rs.round_means(stored.tables[100])
    joined = plain.merge(slower, on=[s.EXPERIMENT_TYPE, v.ROUND, v.STATISTIC], suffixes=("", "_slower"))
    shift = (joined["d_slower"] - joined["d"]).to_numpy()
    is_regressed = (joined[s.EXPERIMENT_TYPE] == SUBS[0]).to_numpy()
    assert len(joined) == 2 * 2 * 10
    assert np.allclose(shift[is_regressed], math.log(1.10), atol=1e-12)
    assert np.allclose(shift[~is_regressed], 0.0, atol=0)


def test_bootstrap_sets_keep_each_round_whole_and_count_the_projects_verdicts():
    means = rs.round_means(sm.read_stored_ab(STORED, [100]).tables[100])
    wide = {sub: rs._wide(means, sub, v.TESTED_STATISTICS) for sub in SUBS}
    whole = pd.concat([wide[sub] for sub in SUBS], axis=1)
    drawn = rs.draw_set(wide, list(whole.index), 16, np.random.default_rng(3), v.TESTED_STATISTICS)
    rows = drawn.pivot_table(index=v.ROUND, columns=[s.EXPERIMENT_TYPE, v.STATISTIC], values="d")
    rows = rows.reindex(columns=pd.MultiIndex.from_product([SUBS, list(v.TESTED_STATISTICS)]))
    stored_rounds = {tuple(r) for r in whole.to_numpy()}
    assert len(rows) == 16 and all(tuple(r) in stored_rounds for r in rows.to_numpy())  # whole rounds, all four d

    huge = rs.resampled_failures(means, SUBS, rounds=16, sets=6, effects=[0.5], seed=1)
    assert huge.caught == {(SUBS[0], 0.5): 6, (SUBS[1], 0.5): 6}  # +50 % is caught in every set
    none = rs.resampled_failures(means, SUBS, rounds=16, sets=6, effects=[0.001], seed=1)
    assert none.caught == {(SUBS[0], 0.001): 0, (SUBS[1], 0.001): 0}  # below the +1 % threshold: never
    assert rs.resampled_failures(means, SUBS, rounds=16, sets=6, effects=[0.05], seed=1) == \
        rs.resampled_failures(means, SUBS, rounds=16, sets=6, effects=[0.05], seed=1)
    # a sub-experiment missing from rounds 01-04 is drawn from the six that have it
    partial = means[~((means[s.EXPERIMENT_TYPE] == SUBS[1]) & means[v.ROUND].isin(["01", "02", "03", "04"]))]
    assert rs.resampled_failures(partial, SUBS, rounds=16, sets=2, effects=[0.05], seed=1).drawn_apart == {SUBS[1]: 6}
    assert rs.clopper_pearson(0, 200) == (0.0, pytest.approx(1 - 0.025 ** (1 / 200)))  # exact: (alpha/2)^(1/n)


def test_spread_is_the_sd_and_the_mad_of_the_rounds_d():
    means = rs.round_means(sm.read_stored_ab(STORED, [100]).tables[100])
    table = rs.spread(means, SUBS).set_index([s.EXPERIMENT_TYPE, v.STATISTIC])
    d = means[(means[s.EXPERIMENT_TYPE] == SUBS[0]) & (means[v.STATISTIC] == s.MEDIAN)]["d"].to_numpy()
    row = table.loc[(SUBS[0], s.MEDIAN)]
    assert row[v.ROUNDS] == 10
    assert row["sd"] == pytest.approx(np.std(d, ddof=1))
    assert row["robust sd"] == pytest.approx(1.482602218505602 * np.median(np.abs(d - np.median(d))))


def run_bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=300)


def test_bench_prints_the_replay_side_by_side():
    done = run_bench("--ab-directory", str(STORED), "--samples", "100,50", "--sets", "4", "--rounds", "10")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "10 finished rounds of 10 planned" in out and "100 samples per payload held" in out
    assert "n=100: PASS; stored verdict.json: PASS (the same)" in out
    assert "4 sets of 10 rounds" in out and "understate" in out
    assert f"{SUBS[0]:<38} +5%" in out and "false alarms" in out


@pytest.mark.parametrize("case", ["no rounds folder", "throughput", "unfinished", "too few samples", "verdict.json"])
def test_bench_refuses_bad_input_in_one_line_naming_the_folder(tmp_path, case):
    folder = tmp_path / "ab"
    shutil.copytree(STORED, folder)
    samples = "100"
    if case == "no rounds folder":
        shutil.rmtree(folder / s.AB_ROUNDS_DIR)
    elif case == "throughput":
        meta = json.loads((folder / s.METADATA_FILE).read_text())
        (folder / s.METADATA_FILE).write_text(json.dumps({**meta, "kind": "ab-throughput"}))
    elif case == "unfinished":  # no finished_utc anywhere: no round is finished
        meta = json.loads((folder / s.METADATA_FILE).read_text())
        (folder / s.METADATA_FILE).write_text(json.dumps({**meta, "finished_utc": None}))
    elif case == "verdict.json":  # a stored record is untrusted: its level is checked, never used as it is
        verdict = json.loads((folder / s.VERDICT_JSON).read_text())
        (folder / s.VERDICT_JSON).write_text(json.dumps({**verdict, "alpha": 7}))
    else:
        samples = "1000,500"
    done = run_bench("--ab-directory", str(folder), "--samples", samples, "--sets", "2")
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and str(folder) in done.stderr and "Traceback" not in done.stderr
