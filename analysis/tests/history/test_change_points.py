"""Change points: a known step is found at its commit and nowhere else; a flat history has none."""
from __future__ import annotations

import subprocess
import sys
import numpy as np
import pandas as pd
import pytest
import yaml

from perfgate.history import change_points as cp
from perfgate import files
from perfgate.history import latency as history
from perfgate.history import files as hf
from perfgate import schema as s
from history_synthetic import PAYLOADS, SUBS, described, synthetic_values, write_store


# --- the pure detector ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [1, 2])
def test_a_plus_8_percent_step_is_found_at_its_commit_and_nowhere_else(seed):
    runs, step_at, sub = 120, 80, "interprocess_reliable"
    found = cp.detect(synthetic_values(seed, runs, sub, step_at), described(runs))
    assert list(found.columns) == list(cp.CHANGE_POINT_COLUMNS)
    assert set(found[s.EXPERIMENT_TYPE]) == {sub} and set(found[cp.STATISTIC]) == {s.MEDIAN}
    assert sorted(found[s.BYTES]) == list(PAYLOADS)  # every payload's median moved, every one is found
    # the step is placed at its commit; with a run in a slow state beside it (one in twenty), a payload
    # on its own may be placed a few runs off (benchmarks/bench_history.py prints how often: ~2 %)
    assert (found[cp.INDEX] - step_at).abs().le(1).sum() >= 10 and found[cp.INDEX].between(step_at - 3, step_at + 3).all()
    exact = found[found[cp.INDEX] == step_at]
    assert len(exact) >= 8
    assert (exact[cp.COMMIT] == f"{step_at:04x}" + "c" * 36).all()
    assert (exact[cp.PREVIOUS_COMMIT] == f"{step_at - 1:04x}" + "c" * 36).all()
    assert (exact[s.LABEL] == f"nightly-{step_at:03d}").all()
    assert found[cp.CHANGE].between(5.0, 11.0).all()
    assert (found[cp.P_VALUE] <= cp.DEFAULT_ALPHA).all()
    assert found[cp.AFTER].to_numpy() == pytest.approx(found[cp.BEFORE].to_numpy() * (1 + found[cp.CHANGE] / 100))


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_a_history_without_a_step_has_no_change_point(seed):
    found = cp.detect(synthetic_values(seed, 120), described(120))
    assert found.empty and list(found.columns) == list(cp.CHANGE_POINT_COLUMNS)


def test_regressions_come_first_then_improvements_largest_first():
    runs = 90
    values = synthetic_values(6, runs, "intraprocess_reliable", 30, 1.10)
    faster = (values[s.EXPERIMENT_TYPE] == "interprocess_best_effort") & (values[cp.STATISTIC] == s.MEDIAN) \
        & (values[cp.INDEX] >= 60)
    values.loc[faster, cp.VALUE] *= 0.8
    found = cp.detect(values, described(runs))
    changes = found[cp.CHANGE].to_numpy()
    first_improvement = int(np.argmax(changes < 0))
    assert (changes[:first_improvement] > 0).all() and (changes[first_improvement:] < 0).all()
    assert list(changes[:first_improvement]) == sorted(changes[:first_improvement], reverse=True)
    assert set(found[changes < 0][s.EXPERIMENT_TYPE]) == {"interprocess_best_effort"}
    assert found[changes < 0][cp.CHANGE].between(-23.0, -17.0).all()


def test_short_or_constant_series_have_no_candidates():
    assert cp.candidates(np.log(np.full(50, 7.0))) == []
    assert cp.candidates(np.log(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))) == []  # fewer than two segments of three


def test_a_window_chosen_between_detected_splits_pays_for_its_ends():
    # the series' own ends are not chosen; an end at a detected split could have been any of n places
    assert cp.window_choices(0, 100, 100) == 4 * 95
    assert cp.window_choices(20, 100, 100) == 4 * 75 * 100
    assert cp.window_choices(20, 60, 100) == 4 * 35 * 100 * 100


def test_commit_order_keeps_a_rerun_beside_its_commit():
    # oldest first: a, b, a again (a re-run), None (system package), c
    assert cp.commit_order(["a", "b", "a", None, "c"]) == [0, 2, 1, 3, 4]
    assert cp.commit_order([None, None]) == [0, 1]


