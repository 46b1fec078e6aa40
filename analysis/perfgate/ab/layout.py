"""ab.layout: layout-aware thresholds, derived from A/Bs of builds that differ only in code layout. Pure.

A no-op commit that shifts lines, another link order or another function alignment moves where code
lands in memory, and with it the caches and branch predictors: the binary is faster or slower
although no code changed (issue 28: a comment-only commit made intraprocess_reliable 2.9 % faster in
all 16 rounds). The verdict's global threshold (1 %) cannot tell such a move from a regression. So
each sub-experiment gets its own bound, above what layout alone moved it on this platform, and is
tested against max(--threshold, that bound) (ab.verdict.decide; docs/verdict.md "Layout-aware
thresholds").

What a layout A/B says about a sub-experiment: the verdict's own estimate of the shift, exp(median d)
- 1, where d is the round's mean over payloads of log(candidate / baseline) and the median is taken
over the rounds, for each tested statistic (Median, 90 %). The same d the verdict tests, so the bound
is on the very quantity it is compared with (a per-payload figure would be another, noisier one).
A layout move can go either way (the other layout is the slower one by as much): the size is
exp(|median d|) - 1. The sub-experiment's layout threshold is the largest size over every pair and
both statistics, raised to the next multiple of STEP strictly above it.

Why the point estimate and not the upper end of its confidence interval: the interval's width is the
machine's round-to-round noise, which the sign test already accounts for in its error rates; adding it
to the bound would count it twice and raise quiet sub-experiments' bounds to the noisiest rounds'
spread (several per cent), hiding regressions the test can see. The interval is kept in the
provenance (lower, upper) so that a reader sees how well each pair pinned the shift.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import schema as s
from . import verdict as v

STEP = 0.005  # thresholds are multiples of 0.5 %: a bound above the measured move, not a copy of it
# A wide bound leaves less room between itself and a regression the gate must catch (+5 %): with the
# planned rounds alone, the sub-experiments layout moves most lost power (docs/verdict.md, "More rounds for
# wide bounds"). Those get WIDE_BOUND_ROUNDS times the rounds, fixed before anything is measured.
WIDE_BOUND = 0.02
WIDE_BOUND_ROUNDS = 1.5

SUBEXPERIMENT = "subexperiment"
STATISTIC = "statistic"
ROUNDS = "rounds"
CHANGE = "change"  # exp(median d) - 1: the verdict's estimate of the shift
LOWER = "lower"  # exp of the sign test's confidence bounds of median d, minus 1 (simultaneous over the tests)
UPPER = "upper"
SIZE = "size"  # exp(|median d|) - 1: how much one layout is slower than the other
SHIFT_COLUMNS = (SUBEXPERIMENT, STATISTIC, ROUNDS, CHANGE, LOWER, UPPER, SIZE)


def pair_shifts(ratios: pd.DataFrame, subs: list[str], alpha: float = v.DEFAULT_ALPHA,
                statistics: tuple[str, ...] = v.TESTED_STATISTICS) -> pd.DataFrame:
    """One layout A/B's shift per sub-experiment and statistic (SHIFT_COLUMNS), from its log ratios
    (ab.verdict.log_ratios). The bounds are at the verdict's confidence 1 - alpha / tests."""
    means, _ = v.usable_round_means(ratios)
    level = alpha / max(len(subs) * len(statistics), 1)
    rows = []
    for sub in subs:
        for statistic in statistics:
            d = means.loc[(means[s.EXPERIMENT_TYPE] == sub) & (means[v.STATISTIC] == statistic), "d"].to_numpy(float)
            median = float(np.median(d)) if len(d) else math.nan
            rows.append({SUBEXPERIMENT: sub, STATISTIC: statistic, ROUNDS: len(d), CHANGE: math.expm1(median),
                         LOWER: math.expm1(v.median_lower_bound(d, level)) if len(d) else math.nan,
                         UPPER: math.expm1(-v.median_lower_bound(-d, level)) if len(d) else math.nan,
                         SIZE: math.expm1(abs(median))})
    return pd.DataFrame(rows, columns=list(SHIFT_COLUMNS))


def step_above(size: float, step: float = STEP) -> float:
    """The next multiple of `step` strictly above `size` (2.9 % -> 3.0 %, 3.0 % -> 3.5 %)."""
    steps = math.floor(round(size / step, 9)) + 1  # round: 0.03 / 0.005 is 5.999999... in binary
    return round(steps * step, 6)


def thresholds(pairs: list[pd.DataFrame], step: float = STEP) -> dict[str, float]:
    """Per sub-experiment, the layout threshold: the next step above the largest size over every pair
    (pair_shifts) and statistic. A sub-experiment with a non-finite size (a round where an arm measured
    nothing) has no threshold: its layout move is unknown, never taken as zero or infinite."""
    table = pd.concat(pairs, ignore_index=True)
    result = {}
    for sub, rows in table.groupby(SUBEXPERIMENT, sort=False):
        sizes = rows[SIZE].to_numpy(float)
        if len(sizes) and np.isfinite(sizes).all():
            result[str(sub)] = step_above(float(sizes.max()), step)
    return result


def largest_sizes(pairs: list[pd.DataFrame]) -> dict[str, float]:
    """Per sub-experiment, the largest layout move measured (what its threshold is above)."""
    table = pd.concat(pairs, ignore_index=True)
    return {str(sub): float(rows[SIZE].max()) for sub, rows in table.groupby(SUBEXPERIMENT, sort=False)}


def planned_rounds(rounds: int, threshold: float, layout: dict[str, float] | None, subs) -> dict[str, int]:
    """Per sub-experiment, the rounds an A/B plans: `rounds`, or WIDE_BOUND_ROUNDS times as many (rounded
    up) for one tested against a bound above WIDE_BOUND. Each test stays an exact sign test at its own
    planned rounds, fixed in advance, so Holm's family-wise level holds as before."""
    return {sub: math.ceil(rounds * WIDE_BOUND_ROUNDS) if v.bound_of(threshold, layout, sub) > WIDE_BOUND + 1e-12
            else rounds for sub in subs}


def parse_thresholds(data: dict) -> dict[str, float]:
    """The `thresholds` of a layout file's object, checked: sub-experiment names of the contract mapped to
    fractions from 0 to below 1. ValueError (one sentence) for anything else; the caller names the file."""
    table = data.get("thresholds")
    if not isinstance(table, dict):
        raise ValueError("'thresholds' is not an object of sub-experiment: fraction")
    result = {}
    for sub, value in table.items():
        if sub not in s.KNOWN_SUBEXPERIMENTS or s.KNOWN_SUBEXPERIMENTS[sub].is_floor:
            raise ValueError("'thresholds' names something that is not a sub-experiment of the contract")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value)
                                                                                 and 0 <= value < 1):
            raise ValueError(f"the threshold of {sub} is not a fraction from 0 to below 1 (0.03 = 3 %)")
        result[sub] = float(value)
    return result
