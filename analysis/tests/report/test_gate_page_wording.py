"""What the gate's pages say, read as a user reads them, on a real gate folder (published measurements
checked, the stored A/A rounds curtailed in ab/, a curtailed throughput A/B; report_inputs): the
platform by its name before the machine's fingerprint id, and no confidence bound where the rounds a
curtailed test used give none ("n/a (2 rounds)", not "0.000x" or "inf")."""
from __future__ import annotations

import csv
import html
import re

import pytest

from perfgate import report
from perfgate import schema as s
from perfgate.report import comment
from report_inputs import curtailed_gate_output

PLATFORM = "vm-2core-x64"
URL = "https://github.com/o/perfgate/actions/runs/42"
MACHINE = "machine f00dfeedf00dfeed, AMD EPYC <b>7763</b> & co"


@pytest.fixture(scope="module")
def gate_output(fastdds_fixtures, tmp_path_factory):
    folder, requirements = curtailed_gate_output(fastdds_fixtures, tmp_path_factory.mktemp("gate"))
    return folder, requirements


def written_reports(gate_output, platform_name):
    folder, requirements = gate_output
    results = report.load(folder, requirements, platform_name=platform_name)
    html_path, markdown_path = report.write_reports(results)
    return html_path.read_text(encoding="utf-8"), markdown_path.read_text(encoding="utf-8")


def meta_value(page: str, name: str) -> str:
    """The text of <dt>name</dt><dd>...</dd> on the page, unescaped."""
    found = re.findall(rf"<dt>{name}</dt><dd>(.*?)</dd>", page)
    assert len(found) == 1, found
    return html.unescape(found[0])


# --- the platform line ------------------------------------------------------------------------------
def test_the_gate_page_names_the_platform_first_and_the_machine_after_it(gate_output):
    page, markdown = written_reports(gate_output, PLATFORM)
    assert meta_value(page, "platform") == f"{PLATFORM} ({MACHINE})"
    assert "<b>7763</b>" not in page and "AMD EPYC &lt;b&gt;7763&lt;/b&gt; &amp; co" in page  # escaped
    line = next(line for line in markdown.splitlines() if "**platform**" in line)
    assert f"**platform** {PLATFORM} (machine f00dfeedf00dfeed, AMD EPYC " in line
    assert "<b>" not in line and "&lt;b&gt;7763&lt;/b&gt;" in line  # shown on GitHub as written, not bold


def test_without_a_platform_name_the_page_keeps_the_id_and_says_no_platform_was_named(gate_output):
    page, markdown = written_reports(gate_output, None)
    assert meta_value(page, "platform") == f"no platform named ({MACHINE})"
    assert "**platform** no platform named (machine f00dfeedf00dfeed, AMD EPYC " in markdown


# --- bounds the rounds do not give ----------------------------------------------------------------------
def test_the_stored_files_keep_their_numbers_for_the_tests_decided_after_two_rounds(gate_output):
    folder, _ = gate_output
    with open(folder / s.AB_DIR / s.VERDICT_CSV, encoding="utf-8", newline="") as handle:
        latency = list(csv.DictReader(handle))
    assert {(row["Rounds"], row["Lower bound"]) for row in latency} == {("2", "0.000")}  # exp(-inf), as documented
    with open(folder / s.THROUGHPUT_DIR / s.AB_DIR / s.VERDICT_CSV, encoding="utf-8", newline="") as handle:
        throughput = {row[s.EXPERIMENT_TYPE]: (row["Rounds"], row["Upper bound"]) for row in csv.DictReader(handle)}
    assert throughput["intraprocess_best_effort"] == ("2", "") and throughput["interprocess_reliable"] == ("2", "")
    assert throughput["interprocess_best_effort"][0] == "12" and float(throughput["interprocess_best_effort"][1]) < 1


