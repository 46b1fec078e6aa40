"""The A/B reports (report.md, report.html of `perfgate verdict`) on tests that curtailed rounds decided
after so few rounds that the sign test gives no confidence bound: the stored real rounds (injected:
interprocess_best_effort decided after 1 round, intraprocess_best_effort measured all 10) and a
curtailed throughput A/B. The table says `n/a (k rounds)`, never `0.000x` (latency: exp(-inf)) or a
bare `n/a` (throughput: its inverse, infinite); verdict.csv keeps its numbers."""
from __future__ import annotations

import csv
import html
import re

from ab_inputs import curtailed_copy, stored_rounds
from perfgate import schema as s
from perfgate.ab import report as ab_report
from throughput_inputs import curtail_throughput_ab, write_throughput_ab

THROUGHPUT_SUBS = ["intraprocess_best_effort", "interprocess_best_effort", "interprocess_reliable"]


def table_rows(page: str, header: str) -> list[dict[str, str]]:
    """The rows of the first HTML table whose header has `header`, by column."""
    for table in re.findall(r"<table>(.*?)</table>", page, re.S):
        names = [html.unescape(h) for h in re.findall(r"<th(?: [^>]*)?>(.*?)</th>", table)]
        if header in names:
            return [dict(zip(names, (html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row))))
                    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table.split("<tbody>", 1)[1])]
    raise AssertionError(f"no table with {header!r}")


def test_a_latency_test_decided_after_one_round_shows_no_lower_bound(tmp_path):
    ab = tmp_path / "ab"
    used = curtailed_copy(stored_rounds() / "injected", ab)
    assert used == {"intraprocess_best_effort": 10, "interprocess_best_effort": 1}
    assert ab_report.command_verdict(ab_directory=str(ab), no_plots=True, platform_layout=False) == s.EXIT_REGRESSION
    with open(ab / s.VERDICT_CSV, encoding="utf-8", newline="") as handle:
        stored = {(r[s.EXPERIMENT_TYPE], r["Statistic"]): r["Lower bound"] for r in csv.DictReader(handle)}
    assert stored[("interprocess_best_effort", "Median")] == "0.000"  # exp(-inf): the file format is unchanged
    page = (ab / s.REPORT_HTML).read_text(encoding="utf-8")
    tests = {(r["Sub-experiment"], r["Statistic"]): r for r in table_rows(page, "Threshold")}
    for statistic in ("Median", "90%"):
        assert tests[("interprocess_best_effort", statistic)]["Lower bound"] == "n/a (1 round)"
        assert tests[("interprocess_best_effort", statistic)]["Rounds"] == "1 of 10"
        assert re.fullmatch(r"1\.\d{3}x", tests[("intraprocess_best_effort", statistic)]["Lower bound"])  # failed
    drill = table_rows(page, "Bytes")
    assert {r["Lower bound"] for r in drill if r["Sub-experiment"] == "interprocess_best_effort"} == {"n/a (1 round)"}
    markdown = (ab / s.REPORT_MARKDOWN).read_text(encoding="utf-8")
    assert markdown.count("| n/a (1 round) |") == 2
    assert "0.000x" not in page and "0.000x" not in markdown


def test_a_throughput_test_decided_after_two_rounds_shows_no_upper_bound(tmp_path):
    ab = tmp_path / "ab"
    write_throughput_ab(ab, THROUGHPUT_SUBS, 13, {THROUGHPUT_SUBS[1]: 0.90}, 0)
    assert curtail_throughput_ab(ab, THROUGHPUT_SUBS, 13) == {
        "intraprocess_best_effort": 2, "interprocess_best_effort": 12, "interprocess_reliable": 2}
    assert ab_report.command_verdict(ab_directory=str(ab), no_plots=True) == s.EXIT_REGRESSION
    page = (ab / s.REPORT_HTML).read_text(encoding="utf-8")
    tests = {r["Sub-experiment"]: r for r in table_rows(page, "Upper bound")}
    assert tests["intraprocess_best_effort"]["Upper bound"] == tests["interprocess_reliable"]["Upper bound"] \
        == "n/a (2 rounds)"
    assert re.fullmatch(r"0\.\d{3}x", tests["interprocess_best_effort"]["Upper bound"])
    drill = table_rows(page, "Test")
    assert {r["Upper bound"] for r in drill if r["Sub-experiment"] != "interprocess_best_effort"} == {"n/a (2 rounds)"}
    markdown = (ab / s.REPORT_MARKDOWN).read_text(encoding="utf-8")
    assert markdown.count("| n/a (2 rounds) |") == 2 and "| n/a |" not in markdown
