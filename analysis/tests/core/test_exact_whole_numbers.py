"""Whole-number columns (Sample, Payload [Bytes], a summary's Bytes and Samples) are judged on the number
written, not on its float: 2**53 + 1 rounds to 2**53 as a float and passed the "at most 2**53" bound
(issue 23). Through the real command line: exit 2, one line naming the file and row, nothing written."""
from __future__ import annotations

import pytest

from perfgate import cli
from perfgate import schema as s

RAW_HEADER = ",".join(s.RAW_COLUMNS)
LIMIT = 2**53


@pytest.mark.parametrize("cells, problem", [
    (f"{LIMIT + 1},16,11.5", f"'Sample' is {LIMIT + 1}, above 2**53: not a measurement"),
    (f"2,{LIMIT + 1},11.5", f"'Payload [Bytes]' is {LIMIT + 1}, above 2**53: not a measurement"),
    (f"{LIMIT + 1}.0,16,11.5", f"'Sample' is {float(LIMIT)}, a whole number written as a float at 2**53, where a "
                               "float cannot tell it from 2**53 + 1: write it as an integer"),
])
def test_a_whole_number_a_float_cannot_hold_is_refused_naming_the_row(tmp_path, capsys, cells, problem):
    raw = tmp_path / s.raw_csv_name("interprocess_best_effort")
    raw.write_text(f"{RAW_HEADER}\n1,16,10.5\n{cells}\n")
    summary = tmp_path / "summary.csv"
    assert cli.main(["process", "--raw-csv", str(raw), "--output-csv", str(summary), "--no-plots"]) == s.EXIT_USAGE
    err = capsys.readouterr().err
    assert err == f"perfgate process: error: {raw}:3: {problem}\n"
    assert not summary.exists()


def test_the_largest_whole_number_written_as_an_integer_is_still_read(tmp_path, capsys):
    raw = tmp_path / s.raw_csv_name("interprocess_best_effort")
    raw.write_text(f"{RAW_HEADER}\n1,16,10.5\n{LIMIT},16,11.5\n")
    summary = tmp_path / "summary.csv"
    assert cli.main(["process", "--raw-csv", str(raw), "--output-csv", str(summary), "--no-plots"]) == s.EXIT_OK
    assert summary.read_text().splitlines()[1].startswith("16,2,11.500,10.500,")
