"""JUnit `line` is the requirement row's physical line (blank and comment lines counted, as the
editor a pull-request annotation opens counts them), and failure and error messages name the
sub-experiment and the payload, since reporters show them without the suite."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from perfgate import files
from perfgate import schema as s
from perfgate.cli import main

A, B = "interprocess_best_effort", "intraprocess_reliable"
SUMMARY_LINE = "{payload},10000,{high},1.000,{median},{median},1.000,0.500,3.000,{p99},{p99},{high}"

# Line numbers as an editor shows them: 1 header, 2 blank, 3 comment, 4-5 rows of A, 6 blank, 7-8 rows of B
REQUIREMENTS = (
    "Experiment type,Bytes,Median,99%,Max\n"
    "\n"
    "# tightened after the 2.14 release\n"
    f"{A},16,100.000,200.000,300.000\n"
    f"{A},16384,100.000,200.000,300.000\n"
    "   \n"
    f"{B},16,10.000,20.000,30.000\n"
    f"{B},32,10.000,20.000,30.000\n"
)
LINES = {(A, 16): "4", (A, 16384): "5", (B, 16): "7", (B, 32): "8"}


def write_summary(experiment: Path, sub: str, rows: dict[int, tuple[str, str, str]], blank_after_header=False):
    lines = [",".join(s.SUMMARY_COLUMNS)] + ([""] if blank_after_header else [])
    lines += [SUMMARY_LINE.format(payload=p, median=m, p99=q, high=x) for p, (m, q, x) in rows.items()]
    (experiment / s.summary_csv_name(sub)).write_text("\n".join(lines) + "\n")


def checked(tmp_path: Path, capsys) -> tuple[ET.Element, str, Path]:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    requirements = repo / "requirements" / "reference.csv"
    requirements.parent.mkdir()
    requirements.write_text(REQUIREMENTS)
    experiment = tmp_path / "experiment"
    experiment.mkdir()
    write_summary(experiment, A, {16: ("99.000", "150.000", "250.000"), 16384: ("105.123", "150.000", "300.000")},
                  blank_after_header=True)
    write_summary(experiment, B, {16: ("5.000", "6.000", "7.000")})
    output = tmp_path / "junit.xml"
    code = main(["check", "--requirements", str(requirements), "--experiment-directory", str(experiment),
                 "--plots-directory", str(tmp_path / "plots"), "--no-plots", "--junit", str(output)])
    assert code == s.EXIT_REGRESSION
    return ET.parse(output).getroot(), capsys.readouterr().err, experiment


def test_line_counts_blank_and_comment_lines_and_messages_name_sub_and_payload(tmp_path, capsys):
    root, err, _ = checked(tmp_path, capsys)
    for suite in root.iter("testsuite"):
        sub = suite.get("name").removeprefix("latency.")
        for case in suite.iter("testcase"):
            payload = int(case.get("name").split("[")[1].split(" ")[0])
            assert case.get("line") == LINES[(sub, payload)], (sub, case.get("name"))
            assert case.get("file") == "requirements/reference.csv"
            for result in list(case):
                assert f"{sub} at {payload} B: " in result.get("message"), result.get("message")
    failure = next(root.iter("failure"))
    assert failure.get("message") == f"{A} at 16384 B: Median 105.123 us > requirement 100.000 us (+5.12%)"
    assert "requirements/reference.csv:5" in failure.text
    # the missing payload, on stderr too, names its physical line
    assert f"reference.csv:8: no measurements for {B} (32 B)" in err


def test_junit_command_gives_the_same_lines(tmp_path, capsys):
    root, _, experiment = checked(tmp_path, capsys)
    again = tmp_path / "again.xml"
    assert main(["junit", "--experiment-directory", str(experiment), "--output", str(again)]) == s.EXIT_REGRESSION
    assert again.read_text() == (tmp_path / "junit.xml").read_text()


def test_a_summary_row_not_covered_names_its_physical_line(tmp_path, capsys):
    requirements = tmp_path / "req.csv"
    requirements.write_text(f"Experiment type,Bytes,Median,99%,Max\n{A},16,100,200,300\n")
    experiment = tmp_path / "experiment"
    experiment.mkdir()
    write_summary(experiment, A, {16: ("99.000", "150.000", "250.000"), 64: ("99.000", "150.000", "250.000")},
                  blank_after_header=True)
    assert main(["check", "--requirements", str(requirements), "--experiment-directory", str(experiment),
                 "--plots-directory", str(tmp_path / "p"), "--no-plots"]) == s.EXIT_USAGE
    assert capsys.readouterr().err == (f"perfgate check: error: {experiment / s.summary_csv_name(A)}:4: payload 64 B "
                                       f"of {A} is not in the requirements ({requirements})\n")


def test_check_report_rows_name_their_physical_line(tmp_path, capsys):
    """perfgate junit validates the check reports it reads; a bad row after a blank line is named right."""
    root, _, experiment = checked(tmp_path, capsys)
    report = experiment / s.check_csv_name(A)
    lines = report.read_text().splitlines()
    lines.insert(1, "")
    lines[3] = lines[3].replace("passed", "maybe").replace("failed", "maybe")
    report.write_text("\n".join(lines) + "\n")
    assert main(["junit", "--experiment-directory", str(experiment), "--output", str(tmp_path / "j.xml")]) \
        == s.EXIT_USAGE
    assert capsys.readouterr().err == f"perfgate junit: error: {report}:4: unknown status 'maybe'\n"
    assert not (tmp_path / "j.xml").exists()
    requirements = files.read_requirements(tmp_path / "repo" / "requirements" / "reference.csv")
    assert requirements["line"].tolist() == [4, 5, 7, 8]
