"""The JUnit file of `perfgate check --junit`, read by junitparser: the parser inside
EnricoMi/publish-unit-test-result-action, one of the reporters docs/formats.md section 12 names.

Run as a user runs it (the console command in a subprocess) on a requirements file with blank and
comment lines, with failing checks and a required payload without measurements. What a reporter
shows must name the sub-experiment and the payload: the title the workflows make
(check_title_template '{{SUITE_NAME}}: {{TEST_NAME}}', .github/workflows/gate.yml) and every
message; and each annotation must land on its requirement's physical line."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import junitparser

from perfgate import schema as s

A, B = "interprocess_reliable_tcp", "intraprocess_best_effort"
SUMMARY_LINE = "{payload},10000,{high},1.000,{median},{median},1.000,0.500,3.000,{p99},{p99},{high}"
# 1 header, 2 blank, 3 comment, 4-5 rows of A, 6 blank, 7 comment, 8-9 rows of B
REQUIREMENTS = (
    "Experiment type,Bytes,Median,99%,Max\n"
    "\n"
    "# after the 2.14 release\n"
    f"{A},256,20.000,40.000,90.000\n"
    f"{A},16384,30.000,60.000,120.000\n"
    "\n"
    "# intra-process\n"
    f"{B},16,2.000,4.000,9.000\n"
    f"{B},64,2.000,4.000,9.000\n"
)
LINES = {(A, 256): 4, (A, 16384): 5, (B, 16): 8, (B, 64): 9}


class AnnotatedCase(junitparser.TestCase):
    """junitparser reads the attributes it does not model through declared ones."""
    file = junitparser.Attr()
    line = junitparser.IntAttr()


def write_summary(experiment: Path, sub: str, rows: dict[int, tuple[str, str, str]]) -> None:
    lines = [",".join(s.SUMMARY_COLUMNS)]
    lines += [SUMMARY_LINE.format(payload=p, median=m, p99=q, high=x) for p, (m, q, x) in rows.items()]
    (experiment / s.summary_csv_name(sub)).write_text("\n".join(lines) + "\n")


def test_junitparser_reads_titles_messages_and_lines_that_name_sub_and_payload(tmp_path):
    (tmp_path / ".git").mkdir()
    requirements = tmp_path / "requirements" / "platform.csv"
    requirements.parent.mkdir()
    requirements.write_text(REQUIREMENTS)
    experiment = tmp_path / "experiment"
    experiment.mkdir()
    # A: Median at 256 B and Max at 16384 B over their requirements; B: 64 B not measured
    write_summary(experiment, A, {256: ("20.142", "30.000", "80.000"), 16384: ("25.000", "50.000", "130.500")})
    write_summary(experiment, B, {16: ("1.000", "2.000", "3.000")})
    junit_file = tmp_path / "out" / "junit.xml"
    command = subprocess.run([sys.executable, "-m", "perfgate.cli", "check", "--requirements", str(requirements),
                              "--experiment-directory", str(experiment), "--plots-directory", str(tmp_path / "plots"),
                              "--no-plots", "--junit", str(junit_file)], cwd=tmp_path, capture_output=True, text=True)
    assert command.returncode == s.EXIT_REGRESSION, command.stderr

    document = junitparser.JUnitXml.fromfile(str(junit_file))
    assert (document.tests, document.failures, document.errors) == (12, 2, 3)
    seen = {}
    for suite in document:
        sub = suite.name.removeprefix("latency.")
        for case in suite:
            annotated = AnnotatedCase.fromelem(case)
            payload = int(case.name.split("[")[1].split(" B]")[0])
            title = f"{suite.name}: {case.name}"  # the workflows' check_title_template
            assert sub in title and f"{payload} B" in title, title
            assert (annotated.file, annotated.line) == ("requirements/platform.csv", LINES[(sub, payload)])
            for result in case.result:
                assert result.message.startswith(f"{sub} at {payload} B: ") or \
                    result.message.startswith(f"no measurements for {sub} at {payload} B: "), result.message
                assert f"requirements/platform.csv:{LINES[(sub, payload)]}" in result.text, result.text
            seen[title] = [(type(r).__name__, r.message) for r in case.result]
    assert seen[f"latency.{A}: Median[256 B]"] == [
        ("Failure", f"{A} at 256 B: Median 20.142 us > requirement 20.000 us (+0.71%)")]
    assert seen[f"latency.{A}: Max[16384 B]"] == [
        ("Failure", f"{A} at 16384 B: Max 130.500 us > requirement 120.000 us (+8.75%)")]
    assert [title for title, results in seen.items() if results and results[0][0] == "Error"] == [
        f"latency.{B}: {check}[64 B]" for check in ("Median", "99%", "Max")]
    assert sum(not results for results in seen.values()) == 7
