"""history.throughput: the throughput of every stored experiment, commit by commit, and where it moved
(issue 11's "history" of the throughput experiment; docs/history.md "Throughput").

The gate keeps each run's throughput tables in the results store (docs/formats.md section 9).
Each (throughput sub-experiment, payload, demand, recovery time) is one series of the subscription
throughput; change points are found exactly as for latency (change_points.detect: rank-cost
segmentation, Mann-Whitney, Holm over every series at `alpha`), but here a drop is the regression,
so regressions are the negative changes, listed first. Pure parts first; the command reads the
store, writes `<plots>/throughput_change_points.csv` (change_points.csv's columns) and one plot per
sub-experiment and demand, `<plots>/<throughput sub>/throughput_x<demand>.png`.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import change_points as cp
from . import events as history_events
from ..latency import experiments as ex
from .. import files
from . import files as hf
from .. import schema as s
from ..throughput.files import read_throughput, table_paths

CHANGE_POINTS_CSV = "throughput_change_points.csv"
# events.csv's columns (history.names), one row per moment a throughput sub-experiment moved
EVENTS_CSV = "throughput_events.csv"


def series_name(demand: int, recovery_ms: int) -> str:
    """The Statistic column of a throughput series: what the value is, and which test."""
    return f"Subscription throughput x{int(demand)} {int(recovery_ms)} ms"


# --- pure -----------------------------------------------------------------------------------------------
def throughput_values(tables: list[dict[str, pd.DataFrame]]) -> pd.DataFrame:
    """Per experiment (in commit order) its throughput tables by name -> change_points' long values."""
    frames = []
    for index, by_name in enumerate(tables):
        for name, table in by_name.items():
            frames.append(pd.DataFrame({
                s.EXPERIMENT_TYPE: name, s.BYTES: table[s.PAYLOAD].astype(int).to_numpy(),
                cp.STATISTIC: [series_name(d, r) for d, r in zip(table[s.DEMAND], table[s.RECOVERY_TIME])],
                cp.INDEX: index, cp.VALUE: table[s.SUBSCRIPTION_THROUGHPUT].astype(float).to_numpy()}))
    if not frames:
        return pd.DataFrame(columns=[s.EXPERIMENT_TYPE, s.BYTES, cp.STATISTIC, cp.INDEX, cp.VALUE])
    return pd.concat(frames, ignore_index=True)


def throughput_change_points(values: pd.DataFrame, experiments: pd.DataFrame,
                             alpha: float = cp.DEFAULT_ALPHA) -> pd.DataFrame:
    """change_points.detect, with the throughput's direction: drops (regressions) first, largest first."""
    table = cp.detect(values, experiments, alpha)
    if table.empty:
        return table
    table = table.assign(_regression=table[cp.CHANGE] < 0, _size=table[cp.CHANGE].abs())
    table = table.sort_values(["_regression", "_size"], ascending=[False, False], kind="stable")
    return table.drop(columns=["_regression", "_size"]).reset_index(drop=True)


def throughput_events(changes: pd.DataFrame, values: pd.DataFrame, experiments: pd.DataFrame,
                      alpha: float = cp.DEFAULT_ALPHA) -> pd.DataFrame:
    """The throughput's events (history.events, events.csv's columns): change points of one throughput
    sub-experiment and direction within a few runs of each other are one event; a drop is the
    regression (listed first, largest first). Change [%] is that of the sub-experiment as a whole
    (per run the geometric mean over its payloads and tests, each centred on its median), the
    Payloads and Statistics those that moved. The events group change points already decided at
    `alpha` (throughput_change_points): they raise no alarm of their own."""
    statistics = tuple(sorted(values[cp.STATISTIC].unique())) or (series_name(0, 0),)
    wholes = changes.iloc[0:0]
    return history_events.events(changes, wholes, values, experiments, alpha, higher_is_worse=False,
                                 whole_statistics=statistics, statistic_order=statistics)


def change_point_lines(table: pd.DataFrame) -> list[str]:
    lines = []
    for row in table.itertuples(index=False):
        sub, payload, statistic, index, label, commit, previous, before, after, change, p_value = row
        kind = "REGRESSION" if change < 0 else "improvement"
        commits = f"{str(previous or '')[:10]}..{str(commit)[:10]}" if commit else f"experiment {label}"
        lines.append(f"  {kind}: {sub} {statistic} at {payload} B {change:+.1f} % ({before:.3f} -> {after:.3f} Mb/s) "
                     f"from {commits} (#{index} {label}), p {p_value:.2g}")
    return lines


# --- the command ------------------------------------------------------------------------------------------
def stored_tables(experiments: list[ex.Experiment]) -> list[dict[str, pd.DataFrame]]:
    return [{name: read_throughput(path) for name, path in table_paths(e.path).items()} for e in experiments]


def draw(name: str, values: pd.DataFrame, changes: pd.DataFrame, ticks: list[str], folder: Path) -> int:
    from ..plotting.throughput_plots import draw_throughput_history

    drawn = 0
    for statistic, series in values.groupby(cp.STATISTIC, sort=True):
        demand = statistic.split(" x", 1)[1].split(" ", 1)[0]
        recovery = statistic.rsplit(" ", 2)[1]
        path = folder / name / f"throughput_x{demand}_{recovery}ms.png"
        marks = changes[(changes[s.EXPERIMENT_TYPE] == name) & (changes[cp.STATISTIC] == statistic)]
        draw_throughput_history(f"{name}: {statistic}", series, marks, ticks, path)
        drawn += 1
    return drawn


def throughput_history(experiments: list[ex.Experiment], described: pd.DataFrame, ticks: list[str] | None,
                       plots: Path, alpha: float) -> tuple[pd.DataFrame, int, pd.DataFrame] | None:
    """For perfgate.history.latency: None when no stored experiment has throughput tables; else the change
    points (also written to <plots>/throughput_change_points.csv), the plots drawn and the events
    (<plots>/throughput_events.csv)."""
    tables = stored_tables(experiments)
    if not any(tables):
        return None
    values = throughput_values(tables)
    changes = throughput_change_points(values, described, alpha)
    events = throughput_events(changes, values, described, alpha)
    files.write_text(plots / CHANGE_POINTS_CSV, hf.format_change_points(changes))
    files.write_text(plots / EVENTS_CSV, hf.format_events(events))
    drawn = 0
    if ticks is not None:
        for name, by_name in values.groupby(s.EXPERIMENT_TYPE, sort=True):
            drawn += draw(str(name), by_name, changes, ticks, plots)
    return changes, drawn, events

