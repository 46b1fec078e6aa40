"""history.pngs: which history PNGs `perfgate history` draws, and drawing one sub-experiment's.

Every sub-experiment gets its four plots of all payloads (`history_{min,median,max,99}.png`): the
overview the nightly step summary, the Pages index and a README embed. A plot of one payload and
statistic (`<bytes>_bytes_{median,99,max}.png`) is drawn only where that series moved: it has a
change point, or an event lists its payload and statistic. The interactive page (history.html)
has every series of every sub-experiment, zoomable; drawing all 330 per-payload PNGs of ten
sub-experiments was 90 % of a history's time over 1000 runs (issue 24, docs/history.md
"Which PNGs"), and no reader looks at 300 flat lines. `--all-plots` draws every one as before.
A payload PNG that is no longer drawn is removed, so none shows an older history.

Pure selection first (`payload_plots_wanted`, `change_marks`), then the drawing, which runs in the
history's worker processes (one call per sub-experiment).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from . import change_points as cp
from . import names as event_names
from .. import schema as s
from ..latency import experiments as ex
from ..latency.check import is_over
from ..pools import stop_requested

NEARBY_RUNS = 3  # change points of one statistic this close on the plot of all payloads are one mark
# a payload PNG's name (schema.history_payload_png): only these are ever removed from a sub's folder
PAYLOAD_PNG = re.compile(r"(\d+)_bytes_(" + "|".join(re.escape(slug) for slug in s.CHECK_SLUGS.values()) + r")\.png")


# --- pure ---------------------------------------------------------------------------------------
def magnitude_history(table: pd.DataFrame, magnitude: str, experiment_count: int) -> pd.DataFrame:
    """Experiments (positions 0..n-1) x payloads of one magnitude; NaN where a run lacks the payload."""
    wide = table.pivot(index=ex.ORDER, columns=s.BYTES, values=magnitude)
    wide = wide.reindex(index=range(experiment_count), columns=sorted(wide.columns))
    wide.columns = [int(c) for c in wide.columns]
    return wide


def above_requirement(values: pd.Series, requirement: float | None) -> pd.Series:
    """Which experiments are over the requirement by the contract's rule (missing values are not)."""
    if requirement is None:
        return pd.Series(False, index=values.index)
    numbers = values.to_numpy(dtype=float)
    over = np.zeros(len(numbers), dtype=bool)
    present = ~np.isnan(numbers)
    over[present] = is_over(numbers[present], requirement)
    return pd.Series(over, index=values.index)


def payload_plots_wanted(changes: pd.DataFrame, events: pd.DataFrame, sub: str) -> set[tuple[str, int]]:
    """(statistic, payload) of `sub` whose PNG is drawn: a per-payload change point of that series,
    or an event of the sub-experiment listing the payload and the statistic."""
    mine = changes[changes[s.EXPERIMENT_TYPE] == sub]
    wanted = {(str(statistic), int(payload)) for statistic, payload in zip(mine[cp.STATISTIC], mine[s.BYTES])}
    for _, event in events[events[s.EXPERIMENT_TYPE] == sub].iterrows():
        payloads = [int(p) for p in str(event[event_names.EVENT_PAYLOADS] or "").split()]
        statistics = [name for name in str(event[event_names.EVENT_STATISTICS] or "").split()
                      if name in s.CHECKED_MAGNITUDES]
        wanted |= {(statistic, payload) for statistic in statistics for payload in payloads}
    return wanted


def change_marks(changes: pd.DataFrame, sub: str) -> dict:
    """(statistic, payload) -> [(position, change %)], and (statistic, None) -> one mark per group of
    change points at most NEARBY_RUNS apart over all payloads (their median position and change),
    for one sub-experiment's plots: payloads placed a run or two apart are one step, not four."""
    rows = changes[changes[s.EXPERIMENT_TYPE] == sub]
    marks: dict = {}
    for (statistic, payload), group in rows.groupby([cp.STATISTIC, s.BYTES]):
        marks[(statistic, int(payload))] = list(zip(group[cp.INDEX].astype(int), group[cp.CHANGE]))
    for statistic, group in rows.groupby(cp.STATISTIC):
        group = group.sort_values(cp.INDEX)
        cluster = (group[cp.INDEX].diff() > NEARBY_RUNS).cumsum()
        marks[(statistic, None)] = [(int(round(part[cp.INDEX].median())), float(part[cp.CHANGE].median()))
                                    for _, part in group.groupby(cluster)]
    return marks


def baseline_values(baselines: list[tuple[str, ex.Experiment]], sub: str) -> list[tuple[str, dict]]:
    """Per baseline that has the sub-experiment: (name, {(payload, statistic): value})."""
    values = []
    for name, baseline in baselines:
        if sub in baseline.subexperiments:
            summary = baseline.summary(sub)
            values.append((name, {(int(row[s.BYTES]), check): float(row[check])
                                  for _, row in summary.iterrows() for check in s.CHECKED_MAGNITUDES}))
    return values


# --- drawing (in a worker process) --------------------------------------------------------------
def remove_stale_payload_pngs(plots: Path, sub: str, drawn: set[Path]) -> int:
    """Remove the payload PNGs of `sub` an earlier history drew and this one did not: they would show
    an older history beside the current one. Only files named like one (PAYLOAD_PNG) are touched."""
    folder = plots / sub
    removed = 0
    if not folder.is_dir():
        return removed
    for path in folder.iterdir():
        if PAYLOAD_PNG.fullmatch(path.name) and path not in drawn and path.is_file() and not path.is_symlink():
            path.unlink()
            removed += 1
    return removed


def draw_sub(sub: str, table: pd.DataFrame, requirements: dict, tick_labels: list[str], plots: Path,
             marks: dict, baselines: list[tuple[str, dict]], ab: list[tuple[int, str, str]],
             wanted: set[tuple[str, int]] | None = None) -> int:
    """The sub-experiment's four plots of all payloads and the payload plots of `wanted` ((statistic,
    payload); None: every payload); the number of PNGs drawn."""
    from ..plotting.history_marks import MarkedHistoryFigures

    figures = MarkedHistoryFigures(tick_labels)
    count = len(tick_labels)
    drawn = 0
    for magnitude in s.PLOTTED_MAGNITUDES:
        if stop_requested():
            return drawn
        figures.magnitude(sub, magnitude, magnitude_history(table, magnitude, count),
                          s.history_magnitude_png(plots, sub, magnitude), marks.get((magnitude, None), []), ab)
        drawn += 1
    written: set[Path] = set()
    for check in s.CHECKED_MAGNITUDES:
        values = magnitude_history(table, check, count)
        for payload in values.columns:
            if wanted is not None and (check, payload) not in wanted:
                continue
            if stop_requested():
                return drawn
            requirement = requirements.get((payload, check))
            references = [(name, value[(payload, check)]) for name, value in baselines if (payload, check) in value]
            path = s.history_payload_png(plots, sub, payload, check)
            figures.payload(sub, check, payload, values[payload], requirement,
                            above_requirement(values[payload], requirement), path, marks.get((check, payload), []),
                            references, ab)
            written.add(path)
            drawn += 1
    remove_stale_payload_pngs(plots, sub, written)
    return drawn
