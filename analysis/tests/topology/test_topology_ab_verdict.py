"""topology.ab_verdict: the topology A/B's decision on rounds tables with known effects (no Fast DDS)."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd

from perfgate import schema as s
from perfgate.ab import verdict as v
from perfgate.outcome import INCOMPLETE, PASS, REGRESSION
from perfgate.topology import ab_verdict
from perfgate.topology import names as n

BASE = {n.MEAN: 120.0, n.P99: 400.0, n.LATE_PERCENT: 0.0, n.RESOURCE_CPU: 6.0, n.RESOURCE_RSS: 30000.0}


def rounds_table(rounds: int, candidate: dict[str, float] | None = None, noise: float = 0.005,
                 seed: int = 3) -> pd.DataFrame:
    """Per round both arms' figures, the candidate's multiplied (late[%]: added) by `candidate`."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(rounds):
        for arm in s.AB_ARMS:
            figures = {}
            for statistic, value in BASE.items():
                change = (candidate or {}).get(statistic, 0.0) if arm == v.CANDIDATE_ARM else 0.0
                if statistic == n.LATE_PERCENT:
                    figures[statistic] = value + change
                else:
                    figures[statistic] = value * (1 + change) * (1 + rng.normal(0, noise))
            rows.append({v.ROUND: f"{r + 1:02d}", v.ARM: arm, **figures})
    return pd.DataFrame(rows)


def test_an_a_a_passes_with_no_late_message_in_either_arm_and_every_round_counted():
    decision = ab_verdict.decide(rounds_table(8), "light", v.DEFAULT_THRESHOLD, v.DEFAULT_ALPHA)
    assert ab_verdict.status(decision) == PASS
    assert list(decision.table[v.STATISTIC]) == list(ab_verdict.ROUND_STATISTICS)
    assert set(decision.table[v.ROUNDS]) == {8} and decision.too_few_rounds == {}
    late = decision.table[decision.table[v.STATISTIC] == n.LATE_PERCENT].iloc[0]
    assert late[v.RATIO] == 1.0 and late[v.P_VALUE] == 1.0


def test_a_slower_mean_fails_the_mean_and_only_what_changed():
    decision = ab_verdict.decide(rounds_table(8, {n.MEAN: 0.10, n.P99: 0.10}), "light", 0.01, 0.02)
    assert ab_verdict.status(decision) == REGRESSION
    assert set(decision.failed[v.STATISTIC]) == {n.MEAN, n.P99}
    mean = decision.table[decision.table[v.STATISTIC] == n.MEAN].iloc[0]
    assert 1.08 < mean[v.RATIO] < 1.12 and mean[v.LOWER_BOUND] > 1.01
    assert mean[ab_verdict.CANDIDATE_MEDIAN] > mean[ab_verdict.BASELINE_MEDIAN] * 1.05


def test_a_late_share_that_grows_fails_the_late_share():
    decision = ab_verdict.decide(rounds_table(8, {n.LATE_PERCENT: 5.0}), "light", 0.01, 0.02)
    assert set(decision.failed[v.STATISTIC]) == {n.LATE_PERCENT}
    late = decision.failed.iloc[0]
    assert abs(late[v.RATIO] - 100 / 95) < 1e-9  # the baseline's on-time share over the candidate's


def test_rounds_an_arm_missed_are_not_counted_and_too_few_is_incomplete():
    table = rounds_table(8)
    table = table[~((table[v.ROUND] == "03") & (table[v.ARM] == v.CANDIDATE_ARM))]
    decision = ab_verdict.decide(table, "light", 0.01, 0.02)
    assert set(decision.table[v.ROUNDS]) == {7}
    assert decision.too_few_rounds == {"light": 7} and ab_verdict.status(decision) == INCOMPLETE


def test_the_pooled_latency_is_the_geometric_mean_and_a_silent_subscription_has_none():
    assert abs(ab_verdict.pooled(pd.Series([100.0, 400.0])) - 200.0) < 1e-9
    assert np.isnan(ab_verdict.pooled(pd.Series([100.0, np.nan])))
    assert np.isnan(ab_verdict.pooled(pd.Series([], dtype=float)))


def test_an_arm_run_that_did_not_finish_leaves_the_verdict_incomplete_even_when_the_rest_decide():
    table = rounds_table(9)
    table = table[~((table[v.ROUND] == "05") & (table[v.ARM] == v.BASELINE_ARM))]
    decision = ab_verdict.decide(table, "light", 0.01, 0.02)
    assert set(decision.table[v.ROUNDS]) == {8} and decision.too_few_rounds == {}  # enough rounds to decide
    assert ab_verdict.status(decision) == PASS and ab_verdict.status(decision, failures=1) == INCOMPLETE
    record = ab_verdict.verdict_json(decision, "light", [f"{r:02d}" for r in range(1, 10)],
                                     {"failures": [{"round": "05", "arm": "baseline", "error": "did not finish"}]})
    assert record["status"] == INCOMPLETE and record["exit_code"] == s.EXIT_INCOMPLETE
    assert "1 arm run(s) did not finish" in record["headline"]
    root = ET.fromstring(ab_verdict.junit_xml(decision, "light", 9, failures=1))
    cases = list(root.iter("testcase"))
    assert len(cases) == 5 and all(case.find("error") is not None for case in cases)


def test_too_few_rounds_show_no_lower_bound_rather_than_a_ratio_of_zero():
    # 3 rounds give no one-sided bound at family-wise 0.02 (2^-3 > 0.02 / tests): stored as exp(-inf) = 0
    decision = ab_verdict.decide(rounds_table(3, {n.MEAN: 0.10}), "light", 0.01, 0.02)
    assert (decision.table[v.LOWER_BOUND] == 0.0).all()
    table = ab_verdict.markdown(decision, "light", ["01", "02", "03"])
    mean_row = next(line for line in table.splitlines() if line.startswith(f"| {n.MEAN} |"))
    assert "| n/a (3 rounds) |" in mean_row and "0.000x" not in table
    line = ab_verdict.summary(decision.table.iloc[0], 0.01)
    assert "lower bound n/a (3 rounds)" in line
