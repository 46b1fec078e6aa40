"""report.comment: the sticky pull-request comment of one platform, from a gate's report files.

Read by report.gate_files from the gate's output folder, or from its `perfgate-report-<platform>` artifact
(the same layout, docs/ci.md). Those files were written on the runner by the code under test (a pull
request's), so they are data of unknown origin: every text taken from them is escaped for Markdown (no
link, image, mention, HTML, table cell or line break can come out of it), numbers are shown only when they
parse as numbers, and the comment is bounded in size. The comment starts with a hidden marker,
`<!-- perfgate:<platform> -->`, by which the workflow finds and updates it in place (one comment per
platform).

`read_gate_output` does the reading; `comment_markdown` is pure.
"""
from __future__ import annotations

import re

from .. import files
from .. import schema as s
from ..errors import InputError
from ..escape import markdown
from .. import outcome
from ..outcome import INCOMPLETE, PASS, REGRESSION
from .ab_view import ab_columns, values_note
# what the comment reads, and what its readers import from here
from .gate_files import (MAX_JUNIT_BYTES, MAX_ROWS, AbVerdict, Checks, GateOutput, Measured,  # noqa: F401
                         read_ab, read_checks, read_gate_output)

PLATFORM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# a sub-experiment's name (files.SUBEXPERIMENT_NAME): it may stand in a link's fragment as it is
SUBEXPERIMENT = re.compile(files.SUBEXPERIMENT_NAME)
COMMIT = re.compile(r"[0-9a-f]{7,40}")
# a link target written as it is: https, and nothing that could end the link or start markup
REPORT_URL = re.compile(r"https://[A-Za-z0-9._~:/?#@!$&*+,;=%-]{1,500}")
MAX_TEXT = 200  # characters of one text taken from the files
MAX_MISMATCH = 1000  # characters of platform_files.json's line (it names several files and machines)
# GitHub refuses a comment over 65536 characters; the tables above are bounded far below it
MAX_COMMENT = 60000


def marker(platform: str) -> str:
    return f"<!-- perfgate:{platform} -->"


# --- escaping -------------------------------------------------------------------------------------
def _markdown_text(value) -> str:
    """Text of unknown origin in the comment (escape.markdown.inert_text: nothing in it notifies or
    links); at most MAX_TEXT characters (an ellipsis says it was cut)."""
    text = str(value)
    return markdown.inert_text(text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "\u2026")


def _status(text: str) -> str:
    return {s.FAILED: ":x: failed", s.PASSED: "passed"}.get(str(text), _markdown_text(text))


def _ab_rows(verdict: AbVerdict, rows: list[dict[str, str]]) -> list[str]:
    """The table of `rows`, in report.ab_view's columns; the files' own text escaped for Markdown."""
    def status(row: dict[str, str]) -> str:
        sized = (row.get(s.EXPERIMENT_TYPE, ""), row.get("Statistic", "")) in verdict.layout_sized
        return _status(row.get(s.STATUS, "")) + (" (layout-sized)" if sized and row.get(s.STATUS) == s.PASSED else "")

    columns = ab_columns(verdict, status)
    lines = ["| " + " | ".join(column.header for column in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_markdown_text(column.cell(row)) if column.stored_text else column.cell(row)
                                for column in columns) + " |" for row in rows[:MAX_ROWS]]
    return lines


