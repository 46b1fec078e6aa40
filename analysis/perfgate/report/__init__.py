"""report: what a maintainer reads after a gate run.

Three views of one experiment folder: a Markdown step summary (for $GITHUB_STEP_SUMMARY), at most
ten `::error` workflow commands for the worst regressions, and one self-contained HTML page with
every plot embedded. Everything comes from docs/formats.md's files (check reports, summaries, the
`<sub>_comparison.csv` and comparison failures of the baseline comparison, metadata.json, PNGs),
so the reports do not depend on how the other steps work inside.

    tables     load (reads the folder), the rows of every table, the Verdict
    columns    cell texts and table columns shared by both views
    markdown   the step summary and the workflow commands
    html       the page and its embedded images

    pr_comment     `perfgate pr-comment`: the sticky pull-request comment (comment: its text)

`write_reports` writes both files. The names below are the package's interface (gate, ab.report).
May import: the core, escape and latency's reading half (check, experiments, requested, check_terms);
nothing that measures (tests/repository/test_layout.py).
"""
from __future__ import annotations

import json
from pathlib import Path

from .. import files
from ..errors import InputError
from .. import schema as s
from .columns import Column, metadata_items
from .html import CSS, IMAGE_BUDGET, MAX_IMAGE_WIDTH, _e, _html_table, embedded_images, html_page, shrink_image
from .markdown import (MARKDOWN_LIMIT, MAX_ANNOTATIONS, _md, _md_table, annotations, escape_command_data,
                       escape_command_property, markdown_summary)
from ..outcome import INCOMPLETE, PASS, REGRESSION
from .tables import (SUB, ExperimentResults, Verdict, check_rows,
                     failed_checks, load, missing_data, verdict)

__all__ = [
    "CSS", "INCOMPLETE", "MARKDOWN_LIMIT", "MAX_ANNOTATIONS", "MAX_IMAGE_WIDTH", "PASS", "REGRESSION", "SUB",
    "Column", "ExperimentResults", "Verdict", "_e", "_html_table", "_md", "_md_table",
    "annotations", "check_rows", "embedded_images", "escape_command_data", "escape_command_property",
    "failed_checks", "html_page", "load", "markdown_summary", "metadata_items", "missing_data", "shrink_image",
    "verdict", "write_reports",
]


def write_reports(results: ExperimentResults, summary_markdown: Path | None = None,
                  interrupted: bool = False) -> tuple[Path, Path]:
    """Write report.html, report.md and platform_files.json (the platform files of other machines the gate
    judged by, in one line, or null: `perfgate pr-comment` shows it) into the experiment folder; append the
    Markdown to
    `summary_markdown` too (GitHub's $GITHUB_STEP_SUMMARY is one file shared by a job's steps).
    `interrupted`: the gate was stopped and has seconds left (a CI job's grace period), so the plots
    are embedded as they are, never shrunk (shrinking a full run's plots takes 12 s of CPU)."""
    html_path = results.experiment_dir / s.REPORT_HTML
    markdown_path = results.experiment_dir / s.REPORT_MARKDOWN
    page = html_page(results, embedded_images(results.experiment_dir / s.PLOTS_DIR,
                                              budget=None if interrupted else IMAGE_BUDGET))
    markdown = markdown_summary(results)
    files.write_text(html_path, page)
    files.write_text(markdown_path, markdown)
    files.write_text(results.experiment_dir / s.PLATFORM_FILES_JSON,
                     json.dumps({"platform_mismatch": getattr(results, "platform_mismatch", None)}) + "\n")
    if summary_markdown is not None:  # after both reports: a full disk there still leaves them written
        try:
            with open(summary_markdown, "a", encoding="utf-8") as handle:
                handle.write(markdown)
        except OSError as error:
            raise InputError(f"the Markdown summary cannot be appended: {error.strerror or error}",
                             summary_markdown) from None
    return html_path, markdown_path
