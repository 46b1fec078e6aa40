"""Data that cannot be a measurement, fed through the real command line: exit 2, ONE line on stderr
naming the file, the physical line (blank lines and the header counted, as an editor counts) and
what is wrong; no traceback; nothing written."""
from __future__ import annotations

from pathlib import Path

import pytest

from perfgate import cli
from perfgate import schema as s

SUB = "interprocess_best_effort"
RAW_HEADER = ",".join(s.RAW_COLUMNS)
SUMMARY_HEADER = ",".join(s.SUMMARY_COLUMNS)
REQUIREMENTS_HEADER = ",".join(s.REQUIREMENT_COLUMNS)
# Bytes,Samples,Max,Min,Mean,Median,Stdev,Mean jitter,Max jitter,90%,99%,99.99%
GOOD_SUMMARY_ROW = "16,10000,30.000,5.000,10.000,10.000,1.000,0.500,3.000,15.000,20.000,30.000"
GOOD_REQUIREMENT_ROW = f"{SUB},16,20,30,40"


def summary_row(**changes: str) -> str:
    cells = dict(zip(s.SUMMARY_COLUMNS, GOOD_SUMMARY_ROW.split(",")))
    cells.update(changes)
    return ",".join(cells[c] for c in s.SUMMARY_COLUMNS)


def raw_case(text: str, line: int, problem: str):
    def build(tmp_path: Path):
        raw = tmp_path / s.raw_csv_name(SUB)
        raw.write_text(text)
        arguments = ["process", "--raw-csv", str(raw), "--output-csv", str(tmp_path / "out" / "summary.csv"),
                     "--plots-directory", str(tmp_path / "out" / "plots")]
        return arguments, f"{raw}:{line}: ", problem
    return build


def check_arguments(tmp_path: Path, summary_text: str, requirements_text: str) -> list[str]:
    experiment = tmp_path / "experiment"
    experiment.mkdir()
    (experiment / s.summary_csv_name(SUB)).write_text(summary_text)
    (tmp_path / "requirements.csv").write_text(requirements_text)
    return ["check", "--requirements", str(tmp_path / "requirements.csv"), "--experiment-directory",
            str(experiment), "--plots-directory", str(tmp_path / "plots"), "--junit", str(tmp_path / "junit.xml")]


def summary_case(rows: str, line: int, problem: str):
    def build(tmp_path: Path):
        arguments = check_arguments(tmp_path, f"{SUMMARY_HEADER}\n{rows}",
                                    f"{REQUIREMENTS_HEADER}\n{GOOD_REQUIREMENT_ROW}\n")
        return arguments, f"{tmp_path / 'experiment' / s.summary_csv_name(SUB)}:{line}: ", problem
    return build


def requirements_case(rows: str, line: int, problem: str):
    def build(tmp_path: Path):
        arguments = check_arguments(tmp_path, f"{SUMMARY_HEADER}\n{GOOD_SUMMARY_ROW}\n",
                                    f"{REQUIREMENTS_HEADER}\n{rows}")
        return arguments, f"{tmp_path / 'requirements.csv'}:{line}: ", problem
    return build


def rows(*lines: str) -> str:
    return "\n".join(lines) + "\n"


