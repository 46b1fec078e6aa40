"""Issue 44 item 4: `perfgate pr-comment` over report files that contradict each other, that are named
pipes or devices, or that are large. The files are the code under test's (a pull request's), so each may
say anything: a report.md that says PASS above an A/B that found a regression, a verdict.json that says
PASS beside a verdict.csv whose test failed, a junit.xml with failures under a PASS.

The comment states the worse outcome (the one the gate's own verdict rule gives the files together) and
says which files disagree: a reviewer reads the verdict first, and a stale comment left by a refusal
would say nothing of this run."""
from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate import schema as s

URL = "https://github.com/o/perfgate/actions/runs/42"
VERDICT_COLUMNS = (s.EXPERIMENT_TYPE, "Statistic", "Rounds", "Ratio", "Lower bound", "Adjusted p-value", s.STATUS)
PEAK_OF_COMMAND = ("import sys\nfrom perfgate import cli\ncode = cli.main(sys.argv[1:])\n"
                   "sys.stderr.write(''.join(l for l in open('/proc/self/status') if l.startswith('VmHWM')))\n"
                   "sys.exit(code)")


def junit(cases: str = '<testcase name="Median[16 B]"/>') -> str:
    return f'<testsuites><testsuite name="latency.intraprocess_best_effort">{cases}</testsuite></testsuites>'


def write_ab(folder: Path, status: str, statuses: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / s.VERDICT_JSON).write_text(f'{{"status": "{status}", "headline": "{status}: as written"}}')
    with open(folder / s.VERDICT_CSV, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(VERDICT_COLUMNS)
        for index, status_of_test in enumerate(statuses):
            writer.writerow([f"sub{index}", "Median", 6, 1.1 if status_of_test == s.FAILED else 1.0, 1.05, 0.01,
                             status_of_test])


def gate_output(tmp_path: Path, verdict: str = "PASS", cases: str | None = None,
                ab: tuple[str, list[str]] | None = None) -> Path:
    folder = tmp_path / "report"
    folder.mkdir(parents=True)
    (folder / s.REPORT_MARKDOWN).write_text(f"## perfgate latency gate: **{verdict}**\n\nmore\n")
    (folder / s.JUNIT_FILE).write_text(junit() if cases is None else junit(cases))
    if ab is not None:
        write_ab(folder / s.AB_DIR, *ab)
    return folder


def pr_comment(folder: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfgate.cli", "pr-comment", "--gate-output", str(folder),
                           "--platform", "linux", "--report-url", URL], capture_output=True, text=True,
                          timeout=timeout)


# --- files that contradict each other -------------------------------------------------------------------
@pytest.mark.parametrize("verdict, cases, ab, stated, disagreeing", [
    # report.md's PASS above an A/B that found a regression
    ("PASS", None, ("REGRESSION", [s.FAILED, s.PASSED]), "REGRESSION", "ab/verdict.json says REGRESSION"),
    # report.md's PASS above a failed check, and above a check without a result
    ("PASS", '<testcase name="a"><failure message="over"/></testcase>', None, "REGRESSION",
     "junit.xml has 1 failed check(s)"),
    ("PASS", '<testcase name="a"><error message="no data"/></testcase>', None, "INCOMPLETE",
     "junit.xml has 1 check(s) without a result"),
    # report.md's PASS above an A/B whose verdict.json says PASS beside a failed test in its verdict.csv
    ("PASS", None, ("PASS", [s.PASSED, s.FAILED]), "REGRESSION", "ab/verdict.csv has 1 failed test(s)"),
    # report.md's INCOMPLETE above a regression: the gate's rule (outcome.verdict_of) decides the worse
    ("INCOMPLETE", None, ("REGRESSION", [s.FAILED]), "REGRESSION", "ab/verdict.json says REGRESSION"),
])
def test_contradicting_files_give_the_worse_outcome_and_name_the_files(tmp_path, verdict, cases, ab, stated,
                                                                      disagreeing):
    done = pr_comment(gate_output(tmp_path, verdict, cases, ab))
    assert done.returncode == s.EXIT_OK, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == f"## perfgate on linux: **{stated}**"
    [warning] = [line for line in lines if line.startswith(":warning: The report files disagree")]
    assert f"report.md says {verdict}" in warning and disagreeing in warning
    assert f"this comment states the worse, {stated}" in warning
    # said to the job's log too, on one line
    assert "disagree" in done.stderr and len(done.stderr.splitlines()) == 1


