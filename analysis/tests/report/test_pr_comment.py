"""perfgate pr-comment: the sticky pull-request comment, from a real gate output folder (checked
requirements, report.md written by the report package, an A/B folder decided by `perfgate verdict`)
whose text carries hostile labels: nothing of it becomes a link, an image, a mention, HTML, a table
cell or a line of its own."""
from __future__ import annotations

import csv
import html
import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from perfgate.ab import report as ab_report
from perfgate.latency import check, process
from perfgate import files, report
from perfgate import schema as s
from perfgate.report import comment
from ab_inputs import write_rounds
from report_inputs import PAYLOADS, SOURCES, TIGHT, metadata, published_raw, requirements_frame
from conftest import REPO_ROOT

HOSTILE = "[x](http://evil) ![i](http://evil/i.png) @org/team <img src=x onerror=alert(1)> | a\n## forged `b` www.evil.com"
URL = "https://github.com/o/perfgate/actions/runs/42"
SHA = "0123456789abcdef0123456789abcdef01234567"


def perfgate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfgate.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def gate_output(fastdds_fixtures, tmp_path_factory):
    """A gate's output folder as `perfgate gate --baseline-build` leaves it: two sub-experiments
    checked against requirements with two failures (junit.xml), report.md, and an A/B (ab/) whose
    candidate is 5 % slower inter-process; labels and versions hostile."""
    root = tmp_path_factory.mktemp("gate")
    folder = root / "experiment"
    folder.mkdir()
    for sub, source in SOURCES.items():
        files.write_csv(folder / s.raw_csv_name(sub), published_raw(fastdds_fixtures, source, PAYLOADS))
    summaries = process.process_experiment(folder, jobs=1, plots=False)
    hostile_metadata = metadata(SOURCES, PAYLOADS)
    hostile_metadata["label"] = HOSTILE
    hostile_metadata["fastdds"]["version"] = "2.9.1 @eProsima/maintainers [release](http://evil)"
    files.write_metadata(folder, hostile_metadata)
    requirements_csv = root / "requirements.csv"
    files.write_csv(requirements_csv, requirements_frame(summaries, TIGHT))
    assert check.command_check(requirements=str(requirements_csv), experiment_directory=str(folder),
                               plots_directory=str(folder / s.PLOTS_DIR), print_summaries=False,
                               junit=str(folder / s.JUNIT_FILE), no_plots=True) == s.EXIT_REGRESSION
    write_rounds(folder / s.AB_DIR, 16, {"interprocess_best_effort": 0.05})
    assert ab_report.command_verdict(ab_directory=str(folder / s.AB_DIR), no_plots=True) == s.EXIT_REGRESSION
    record = json.loads((folder / s.AB_DIR / s.VERDICT_JSON).read_text())
    results = report.load(folder, requirements_csv, baseline_compared=False, ab_headline=record["headline"])
    report.write_reports(results)
    return folder