CASES = {
    # raw measurements
    "zero round trip": raw_case(rows(RAW_HEADER, "1,16,10.5", "2,16,0"), 3,
                                "'Latency [us]' is zero, which no measurement is: 0.0"),
    "zero round trip after a blank line": raw_case(rows(RAW_HEADER, "", "1,16,10.5", "", "2,16,0.000"), 5,
                                                   "'Latency [us]' is zero"),
    "huge round trip": raw_case(rows(RAW_HEADER, "1,16,10.5", "2,16,1e300"), 3,
                                "'Latency [us]' is 1e+300, above 1e9 us (over 16 minutes): not a measurement"),
    "huge sample number": raw_case(rows(RAW_HEADER, "1,16,10.5", "1e30,16,11.5"), 3,
                                   "'Sample' is 1e+30, above 2**53: not a measurement"),
    "interleaved payload blocks": raw_case(rows(RAW_HEADER, "1,16,1", "2,16,2", "3,32,1", "4,32,2", "5,16,3",
                                                "6,16,4"), 6,
                                           "payload 16 B starts again after payload 32 B (its first block ends at "
                                           "line 3); the samples of a payload are one block"),
    "duplicate sample number": raw_case(rows(RAW_HEADER, "1,16,1", "2,16,2", "2,16,3"), 4,
                                        "sample number 2 of payload 16 B repeats the one before it (line 3); sample "
                                        "numbers increase within a payload"),
    "decreasing sample number": raw_case(rows(RAW_HEADER, "5,16,1", "", "4,16,2"), 4,
                                         "sample number 4 of payload 16 B is below the one before it (line 2)"),
    "duplicated column": raw_case(rows(RAW_HEADER + ",Latency [us]", "1,16,1,1", "2,16,2,2"), 1,
                                  "column 'Latency [us]' appears twice in the header"),
    "duplicated column after a blank first line": raw_case(rows("", "Sample,Sample,Payload [Bytes],Latency [us]"), 2,
                                                           "column 'Sample' appears twice in the header"),
    "too many cells after a blank line": raw_case(rows(RAW_HEADER, "1,16,1", "", "2,16,2,7"), 4,
                                                  "malformed CSV: Error tokenizing data. C error: Expected 3 fields in "
                                                  "line 4, saw 4"),
    "more cells than the header in the first row": raw_case(rows(RAW_HEADER, "", "1,16,1,9", "2,16,2,9"), 3,
                                                            "malformed CSV: a row has more cells than the header"),
    # summaries
    "summary with Min above Median": summary_case(rows(summary_row(Min="12.000")), 2,
                                                  "Min 12 is above Median 10 at 16 B; a summary row has Min <= "
                                                  "Median <= 90% <= 99% <= 99.99% <= Max"),
    "summary with percentiles above Max": summary_case(rows("", summary_row(Median="31.5", **{"90%": "32", "99%": "33",
                                                                                             "99.99%": "34"})), 3,
                                                       "99.99% 34 is above Max 30 at 16 B"),
    "summary with Median above Max": summary_case(rows(summary_row(Median="31")), 2, "Median 31 is above 90% 15"),
    "summary with 99% above 99.99%": summary_case(rows(summary_row(**{"99%": "30.5"})), 2,
                                                  "99% 30.5 is above 99.99% 30 at 16 B"),
    "summary with Mean above Max": summary_case(rows(summary_row(Mean="30.001")), 2, "Mean 30.001 is above Max 30"),
    "summary with Mean jitter above Max jitter": summary_case(rows(summary_row(**{"Mean jitter": "3.5"})), 2,
                                                              "Mean jitter 3.5 is above Max jitter 3 at 16 B"),
    "summary with a zero Min": summary_case(rows(summary_row(Min="0.000")), 2,
                                            "'Min' is zero, which no measurement is: 0.0"),
    "summary with a huge Max": summary_case(rows(summary_row(Max="2e9", **{"99.99%": "2e9"})), 2,
                                            "'Max' is 2000000000.0, above 1e9 us (over 16 minutes)"),
    # requirements
    "requirement with Median above 99%": requirements_case(rows(f"{SUB},16,50,45,60"), 2,
                                                           f"Median requirement 50 us is above the 99% requirement 45 "
                                                           f"us ({SUB} at 16 B); a requirement row has Median <= 99% "
                                                           f"<= Max"),
    "requirement with Median above Max after a comment and blank lines": requirements_case(
        rows("# tightened after the 2.14 release", "", f"{SUB},16,50,50,40"), 4,
        f"99% requirement 50 us is above the Max requirement 40 us ({SUB} at 16 B)"),
    "requirement with a huge Max": requirements_case(rows(f"{SUB},16,20,30,1e12"), 2,
                                                     "'Max' is 1000000000000.0, above 1e9 us"),
}


def listing(folder: Path) -> list[tuple[str, int]]:
    return sorted((str(p), p.stat().st_size) for p in folder.rglob("*"))


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_impossible_data_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, case):
    arguments, where, problem = CASES[case](tmp_path)
    before = listing(tmp_path)
    code = cli.main(arguments)
    captured = capsys.readouterr()
    assert code == s.EXIT_USAGE, captured.err
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"perfgate {arguments[0]}: error: {where}"), lines[0]
    assert problem in lines[0], lines[0]
    assert captured.out == ""
    assert listing(tmp_path) == before


def test_a_summary_with_a_duplicated_column_names_the_header_line(tmp_path, capsys):
    header = SUMMARY_HEADER.replace("Stdev", "Median")
    arguments = check_arguments(tmp_path, f"{header}\n{GOOD_SUMMARY_ROW}\n", f"{REQUIREMENTS_HEADER}\n"
                                f"{GOOD_REQUIREMENT_ROW}\n")
    before = listing(tmp_path)
    assert cli.main(arguments) == s.EXIT_USAGE
    error = capsys.readouterr().err
    assert error == (f"perfgate check: error: {tmp_path / 'experiment' / s.summary_csv_name(SUB)}:1: column 'Median' "
                     "appears twice in the header\n")
    assert listing(tmp_path) == before


def test_real_data_with_blank_lines_and_crlf_is_still_read(tmp_path):
    """The rules refuse impossible data, not an unusual layout: blank lines and CRLF line ends give the
    summary the same rows give without them."""
    rows_text = ["1,16,10.5", "2,16,11.25", "3,32,12.123456", "4,32,13"]
    plain, unusual = tmp_path / "plain.csv", tmp_path / "unusual.csv"
    plain.write_text("\n".join([RAW_HEADER, *rows_text]) + "\n")
    unusual.write_bytes("\r\n".join(["", RAW_HEADER, "", *rows_text[:2], "  ", *rows_text[2:], ""]).encode())
    for raw in (plain, unusual):
        assert cli.main(["process", "--raw-csv", str(raw), "--output-csv", str(raw.with_suffix(".summary")),
                         "--no-plots"]) == s.EXIT_OK
    assert (tmp_path / "unusual.summary").read_text() == (tmp_path / "plain.summary").read_text()
    assert len((tmp_path / "plain.summary").read_text().splitlines()) == 3
