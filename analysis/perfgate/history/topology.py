"""history.topology: the topology runs a results store keeps, run by run in the history's commit order,
and where their figures moved (issue 26's "History: latency_total and resources per run, with change
points"; docs/history.md "Topologies").

Each gate with `--experiments ...,topology` keeps each topology's tables in its stored experiment
(topology/<name>/, history.topology_tables reads them as untrusted). Per topology and statistic (late
share, mean and 99 % latency over every message, CPU and RSS: STATISTICS) the runs form one series, tested
exactly as the latency's and throughput's are (change_points.detect: ruptures' rank-cost binary
segmentation proposes, a Mann-Whitney test paying for the choice confirms, Holm over every topology
series at `alpha`). Both are rank-based, so the series are given shifted by +1 (SHIFT): a share of 0
(no late message, the usual night) is then a value like any other instead of a gap, while every rank,
split and p-value is the one of the series itself; Before and After are shifted back. Every statistic is
worse higher, so a regression is After > Before; `Change [%]` is empty when Before is 0 (a share that
was 0: no ratio). Pure parts first; `topology_history` writes `<plots>/topology_history.csv` and
`<plots>/topology_change_points.csv` (below), the page draws them (history.topology_page).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import change_points as cp
from .. import files
from .. import schema as s
from ..escape import spreadsheet
from ..latency import experiments as ex
from ..topology import names as n
from .topology_tables import FIGURES, StoredTopology, stored_topologies

TOPOLOGY = "Topology"
HISTORY_CSV = "topology_history.csv"
CHANGE_POINTS_CSV = "topology_change_points.csv"
STATISTICS = (n.LATE_PERCENT, n.MEAN, n.P99, n.RESOURCE_CPU, n.RESOURCE_RSS)  # the series tested
HISTORY_COLUMNS = (TOPOLOGY, cp.INDEX, s.LABEL, cp.COMMIT, *FIGURES)
CHANGE_POINT_COLUMNS = (TOPOLOGY, cp.STATISTIC, cp.INDEX, s.LABEL, cp.COMMIT, cp.PREVIOUS_COMMIT, cp.BEFORE, cp.AFTER,
                        cp.CHANGE, cp.P_VALUE)
SHIFT = 1.0  # added before the rank-based detection, taken off its medians (every figure is >= 0)


# --- pure -------------------------------------------------------------------------------------------------
def history_table(runs: list[list[StoredTopology]], experiments: pd.DataFrame) -> pd.DataFrame:
    """One row per run (position in commit order) and topology it kept: HISTORY_COLUMNS, NaN where it
    gave no figure. `experiments`: Label and Fast DDS commit by position."""
    rows = [{TOPOLOGY: run.name, cp.INDEX: index, s.LABEL: experiments.at[index, s.LABEL],
             cp.COMMIT: experiments.at[index, cp.COMMIT], **run.figures}
            for index, topologies in enumerate(runs) for run in topologies]
    return pd.DataFrame(rows, columns=list(HISTORY_COLUMNS))


def detector_values(table: pd.DataFrame) -> pd.DataFrame:
    """change_points' long input: one series per topology and statistic, shifted by SHIFT; the runs
    without the figure left out (a gap)."""
    frames = [pd.DataFrame({s.EXPERIMENT_TYPE: table[TOPOLOGY].to_numpy(), s.BYTES: 0, cp.STATISTIC: statistic,
                            cp.INDEX: table[cp.INDEX].astype(int).to_numpy(),
                            cp.VALUE: table[statistic].astype(float).to_numpy() + SHIFT})
              for statistic in STATISTICS]
    values = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return values[np.isfinite(values[cp.VALUE])].reset_index(drop=True)


def topology_change_points(table: pd.DataFrame, experiments: pd.DataFrame,
                           alpha: float = cp.DEFAULT_ALPHA) -> pd.DataFrame:
    """CHANGE_POINT_COLUMNS, regressions (After > Before) first, the largest change first (a share that
    rose from 0 before every ratio)."""
    found = cp.detect(detector_values(table), experiments, alpha)
    before, after = found[cp.BEFORE] - SHIFT, found[cp.AFTER] - SHIFT
    with np.errstate(divide="ignore", invalid="ignore"):
        change = np.where(before > 0, 100.0 * (after / before - 1.0), np.nan)
    found = found.assign(**{cp.BEFORE: before, cp.AFTER: after, cp.CHANGE: change,
                            "_regression": after > before, "_size": np.nan_to_num(np.abs(change), nan=np.inf)})
    found = found.sort_values(["_regression", "_size"], ascending=[False, False], kind="stable")
    found = found.rename(columns={s.EXPERIMENT_TYPE: TOPOLOGY})
    return found.loc[:, list(CHANGE_POINT_COLUMNS)].reset_index(drop=True)


def format_history(table: pd.DataFrame) -> str:
    out = table.copy()
    for column in (TOPOLOGY, s.LABEL, cp.COMMIT):  # from the store: never a formula
        out[column] = spreadsheet.cells(out[column].fillna(""))
    return files.format_csv(out)


def format_change_points(table: pd.DataFrame) -> str:
    out = table.copy()
    out[cp.P_VALUE] = out[cp.P_VALUE].map(lambda value: f"{value:.6g}")
    for column in (TOPOLOGY, s.LABEL, cp.COMMIT, cp.PREVIOUS_COMMIT):
        out[column] = spreadsheet.cells(out[column].fillna(""))
    return files.format_csv(out)


def change_point_lines(table: pd.DataFrame) -> list[str]:
    """One line per change point for the terminal (unescaped: the caller escapes for the log)."""
    lines = []
    for row in table.itertuples(index=False):
        topology, statistic, index, label, commit, previous, before, after, change, p_value = row
        kind = "REGRESSION" if after > before else "improvement"
        size = "from 0" if np.isnan(change) else f"{change:+.1f} %"
        commits = f"{str(previous or '?')[:10]}..{str(commit)[:10]}" if commit else f"experiment {label}"
        lines.append(f"  {kind}: topology {topology} {statistic} {size} ({before:.3f} -> {after:.3f}) from {commits} "
                     f"(#{index} {label}), p {p_value:.2g}")
    return lines


# --- the command's part -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TopologyHistory:
    table: pd.DataFrame  # HISTORY_COLUMNS
    changes: pd.DataFrame  # CHANGE_POINT_COLUMNS
    without_figures: dict[str, int]  # topology -> runs that kept it without figures (did not finish)

    def summary_lines(self, plots: Path) -> list[str]:
        regressions = int((self.changes[cp.AFTER] > self.changes[cp.BEFORE]).sum())
        names = sorted(set(self.table[TOPOLOGY]))
        lines = [f"history: topology: {len(names)} topolog{'y' if len(names) == 1 else 'ies'} "
                 f"({', '.join(names)}) in {self.table[cp.INDEX].nunique()} run(s); {len(self.changes)} change "
                 f"point(s), {regressions} regression(s): {plots / CHANGE_POINTS_CSV}"]
        lines += [f"  topology {name}: {count} run(s) without figures (the run did not finish)"
                  for name, count in sorted(self.without_figures.items()) if count]
        return lines + change_point_lines(self.changes)


def topology_history(experiments: list[ex.Experiment], described: pd.DataFrame, plots: Path,
                     alpha: float) -> TopologyHistory | None:
    """For perfgate.history.latency: None when no stored experiment kept a topology run; else the table
    and change points, also written to <plots>/topology_history.csv and topology_change_points.csv."""
    runs = [stored_topologies(experiment.path) for experiment in experiments]
    if not any(runs):
        return None
    table = history_table(runs, described)
    changes = topology_change_points(table, described, alpha)
    files.write_text(plots / HISTORY_CSV, format_history(table))
    files.write_text(plots / CHANGE_POINTS_CSV, format_change_points(changes))
    unmeasured = table[table[list(FIGURES)].isna().all(axis=1)]
    return TopologyHistory(table, changes, unmeasured[TOPOLOGY].value_counts().to_dict())