def _ab_table(verdict: AbVerdict) -> list[str]:
    """Failed and layout-sized tests in the open; the tests that passed plainly folded into a count."""
    def shown(row: dict[str, str]) -> bool:
        return row.get(s.STATUS) != s.PASSED or \
            (row.get(s.EXPERIMENT_TYPE, ""), row.get("Statistic", "")) in verdict.layout_sized
    open_rows = sorted((row for row in verdict.rows if shown(row)), key=lambda row: row.get(s.STATUS) != s.FAILED)
    folded = [row for row in verdict.rows if not shown(row)]
    total = max(verdict.tests, len(verdict.rows))
    # read_ab keeps the first MAX_ROWS failed rows and MAX_ROWS others, and counts every failed one
    opened = max(verdict.failed_tests, sum(row.get(s.STATUS) == s.FAILED for row in open_rows)) + \
        sum(row.get(s.STATUS) != s.FAILED for row in open_rows)
    lines = _ab_rows(verdict, open_rows) if open_rows else []
    if opened > MAX_ROWS:
        lines.append(f"\nand {opened - MAX_ROWS} more test(s) in the full report")
    plain = total - opened
    if plain:
        lines += ["", f"<details><summary>{plain} of {total} test(s) passed (each row says why)</summary>", "",
                  *_ab_rows(verdict, folded)]
        if plain > min(len(folded), MAX_ROWS):
            lines.append(f"\nand {plain - min(len(folded), MAX_ROWS)} more test(s) in the full report")
        lines += ["", "</details>"]
    note = values_note(verdict)
    return lines + ([""] + ([f"*{note}*", ""] if note else []))


def _checks_lines(checks: Checks, what: str) -> list[str]:
    lines = [f"{what}: {checks.total - checks.failures - checks.error_count} of {checks.total} passed, "
             f"{checks.failures} failed, {checks.error_count} without a result", ""]
    listed = [(":x:", *case) for case in checks.failed] + [(":warning:", *case) for case in checks.errors]
    if listed:
        lines += ["| | Suite | Test | Message |", "|---|---|---|---|"]
        lines += [f"| {mark} | {_markdown_text(suite)} | {_markdown_text(name)} | {_markdown_text(message)} |"
                  for mark, suite, name, message in listed[:MAX_ROWS]]
        if checks.failures + checks.error_count > MAX_ROWS:
            lines.append(f"\nand {checks.failures + checks.error_count - MAX_ROWS} more in the full report")
        lines.append("")
    return lines


def _more_severe(status: str, than: str) -> bool:
    severity = outcome.SEVERITY.index
    return severity(outcome.exit_code(status)) > severity(outcome.exit_code(than))


def disagreement(gate: GateOutput) -> tuple[str, str | None]:
    """The verdict the comment states, and the sentence naming the files that contradict report.md's, or
    None. The files are the code under test's and could say anything of each other; the comment states the
    worse (by the gate's own rule: outcome's severity), since a reviewer reads the verdict first."""
    claims = []  # (status, what a file says that report.md's verdict does not account for)
    for folder, checks in (("", gate.checks), (f"{s.THROUGHPUT_DIR}/", gate.throughput)):
        if checks is not None and checks.failures:
            claims.append((REGRESSION, f"{folder}{s.JUNIT_FILE} has {checks.failures} failed check(s)"))
        if checks is not None and checks.error_count:
            claims.append((INCOMPLETE, f"{folder}{s.JUNIT_FILE} has {checks.error_count} check(s) without a result"))
    for folder, ab in ((f"{s.AB_DIR}/", gate.ab), (f"{s.THROUGHPUT_DIR}/{s.AB_DIR}/", gate.throughput_ab)):
        if ab is not None and ab.status != PASS:
            claims.append((ab.status, f"{folder}{s.VERDICT_JSON} says {ab.status}"))
        if ab is not None and ab.table_status != ab.status:
            claims.append((ab.table_status, f"{folder}{s.VERDICT_CSV} has {ab.failed_tests} failed test(s)"))
    worse = [(status, said) for status, said in claims if _more_severe(status, gate.status)]
    if not worse:
        return gate.status, None
    stated = gate.status
    for status, _ in worse:
        stated = status if _more_severe(status, stated) else stated
    return stated, (f"The report files disagree: {s.REPORT_MARKDOWN} says {gate.status}, but "
                    f"{', '.join(said for _, said in worse)}; this comment states the worse, {stated}.")


