"""The files `perfgate history` writes besides its plots (docs/formats.md section 9).

- `<plots>/change_points.csv`: change_points.CHANGE_POINT_COLUMNS, one row per change point,
  regressions first; floats with 3 decimals, the p-value with 6 significant digits (it is compared
  with levels like 0.01 / 330, which 3 decimals would round to zero);
- `<plots>/otava/<sub>.csv` and `<plots>/otava/otava.yaml`: the store in the CSV layout of Apache
  Otava's csv tests (a time column, the commit as an attribute, one column per metric), with the
  test definitions, for teams that already run Otava on their other benchmarks.

Labels and commits come from the store (untrusted): a text cell that a spreadsheet would read as a
formula gets a leading `'` (escape.spreadsheet), in both files.

Formatting is pure (text out); `write_*` put it in place atomically (files.write_text).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import change_points as cp
from .. import files
from .. import schema as s
from ..escape import spreadsheet

CHANGE_POINTS_CSV = "change_points.csv"
# one row per regression event (change points of one sub-experiment a few runs apart); the page leads with it
EVENTS_CSV = "events.csv"
EVENT_COLUMNS = (s.EXPERIMENT_TYPE, "Index", s.LABEL, "Fast DDS commit", "Previous commit", "Change [%]",
                 "Lower bound [%]", "Payloads", "Statistics", "p-value")
OTAVA_DIR = "otava"
OTAVA_CONFIG = "otava.yaml"
OTAVA_TIME = "time"
OTAVA_COMMIT = "commit"
OTAVA_LABEL = "label"
OTAVA_STATISTICS = {s.MEDIAN: "median", s.P99: "p99", s.MAX: "max"}
CREATED = "Created"  # experiments table: UTC creation time, None when not recorded


def format_change_points(table: pd.DataFrame) -> str:
    out = table.loc[:, list(cp.CHANGE_POINT_COLUMNS)].copy()
    out[cp.P_VALUE] = out[cp.P_VALUE].map(lambda value: f"{value:.6g}")
    for column in (cp.COMMIT, cp.PREVIOUS_COMMIT):
        out[column] = out[column].fillna("")
    for column in (s.LABEL, cp.COMMIT, cp.PREVIOUS_COMMIT):  # from the store: never a formula
        out[column] = spreadsheet.cells(out[column])
    return files.format_csv(out)


def change_point_lines(table: pd.DataFrame) -> list[str]:
    """One line per change point for the terminal, regressions first as in the table."""
    lines = []
    for row in table.itertuples(index=False):
        sub, payload, statistic, index, label, commit, previous, before, after, change, p_value = row
        kind = "REGRESSION" if change > 0 else "improvement"
        commits = f"{_short(previous)}..{_short(commit)}" if commit else f"experiment {label}"
        lines.append(f"  {kind}: {sub} {statistic} at {payload} B {change:+.1f} % ({before:.3f} -> {after:.3f} us) "
                     f"from {commits} (#{index} {label}), p {p_value:.2g}")
    return lines


def _short(commit) -> str:
    return str(commit)[:10] if commit else "?"


def otava_metric(statistic: str, payload: int) -> str:
    return f"{OTAVA_STATISTICS[statistic]}_{payload}"


def otava_table(table: pd.DataFrame, experiments: pd.DataFrame, order_column: str) -> pd.DataFrame:
    """One sub-experiment's summaries as Otava rows: time, commit, label, then `<statistic>_<bytes>`.

    `experiments`: Label, Fast DDS commit and Created (UTC datetime or None) by position; rows
    without a creation time are left out (Otava orders by time and would refuse them).
    """
    columns = {}
    for statistic, slug in OTAVA_STATISTICS.items():
        wide = table.pivot(index=order_column, columns=s.BYTES, values=statistic)
        for payload in sorted(wide.columns):
            columns[f"{slug}_{int(payload)}"] = wide[payload]
    frame = pd.DataFrame(columns).sort_index()
    described = experiments.reindex(frame.index)
    timed = described[CREATED].notna().to_numpy()
    frame, described = frame[timed], described[timed]
    # label and commit come from the store's metadata: text cells no spreadsheet runs (escape.spreadsheet)
    frame.insert(0, OTAVA_LABEL, spreadsheet.cells(described[s.LABEL]))
    frame.insert(0, OTAVA_COMMIT, spreadsheet.cells(described[cp.COMMIT].fillna("")))
    frame.insert(0, OTAVA_TIME, [moment.strftime("%Y-%m-%d %H:%M:%S +0000") for moment in described[CREATED]])
    return frame.reset_index(drop=True)


def otava_config(tables: dict[str, pd.DataFrame]) -> str:
    """otava.yaml: one csv test per sub-experiment, its file beside the config."""
    lines = ["# written by perfgate history: one Otava csv test per sub-experiment (docs/history.md)", "tests:"]
    for sub, frame in tables.items():
        metrics = ", ".join(frame.columns[3:])
        lines += [f"  perfgate.{sub}:", "    type: csv", f"    file: {sub}.csv", f"    time_column: {OTAVA_TIME}",
                  f"    attributes: [{OTAVA_COMMIT}, {OTAVA_LABEL}]", f"    metrics: [{metrics}]",
                  "    csv_options:", '      delimiter: ","']
    return "\n".join(lines) + "\n"


def write_otava(folder: Path, tables: dict[str, pd.DataFrame]) -> None:
    for sub, frame in tables.items():
        files.write_csv(folder / f"{sub}.csv", frame)
    files.write_text(folder / OTAVA_CONFIG, otava_config(tables))
