"""Events: what a maintainer reads first. One row per moment a sub-experiment's level moved.

A regression in Fast DDS is one step of a sub-experiment, seen in its whole series (history.whole)
and in many per-payload series (change_points), placed a run or two apart. `events` groups the
change points of one sub-experiment and one direction whose positions chain within `NEARBY_RUNS`
of each other into one event, and describes it:

- Index, Label, commits: those of its most significant change point (the smallest p-value; the
  whole series first on a tie: it averages the payloads' own noise, so it places the step best);
- Change [%]: After / Before - 1 of the sub-experiment's whole median series (the geometric mean
  over payloads of each payload's level) on the event's own window: at most EVENT_WINDOW_RUNS on each
  side of its split, and never past a neighbouring event of the sub-experiment (or the ends of the
  history). Measured between events instead, a 5000-run history gave a step's neighbours its change,
  in the opposite direction of their own change points;
- an event is reported only when that window confirms it: the lower bound below exists and lies on
  the side of its change points. A change point the long segments of a 5000-run history make
  significant for a shift of 0.2 % is no event: nothing moved around it;
- First run, Last run: where the step's first run may be, at about 95 % (position_range), and the
  commit range that vouches for it: Good commit (the run before the range) and Bad commit (the
  range's last run), what bisect-events bisects; a placement is uncertain by a run or two;
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
from scipy.stats import mannwhitneyu, norm, rankdata

from . import build_options as options
from . import change_points as cp
from . import whole
from .. import schema as s
from ..ab.verdict import holm
from . import names as event_names

# change points of one sub-experiment this close (in runs, chaining) are one event: payloads of
# one step are placed a run or two apart, and a slow run beside the step moves one by three
NEARBY_RUNS = 3
# an event's change and place are measured on at most this many runs on each side of it (Otava's window)
EVENT_WINDOW_RUNS = 50
# The place of a step: every split of the event's window whose rank statistic (before against after: the
# Kruskal-Wallis H of two groups, the rank analogue of twice the log-likelihood ratio of a mean shift) is
# within this of the largest. For a mean shift the largest ratio's excess over the true place's is the
# maximum of two independent random walks with drift -1/2 (Hinkley 1970), P(> x) = 1 - (1 - exp(-x))^2
# on the log-likelihood scale, 0.05 at x = 3.68: twice that on the H scale.
POSITION_CRITICAL = 2 * 3.676


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
    """[start, end): at most EVENT_WINDOW_RUNS on each side of `split`, never past a neighbouring event of
    the sub-experiment nor the history's ends (within _between's window)."""
    start, end = _between(sub_splits, split, count)
    return max(start, split - EVENT_WINDOW_RUNS), min(end, split + EVENT_WINDOW_RUNS)


def _between(sub_splits: list[int], split: int, count: int) -> tuple[int, int]:
    """[start, end) between the neighbouring events of the sub-experiment, else the history's ends: the
    drill-down's window (it describes what moved, with the most runs that show it)."""
    earlier = [other for other in sub_splits if other < split]
    later = [other for other in sub_splits if other > split]
    return (max(earlier) if earlier else 0), (min(later) if later else count)


