"""Events: what a maintainer reads first. One row per moment a sub-experiment's level moved.

A regression in Fast DDS is one step of a sub-experiment, seen in its whole series (history.whole)
and in many per-payload series (change_points), placed a run or two apart. `events` groups the
change points of one sub-experiment and one direction whose positions chain within `NEARBY_RUNS`
of each other into one event, and describes it:

- Index, Label, commits: those of its most significant change point (the smallest p-value; the
  whole series first on a tie: it averages the payloads' own noise, so it places the step best);
- Change [%]: After / Before - 1 of the sub-experiment's whole median series (the geometric mean
  over payloads of each payload's level) on the window between the neighbouring events of the
  sub-experiment (or the ends of the history);
- Lower bound [%]: the end nearer zero of the distribution-free one-sided confidence interval of
  that change at level 1 - alpha (Hodges-Lehmann-Moses: the Mann-Whitney statistic's quantile among
  the pairwise differences of the log values after and before), so "at least this much";
- Payloads, Statistics: what moved: the change points of the event, and the drill-down: every
  payload and statistic of the sub-experiment tested at the event's split on the same window
  (two-sided Mann-Whitney, Holm over those cells at alpha). The split was chosen from the data, so
  the drill-down describes; it raises no alarm of its own;
- p-value: the smallest adjusted p-value of its change points (comparable with alpha);
- Build options changed: where the runs' build options changed within NEARBY_RUNS of the event, and
  how (history.build_options): a step there may be the build's, not Fast DDS's. Empty otherwise.

Regressions first (latency: higher after), largest change first. Pure: DataFrames in, DataFrame out.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from scipy.stats import mannwhitneyu, norm

from . import build_options as options
from . import change_points as cp
from . import whole
from .. import schema as s
from ..ab.verdict import holm
from . import names as event_names

# change points of one sub-experiment this close (in runs, chaining) are one event: payloads of
# one step are placed a run or two apart, and a slow run beside the step moves one by three
NEARBY_RUNS = 3


def _chains(positions: np.ndarray) -> np.ndarray:
    """Group number of each sorted position: a new group where the gap exceeds NEARBY_RUNS."""
    return np.concatenate([[0], np.cumsum(np.diff(positions) > NEARBY_RUNS)]) if positions.size else positions


def group(changes: pd.DataFrame, wholes: pd.DataFrame, higher_is_worse: bool = True) -> list[pd.DataFrame]:
    """The change points (rows of both tables, change_points' columns) of each event, unsorted."""
    members = pd.concat([frame for frame in (wholes, changes) if not frame.empty], ignore_index=True) \
        if not (wholes.empty and changes.empty) else changes.iloc[0:0]
    groups = []
    if members.empty:
        return groups
    worse = (members[cp.CHANGE] > 0) == higher_is_worse
    for _, part in members.groupby([members[s.EXPERIMENT_TYPE], worse], sort=False):
        part = part.sort_values(cp.INDEX, kind="stable")
        for _, chained in part.groupby(_chains(part[cp.INDEX].to_numpy()), sort=False):
            groups.append(chained)
    return groups


def lower_bound(before: np.ndarray, after: np.ndarray, alpha: float) -> float:
    """The one-sided (1 - alpha) confidence bound, nearer zero, of the shift after - before (log
    values): Hodges-Lehmann-Moses from the sorted pairwise differences, the Mann-Whitney quantile by
    its normal approximation. NaN when the interval holds zero (the shift is not certain)."""
    n_before, n_after = before.size, after.size
    differences = np.sort((after[:, None] - before[None, :]).ravel())
    pairs = differences.size
    rank = math.floor(pairs / 2 - norm.ppf(1 - alpha) * math.sqrt(n_before * n_after * (n_before + n_after + 1) / 12))
    if rank < 0:
        return math.nan
    low, high = differences[rank], differences[pairs - 1 - rank]
    if low > 0:
        return float(low)
    if high < 0:
        return float(high)
    return math.nan


def _two_sided(before: np.ndarray, after: np.ndarray) -> float:
    if before.size < cp.MIN_SEGMENT or after.size < cp.MIN_SEGMENT:
        return 1.0
    method = "exact" if min(before.size, after.size) <= cp.EXACT_TEST_LIMIT else "asymptotic"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # exact p-values with ties are approximate
        return float(mannwhitneyu(before, after, alternative="two-sided", method=method).pvalue)


def drill_down(values: pd.DataFrame, sub: str, start: int, split: int, end: int,
               alpha: float) -> list[tuple[int, str]]:
    """(payload, statistic) cells of `sub` whose level moved at `split` on positions [start, end)."""
    rows = values[(values[s.EXPERIMENT_TYPE] == sub) & values[cp.INDEX].between(start, end - 1)
                  & np.isfinite(values[cp.VALUE].astype(float)) & (values[cp.VALUE].astype(float) > 0)]
    cells, p_values = [], []
    for (payload, statistic), series in rows.groupby([s.BYTES, cp.STATISTIC], sort=False):
        logs = np.log(series[cp.VALUE].to_numpy(dtype=float))
        later = series[cp.INDEX].to_numpy() >= split
        cells.append((int(payload), str(statistic)))
        p_values.append(_two_sided(logs[~later], logs[later]))
    return [cell for cell, p_value in zip(cells, holm(p_values)) if p_value <= alpha]


def _window(sub_splits: list[int], split: int, count: int) -> tuple[int, int]:
    """[start, end) between the neighbouring events of the sub-experiment, else the history's ends."""
    earlier = [other for other in sub_splits if other < split]
    later = [other for other in sub_splits if other > split]
    return (max(earlier) if earlier else 0), (min(later) if later else count)


def events(changes: pd.DataFrame, wholes: pd.DataFrame, values: pd.DataFrame, experiments: pd.DataFrame,
           alpha: float = cp.DEFAULT_ALPHA, higher_is_worse: bool = True, *,
           whole_statistics: tuple[str, ...] = whole.WHOLE_STATISTICS,
           statistic_order: tuple[str, ...] = s.CHECKED_MAGNITUDES) -> pd.DataFrame:
    """The event table (history.names.EVENT_COLUMNS) of a history's per-payload change points `changes` and
    whole sub-experiment change points `wholes` (history.whole.decide_both), from `values` (the
    detector's long input) and `experiments` (Label, Fast DDS commit by position). The change is
    measured on the whole series of `whole_statistics` (latency: the Median; throughput: every test,
    history.throughput); Statistics lists what moved in `statistic_order`, then any other name sorted."""
    groups = group(changes, wholes, higher_is_worse)
    leads = []
    for members in groups:
        ranked = members.assign(_whole=members[s.BYTES] != whole.WHOLE).sort_values(
            [cp.P_VALUE, "_whole"], kind="stable")
        leads.append(ranked.iloc[0])
    if tuple(whole_statistics) == tuple(whole.WHOLE_STATISTICS):
        whole_series = whole.whole_values(values)
    else:  # one whole series per sub-experiment over all these statistics: each (payload, statistic) a cell
        kept = values[values[cp.STATISTIC].isin(whole_statistics)]
        cells = pd.factorize(pd.MultiIndex.from_arrays([kept[s.BYTES], kept[cp.STATISTIC]]))[0]
        whole_series = whole.whole_values(kept.assign(**{s.BYTES: cells, cp.STATISTIC: whole_statistics[0]}),
                                          (whole_statistics[0],))
    count = len(experiments)
    built = experiments[options.BUILD_OPTIONS].tolist() if options.BUILD_OPTIONS in experiments else []
    option_changes = options.option_changes(built)
    rows = []
    for members, lead in zip(groups, leads):
        sub, split = lead[s.EXPERIMENT_TYPE], int(lead[cp.INDEX])
        start, end = _window([int(other[cp.INDEX]) for other in leads if other[s.EXPERIMENT_TYPE] == sub], split, count)
        series = whole_series[(whole_series[s.EXPERIMENT_TYPE] == sub) & whole_series[cp.INDEX].between(start, end - 1)]
        logs = np.log(series[cp.VALUE].to_numpy(dtype=float))
        later = series[cp.INDEX].to_numpy() >= split
        before, after = logs[~later], logs[later]
        change = 100.0 * math.expm1(float(np.median(after) - np.median(before))) if before.size and after.size else math.nan
        bound = lower_bound(before, after, alpha) if before.size and after.size else math.nan
        moved = set(drill_down(values, sub, start, split, end, alpha))
        moved |= {(int(row[s.BYTES]), str(row[cp.STATISTIC])) for _, row in members.iterrows()}
        payloads = sorted({payload for payload, _ in moved if payload != whole.WHOLE})
        named = {stat for _, stat in moved}
        statistics = [statistic for statistic in statistic_order if statistic in named] + \
            sorted(named - set(statistic_order))
        option_change = options.near(option_changes, split, NEARBY_RUNS)
        rows.append({s.EXPERIMENT_TYPE: sub, event_names.EVENT_INDEX: split, s.LABEL: experiments.at[split, s.LABEL],
                     event_names.EVENT_COMMIT: lead[cp.COMMIT], event_names.EVENT_PREVIOUS_COMMIT: lead[cp.PREVIOUS_COMMIT],
                     event_names.EVENT_CHANGE: change, event_names.EVENT_LOWER_BOUND: 100.0 * math.expm1(bound) if not math.isnan(bound)
                     else math.nan, event_names.EVENT_PAYLOADS: " ".join(str(payload) for payload in payloads),
                     event_names.EVENT_STATISTICS: " ".join(statistics), event_names.EVENT_P_VALUE: float(members[cp.P_VALUE].min()),
                     event_names.EVENT_BUILD_CHANGE: option_change.text(str(experiments.at[option_change.position, s.LABEL]))
                     if option_change else ""})
    table = pd.DataFrame(rows, columns=list(event_names.EVENT_COLUMNS))
    if table.empty:
        return table
    worse = (table[event_names.EVENT_CHANGE] > 0) == higher_is_worse
    table = table.assign(_worse=worse, _size=table[event_names.EVENT_CHANGE].abs().fillna(0.0))
    table = table.sort_values(["_worse", "_size"], ascending=[False, False], kind="stable")
    return table.drop(columns=["_worse", "_size"]).reset_index(drop=True)
