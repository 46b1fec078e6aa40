"""report: what a maintainer reads after a gate run.

Three views of one experiment folder: a Markdown step summary (for $GITHUB_STEP_SUMMARY), at most
ten `::error` workflow commands for the worst regressions, and one self-contained HTML page with
every plot embedded. Everything comes from the contract's files (check reports, summaries, the
`<sub>_comparison.csv` and comparison failures of the baseline comparison, metadata.json, PNGs),
so the reports do not depend on how the other steps work inside. `load` reads, the functions in
the middle build strings from frames and dicts, `write_reports` writes.
"""
from __future__ import annotations

import base64
import html
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from . import files
from . import schema as s
from .check import find_missing, format_percent, testcase_name
from .errors import InputError

PASS = "PASS"
REGRESSION = "REGRESSION"
INCOMPLETE = "INCOMPLETE"
VERDICT_EXIT_CODES = {PASS: s.EXIT_OK, REGRESSION: s.EXIT_REGRESSION, INCOMPLETE: s.EXIT_INCOMPLETE}

MAX_ANNOTATIONS = 10
# GitHub drops a step summary over 1 MiB; stay far below so several steps can share the file.
MARKDOWN_LIMIT = 1 << 20
# Above this many bytes of PNG the page re-encodes its images (shrink_image) to stay a few MB for a
# full ten-sub experiment (254 plots, 13.6 MB of PNG).
IMAGE_BUDGET = 3_000_000
PALETTE_COLOURS = 64
MAX_IMAGE_WIDTH = 1200

# Columns of the reports' own tables (not files of the contract).
SUB = "Sub-experiment"
BASELINE = "Baseline"
CHANGE = "Change vs baseline"
LINE = "line"
REASON = "Reason"
PAYLOADS = "Payloads"


@dataclass
class ExperimentResults:
    """Everything the reports show, as read from an experiment folder."""

    experiment_dir: Path
    requirements_path: Path
    requirements: pd.DataFrame  # files.read_requirements: with each row's line
    metadata: dict | None
    checks: dict[str, pd.DataFrame]  # sub -> check report
    summaries: dict[str, pd.DataFrame] = field(default_factory=dict)  # sub -> summary
    comparisons: dict[str, pd.DataFrame] = field(default_factory=dict)  # sub -> <sub>_comparison.csv
    baseline_failures: pd.DataFrame | None = None  # None: not compared with a baseline
    baseline_note: str = "not compared with a baseline"
    step_errors: list[str] = field(default_factory=list)  # steps that could not finish
    warnings: list[str] = field(default_factory=list)  # what the reader should know, not a failure
    ab_headline: str | None = None  # the A/B verdict that decides a gate run with a baseline build


@dataclass(frozen=True)
class Verdict:
    status: str
    checks_total: int
    checks_failed: int
    missing: int
    baseline_failed: int
    baseline_compared: bool
    step_errors: int
    ab_status: str | None = None  # PASS / REGRESSION / INCOMPLETE of the A/B verdict, when one ran

    @property
    def exit_code(self) -> int:
        return VERDICT_EXIT_CODES[self.status]

    def headline(self) -> str:
        if self.checks_failed:
            parts = [f"{self.checks_failed} of {self.checks_total} checks failed"]
        else:
            parts = [f"all {self.checks_total} checks passed"]
        if self.missing:
            parts.append(f"{self.missing} required result(s) without measurements")
        if self.step_errors:
            parts.append(f"{self.step_errors} step(s) could not finish")
        if self.ab_status is not None:
            parts.append(f"A/B verdict against the baseline build {self.ab_status}")
        elif not self.baseline_compared:
            parts.append("no baseline comparison")
        elif self.baseline_failed:
            parts.append(f"{self.baseline_failed} baseline comparison(s) over the limit")
        else:
            parts.append("baseline comparison passed")
        return f"{self.status}: " + ", ".join(parts)