def position_range(positions: np.ndarray, logs: np.ndarray, split: int,
                   min_size: int = cp.MIN_SEGMENT) -> tuple[int, int]:
    """(first, last) position where the step's first run may be, at about 95 %: the first runs after every
    split of the window (`positions` increasing, their `logs`) whose two-group rank statistic is within
    POSITION_CRITICAL of the largest, `split` itself always in."""
    count = logs.size
    if count < 2 * min_size:
        return split, split
    centred = rankdata(logs) - (count + 1) / 2.0
    variance = float(np.mean(centred ** 2))
    if variance == 0:
        return split, split
    before = np.arange(min_size, count - min_size + 1)  # runs before each split
    sums = np.cumsum(centred)[before - 1]  # the ranks before it sum to this, after it to minus this
    statistic = sums ** 2 * (1.0 / before + 1.0 / (count - before)) / variance
    first_after = positions[before[statistic >= statistic.max() - POSITION_CRITICAL]]
    return min(int(first_after.min()), split), max(int(first_after.max()), split)


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
        neighbours = [int(other[cp.INDEX]) for other in leads if other[s.EXPERIMENT_TYPE] == sub]
        start, end = _window(neighbours, split, count)
        series = whole_series[(whole_series[s.EXPERIMENT_TYPE] == sub) & whole_series[cp.INDEX].between(start, end - 1)]
        series = series.sort_values(cp.INDEX, kind="stable")
        positions = series[cp.INDEX].to_numpy()
        logs = np.log(series[cp.VALUE].to_numpy(dtype=float))
        later = positions >= split
        before, after = logs[~later], logs[later]
        change = 100.0 * math.expm1(float(np.median(after) - np.median(before))) if before.size and after.size else math.nan
        bound = lower_bound(before, after, alpha) if before.size and after.size else math.nan
        if math.isnan(bound) or (bound > 0) != (float(lead[cp.CHANGE]) > 0):
            continue  # its own window does not confirm it: nothing moved around this change point
        first, last = position_range(positions, logs, split)
        good = positions[positions < first]
        good_commit = experiments.at[int(good.max()), cp.COMMIT] if good.size else None
        wide_start, wide_end = _between(neighbours, split, count)
        moved = set(drill_down(values, sub, wide_start, split, wide_end, alpha))
        moved |= {(int(row[s.BYTES]), str(row[cp.STATISTIC])) for _, row in members.iterrows()}
        payloads = sorted({payload for payload, _ in moved if payload != whole.WHOLE})
        named = {stat for _, stat in moved}
        statistics = [statistic for statistic in statistic_order if statistic in named] + \
            sorted(named - set(statistic_order))
        option_change = options.near(option_changes, split, NEARBY_RUNS)
        created = experiments.at[split, event_names.CREATED] if event_names.CREATED in experiments else None
        rows.append({s.EXPERIMENT_TYPE: sub, event_names.EVENT_INDEX: split, s.LABEL: experiments.at[split, s.LABEL],
                     event_names.EVENT_DATE: created.strftime(event_names.EVENT_DATE_FORMAT) if created is not None
                     and not pd.isna(created) else "",
                     event_names.EVENT_COMMIT: lead[cp.COMMIT], event_names.EVENT_PREVIOUS_COMMIT: lead[cp.PREVIOUS_COMMIT],
                     event_names.EVENT_CHANGE: change, event_names.EVENT_LOWER_BOUND: 100.0 * math.expm1(bound) if not math.isnan(bound)
                     else math.nan, event_names.EVENT_PAYLOADS: " ".join(str(payload) for payload in payloads),
                     event_names.EVENT_STATISTICS: " ".join(statistics), event_names.EVENT_P_VALUE: float(members[cp.P_VALUE].min()),
                     event_names.EVENT_BUILD_CHANGE: option_change.text(str(experiments.at[option_change.position, s.LABEL]))
                     if option_change else "", event_names.EVENT_FIRST_RUN: first, event_names.EVENT_LAST_RUN: last,
                     event_names.EVENT_GOOD_COMMIT: good_commit, event_names.EVENT_BAD_COMMIT: experiments.at[last, cp.COMMIT]})
    table = pd.DataFrame(rows, columns=list(event_names.EVENT_COLUMNS))
    if table.empty:
        return table
    worse = (table[event_names.EVENT_CHANGE] > 0) == higher_is_worse
    table = table.assign(_worse=worse, _size=table[event_names.EVENT_CHANGE].abs().fillna(0.0))
    table = table.sort_values(["_worse", "_size"], ascending=[False, False], kind="stable")
    return table.drop(columns=["_worse", "_size"]).reset_index(drop=True)
