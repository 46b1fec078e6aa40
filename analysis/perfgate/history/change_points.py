"""Change points in the history: where a statistic's level moved, at which commit, how sure we are.

Pure computations, no files (docs/history.md explains the method for users):

- `commit_order`: the order of a history's experiments, commit by commit. The store records no
  commit dates, so a commit's place is where it was first measured; later re-runs of a commit join
  its earlier runs instead of landing at the end, and runs of one commit keep their time order.
- `detect`: per series (sub-experiment, payload, statistic), candidate change points from ruptures'
  binary segmentation with the rank cost (scale-free, so one penalty fits 2 us and 20 ms series, and
  robust to the outliers of Max); then each candidate is tested on the segments between its
  neighbouring candidates with a two-sided Mann-Whitney test, the p-value multiplied by the number of
  windows and splits the detector could have chosen (it picked the most telling one, so one test
  would be too optimistic; `window_choices`), and Holm-corrected over every test of the history, a series without a
  candidate counting as one test with p = 1 (it was looked at). A change point is reported when its
  adjusted p-value is at most `alpha`: the probability of reporting any change point in a history
  without one is at most `alpha`, whatever the number of series.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import ruptures
from scipy.stats import mannwhitneyu, rankdata

from .. import schema as s
from ..ab.verdict import holm

STATISTIC = "Statistic"
INDEX = "Index"
COMMIT = "Fast DDS commit"
PREVIOUS_COMMIT = "Previous commit"
BEFORE = "Before"
AFTER = "After"
CHANGE = "Change [%]"
P_VALUE = "p-value"
VALUE = "Value"  # input column: one statistic of one experiment
CHANGE_POINT_COLUMNS = (s.EXPERIMENT_TYPE, s.BYTES, STATISTIC, INDEX, s.LABEL, COMMIT, PREVIOUS_COMMIT, BEFORE, AFTER,
                        CHANGE, P_VALUE)
STATISTICS = s.CHECKED_MAGNITUDES  # the statistics with requirements, drawn per payload

DEFAULT_ALPHA = 0.01
# fewest experiments on each side: a change seen in one or two runs is indistinguishable from a bad night
MIN_SEGMENT = 3
# ruptures' rank cost gains about a chi-square with one degree of freedom per split on a flat series;
# 2 log n keeps most flat series free of candidates (each one costs power through Holm) while a step
# the test can confirm is far above it (docs/history.md "Choosing the detector")
PENALTY_PER_LOG_N = 2.0
EXACT_TEST_LIMIT = 10  # the exact Mann-Whitney distribution when the shorter segment has at most this many runs


# --- order --------------------------------------------------------------------------------------
def commit_order(commits: list[str | None]) -> list[int]:
    """Positions of experiments (given oldest first) in commit order; None commits stand alone."""
    first_seen: dict[str, int] = {}
    keys = []
    for position, commit in enumerate(commits):
        group = position if commit is None else first_seen.setdefault(commit, position)
        keys.append((group, position))
    return [position for _, position in sorted(keys)]


# --- one series ---------------------------------------------------------------------------------
def candidates(log_values: np.ndarray, min_size: int = MIN_SEGMENT,
               penalty_per_log_n: float = PENALTY_PER_LOG_N) -> list[int]:
    """Split positions (first index of a new segment) proposed by ruptures, in increasing order."""
    count = log_values.size
    if count < 2 * min_size:
        return []
    if np.ptp(log_values) == 0:
        return []  # the rank cost's covariance is singular on a constant series, and nothing changed
    detector = ruptures.Binseg(custom_cost=RankCost(), min_size=min_size, jump=1).fit(log_values.reshape(-1, 1))
    return [b for b in detector.predict(pen=penalty_per_log_n * math.log(count)) if b < count]


class RankCost(ruptures.base.BaseCost):
    """ruptures' rank cost (CostRank) of a single series, from cumulative sums of the centred ranks.

    The same cost, to rounding (a test compares them), but O(1) per segment in plain floats: binary
    segmentation asks for it some 700000 times over a history of 1000 runs, and CostRank's
    numpy mean and matrix product per call made detection most of the history's time.
    """

    model = "rank_cumulative"
    min_size = 2

    def fit(self, signal: np.ndarray) -> "RankCost":
        ranks = rankdata(np.asarray(signal, dtype=float).ravel())
        centred = ranks - (ranks.size + 1) / 2.0
        variance = float(np.mean(centred ** 2))  # CostRank's covariance of the ranks (bias=True)
        self.inverse_variance = 1.0 / variance if variance > 0 else 0.0
        self.sums = np.concatenate([[0.0], np.cumsum(centred)]).tolist()
        self.signal = signal
        return self

    def error(self, start: int, end: int) -> float:
        length = end - start
        if length < self.min_size:
            raise ruptures.exceptions.NotEnoughPoints
        total = self.sums[end] - self.sums[start]
        return -total * total / length * self.inverse_variance


def window_p_value(before: np.ndarray, after: np.ndarray, choices: int) -> float:
    """Two-sided Mann-Whitney p-value of a split, times the `choices` of windows and splits a
    detector could have picked it from (Bonferroni: it picked the most telling one)."""
    shorter = min(before.size, after.size)
    method = "exact" if shorter <= EXACT_TEST_LIMIT else "asymptotic"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns that exact p-values with ties are approximate
        p_value = mannwhitneyu(before, after, alternative="two-sided", method=method).pvalue
    return float(min(1.0, p_value * choices))


def window_choices(start: int, end: int, count: int, min_size: int = MIN_SEGMENT) -> int:
    """The Bonferroni factor of a split: the splits of its window, times the places of each end
    that is itself a detected split (an end of the series is not chosen), times 4. Summed over
    every window and split a detector could pick, the four kinds of window (the whole series, from
    its start, to its end, between two splits) then each spend at most a quarter of a series' level,
    so a series without a change reports one with probability at most its level, whatever was picked."""
    splits = max(end - start - 2 * min_size + 1, 1)
    return 4 * splits * (count if start > 0 else 1) * (count if end < count else 1)


def series_tests(values: np.ndarray, min_size: int = MIN_SEGMENT, penalty_per_log_n: float = PENALTY_PER_LOG_N,
                 keep_below: float = DEFAULT_ALPHA) -> list[tuple[int, float, float, float]]:
    """(split, p-value, median before, median after) per surviving candidate of one series.

    A candidate's window ends at its neighbours, which the detector chose from the same data: a
    short segment it cut out around a few odd runs makes its neighbour look significant. So the
    weakest candidate above `keep_below` (it could never pass Holm) is dropped and its neighbours
    tested again over the wider window, until every candidate left is below it.
    """
    logs = np.log(values)
    splits = candidates(logs, min_size, penalty_per_log_n)
    while True:
        bounds = [0, *splits, values.size]
        tests = [(split, window_p_value(logs[start:split], logs[split:end],
                                        window_choices(start, end, values.size, min_size)))
                 for start, split, end in zip(bounds, bounds[1:], bounds[2:])]
        weakest = max(range(len(tests)), key=lambda i: tests[i][1], default=None)
        if weakest is None or tests[weakest][1] <= keep_below:
            break
        del splits[weakest]
    bounds = [0, *splits, values.size]
    return [(split, p_value, float(np.median(values[start:split])), float(np.median(values[split:end])))
            for (split, p_value), start, end in zip(tests, bounds, bounds[2:])]


# --- a whole history ----------------------------------------------------------------------------
def detect(values: pd.DataFrame, experiments: pd.DataFrame, alpha: float = DEFAULT_ALPHA,
           min_size: int = MIN_SEGMENT, penalty_per_log_n: float = PENALTY_PER_LOG_N) -> pd.DataFrame:
    """Significant change points, regressions first (largest change first), then improvements.

    `values`: one row per experiment and series: Experiment type, Bytes, Statistic, Index (the
    experiment's position in commit order), Value. `experiments`: Label and Fast DDS commit (None
    when not recorded) indexed by that position. Missing or non-positive values are left out of
    their series (a gap), so Index may skip positions.
    """
    return decide(*tests_of_series(values, alpha, min_size, penalty_per_log_n), experiments, alpha)


def tests_of_series(values: pd.DataFrame, alpha: float = DEFAULT_ALPHA, min_size: int = MIN_SEGMENT,
                penalty_per_log_n: float = PENALTY_PER_LOG_N) -> tuple[list[tuple], int]:
    """Every candidate's test as (sub, payload, statistic, index, previous index, before, after,
    p-value), and how many series had no candidate. Series are independent: parts of a history
    may be tested apart (in worker processes) and their results joined for `decide`."""
    values = values[np.isfinite(values[VALUE]) & (values[VALUE] > 0)]
    found = []
    untested = 0
    for (sub, payload, statistic), series in values.groupby([s.EXPERIMENT_TYPE, s.BYTES, STATISTIC], sort=False):
        series = series.sort_values(INDEX)
        positions = series[INDEX].to_numpy()
        tests = series_tests(series[VALUE].to_numpy(dtype=float), min_size, penalty_per_log_n, alpha)
        untested += not tests
        for split, p_value, before, after in tests:
            found.append((sub, int(payload), statistic, int(positions[split]), int(positions[split - 1]), before,
                          after, p_value))
    return found, untested


def decide(found: list[tuple], untested: int, experiments: pd.DataFrame, alpha: float = DEFAULT_ALPHA,
           share: float = 1.0) -> pd.DataFrame:
    """The change points of `tests_of_series`' candidates whose Holm-adjusted p-value is at most alpha.

    `share`: the part of alpha this family of tests may spend when the level is split between
    families (history.whole); its adjusted p-values are divided by it, so they compare with alpha."""
    if not found:
        return pd.DataFrame(columns=list(CHANGE_POINT_COLUMNS))
    # the series without a candidate are tests with p = 1: they only raise Holm's count
    adjusted = [min(1.0, p_value / share) for p_value in holm([row[-1] for row in found] + [1.0] * untested)[:len(found)]]
    rows = []
    for (sub, payload, statistic, index, previous, before, after, _), p_value in zip(found, adjusted):
        if p_value <= alpha:
            rows.append({s.EXPERIMENT_TYPE: sub, s.BYTES: payload, STATISTIC: statistic, INDEX: index,
                         s.LABEL: experiments.at[index, s.LABEL], COMMIT: experiments.at[index, COMMIT],
                         PREVIOUS_COMMIT: experiments.at[previous, COMMIT], BEFORE: before, AFTER: after,
                         CHANGE: 100.0 * (after / before - 1.0), P_VALUE: p_value})
    table = pd.DataFrame(rows, columns=list(CHANGE_POINT_COLUMNS))
    regression = table[CHANGE] > 0
    table = table.assign(_regression=regression, _size=table[CHANGE].abs())
    table = table.sort_values(["_regression", "_size"], ascending=[False, False], kind="stable")
    return table.drop(columns=["_regression", "_size"]).reset_index(drop=True)


def long_values(tables: dict[str, pd.DataFrame], order_column: str, statistics=STATISTICS) -> pd.DataFrame:
    """The `values` input of `detect` from per-sub-experiment summary tables (an order column, Bytes,
    the statistics' columns), statistics in `statistics`' order."""
    frames = []
    for sub, table in tables.items():
        for statistic in statistics:
            if table.empty:
                continue
            frames.append(pd.DataFrame({s.EXPERIMENT_TYPE: sub, s.BYTES: table[s.BYTES].astype(int).to_numpy(),
                                        STATISTIC: statistic, INDEX: table[order_column].astype(int).to_numpy(),
                                        VALUE: table[statistic].astype(float).to_numpy()}))
    if not frames:
        return pd.DataFrame(columns=[s.EXPERIMENT_TYPE, s.BYTES, STATISTIC, INDEX, VALUE])
    return pd.concat(frames, ignore_index=True)
