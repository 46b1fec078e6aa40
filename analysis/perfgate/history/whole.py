"""Each sub-experiment tested as a whole: one series per sub-experiment and statistic.

A regression in Fast DDS moves every payload of a sub-experiment together, so a short history
whose per-payload series each miss the step (every one tested alone, then Holm over 330 series)
still shows it in the sub-experiment's level: per run, the mean over its payloads of each
payload's log value, centred on that payload's median over the history (so a run that lacks a
payload is not moved by its absence). That is the mean log change over payloads, as the A/B
verdict takes it (docs/verdict.md); the payload's own noise averages out, the run's shared drift
does not.

These series go through the very detector and test of the per-payload series (change_points:
rank-cost segmentation, Mann-Whitney per candidate, the Bonferroni factor of the choices), in a
family of their own. The false-alarm level `alpha` is split between the two families
(weighted Bonferroni): `WHOLE_SHARE` of it for the sub-experiments, the rest for the payloads,
each family Holm-corrected and its p-values divided by its share, so both are compared with
`alpha` and the probability that a history without a change reports any change point, in either
family, is at most `alpha` (docs/history.md "Sub-experiments as a whole").

Pure: DataFrames in, DataFrames out.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import change_points as cp
from .. import schema as s

# the Bytes of a sub-experiment's whole series in change_points' tables: no payload has 0 bytes
WHOLE = 0
# the sub-experiment family gets most of the level: in a long history the per-payload series
# reach p-values far below any level, in a short one only the whole series can find the step
# (docs/history.md: measured with benchmarks/bench_history_events.py)
WHOLE_SHARE = 0.9
# the statistic tested as a whole: the median, the level every payload shares; the 99 % and Max
# carry a run's own stalls, and each one more in this family would halve the level left to the median
# (docs/history.md); they keep their per-payload series
WHOLE_STATISTICS = (s.MEDIAN,)


def whole_values(values: pd.DataFrame, statistics=WHOLE_STATISTICS) -> pd.DataFrame:
    """change_points' long values (Experiment type, Bytes, Statistic, Index, Value) -> one row per
    sub-experiment, statistic and run: Bytes = WHOLE, Value = the geometric mean over the run's
    payloads of value / that payload's median over the history."""
    kept = values[values[cp.STATISTIC].isin(statistics) & np.isfinite(values[cp.VALUE].astype(float))
                  & (values[cp.VALUE].astype(float) > 0)]
    columns = [s.EXPERIMENT_TYPE, s.BYTES, cp.STATISTIC, cp.INDEX, cp.VALUE]
    if kept.empty:
        return pd.DataFrame(columns=columns)
    logs = np.log(kept[cp.VALUE].astype(float))
    centred = logs - logs.groupby([kept[s.EXPERIMENT_TYPE], kept[s.BYTES], kept[cp.STATISTIC]]).transform("median")
    frame = pd.DataFrame({s.EXPERIMENT_TYPE: kept[s.EXPERIMENT_TYPE], cp.STATISTIC: kept[cp.STATISTIC],
                          cp.INDEX: kept[cp.INDEX].astype(int), "_log": centred})
    per_run = frame.groupby([s.EXPERIMENT_TYPE, cp.STATISTIC, cp.INDEX], sort=False)["_log"].mean().reset_index()
    per_run[s.BYTES] = WHOLE
    per_run[cp.VALUE] = np.exp(per_run["_log"])
    return per_run.loc[:, columns].reset_index(drop=True)


def tests_of_subs(values: pd.DataFrame, alpha: float = cp.DEFAULT_ALPHA) -> tuple[list[tuple], int]:
    """change_points.tests_of_series of the whole series of `values` (any number of sub-experiments)."""
    return cp.tests_of_series(whole_values(values), alpha * WHOLE_SHARE)


def joined(tested: list[tuple[tuple[list[tuple], int], tuple[list[tuple], int]]]) -> tuple[tuple, tuple]:
    """Per-sub-experiment (payload tests, whole tests), as tested apart in workers, joined per family."""
    def join(family):
        return [row for found, _ in family for row in found], sum(untested for _, untested in family)
    return join([payloads for payloads, _ in tested]), join([wholes for _, wholes in tested])


def decide_both(payload_tests: tuple[list[tuple], int], whole_tests: tuple[list[tuple], int],
                experiments: pd.DataFrame, alpha: float = cp.DEFAULT_ALPHA) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-payload change points, whole sub-experiment change points), each family Holm-corrected
    with its share of `alpha`; their p-values are comparable with `alpha`."""
    payloads = cp.decide(*payload_tests, experiments, alpha, share=1.0 - WHOLE_SHARE)
    wholes = cp.decide(*whole_tests, experiments, alpha, share=WHOLE_SHARE)
    return payloads, wholes