def test_an_ab_table_with_a_failed_test_is_a_regression_whatever_its_json_says(tmp_path):
    done = pr_comment(gate_output(tmp_path, "PASS", None, ("PASS", [s.PASSED, s.FAILED])))
    assert done.returncode == s.EXIT_OK, done.stderr
    assert "### A/B against the baseline build: **REGRESSION**" in done.stdout.splitlines()


@pytest.mark.parametrize("verdict, cases, ab", [
    ("PASS", None, ("PASS", [s.PASSED])),
    ("REGRESSION", '<testcase name="a"><failure message="over"/></testcase>', ("PASS", [s.PASSED])),
    # a gate may be worse than its files show (a step error, a failed baseline comparison): no disagreement
    ("INCOMPLETE", None, None),
    ("REGRESSION", None, ("REGRESSION", [s.FAILED])),
])
def test_files_that_agree_are_shown_as_they_are(tmp_path, verdict, cases, ab):
    done = pr_comment(gate_output(tmp_path, verdict, cases, ab))
    assert done.returncode == s.EXIT_OK and done.stderr == ""
    assert done.stdout.splitlines()[1] == f"## perfgate on linux: **{verdict}**"
    assert "disagree" not in done.stdout


# --- named pipes, devices, sizes ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", [s.REPORT_MARKDOWN, s.JUNIT_FILE, f"{s.AB_DIR}/{s.VERDICT_JSON}",
                                  f"{s.AB_DIR}/{s.VERDICT_CSV}", s.METADATA_FILE])
def test_a_named_pipe_among_the_files_is_refused_at_once(tmp_path, name):
    folder = gate_output(tmp_path, ab=("PASS", [s.PASSED]))
    path = folder / name
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    done = pr_comment(folder, timeout=30)  # it hung, reading the pipe, before
    assert done.returncode == s.EXIT_USAGE and done.stdout == ""
    assert done.stderr.startswith(f"perfgate pr-comment: error: {path}: ") and "a named pipe" in done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_link_to_a_device_is_refused(tmp_path):
    folder = gate_output(tmp_path)
    (folder / s.JUNIT_FILE).unlink()
    (folder / s.JUNIT_FILE).symlink_to("/dev/zero")
    done = pr_comment(folder, timeout=30)
    assert done.returncode == s.EXIT_USAGE and done.stdout == ""
    assert f"{folder / s.JUNIT_FILE}: " in done.stderr and "a device" in done.stderr


def test_a_junit_file_larger_than_any_gate_writes_is_refused_unread(tmp_path):
    from perfgate.report.comment import MAX_JUNIT_BYTES
    folder = gate_output(tmp_path)
    os.truncate(folder / s.JUNIT_FILE, MAX_JUNIT_BYTES + 1)  # sparse: no disk used
    done = pr_comment(folder)
    assert done.returncode == s.EXIT_USAGE and done.stdout == ""
    assert f"{folder / s.JUNIT_FILE}: " in done.stderr and f"over {MAX_JUNIT_BYTES} bytes" in done.stderr


def peak_kib(folder: Path) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-c", PEAK_OF_COMMAND, "pr-comment", "--gate-output", str(folder),
                           "--platform", "linux", "--report-url", URL], capture_output=True, text=True, timeout=300)
    assert done.returncode == s.EXIT_USAGE or done.returncode == s.EXIT_OK, done.stderr
    return int(re.search(r"VmHWM:\s*(\d+) kB", done.stderr).group(1)), done.stdout


@pytest.mark.heavy
def test_memory_does_not_grow_with_the_junit_file_or_the_ab_table(tmp_path):
    """A junit.xml of 200 000 failed testcases (24 MB) and a verdict.csv of 200 000 rows: the comment
    lists 20 of each and counts the rest, and the command's peak memory grows by far less than the files'
    size over that of a one-testcase gate (it held the whole parsed tree, 10 times the file, before)."""
    small = gate_output(tmp_path / "small", ab=("REGRESSION", [s.FAILED]))
    baseline_kib, _ = peak_kib(small)
    large = gate_output(tmp_path / "large", verdict="REGRESSION", ab=("REGRESSION", [s.FAILED] * 200_000))
    failure = '<testcase name="Median[16 B]"><failure message="{}"/></testcase>'.format("over the requirement " * 4)
    (large / s.JUNIT_FILE).write_text(junit(failure * 200_000))
    size = (large / s.JUNIT_FILE).stat().st_size + (large / s.AB_DIR / s.VERDICT_CSV).stat().st_size
    assert size > 24 << 20
    peak, text = peak_kib(large)
    assert "Latency requirements: 0 of 200000 passed, 200000 failed, 0 without a result" in text
    assert "and 199980 more in the full report" in text and "and 199980 more test(s) in the full report" in text
    assert (peak - baseline_kib) * 1024 < size / 4
