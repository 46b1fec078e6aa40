"""report.markdown: what GitHub shows of a gate run: the step summary ($GITHUB_STEP_SUMMARY), verdict
first, and at most ten `::error` workflow commands for the worst failed checks."""
from __future__ import annotations

import pandas as pd

from .. import schema as s
from ..escape.markdown import text as markdown_text
from ..escape.workflow import command_data as escape_command_data
from ..escape.workflow import command_property as escape_command_property
from ..latency.check_terms import testcase_name
from . import ab_view
from .columns import (BASELINE_FAILURE_COLUMNS, MISSING_COLUMNS, Column, check_columns, metadata_items,
                      number_text, percent_text)
from .tables import (BASELINE, CHANGE, LINE, SUB, ExperimentResults, check_rows, failed_checks, missing_data,
                     missing_groups, not_asked_data, verdict)

MAX_ANNOTATIONS = 10
# GitHub drops a step summary over 1 MiB; stay far below so several steps can share the file.
MARKDOWN_LIMIT = 1 << 20


def _md(text) -> str:
    """Text shown as written on GitHub, in a table cell, a paragraph or an HTML block alike (escape.markdown)."""
    return markdown_text(text)


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
            if results.ab_headline and results.ab is None else [])
    lead += ([f"Throughput: {_md(results.throughput_headline)} (`{s.THROUGHPUT_DIR}/`)", ""]
             if results.throughput_headline else [])
    lead += ([f"Topologies: {_md(results.topology_headline)} (`topology/`)", ""] if results.topology_headline else [])
    lines = [f"## perfgate latency gate: **{result.status}**", "", _md(result.headline()), "", *lead,
             " · ".join(f"**{_md(name)}** {_md(value)}"
                        for name, value in metadata_items(results.metadata, results.platform_name)), ""]
    if results.fastdds_note:
        lines += [f"Measured: {_md(results.fastdds_note)}", ""]
    if results.step_errors:
        lines += [f"- :x: {_md(error)}" for error in results.step_errors] + [""]
    if results.warnings:
        lines += [f"- :warning: {_md(warning)}" for warning in results.warnings] + [""]
    for ab in (results.ab, results.throughput_ab):  # the A/B decides: its table first, then the gross checks
        lines += ab_view.markdown_lines(ab) if ab is not None else []
    if not failed.empty:
        lines += [f"### Failed checks ({len(failed)})", ""]
        lines += _md_table(failed, check_columns(with_sub=True, with_baseline=with_baseline, with_status=False))
    if not missing.empty:
        lines += [f"### Missing data ({len(missing)})", ""] + _md_table(missing_groups(missing), MISSING_COLUMNS)
    not_asked = not_asked_data(results)
    if not not_asked.empty:  # listed once, never checked: the run was narrowed (docs/formats.md section 6)
        lines += [f"### Not asked for ({len(not_asked)} requirement rows, not checked)", ""]
        lines += _md_table(missing_groups(not_asked), MISSING_COLUMNS[:2])
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
def annotations(results: ExperimentResults, requirements_file: str) -> list[str]:
    """`::error` commands for the worst failed checks (at most ten), each on its requirement's row."""
    commands = []
    for _, row in failed_checks(check_rows(results)).head(MAX_ANNOTATIONS).iterrows():
        name = f"{row[SUB]} {testcase_name(row[s.CHECK], row[s.BYTES])}"
        message = (f"{name}: measured {number_text(row[s.EXPERIMENT])} us, requirement "
                   f"{number_text(row[s.REQUIREMENT])} us ({percent_text(row[s.PERCENT_OVER])} over it)")
        if not pd.isna(row[BASELINE]):
            message += f"; baseline {number_text(row[BASELINE])} us ({percent_text(row[CHANGE])})"
        properties = [f"file={escape_command_property(requirements_file)}"]
        if not pd.isna(row[LINE]):
            properties.append(f"line={int(row[LINE])}")
        properties.append(f"title={escape_command_property('Latency regression: ' + name)}")
        commands.append(f"::error {','.join(properties)}::{escape_command_data(message)}")
    return commands