# --- pure computations ----------------------------------------------------------------------------
def baseline_references(comparisons: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """sub -> the baseline's summary rows (the `Reference: ` half of `<sub>_comparison.csv`), by Bytes."""
    references = {}
    for sub, comparison in comparisons.items():
        rows = comparison[comparison[s.LABEL].astype(str).str.startswith(s.REFERENCE_LABEL_PREFIX)]
        references[sub] = rows.drop_duplicates(subset=[s.BYTES]).set_index(s.BYTES)
    return references


def _percent_change(value: float, reference: float) -> float:
    if not (files.is_finite(value) and files.is_finite(reference)) or reference == 0:
        return math.nan
    return (value - reference) / reference * 100.0


def _requirement_lines(requirements: pd.DataFrame) -> dict[tuple[str, int], int]:
    return {(row[s.EXPERIMENT_TYPE], int(row[s.BYTES])): int(row[LINE]) for _, row in requirements.iterrows()}


def check_rows(results: ExperimentResults) -> pd.DataFrame:
    """Every check of every sub, with the baseline's value, the change against it and the requirement's line."""
    references = baseline_references(results.comparisons)
    lines = _requirement_lines(results.requirements)
    frames = []
    for sub, report in results.checks.items():
        frame = report.copy()
        frame.insert(0, SUB, sub)
        reference = references.get(sub)
        baseline_values = []
        for _, row in frame.iterrows():
            has_value = reference is not None and row[s.BYTES] in reference.index and row[s.CHECK] in reference.columns
            baseline_values.append(float(reference.at[row[s.BYTES], row[s.CHECK]]) if has_value else math.nan)
        frame[BASELINE] = baseline_values
        frame[CHANGE] = [_percent_change(v, b) for v, b in zip(frame[s.EXPERIMENT], frame[BASELINE])]
        frame[LINE] = [lines.get((sub, int(b))) for b in frame[s.BYTES]]
        frames.append(frame)
    columns = [SUB, *s.CHECK_COLUMNS, BASELINE, CHANGE, LINE]
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True).loc[:, columns]


def _is_measured(frame: pd.DataFrame) -> pd.Series:
    return frame[s.STATUS].isin([s.PASSED, s.FAILED]) & frame[s.EXPERIMENT].notna()


def failed_checks(rows: pd.DataFrame) -> pd.DataFrame:
    """The failed checks, worst (largest percentage over requirement) first."""
    if rows.empty:
        return rows
    failed = rows[(rows[s.STATUS] == s.FAILED) & _is_measured(rows)]
    return failed.sort_values(s.PERCENT_OVER, ascending=False, kind="stable").reset_index(drop=True)


def _requested_subs(metadata: dict | None, checks: dict[str, pd.DataFrame]) -> list[str]:
    """The sub-experiments the run was asked for (metadata), then any other that was checked."""
    recorded = (metadata or {}).get(s.META_SUBEXPERIMENTS)
    recorded = list(recorded) if isinstance(recorded, dict) else []
    return recorded + [sub for sub in checks if sub not in recorded]


def _outcome(metadata: dict | None, sub: str) -> tuple[str, str]:
    """(outcome, error) of one sub-experiment as the run recorded it; ok when nothing is recorded."""
    recorded = (metadata or {}).get(s.META_SUBEXPERIMENTS)
    entry = recorded.get(sub) if isinstance(recorded, dict) else None
    if not isinstance(entry, dict):
        return s.OUTCOME_OK, ""
    return str(entry.get(s.META_OUTCOME, s.OUTCOME_OK)), str(entry.get("error") or "")


def missing_data(results: ExperimentResults) -> pd.DataFrame:
    """Every requirement row without measurements, found as `check` finds them (one row per sub and
    payload, with the requirement's line); the reason says how the run of that sub ended."""
    rows = []
    for item in find_missing(results.summaries, results.requirements):
        outcome, error = _outcome(results.metadata, item.subexperiment)
        note = f" (run {outcome}{': ' + error if error else ''})" if outcome != s.OUTCOME_OK else ""
        rows.append((item.subexperiment, item.bytes, item.reason + note, item.line))
    return pd.DataFrame(rows, columns=[SUB, s.BYTES, REASON, LINE])


def missing_groups(missing: pd.DataFrame) -> pd.DataFrame:
    """Sub-experiment, payloads and reason: a whole missing sub-experiment is one row, not eleven."""
    groups: dict[tuple[str, str], list[int]] = {}
    for sub, payload, reason in zip(missing[SUB], missing[s.BYTES], missing[REASON]):
        groups.setdefault((sub, reason), []).append(int(payload))
    rows = [(sub, ", ".join(map(str, payloads)) + " B", reason) for (sub, reason), payloads in groups.items()]
    return pd.DataFrame(rows, columns=[SUB, PAYLOADS, REASON])


