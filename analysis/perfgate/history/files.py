"""The files `perfgate history` writes besides its plots (docs/formats.md section 9).

- `<plots>/change_points.csv`: change_points.CHANGE_POINT_COLUMNS, one row per change point,
  regressions first; floats with 3 decimals, the p-value with 6 significant digits (it is compared
  with levels like 0.01 / 330, which 3 decimals would round to zero);
- `<plots>/events.csv`: history.names.EVENT_COLUMNS, one row per event (history.events), regressions
  first, and `<plots>/events.md`, the same for the nightly step summary (Markdown, escaped);
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
import json

from .. import files
from .. import schema as s
from ..escape import markdown, spreadsheet
from . import names as event_names

CHANGE_POINTS_CSV = "change_points.csv"
EVENTS_MD = "events.md"  # events.csv as Markdown, for the nightly step summary
OTAVA_DIR = "otava"
OTAVA_CONFIG = "otava.yaml"
OTAVA_TIME = "time"
OTAVA_COMMIT = "commit"
OTAVA_LABEL = "label"
OTAVA_STATISTICS = {s.MEDIAN: "median", s.P99: "p99", s.MAX: "max"}
CREATED = event_names.CREATED  # the experiments table's creation times (history.names)


def format_change_points(table: pd.DataFrame) -> str:
    out = table.loc[:, list(cp.CHANGE_POINT_COLUMNS)].copy()
    out[cp.P_VALUE] = out[cp.P_VALUE].map(lambda value: f"{value:.6g}")
    for column in (cp.COMMIT, cp.PREVIOUS_COMMIT):
        out[column] = out[column].fillna("")
    for column in (s.LABEL, cp.COMMIT, cp.PREVIOUS_COMMIT):  # from the store: never a formula
        out[column] = spreadsheet.cells(out[column])
    return files.format_csv(out)


def format_events(table: pd.DataFrame) -> str:
    """events.csv: history.names.EVENT_COLUMNS; changes with 3 decimals, the p-value with 6 significant digits."""
    out = table.loc[:, list(event_names.EVENT_COLUMNS)].copy()
    out[event_names.EVENT_P_VALUE] = out[event_names.EVENT_P_VALUE].map(lambda value: f"{value:.6g}")
    for column in (event_names.EVENT_CHANGE, event_names.EVENT_LOWER_BOUND):
        out[column] = out[column].map(lambda value: "" if pd.isna(value) else f"{value:.3f}")
    out[event_names.EVENT_DATE] = out[event_names.EVENT_DATE].fillna("")
    for column in (s.LABEL, event_names.EVENT_COMMIT, event_names.EVENT_PREVIOUS_COMMIT,
                   event_names.EVENT_BUILD_CHANGE, event_names.EVENT_GOOD_COMMIT,
                   event_names.EVENT_BAD_COMMIT):  # from the store: never a formula
        out[column] = spreadsheet.cells(out[column].fillna(""))
    return files.format_csv(out)


def event_texts(table: pd.DataFrame, higher_is_worse: bool = True) -> list[tuple[str, ...]]:
    """Per event, raw (unescaped) parts: kind, sub-experiment, change, the commit range it vouches for, where
    (the runs of that range, and the run it was placed at), what moved, p, and the build options' change
    beside it ('' when none)."""
    parts = []
    for row in table.loc[:, list(event_names.EVENT_COLUMNS)].itertuples(index=False):
        (sub, index, label, date, commit, previous, change, bound, payloads, statistics, p_value, build_change,
         first, last, good, bad) = row
        kind = "REGRESSION" if (change > 0) == higher_is_worse else "improvement"
        size = f"{change:+.1f} %" + ("" if pd.isna(bound) else f" (at least {bound:+.1f} %)")
        if _text(good) and _text(bad):
            commits = f"{_short(good)}..{_short(bad)}"
        else:
            commits = f"{_short(previous)}..{_short(commit)}" if _text(commit) else f"experiment {label}"
        ranged = not (pd.isna(first) or pd.isna(last)) and not first == last == index
        runs = f"runs #{first} to #{last}, placed at #{index} {label}" if ranged else f"#{index} {label}"
        runs += f", {date} UTC" if _text(date) else ""
        moved = f"payloads {payloads or '-'}; {statistics or '-'}"
        built = f"build options changed at {build_change}: the step may be the build's" \
            if isinstance(build_change, str) and build_change else ""
        parts.append((kind, str(sub), size, commits, runs, moved, f"p {event_names.p_text(p_value)}", built))
    return parts


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def event_lines(table: pd.DataFrame, higher_is_worse: bool = True) -> list[str]:
    """One line per event for the terminal (unescaped: the caller escapes for the log); throughput:
    higher_is_worse False (a drop is the regression)."""
    return [f"  {kind}: {sub} {size} from {commits} ({run}); {moved}; {p}" + (f"; {built}" if built else "")
            for kind, sub, size, commits, run, moved, p, built in event_texts(table, higher_is_worse)]


def events_markdown(table: pd.DataFrame, alpha: float, bisects: dict | None = None) -> str:
    """The nightly step summary's head: one list item per event, store text escaped for Markdown; an
    event that was bisected (`bisects`: row position -> history.bisect_links.BisectLink) links its report."""
    lines = [f"### perfgate history: {len(table)} event(s) at a family-wise false-alarm level of {alpha:g}", ""]
    for position, (kind, sub, size, commits, run, moved, p, built) in enumerate(event_texts(table)):
        link = (bisects or {}).get(position)
        bisect = f"; bisect: [{markdown.text(link.text)}]({link.markdown_href})" if link else ""
        built = f"; {markdown.text(built)}" if built else ""
        lines.append(f"- **{kind}**: {markdown.text(sub)} {size} from {markdown.text(commits)} "
                     f"({markdown.text(run)}); {moved}; {p}{built}{bisect}")
    return "\n".join(lines) + "\n"


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


def _yaml(text) -> str:
    """A YAML double-quoted scalar: JSON's string syntax is one (YAML 1.2), escapes included, so a
    name from the store cannot end its string, start a key or comment, or run anything."""
    return json.dumps(str(text))


def otava_config(tables: dict[str, pd.DataFrame], direction: int = -1) -> str:
    """otava.yaml: one csv test per sub-experiment, its file beside the config; each metric named
    `<sub>.<column>` (Otava wants metric names unique over every test) with the direction in which
    it gets better: -1 for a latency (lower is better), 1 for a throughput. Names come from the store:
    every one is a quoted YAML string (_yaml)."""
    lines = ["# written by perfgate history: one Otava csv test per sub-experiment (docs/history.md)", "tests:"]
    for sub, frame in tables.items():
        lines += [f"  {_yaml(f'perfgate.{sub}')}:", "    type: csv", f"    file: {_yaml(f'{sub}.csv')}",
                  f"    time_column: {OTAVA_TIME}", f"    attributes: [{OTAVA_COMMIT}, {OTAVA_LABEL}]", "    metrics:"]
        for column in frame.columns[3:]:
            lines.append(f"      {_yaml(f'{sub}.{column}')}: {{column: {_yaml(column)}, direction: {direction}}}")
        lines += ["    csv_options:", '      delimiter: ","']
    return "\n".join(lines) + "\n"


def write_otava(folder: Path, tables: dict[str, pd.DataFrame]) -> None:
    for sub, frame in tables.items():
        files.write_csv(folder / f"{sub}.csv", frame)
    files.write_text(folder / OTAVA_CONFIG, otava_config(tables))
