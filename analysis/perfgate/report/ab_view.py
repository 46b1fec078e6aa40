"""report.ab_view: the A/B verdict on the gate's own pages, before the gross checks.

With --baseline-build the A/B decides the gate (docs/verdict.md); the requirement checks are a
gross-failure check. So the gate's report.html, report.md and the sub-experiment chips show the A/B
per sub-experiment first: a sub-experiment whose A/B test failed is red whatever its checks say. The
A/B folders' verdict.json, verdict.csv and metadata.json were written by the code under test: read
through report.gate_files.read_ab (status checked), every text escaped where it is shown, numbers shown
only when they parse as numbers.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import schema as s
from ..escape.html import text as html_text
from ..escape.markdown import text as markdown_text
from ..outcome import INCOMPLETE, PASS, REGRESSION
from .bounds import bound_cell
from .ab_baseline import baseline_text
from .gate_files import AbVerdict, read_ab

# one verdict word per banner: a status said inside another banner is said in words
STATUS_WORDS = {PASS: "passed", REGRESSION: "found a regression", INCOMPLETE: "could not decide"}
ROUND_COLUMN = "Rounds"
LAYOUT_SIZED = "layout-sized"  # as ab.verdict says it (report is not below ab: not imported)


@dataclass(frozen=True)
class GateAb:
    title: str  # "A/B against the baseline build", "Throughput A/B against the baseline build"
    link: str  # the A/B's own report, relative to the gate's folder
    verdict: AbVerdict
    baseline: str  # the baseline build: Fast DDS version, commit, and the spec it was given as

    @property
    def failed_subs(self) -> set[str]:
        return {row.get(s.EXPERIMENT_TYPE, "") for row in self.verdict.rows if row.get(s.STATUS) == s.FAILED}

    def sub_state(self, sub: str) -> str | None:
        """failed / passed / missing (an incomplete verdict) for a sub-experiment it tested; None otherwise."""
        tested = [row for row in self.verdict.rows if row.get(s.EXPERIMENT_TYPE) == sub]
        if not tested:
            return None
        if any(row.get(s.STATUS) == s.FAILED for row in tested):
            return "failed"
        return "missing" if self.verdict.status == INCOMPLETE else "passed"


def read_gate_ab(ab_dir: Path, title: str, link: str, bound_column: str) -> GateAb | None:
    verdict = read_ab(ab_dir, bound_column)
    return None if verdict is None else GateAb(title, link, verdict, baseline_text(ab_dir, verdict.alignments))


def _number(text: str | None, pattern: str) -> str:
    """A number of verdict.csv in `pattern`; '-' where the cell is no number (the file's text is not shown)."""
    value = _fraction(text)
    return "-" if value is None else pattern.format(value)


def _bound(row: dict[str, str], column: str) -> str:
    """'1.023x', or 'n/a (k rounds)' where the rounds give no bound (report.bounds); '-' for no number."""
    shown = bound_cell(row.get(column), row.get(ROUND_COLUMN), column)
    return shown if shown is not None else "-"


def _fraction(text) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def change_text(ratio: str | None) -> str:
    """'+7.5 %' from verdict.csv's Ratio; '-' where it is no number. The gate's pages and the pull-request
    comment write the cells of a verdict.csv alike, from its text (of unknown origin: only numbers shown)."""
    value = _fraction(ratio)
    return "-" if value is None else f"{(value - 1) * 100:+.1f} %"


def threshold_text(text: str | None, higher_is_better: bool = False) -> str:
    """'+1.0 %' from verdict.csv's fraction T (a throughput's: the drop below baseline / (1 + T), '-1.0 %');
    '-' in a verdict from before the column."""
    value = _fraction(text)
    if value is None:
        return "-"
    return f"-{(1 - 1 / (1 + value)) * 100:.1f} %" if higher_is_better else f"+{value * 100:.1f} %"


def value_text(text: str | None, unit: str) -> str:
    """An arm's value ('45.12 us'); '-' where verdict.csv has none (a verdict from before the columns)."""
    value = _fraction(text)
    return "-" if value is None else f"{value:.4g}{unit}"


def value_unit(verdict: AbVerdict) -> str:
    """The latency A/B's values are round trips in us; the throughput A/B's statistic names its unit."""
    return " us" if verdict.bound_column == "Lower bound" else ""


TEXT_COLUMNS = ("Sub-experiment", "Statistic", "Status", "Reason")
# Why Candidate / Baseline and Change may disagree (TCP's rounds jump: docs/verdict.md, "Why TCP moves")
VALUES_NOTE = ("Baseline and Candidate: each arm's median over the test's rounds. Change: the median of the "
               "rounds' paired changes (each round's candidate against that round's baseline), the quantity "
               "tested; the two can disagree when single rounds jump.")


def values_note(verdict: AbVerdict) -> str | None:
    """VALUES_NOTE where the table shows the arms' values (a verdict.csv that has them)."""
    return VALUES_NOTE if any("Baseline median" in row for row in verdict.rows) else None


@dataclass(frozen=True)
class AbColumn:
    """A column of the A/B table the gate's pages and the pull-request comment show."""
    header: str
    cell: Callable[[dict[str, str]], str]  # plain text of one verdict.csv row
    requires: str | None = None  # the verdict.csv column it shows: left out where no row has it (older verdicts)
    stored_text: bool = False  # the file's own text (not a number formatted here): escaped wherever shown


def ab_columns(verdict: AbVerdict, status: Callable[[dict[str, str]], str]) -> list[AbColumn]:
    """The A/B table's columns, one list for every page: the arms' values, the change, the threshold
    it was held to, the bound, p, rounds, `status` and the reason; the values, threshold and reason only
    where verdict.csv has them (a verdict from before them)."""
    unit, throughput = value_unit(verdict), verdict.bound_column != "Lower bound"
    columns = [
        AbColumn("Sub-experiment", lambda row: row.get(s.EXPERIMENT_TYPE, ""), stored_text=True),
        AbColumn("Statistic", lambda row: row.get("Statistic", ""), stored_text=True),
        AbColumn("Baseline", lambda row: value_text(row.get("Baseline median"), unit), "Baseline median"),
        AbColumn("Candidate", lambda row: value_text(row.get("Candidate median"), unit), "Candidate median"),
        AbColumn("Change", lambda row: change_text(row.get("Ratio"))),
        AbColumn("Threshold", lambda row: threshold_text(row.get("Threshold"), throughput), "Threshold"),
        AbColumn(verdict.bound_column, lambda row: _bound(row, verdict.bound_column)),
        AbColumn("p (Holm)", lambda row: _number(row.get("Adjusted p-value"), "{:.3g}")),
        AbColumn(ROUND_COLUMN, verdict.rounds_text, stored_text=True),
        AbColumn("Status", status),
        AbColumn("Reason", lambda row: row.get("Reason") or "-", "Reason", stored_text=True),
    ]
    return [column for column in columns if column.requires is None
            or any(column.requires in row for row in verdict.rows)]


def table_cells(ab: GateAb) -> tuple[list[str], list[list[str]]]:
    """Header and rows (plain text, failed tests first) of the A/B table on the gate's pages."""
    columns = ab_columns(ab.verdict, lambda row: status_text(ab, row))
    rows = sorted(ab.verdict.rows, key=lambda row: row.get(s.STATUS) != s.FAILED)
    return [column.header for column in columns], [[column.cell(row) for column in columns] for row in rows]


def status_text(ab: GateAb, row: dict[str, str]) -> str:
    """The test's status, 'passed (layout-sized)' where only its layout threshold let it pass (ab.layout)."""
    status = row.get(s.STATUS, "")
    sized = (row.get(s.EXPERIMENT_TYPE, ""), row.get("Statistic", "")) in ab.verdict.layout_sized
    return f"{status} ({LAYOUT_SIZED})" if sized and status == s.PASSED else status


def banner_text(ab: GateAb) -> str:
    """'<title>: PASS: <what it found>; baseline <version, commit>'."""
    return f"{ab.title}: {ab.verdict.headline}; baseline {ab.baseline}"


def html_section(ab: GateAb) -> str:
    header, rows = table_cells(ab)
    text = [h in TEXT_COLUMNS for h in header]
    at_status = header.index("Status")
    head = "".join(f'<th class="{"text" if text[i] else ""}">{html_text(h)}</th>' for i, h in enumerate(header))
    body = []
    for cells in rows:
        status = cells[at_status]
        tds = "".join(f'<td class="{"text" if text[i] else ""}{" wrap" if header[i] == "Reason" else ""}'
                      f'{" status-" + html_text(c.split(" ")[0]) if i == at_status else ""}">'
                      f"{html_text(c)}</td>" for i, c in enumerate(cells))
        body.append(f'<tr class="{"failed" if status == s.FAILED else ""}">{tds}</tr>')
    anchor = "throughput-ab" if ab.title.startswith("Throughput") else "ab"
    return (f'<h2 id="{anchor}">{html_text(ab.title)}: {html_text(ab.verdict.status)}</h2>'
            f"<p>{html_text(ab.verdict.headline)}</p>"
            f"<p>Baseline: {html_text(ab.baseline)}. "
            f'<a href="{html_text(ab.link)}">The A/B report</a>: its rounds, settings and heatmap.</p>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            + (f'<p class="note">{html_text(note)}</p>' if (note := values_note(ab.verdict)) else ""))


def markdown_lines(ab: GateAb) -> list[str]:
    header, rows = table_cells(ab)
    lines = [f"### {markdown_text(ab.title)}: **{markdown_text(ab.verdict.status)}**", "",
             markdown_text(ab.verdict.headline), "", f"Baseline: {markdown_text(ab.baseline)} (`{ab.link}`)", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(markdown_text(cell) for cell in cells) + " |" for cells in rows]
    note = values_note(ab.verdict)
    return lines + ([""] + ([markdown_text(note), ""] if note else []))