def baseline_table(comparisons: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Baseline against this run for every compared magnitude and payload, with the change in percent."""
    rows = []
    for sub, comparison in comparisons.items():
        labels = comparison[s.LABEL].astype(str)
        reference = comparison[labels.str.startswith(s.REFERENCE_LABEL_PREFIX)].set_index(s.BYTES)
        result = comparison[labels.str.startswith(s.RESULT_LABEL_PREFIX)].set_index(s.BYTES)
        for magnitude in s.COMPARED_MAGNITUDES:
            for payload in result.index:
                if payload not in reference.index:
                    continue
                before, after = float(reference.at[payload, magnitude]), float(result.at[payload, magnitude])
                rows.append((sub, magnitude, int(payload), before, after, _percent_change(after, before)))
    return pd.DataFrame(rows, columns=[SUB, s.CHECK, s.BYTES, s.REFERENCE, s.RESULT, CHANGE])


def verdict(results: ExperimentResults) -> Verdict:
    rows = check_rows(results)
    measured = rows[_is_measured(rows)] if not rows.empty else rows
    failed = len(failed_checks(rows))
    missing = len(missing_data(results))
    baseline_failed = 0 if results.baseline_failures is None else len(results.baseline_failures)
    ab_status = results.ab_headline.split(":")[0] if results.ab_headline else None
    if missing or results.step_errors or ab_status == INCOMPLETE:
        status = INCOMPLETE
    elif failed or baseline_failed or ab_status == REGRESSION:
        status = REGRESSION
    else:
        status = PASS
    return Verdict(status, len(measured), failed, missing, baseline_failed,
                   results.baseline_failures is not None, len(results.step_errors), ab_status)


# --- formatting helpers ---------------------------------------------------------------------------
def _number(value) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)) or pd.isna(value):
        return "-"
    return files.format_float(float(value))


def _percent(value) -> str:
    """As `check` and the JUnit file write a percentage (`+5.12%`), so that every output reads alike."""
    if value is None or pd.isna(value) or not math.isfinite(float(value)):
        return "-"
    return format_percent(float(value))


def metadata_items(metadata: dict | None) -> list[tuple[str, str]]:
    """(name, value) pairs of what identifies the run, in reading order; absent values are left out."""
    if not metadata:
        return [("metadata", "none (metadata.json missing)")]
    fastdds, platform, harness = (metadata.get(key) if isinstance(metadata.get(key), dict) else {}
                                  for key in (s.META_FASTDDS, s.META_PLATFORM, s.META_HARNESS))
    version = str(fastdds.get("version") or "unknown version")
    details = [f"commit {fastdds['commit']}" if fastdds.get("commit") else "", str(fastdds.get("source") or "")]
    details = [d for d in details if d]
    items = [
        ("Fast DDS", version + (f" ({', '.join(details)})" if details else "")),
        ("platform", str(platform.get(s.META_PLATFORM_ID) or "unknown")
         + (f" ({platform['cpu_model']})" if platform.get("cpu_model") else "")),
        ("samples", str(metadata.get(s.META_SAMPLES, "unknown"))),
        ("label", str(metadata.get(s.META_LABEL, ""))),
        ("latency", str(metadata.get(s.META_LATENCY_DEFINITION, ""))),
        ("harness", str(harness.get("name") or "")),
        ("created", str(metadata.get(s.META_CREATED, ""))),
        ("pinning", _pinning_text(metadata.get("cpu_pinning"))),
        ("load", _load_text(metadata.get("load_average"))),
    ]
    return [(name, value) for name, value in items if value]


def _pinning_text(pinning) -> str:
    """Where publisher and subscriber ran: the largest noise source when they were not pinned."""
    if not isinstance(pinning, dict):
        return ""
    if not pinning.get("pinned"):
        return "not pinned"
    return f"publisher CPU {pinning.get('publisher_cpu')}, subscriber CPU {pinning.get('subscriber_cpu')}"


def _load_text(load) -> str:
    """The 1-minute load average before and after: other work on the machine while it measured."""
    if not isinstance(load, dict):
        return ""
    return f"{_one_minute(load.get('before'))} before, {_one_minute(load.get('after'))} after (1-minute average)"


def _one_minute(values) -> str:
    return f"{values[0]:.2f}" if isinstance(values, list) and values and isinstance(values[0], (int, float)) else "?"


# --- tables shared by the Markdown and the HTML ---------------------------------------------------
@dataclass(frozen=True)
class Column:
    header: str
    cell: Callable[[pd.Series], str]
    text: bool = False  # left-aligned in the HTML


def check_columns(*, with_sub: bool, with_baseline: bool, with_status: bool = True) -> list[Column]:
    """A check table's columns; the baseline's only when one was compared."""
    columns = [Column(SUB, lambda r: str(r[SUB]), text=True)] if with_sub else []
    columns += [
        Column("Check", lambda r: testcase_name(r[s.CHECK], r[s.BYTES]), text=not with_sub),
        Column("Measured [us]", lambda r: _number(r[s.EXPERIMENT])),
        Column("Requirement [us]", lambda r: _number(r[s.REQUIREMENT])),
        Column("Over requirement", lambda r: _percent(r[s.PERCENT_OVER])),
    ]
    if with_baseline:
        columns += [Column("Baseline [us]", lambda r: _number(r[BASELINE])),
                    Column(CHANGE, lambda r: _percent(r[CHANGE]))]
    if with_status:
        columns.append(Column("Status", lambda r: str(r[s.STATUS]), text=True))
    return columns


BASELINE_FAILURE_COLUMNS = [
    Column(SUB, lambda r: str(r[s.EXPERIMENT_TYPE]), text=True),
    Column("Check", lambda r: testcase_name(r[s.CHECK], r[s.BYTES]), text=True),
    Column("Baseline [us]", lambda r: _number(r[s.REFERENCE])),
    Column("Measured [us]", lambda r: _number(r[s.RESULT])),
    Column("Limit [us]", lambda r: _number(r[s.LIMIT])),
    Column("Over baseline", lambda r: _percent(r[s.PERCENT_OVER_REFERENCE])),
]
BASELINE_CHANGE_COLUMNS = [
    Column("Check", lambda r: testcase_name(r[s.CHECK], r[s.BYTES]), text=True),
    Column("Baseline [us]", lambda r: _number(r[s.REFERENCE])),
    Column("Measured [us]", lambda r: _number(r[s.RESULT])),
    Column(CHANGE, lambda r: _percent(r[CHANGE])),
]
MISSING_COLUMNS = [
    Column(SUB, lambda r: str(r[SUB]), text=True),
    Column(PAYLOADS, lambda r: str(r[PAYLOADS]), text=True),
    Column(REASON, lambda r: str(r[REASON]), text=True),
]


# --- Markdown -------------------------------------------------------------------------------------
def _md(text) -> str:
    """Text safe inside a GitHub Markdown table cell (GitHub also renders inline HTML)."""
    return html.escape(str(text), quote=False).replace("|", "\\|").replace("`", "\\`").replace("\n", " ")


def _md_table(rows: pd.DataFrame, columns: list[Column]) -> list[str]:
    lines = ["| " + " | ".join(c.header for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_md(c.cell(row)) for c in columns) + " |" for _, row in rows.iterrows()]
    return lines + [""]


def markdown_summary(results: ExperimentResults) -> str:
    """The step summary: verdict first, then failed checks, missing data, baseline, and the rest folded."""
    result = verdict(results)
    rows = check_rows(results)
    failed = failed_checks(rows)
    missing = missing_data(results)
    with_baseline = bool(results.comparisons)
    lead = ([f"A/B against the baseline build: {_md(results.ab_headline)} (`{s.AB_DIR}/{s.REPORT_HTML}`)", ""]
            if results.ab_headline else [])
    lines = [f"## perfgate latency gate: **{result.status}**", "", _md(result.headline()), "", *lead,
             " · ".join(f"**{_md(name)}** {_md(value)}" for name, value in metadata_items(results.metadata)), ""]
    if results.step_errors:
        lines += [f"- :x: {_md(error)}" for error in results.step_errors] + [""]
    if results.warnings:
        lines += [f"- :warning: {_md(warning)}" for warning in results.warnings] + [""]
    if not failed.empty:
        lines += [f"### Failed checks ({len(failed)})", ""]
        lines += _md_table(failed, check_columns(with_sub=True, with_baseline=with_baseline, with_status=False))
    if not missing.empty:
        lines += [f"### Missing data ({len(missing)})", ""] + _md_table(missing_groups(missing), MISSING_COLUMNS)
    lines += [f"### Baseline: {_md(results.baseline_note)}", ""]
    if results.baseline_failures is not None and not results.baseline_failures.empty:
        lines += _md_table(results.baseline_failures, BASELINE_FAILURE_COLUMNS)
    if not rows.empty:
        lines += ["### All checks", ""]
        for sub, sub_rows in rows.groupby(SUB, sort=False):
            failures = int((sub_rows[s.STATUS] == s.FAILED).sum())
            summary = f"{_md(sub)}: {len(sub_rows) - failures} passed, {failures} failed"
            lines += ["<details>", f"<summary>{summary}</summary>", ""]
            lines += _md_table(sub_rows, check_columns(with_sub=False, with_baseline=with_baseline))
            lines += ["</details>", ""]
    text = "\n".join(lines) + "\n"
    if len(text.encode("utf-8")) > MARKDOWN_LIMIT:
        # Only thousands of sub-experiments could get here; the folded tables are what can go.
        text = text[:text.index("### All checks")] + (
            "### All checks\n\nLeft out: the summary would exceed GitHub's 1 MiB; see the HTML report.\n")
    return text


# --- GitHub workflow commands ---------------------------------------------------------------------
def escape_command_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_command_property(text: str) -> str:
    return escape_command_data(text).replace(":", "%3A").replace(",", "%2C")


def annotations(results: ExperimentResults, requirements_file: str) -> list[str]:
    """`::error` commands for the worst failed checks (at most ten), each on its requirement's row."""
    commands = []
    for _, row in failed_checks(check_rows(results)).head(MAX_ANNOTATIONS).iterrows():
        name = f"{row[SUB]} {testcase_name(row[s.CHECK], row[s.BYTES])}"
        message = (f"{name}: measured {_number(row[s.EXPERIMENT])} us, requirement "
                   f"{_number(row[s.REQUIREMENT])} us ({_percent(row[s.PERCENT_OVER])} over it)")
        if not pd.isna(row[BASELINE]):
            message += f"; baseline {_number(row[BASELINE])} us ({_percent(row[CHANGE])})"
        properties = [f"file={escape_command_property(requirements_file)}"]
        if not pd.isna(row[LINE]):
            properties.append(f"line={int(row[LINE])}")
        properties.append(f"title={escape_command_property('Latency regression: ' + name)}")
        commands.append(f"::error {','.join(properties)}::{escape_command_data(message)}")
    return commands


# --- HTML -----------------------------------------------------------------------------------------
CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
main{max-width:1400px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:24px;margin:8px 0 12px}
h2{font-size:20px;margin:32px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:16px;margin:20px 0 6px}
.verdict{padding:14px 18px;border-radius:6px;font-size:18px;font-weight:600;color:#fff}
.verdict a{color:inherit}.verdict.PASS{background:#1a7f37}.verdict.REGRESSION{background:#cf222e}.verdict.INCOMPLETE{background:#9a6700}
.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:12px 0;background:#fff;
  padding:10px 14px;border:1px solid #d0d7de;border-radius:6px}
.meta dt{font-weight:600}.meta dd{margin:0;font-family:ui-monospace,monospace;font-size:13px;overflow-wrap:anywhere}
table{border-collapse:collapse;background:#fff;margin:6px 0 12px;font-size:13px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:right;white-space:nowrap}
th{background:#eaeef2;position:sticky;top:0}td.text,th.text{text-align:left}
tr.failed td{background:#ffebe9}tr.missing td{background:#fff8c5}
.status-failed{color:#cf222e;font-weight:600}.status-passed{color:#1a7f37}
nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:6px}
nav a{display:inline-block;padding:3px 10px;border-radius:12px;background:#fff;border:1px solid #d0d7de;
  text-decoration:none;color:#1f2328;font-size:13px}
nav a.failed{border-color:#cf222e;color:#cf222e;font-weight:600}nav a.missing{border-color:#9a6700;color:#9a6700}
nav a.passed{border-color:#1a7f37;color:#1a7f37}nav a.unchecked{border-style:dashed;color:#59636e}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:10px}
figure{margin:0;background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:6px}
figure img{width:100%;height:auto;display:block}
figcaption{font-size:12px;color:#59636e;font-family:ui-monospace,monospace}
details>summary{cursor:pointer;font-weight:600;margin:8px 0}
.note{color:#59636e}ul.errors{color:#cf222e}ul.warnings{color:#9a6700}
"""


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _html_table(rows: pd.DataFrame, columns: list[Column], row_class: Callable[[pd.Series], str] = lambda r: "") -> str:
    """Every cell escaped; a Status column's cells coloured by their value."""
    head = "".join(f'<th class="{"text" if c.text else ""}">{_e(c.header)}</th>' for c in columns)
    body = []
    for _, row in rows.iterrows():
        cells = []
        for column in columns:
            text = column.cell(row)
            classes = ("text " if column.text else "") + (f"status-{text}" if column.header == "Status" else "")
            cells.append(f'<td class="{_e(classes.strip())}">{_e(text)}</td>')
        body.append(f'<tr class="{_e(row_class(row))}">{"".join(cells)}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _check_row_class(row: pd.Series) -> str:
    return row[s.STATUS] if row[s.STATUS] in (s.FAILED, s.PASSED) else "missing"


def _natural_key(path: Path) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.as_posix())]


class _Plots:
    """The page's images, handed out once each, so that whatever no section claims still gets shown."""

    def __init__(self, images: dict[Path, str], plots_dir: Path) -> None:
        self.images, self.plots_dir, self.placed = images, plots_dir, set()

    def in_dir(self, directory: Path) -> list[Path]:
        return sorted((p for p in self.images if p.parent == directory and p not in self.placed), key=_natural_key)

    def subdirs(self, directory: Path) -> list[Path]:
        return sorted({p.parent for p in self.images if p.parent.parent == directory}, key=_natural_key)

    def rest(self) -> list[Path]:
        return sorted((p for p in self.images if p not in self.placed), key=_natural_key)

    def figures(self, paths: list[Path]) -> str:
        self.placed.update(paths)
        figures = []
        for path in paths:
            caption = path.relative_to(self.plots_dir).as_posix() if path.is_relative_to(self.plots_dir) else path.name
            figures.append(f'<figure><img src="{self.images[path]}" alt="{_e(caption)}" loading="lazy">'
                           f"<figcaption>{_e(caption)}</figcaption></figure>")
        return f'<div class="plots">{"".join(figures)}</div>' if figures else ""


def _sub_plot_order(sub_dir: Path, paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """(check plots, then per-payload plots: each payload's histogram beside its time series)."""
    checks = [p for p in (sub_dir / f"check_{slug}.png" for slug in s.CHECK_SLUGS.values()) if p in paths]
    per_payload = sorted((p for p in paths if p not in checks),
                         key=lambda p: ([int(n) for n in re.findall(r"\d+", p.stem)] or [math.inf], p.name))
    return checks, per_payload


def _html_head(results: ExperimentResults, result: Verdict) -> list[str]:
    label = (results.metadata or {}).get(s.META_LABEL, results.experiment_dir.name)
    title = f"perfgate latency report: {label}"
    meta = "".join(f"<dt>{_e(n)}</dt><dd>{_e(v)}</dd>" for n, v in metadata_items(results.metadata))
    out = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>',
           f'<meta name="viewport" content="width=device-width,initial-scale=1"><style>{CSS}</style></head>',
           f"<body><main><h1>{_e(title)}</h1>",
           f'<div class="verdict {_e(result.status)}">{_e(result.headline())}</div>',
           *([f'<div class="verdict {_e(result.ab_status)}">A/B against the baseline build: '
              f'{_e(results.ab_headline)} (<a href="{s.AB_DIR}/{s.REPORT_HTML}">A/B report</a>)</div>']
             if results.ab_headline else []),
           f'<dl class="meta">{meta}<dt>requirements</dt><dd>{_e(results.requirements_path)}</dd>'
           f"<dt>experiment</dt><dd>{_e(results.experiment_dir)}</dd></dl>"]
    if results.step_errors:
        out.append('<ul class="errors">' + "".join(f"<li>{_e(e)}</li>" for e in results.step_errors) + "</ul>")
    if results.warnings:
        out.append('<ul class="warnings">' + "".join(f"<li>{_e(w)}</li>" for w in results.warnings) + "</ul>")
    return out


def _html_nav(subs: list[str], results: ExperimentResults, failed: pd.DataFrame, missing: pd.DataFrame) -> str:
    links = []
    for sub in subs:
        state = ("failed" if sub in set(failed[SUB]) else "missing" if sub in set(missing[SUB])
                 else "passed" if sub in results.checks else "unchecked")
        links.append(f'<li><a class="{state}" href="#sub-{_e(sub)}">{_e(sub)}</a></li>')
    return f"<nav><ul>{''.join(links)}</ul></nav>"


def _html_baseline(results: ExperimentResults, plots: _Plots) -> list[str]:
    out = [f"<h2>Baseline comparison</h2><p>{_e(results.baseline_note)}</p>"]
    if results.baseline_failures is not None and not results.baseline_failures.empty:
        out.append("<h3>Over the limit</h3>"
                   + _html_table(results.baseline_failures, BASELINE_FAILURE_COLUMNS, lambda r: "failed"))
    baseline_dir = plots.plots_dir / s.BASELINE_COMPARISON_DIR
    out.append(plots.figures(plots.in_dir(baseline_dir)))
    for sub_dir in plots.subdirs(baseline_dir):
        out.append(f"<h3>{_e(sub_dir.name)}</h3>" + plots.figures(plots.in_dir(sub_dir)))
    return out


def _html_sub(sub: str, results: ExperimentResults, rows: pd.DataFrame, missing: pd.DataFrame,
              against_baseline: pd.DataFrame, plots: _Plots) -> list[str]:
    """One sub-experiment: what is missing, its checks (folded when all passed), check plots, the
    per-payload plots (folded unless a check failed) and the comparison with the baseline (folded)."""
    out = [f'<h2 id="sub-{_e(sub)}">{_e(sub)}</h2>']
    outcome, error = _outcome(results.metadata, sub)
    sub_missing = missing[missing[SUB] == sub]
    if outcome != s.OUTCOME_OK and sub_missing.empty:  # a sub that is not gated: said here only
        out.append(f'<p class="status-failed">Run {_e(outcome)}{": " + _e(error) if error else ""}</p>')
    for _, group in missing_groups(sub_missing).iterrows():
        out.append(f'<p class="status-failed">Missing {_e(group[PAYLOADS])}: {_e(group[REASON])}</p>')
    sub_rows = rows[rows[SUB] == sub]
    failures = int((sub_rows[s.STATUS] == s.FAILED).sum())
    if not sub_rows.empty:
        table = _html_table(sub_rows, check_columns(with_sub=False, with_baseline=bool(results.comparisons)),
                            _check_row_class)
        if failures or not sub_missing.empty:
            out.append(table)
        else:  # nothing to look at: folded, so that a full page stays scannable
            out.append(f"<details><summary>All {len(sub_rows)} checks passed</summary>{table}</details>")
    elif sub_missing.empty:
        out.append('<p class="note">Not checked: the requirements list nothing for it (measured for reference).</p>')
    sub_dir = s.sub_plots_dir(plots.plots_dir, sub)
    check_plots, per_payload = _sub_plot_order(sub_dir, plots.in_dir(sub_dir))
    out.append(plots.figures(check_plots))
    if per_payload:
        out.append(f"<details{' open' if failures else ''}><summary>Histograms and time series "
                   f"({len(per_payload)} plots)</summary>{plots.figures(per_payload)}</details>")
    sub_changes = against_baseline[against_baseline[SUB] == sub]
    if not sub_changes.empty:
        out.append("<details><summary>Against the baseline</summary>"
                   + _html_table(sub_changes, BASELINE_CHANGE_COLUMNS) + "</details>")
    return out


def html_page(results: ExperimentResults, images: dict[Path, str]) -> str:
    """The page: verdict, metadata, failed checks, missing data, baseline, plots, one section per sub.

    images: every PNG of the experiment's plots folder -> its data URI; every one is placed."""
    result = verdict(results)
    rows = check_rows(results)
    failed = failed_checks(rows)
    missing = missing_data(results)
    plots = _Plots(images, results.experiment_dir / s.PLOTS_DIR)
    plotted = [d.name for d in plots.subdirs(plots.plots_dir) if d.name != s.BASELINE_COMPARISON_DIR]
    subs = list(dict.fromkeys(_requested_subs(results.metadata, results.checks) + list(results.checks)
                              + missing[SUB].tolist() + plotted))

    out = _html_head(results, result)
    out.append(_html_nav(subs, results, failed, missing))
    out.append(f"<h2>Failed checks ({len(failed)})</h2>")
    out.append(_html_table(failed, check_columns(with_sub=True, with_baseline=bool(results.comparisons)),
                           _check_row_class) if not failed.empty else '<p class="note">None.</p>')
    out.append(f"<h2>Missing data ({len(missing)})</h2>")
    out.append(_html_table(missing_groups(missing), MISSING_COLUMNS, lambda r: "missing")
               if not missing.empty else '<p class="note">None.</p>')
    out += _html_baseline(results, plots)
    out.append("<h2>Sub-experiments compared</h2>")
    out.append(plots.figures(plots.in_dir(plots.plots_dir)) or '<p class="note">No comparison plots.</p>')
    against_baseline = baseline_table(results.comparisons)
    for sub in subs:
        out += _html_sub(sub, results, rows, missing, against_baseline, plots)
    rest = plots.rest()
    if rest:
        out.append("<h2>Other plots</h2>" + plots.figures(rest))
    out.append("</main></body></html>\n")
    return "\n".join(out)


# --- reading and writing --------------------------------------------------------------------------
def _read_comparison(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, float_precision="round_trip", skipinitialspace=True)
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in (*s.SUMMARY_COLUMNS, s.LABEL) if c not in frame.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(repr(c) for c in missing)}", path, 1)
    return frame


def _read_baseline_failures(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, float_precision="round_trip", skipinitialspace=True)
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in s.COMPARISON_FAILURE_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(repr(c) for c in missing)}", path, 1)
    return frame


def _in_contract_order(frames: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Sub-experiments in the contract's order (then others by name), as every other output lists them."""
    from .experiments import sort_subexperiments

    return {sub: frames[sub] for sub in sort_subexperiments(frames)}


def load(experiment_dir: Path, requirements_path: Path, *, baseline_compared: bool = False,
         baseline_note: str = "not compared with a baseline",
         step_errors: list[str] | None = None, ab_headline: str | None = None,
         warnings: list[str] | None = None) -> ExperimentResults:
    """Read what the reports show from an experiment folder (after check and, optionally, compare)."""
    experiment_dir = files.require_dir(experiment_dir, "experiment folder")
    baseline_dir = experiment_dir / s.PLOTS_DIR / s.BASELINE_COMPARISON_DIR
    comparisons = {}
    failures = None
    if baseline_compared:
        for path in sorted(baseline_dir.glob("*_comparison.csv")):
            comparisons[path.name[: -len("_comparison.csv")]] = _read_comparison(path)
        failures_path = baseline_dir / s.COMPARISON_FAILURES_FILE
        failures = (_read_baseline_failures(failures_path) if failures_path.exists()
                    else pd.DataFrame(columns=list(s.COMPARISON_FAILURE_COLUMNS)))
    return ExperimentResults(
        experiment_dir=experiment_dir,
        requirements_path=Path(requirements_path),
        requirements=files.read_requirements(requirements_path),
        metadata=files.read_metadata(experiment_dir),
        checks=_in_contract_order({sub: files.read_check_report(path)
                                   for sub, path in files.check_files(experiment_dir).items()}),
        summaries=_in_contract_order({sub: files.read_summary(path)
                                      for sub, path in files.summary_files(experiment_dir, required=False).items()}),
        comparisons=_in_contract_order(comparisons),
        baseline_failures=failures,
        baseline_note=baseline_note,
        step_errors=list(step_errors or []),
        warnings=list(warnings or []),
        ab_headline=ab_headline,
    )


def shrink_image(data: bytes) -> tuple[str, bytes]:
    """(MIME type, image): the plot with a 64-colour palette (plots are flat colours, so this loses
    nothing visible), at most MAX_IMAGE_WIDTH wide, as lossless WebP, which every current browser
    shows: about a fifth of the PNG. The PNG itself when that is smaller."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        image = image.convert("RGB")
        if image.width > MAX_IMAGE_WIDTH:
            height = round(image.height * MAX_IMAGE_WIDTH / image.width)
            image = image.resize((MAX_IMAGE_WIDTH, height), Image.Resampling.LANCZOS)
        palette = image.quantize(colors=PALETTE_COLOURS, method=Image.Quantize.FASTOCTREE).convert("RGB")
        buffer = io.BytesIO()
        palette.save(buffer, format="WEBP", lossless=True, method=4)
    shrunk = buffer.getvalue()
    return ("image/webp", shrunk) if len(shrunk) < len(data) else ("image/png", data)


def embedded_images(plots_dir: Path, budget: int = IMAGE_BUDGET) -> dict[Path, str]:
    """Every PNG under the plots folder as a data URI; shrunk when together they exceed `budget` bytes."""
    paths = sorted(Path(plots_dir).rglob("*.png"), key=_natural_key) if Path(plots_dir).is_dir() else []
    images = {path: ("image/png", path.read_bytes()) for path in paths}
    if sum(len(data) for _, data in images.values()) > budget:
        images = {path: shrink_image(data) for path, (_, data) in images.items()}
    return {path: f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
            for path, (mime, data) in images.items()}


def write_reports(results: ExperimentResults, summary_markdown: Path | None = None) -> tuple[Path, Path]:
    """Write report.html and report.md into the experiment folder; append the Markdown to
    `summary_markdown` too (GitHub's $GITHUB_STEP_SUMMARY is one file shared by a job's steps)."""
    html_path = results.experiment_dir / s.REPORT_HTML
    markdown_path = results.experiment_dir / s.REPORT_MARKDOWN
    page = html_page(results, embedded_images(results.experiment_dir / s.PLOTS_DIR))
    markdown = markdown_summary(results)
    files.write_text(html_path, page)
    files.write_text(markdown_path, markdown)
    if summary_markdown is not None:
        with open(summary_markdown, "a", encoding="utf-8") as handle:
            handle.write(markdown)
    return html_path, markdown_path