# --- through the command -------------------------------------------------------------------------
def test_history_writes_change_points_and_the_otava_export_without_plots(tmp_path, capsys):
    write_store(tmp_path / "store", 60, 40)
    requirements = tmp_path / "requirements.csv"
    files.write_csv(requirements, pd.DataFrame([{s.EXPERIMENT_TYPE: sub, s.BYTES: 16, s.MEDIAN: 100.0, s.P99: 200.0,
                                                 s.MAX: 900.0} for sub in SUBS[:2]]))
    plots = tmp_path / "plots"
    assert history.command_history(str(requirements), str(tmp_path / "store"), str(plots), no_plots=True) == 0
    lines = (plots / hf.CHANGE_POINTS_CSV).read_text().splitlines()
    assert lines[0] == "Experiment type,Bytes,Statistic,Index,Label,Fast DDS commit,Previous commit,Before,After," \
                       "Change [%],p-value"
    rows = [line.split(",") for line in lines[1:]]
    # the store's 99% and Max follow its median, so all three statistics moved at run 40, in the second sub only
    assert sorted((row[0], row[1], row[2]) for row in rows) == sorted(
        (SUBS[1], payload, statistic) for payload in ("16", "1024") for statistic in ("Median", "99%", "Max"))
    for row in rows:
        assert row[3:7] == ["40", "nightly-040", "28" + "a" * 38, "27" + "a" * 38]
        assert 5.0 < float(row[9]) < 11.0 and float(row[10]) <= 0.01
    out = capsys.readouterr().out
    assert "history: 6 change point(s), 6 regression(s), family-wise false-alarm level 0.01" in out
    assert f"REGRESSION: {SUBS[1]} Median at 16 B +" in out and "from 27aaaaaaaa..28aaaaaaaa (#40 nightly-040)" in out

    otava = pd.read_csv(plots / hf.OTAVA_DIR / f"{SUBS[1]}.csv")
    assert list(otava.columns) == ["time", "commit", "label", "median_16", "median_1024", "p99_16", "p99_1024",
                                   "max_16", "max_1024"]
    assert len(otava) == 60 and otava.loc[0, "time"] == "2026-01-01 02:00:00 +0000"
    assert otava.loc[40, "commit"] == "28" + "a" * 38
    config = (plots / hf.OTAVA_DIR / hf.OTAVA_CONFIG).read_text()
    assert f'  "perfgate.{SUBS[1]}":\n    type: csv\n    file: "{SUBS[1]}.csv"\n    time_column: time\n' in config
    # metric names unique over every test (Otava refuses duplicates), lower latency is better
    assert f'      "{SUBS[1]}.median_16": {{column: "median_16", direction: -1}}\n' in config
    # as Otava reads it (YAML): one csv test per sub-experiment, every metric a column of its file
    tests = yaml.safe_load(config)["tests"]
    assert sorted(tests) == sorted(f"perfgate.{sub}" for sub in SUBS[:2])
    assert tests[f"perfgate.{SUBS[1]}"]["metrics"] == {f"{SUBS[1]}.{column}": {"column": column, "direction": -1}
                                                       for column in otava.columns[3:]}
    assert tests[f"perfgate.{SUBS[1]}"]["attributes"] == ["commit", "label"]


def test_a_negative_alpha_is_a_usage_error_on_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "perfgate.cli", "history", "--requirements", "r.csv",
                             "--experiments-results", str(tmp_path), "--plots-directory", str(tmp_path),
                             "--alpha", "-0.1"], capture_output=True, text=True)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "--alpha" in result.stderr


def test_the_cumulative_rank_cost_is_ruptures_rank_cost():
    import ruptures

    rng = np.random.default_rng(7)
    series = np.log(rng.lognormal(0, 0.03, 300))
    series[rng.integers(0, 300, 15)] += 0.3
    series[200:] += 0.08
    ours, theirs = cp.RankCost().fit(series.reshape(-1, 1)), ruptures.costs.CostRank().fit(series.reshape(-1, 1))
    for start, end in [(0, 300), (0, 200), (200, 300), (17, 20), (150, 260)]:
        assert ours.error(start, end) == pytest.approx(np.asarray(theirs.error(start, end)).item(), rel=1e-12, abs=1e-9)
    # the same detector with either cost finds the same split, next to the step (run 199 is 1.5 sd high)
    theirs_found = ruptures.Binseg(model="rank", min_size=3, jump=1).fit(series.reshape(-1, 1)).predict(
        pen=cp.PENALTY_PER_LOG_N * np.log(300))
    assert cp.candidates(series) == theirs_found[:-1] == [199]