def history_links(verdict: AbVerdict, history_url: str) -> list[str]:
    """'History: [sub](<history.html>#chart-<sub>-median), ...' for each sub-experiment the A/B failed; a
    name that is no sub-experiment name (the file's text) is left out rather than put in a link."""
    failed = dict.fromkeys(row.get(s.EXPERIMENT_TYPE, "") for row in verdict.rows if row.get(s.STATUS) == s.FAILED)
    named = [sub for sub in failed if SUBEXPERIMENT.fullmatch(sub) and len(sub) <= MAX_TEXT][:MAX_ROWS]
    if not named:
        return []
    links = ", ".join(f"[{sub}]({history_url}#{s.history_chart_id(sub, s.MEDIAN)})" for sub in named)
    return [f"History of what failed on this platform (the nightly's charts): {links}", ""]


def comment_markdown(gate: GateOutput, platform: str, report_url: str, commit: str | None = None,
                     history_url: str | None = None) -> str:
    """The comment: the hidden marker, the verdict first, the A/B tables (each failed sub-experiment
    linked to its chart on `history_url`, the platform's published history.html), the checks, the link."""
    if not PLATFORM_NAME.fullmatch(platform):
        raise InputError(f"--platform {platform!r} is not a platform name (letters, digits, '.', '_', '-')")
    if not REPORT_URL.fullmatch(report_url):
        raise InputError(f"--report-url {report_url!r} is not an https URL without spaces, quotes or brackets")
    if history_url is not None and (not REPORT_URL.fullmatch(history_url) or "#" in history_url):
        raise InputError(f"--history-url {history_url!r} is not an https URL without spaces, quotes, brackets "
                         f"or '#' (the comment adds each chart's)")
    if commit is not None and not COMMIT.fullmatch(commit):
        raise InputError(f"--commit {commit!r} is not a commit SHA (7 to 40 lowercase hex digits)")
    measured = f" at `{commit}`" if commit else ""
    stated, disagreeing = disagreement(gate)
    lines = [marker(platform), f"## perfgate on {platform}: **{stated}**", "",
             f"[Full report]({report_url}) (the run's summary, and its artifact perfgate-report-{platform}){measured}", ""]
    if disagreeing:  # fixed words and counts only: nothing of the files' text
        lines += [f":warning: {disagreeing}", ""]
    if gate.platform_mismatch:  # answer-first, beside the verdict: what it was judged by is another machine's
        text = gate.platform_mismatch
        lines += [":warning: " + markdown.inert_text(text if len(text) <= MAX_MISMATCH
                                                     else text[:MAX_MISMATCH - 1] + "\u2026"), ""]
    if gate.measured is not None:
        version, commit_of_fastdds = gate.measured.fastdds_version, gate.measured.fastdds_commit
        lines += ["Measured: Fast DDS " + (_markdown_text(version) if version else "(version not recorded)")
                  + (f" ({_markdown_text(commit_of_fastdds)})" if commit_of_fastdds else "")
                  + (f", run {_markdown_text(gate.measured.label)}" if gate.measured.label else ""), ""]
    if gate.ab is not None:
        lines += [f"### A/B against the baseline build: **{_markdown_text(gate.ab.table_status)}**", "",
                  _markdown_text(gate.ab.headline), ""]
        if gate.ab_baseline:
            lines += [f"Baseline: {_markdown_text(gate.ab_baseline)}", ""]
        lines += _ab_table(gate.ab)
        lines += history_links(gate.ab, history_url) if history_url else []
    lines += _checks_lines(gate.checks, "Latency requirements")
    if gate.throughput is not None:
        lines += _checks_lines(gate.throughput, "Throughput requirements")
    if gate.throughput_ab is not None:
        lines += [f"### Throughput A/B against the baseline build: "
                  f"**{_markdown_text(gate.throughput_ab.table_status)}**",
                  "", _markdown_text(gate.throughput_ab.headline), "", *_ab_table(gate.throughput_ab)]
    text = "\n".join(lines).rstrip("\n") + "\n"
    if len(text) > MAX_COMMENT:  # only absurd files get here (rows are bounded); never cut a row in half
        text = text[:text.rindex("\n", 0, MAX_COMMENT)] + "\n\nLeft out: see the full report.\n"
    return text