def tampered(gate_output, tmp_path):
    """The artifact as a hostile pull request's code could write it: hostile text in the A/B's
    sub-experiment cells and headline (the runner job that writes them runs the pull request)."""
    folder = tmp_path / "report"
    shutil.copytree(gate_output, folder)
    table = folder / s.AB_DIR / s.VERDICT_CSV
    with open(table, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    rows[0][s.EXPERIMENT_TYPE] = HOSTILE
    rows[0]["Ratio"] = "1.0|<b>"
    with open(table, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    record = json.loads((folder / s.AB_DIR / s.VERDICT_JSON).read_text())
    record["headline"] = HOSTILE
    (folder / s.AB_DIR / s.VERDICT_JSON).write_text(json.dumps(record))
    return folder


def table_rows(text: str) -> list[list[str]]:
    return [line.split(" | ") for line in text.splitlines() if line.startswith("| ")]


def test_the_comment_gives_the_verdict_first_then_the_ab_table_and_the_failed_checks(gate_output):
    done = perfgate("pr-comment", "--gate-output", str(gate_output), "--platform", "reference-x64",
                    "--report-url", URL, "--commit", SHA)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "<!-- perfgate:reference-x64 -->"
    assert lines[1] == "## perfgate on reference-x64: **REGRESSION**"
    assert f"[Full report]({URL})" in lines[3] and f"`{SHA}`" in lines[3]
    assert "### A/B against the baseline build: **REGRESSION**" in lines
    # the A/B table: its four tests, the two failed (inter-process Median and 90%) in the open, the two that
    # passed folded into a count
    ab_rows = [row for row in table_rows(done.stdout) if len(row) == 11 and row[0] != "| Sub-experiment"]
    assert len(ab_rows) == 4
    assert [html.unescape(row[0]).removeprefix("| ") for row in ab_rows[:2]] == ["interprocess_best_effort"] * 2
    assert [row[-2] for row in ab_rows] == [":x: failed", ":x: failed", "passed", "passed"]
    text = done.stdout
    assert text.index(":x: failed") < text.index("<details><summary>2 of 4 test(s) passed (each row says why)"
                                                 "</summary>") < text.index("| passed |") < text.index("</details>")
    # each row gives the values in us, the change, the threshold it was held to and why
    baseline, candidate = (float(cell.removesuffix(" us")) for cell in ab_rows[0][2:4])
    assert candidate / baseline == pytest.approx(1.05, abs=0.01) and 50 < baseline < 100
    assert re.fullmatch(r"\+[45]\.\d %", ab_rows[0][4]) and ab_rows[0][5] == "+1.0 %"
    assert re.fullmatch(r"1[0-6] of 16 rounds above \+1\.0%: slower beyond chance \|", shown(ab_rows[0][-1]))
    assert re.search(r"rounds above \+1\.0%: not enough to fail \(Holm p [\d.]+ > 0\.02\) \|$", shown(ab_rows[2][-1]))
    assert "Baseline: not recorded" in lines  # the A/B folder has no metadata.json here
    # the latency requirements: the two tight ones failed (junit.xml), named with their message
    junit = ET.parse(gate_output / s.JUNIT_FILE).getroot()
    total = len(list(junit.iter("testcase")))
    assert f"Latency requirements: {total - 2} of {total} passed, 2 failed, 0 without a result" in lines
    failed = [row for row in table_rows(done.stdout) if row[0] == "| :x:"]
    assert sorted((html.unescape(row[1]), html.unescape(row[2])) for row in failed) == [
        ("latency.interprocess_best_effort", "Max[1024 B]"), ("latency.intraprocess_best_effort", "Median[16384 B]")]


def shown(text: str) -> str:
    """What GitHub shows of comment text: references decoded, zero-width spaces invisible."""
    return html.unescape(text).replace("\u200b", "")


def test_hostile_text_is_shown_as_written_and_never_becomes_markup(gate_output, tmp_path):
    folder = tampered(gate_output, tmp_path)
    done = perfgate("pr-comment", "--gate-output", str(folder), "--platform", "reference-x64", "--report-url", URL)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    body = text.split("\n", 1)[1]
    # one marker, the first line; no HTML, link, image or code span from the files (the comment's own
    # <details> fold is the only markup)
    own = body.replace("<details><summary>", "").replace("</summary>", "").replace("</details>", "")
    assert text.count("<!--") == 1 and "<" not in own and ">" not in own.replace("->", "")
    assert "](" not in body.replace(f"]({URL})", "") and "![" not in body and "`" not in body
    # no @mention and no autolink: GitHub finds both in the decoded text, where a zero-width space follows @ and :
    decoded = html.unescape(body)
    assert not re.search(r"@[A-Za-z0-9]", decoded) and "http://" not in decoded and "www.evil" not in decoded
    # no line of its own (a heading) and no extra table cell: every A/B row still has its eleven cells
    assert not any(line.startswith("## forged") for line in text.splitlines())
    assert all(len(row) == 11 for row in table_rows(text) if row[0].startswith("| ") and len(row) > 4)
    # and all of it is there, shown as written (newline as a space), the label and version included
    assert shown(HOSTILE.replace("\n", " ")) in shown(text)
    assert "Measured: Fast DDS 2.9.1 @eProsima/maintainers [release](http://evil) (0123456789abcdef), run " \
        + HOSTILE.replace("\n", " ") in shown(text)
    # a ratio that is no number gives no change (a dash in its own cell), and nothing of it shows
    assert "1.0|<b>" not in shown(text) and "1.0|" not in shown(text)
    hostile_row = next(row for row in table_rows(text) if len(row) == 11 and shown(HOSTILE.split("\n")[0]) in shown(row[0]))
    assert hostile_row[4] == "-"


HISTORY = "https://o.github.io/perfgate/perfgate-history-reference-x64/history.html"


def test_each_failed_sub_experiment_links_its_history_chart_and_a_forged_name_is_never_a_link(gate_output, tmp_path):
    done = perfgate("pr-comment", "--gate-output", str(gate_output), "--platform", "reference-x64",
                    "--report-url", URL, "--history-url", HISTORY)
    assert done.returncode == 0, done.stderr
    # two failed tests of one sub-experiment: one link, to its Median chart (history.page's chart id)
    linked = [line for line in done.stdout.splitlines() if line.startswith("History of what failed")]
    assert linked == ["History of what failed on this platform (the nightly's charts): "
                      f"[interprocess_best_effort]({HISTORY}#chart-interprocess_best_effort-median)"]
    # the sub-experiment cell comes from the runner: one that is no name is shown (escaped) but not linked
    folder = tmp_path / "report"
    shutil.copytree(gate_output, folder)
    table = folder / s.AB_DIR / s.VERDICT_CSV
    with open(table, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        if row[s.STATUS] == s.FAILED:
            row[s.EXPERIMENT_TYPE] = "x)(javascript:alert(1)"
    with open(table, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    done = perfgate("pr-comment", "--gate-output", str(folder), "--platform", "reference-x64",
                    "--report-url", URL, "--history-url", HISTORY)
    assert done.returncode == 0, done.stderr
    assert "History of what failed" not in done.stdout and HISTORY not in done.stdout
    assert "javascript" in shown(done.stdout) and "](" not in done.stdout.replace(f"]({URL})", "")


def test_a_gate_without_an_ab_is_compared_with_its_requirements_only(gate_output, tmp_path):
    folder = tmp_path / "report"
    shutil.copytree(gate_output, folder, ignore=shutil.ignore_patterns(s.AB_DIR))
    text = comment.comment_markdown(comment.read_gate_output(folder), "reference-x64", URL)
    assert "A/B" not in text and text.splitlines()[1] == "## perfgate on reference-x64: **REGRESSION**"


@pytest.mark.parametrize("damage, message", [
    (lambda f: (f / s.REPORT_MARKDOWN).unlink(), "report.md: no report.md: the gate wrote no verdict here"),
    (lambda f: (f / s.REPORT_MARKDOWN).write_text("## perfgate latency gate: **PASSED**\n"),
     "report.md:1: its first line is not a perfgate gate's verdict"),
    (lambda f: (f / s.JUNIT_FILE).unlink(), "junit.xml: no JUnit file: the gate's results are missing"),
    (lambda f: (f / s.JUNIT_FILE).write_text("<testsuites/>"), "junit.xml: the JUnit file has no testcase"),
    (lambda f: (f / s.JUNIT_FILE).write_text("<testsuites"), "junit.xml: malformed JUnit XML"),
    (lambda f: (f / s.AB_DIR / s.VERDICT_CSV).unlink(), "verdict.csv: no verdict.csv beside verdict.json"),
    (lambda f: (f / s.AB_DIR / s.VERDICT_JSON).write_text('{"status": "FINE"}'), "'status' is 'FINE'"),
])
def test_a_missing_or_damaged_report_is_one_line_and_exit_2_with_nothing_printed(gate_output, tmp_path, damage,
                                                                                 message):
    folder = tmp_path / "report"
    shutil.copytree(gate_output, folder)
    damage(folder)
    done = perfgate("pr-comment", "--gate-output", str(folder), "--platform", "reference-x64", "--report-url", URL)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("perfgate pr-comment: error: ") and message in done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize("option, value, message", [
    ("--platform", "x -->\n<img>", "is not a platform name"),
    ("--report-url", "javascript:alert(1)", "is not an https URL"),
    ("--report-url", "https://x/a) [y](http://evil", "is not an https URL"),
    ("--commit", "HEAD", "is not a commit SHA"),
    ("--history-url", "https://o.github.io/p/history.html#top", "is not an https URL"),
    ("--history-url", "http://o.github.io/p/history.html", "is not an https URL"),
])
def test_bad_options_are_refused(gate_output, option, value, message):
    given = {"--platform": "reference-x64", "--report-url": URL, "--commit": SHA, "--history-url": HISTORY,
             option: value}
    done = perfgate("pr-comment", "--gate-output", str(gate_output), *[x for pair in given.items() for x in pair])
    assert done.returncode == 2 and done.stdout == "" and message in done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_the_report_artifact_holds_everything_the_comment_needs(gate_output, tmp_path):
    """The workflow runs pr-comment on the perfgate-report-<platform> artifact, not on the whole folder:
    laid out as gate.yml uploads it, it gives the same comment."""
    import yaml

    workflow = yaml.safe_load((REPO_ROOT / ".github" / "workflows" / "gate.yml").read_text())
    [upload] = [step for step in workflow["jobs"]["gate"]["steps"] if step.get("name", "").startswith("Upload the report")]
    artifact = tmp_path / "report"
    for listed in upload["with"]["path"].split():
        source = gate_output / listed.removeprefix("out/experiment/")
        if source.is_file():  # upload-artifact skips what the run did not write (no throughput here)
            (artifact / source.relative_to(gate_output)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, artifact / source.relative_to(gate_output))
    whole = comment.comment_markdown(comment.read_gate_output(gate_output), "reference-x64", URL, SHA)
    assert comment.comment_markdown(comment.read_gate_output(artifact), "reference-x64", URL, SHA) == whole
    assert "Measured: Fast DDS" in whole and "### A/B against the baseline build" in whole