def ab_table(page: str, anchor: str) -> list[list[str]]:
    """The rows of the gate page's A/B table after <h2 id=anchor>, as cell texts."""
    section = page[page.index(f'<h2 id="{anchor}">'):]
    table = section[section.index("<tbody>"):section.index("</tbody>")]
    return [[html.unescape(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table)]


def test_the_gate_page_and_summary_say_no_bound_for_tests_decided_after_two_rounds(gate_output):
    page, markdown = written_reports(gate_output, PLATFORM)
    latency = ab_table(page, "ab")
    assert len(latency) == 4 and {row[6] for row in latency} == {"n/a (2 rounds)"}  # Lower bound
    assert {row[8] for row in latency} == {"2 of 10"}  # Rounds: used of planned
    # and why they passed: decided after 2 rounds, as curtailing stopped them (issue 45)
    assert all(row[10].endswith("stopped early, its 10 planned rounds could no longer make it fail") for row in latency)
    # the throughput A/B's rows say the same: its values (Mb/s), the threshold as the drop it stands for, why
    throughput = {row[0]: row for row in ab_table(page, "throughput-ab")}
    assert throughput["intraprocess_best_effort"][6] == throughput["interprocess_reliable"][6] == "n/a (2 rounds)"
    assert re.fullmatch(r"0\.\d{3}x", throughput["interprocess_best_effort"][6])  # Upper bound
    assert {row[5] for row in throughput.values()} == {"-1.0 %"}
    assert all(float(row[2]) > 0 and float(row[3]) > 0 for row in throughput.values())  # Baseline, Candidate
    assert throughput["interprocess_best_effort"][10].startswith("12 of 12 rounds down more than 1.0%: ")
    assert "0.000x" not in page and "| 0.000x |" not in markdown and "| inf |" not in markdown
    assert markdown.count("| n/a (2 rounds) |") == 6


def test_the_pull_request_comment_says_no_bound_alike(gate_output):
    folder, _ = gate_output
    written_reports(gate_output, PLATFORM)  # report.md: the verdict line the comment starts from
    text = comment.comment_markdown(comment.read_gate_output(folder), PLATFORM, URL)
    # Change | (Threshold |) bound | p | Rounds: the 4 latency tests and 2 of the 3 throughput tests were decided
    # after 2 rounds, of the 10 and 13 rounds their A/Bs planned
    assert len(re.findall(r"\| [+-]\d+\.\d % \| \+1\.0 % \| n/a \(2 rounds\) \| [\d.e-]+ \| 2 of 10 \|", text)) == 4
    assert len(re.findall(r"\| [+-]\d+\.\d % \| n/a \(2 rounds\) \| [\d.e-]+ \| 2 of 13 \|", text)) == 2
    assert "0.000x" not in text and "| inf |" not in text


def test_the_page_lists_sub_experiments_in_the_contracts_order_whatever_order_the_run_recorded(tmp_path):
    """A pooled gate's metadata keeps its sub-experiments by name: the chips followed it (intra-process last)
    while every table of the page lists the contract's order (issue 45 item 3)."""
    from perfgate import files
    from perfgate.model import read_metadata
    from perfgate.report.tables import requested_subs

    by_name = sorted(s.DEFAULT_SUBEXPERIMENT_NAMES)
    files.write_metadata(tmp_path, {"label": "x", "subexperiments": {sub: {"status": "ok"} for sub in by_name}})
    metadata = read_metadata(tmp_path)
    assert list(metadata.subexperiments) == by_name
    assert requested_subs(metadata, {"zz_other": None}) == [*s.DEFAULT_SUBEXPERIMENT_NAMES, "zz_other"]


def test_every_ab_table_says_how_its_values_and_its_change_are_taken(gate_output):
    """Baseline and Candidate are each arm's median, Change the median of the paired per-round changes: they
    disagree when rounds jump (TCP), so each page that shows them says which is which, once per A/B table."""
    page, markdown = written_reports(gate_output, PLATFORM)
    from perfgate.report.ab_view import VALUES_NOTE
    assert page.count(f'<p class="note">{html.escape(VALUES_NOTE, quote=True)}</p>') == 2  # latency, throughput
    assert markdown.count(VALUES_NOTE) == 2
    text = comment.comment_markdown(comment.read_gate_output(gate_output[0]), PLATFORM, URL)
    assert text.count(f"*{VALUES_NOTE}*") == 2  # plain Markdown: no markup of ours beyond the fold
    # the note follows its table: after the latency A/B's rows, before the throughput A/B's heading
    assert text.index("| Sub-experiment |") < text.index(VALUES_NOTE) < text.index("### Throughput A/B")
