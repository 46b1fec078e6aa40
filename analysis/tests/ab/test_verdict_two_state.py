"""Why the verdict keeps the sign test (issue 28 item 4, docs/verdict.md "Which test"): a regression
whose rounds take one of two states, plus one round in an extreme machine state against it, is still
caught at Holm's first step; the robust alternatives benchmarked beside it
(benchmarks/bench_verdict_tests.py: Wilcoxon and a sign-flip test on winsorised rounds) hide it."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from perfgate import schema as s
from perfgate.ab import verdict as v

SUBS = list(s.DEFAULT_SUBEXPERIMENT_NAMES)
PAYLOADS = (16, 1024, 65536)


def ratios_of(d_per_sub: dict[str, np.ndarray]) -> pd.DataFrame:
    """A log-ratio table where every payload and both statistics of round r have the same d[r]."""
    rows = [(f"{r:02d}", sub, payload, statistic, float(value))
            for sub, d in d_per_sub.items() for r, value in enumerate(d)
            for statistic in v.TESTED_STATISTICS for payload in PAYLOADS]
    return pd.DataFrame(rows, columns=[v.ROUND, s.EXPERIMENT_TYPE, s.BYTES, v.STATISTIC, "log_ratio"])


def two_state_regression_with_one_extreme_round() -> np.ndarray:
    """7 rounds at +1.5 %, 8 at +10 % (every one above the +1 % threshold), one round where the
    candidate looked 1.8 times faster (its baseline partner in a bad state)."""
    return np.log(np.r_[np.full(7, 1.015), np.full(8, 1.10), 1 / 1.8])


def test_two_state_regression_with_one_extreme_round_fails_at_holms_first_step():
    rng = np.random.default_rng(28)
    d = {sub: rng.normal(0.0, 0.01, 16) for sub in SUBS}  # nine unchanged sub-experiments
    d[SUBS[4]] = two_state_regression_with_one_extreme_round()
    decision = v.decide(ratios_of(d), order=SUBS)
    assert set(decision.failed[s.EXPERIMENT_TYPE]) == {SUBS[4]}
    row = decision.table[decision.table[s.EXPERIMENT_TYPE] == SUBS[4]].iloc[0]
    # 15 of 16 rounds above the shift: P(Bin(16, 1/2) >= 15) = 17 / 65536, below 0.02 / 20
    assert row[v.P_VALUE] == pytest.approx(17 / 65536, rel=1e-12)
    assert row[v.P_VALUE] <= v.DEFAULT_ALPHA / (2 * len(SUBS))
    assert row[v.ROUNDS] == 16


def test_the_extreme_round_moves_the_sign_test_by_one_round_whatever_its_size():
    shift = math.log1p(v.DEFAULT_THRESHOLD)
    d = two_state_regression_with_one_extreme_round()
    for extreme in (1 / 1.3, 1 / 1.8, 1 / 10, 1 / 1000):
        d[-1] = math.log(extreme)
        assert v.sign_test_p(d, shift) == pytest.approx(17 / 65536, rel=1e-12)
    d[-1] = math.log(1.2)  # the same round in a normal state: all 16 above
    assert v.sign_test_p(d, shift) == pytest.approx(1 / 65536, rel=1e-12)
