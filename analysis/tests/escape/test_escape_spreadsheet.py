"""Untrusted text in CSV files a spreadsheet opens (issue 23, escape/spreadsheet.py): a label or a
commit from the store never becomes a formula in the Otava export or change_points.csv; numbers,
negative ones too, stay numbers."""
from __future__ import annotations

import csv
import io

import pandas as pd
import pytest

from perfgate import cli
from perfgate.history import change_points as cp
from perfgate.history import files as hf
from perfgate import schema as s
from perfgate.escape import spreadsheet
from history_synthetic import SUBS
from escape_hostile import hostile_label, write_hostile_store

FORMULAS = ("=1+1", '=HYPERLINK("https://evil.example","x")', "=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1:A2)",
            "\t=1", "\r=1")


@pytest.mark.parametrize("text", FORMULAS)
def test_a_text_cell_a_spreadsheet_would_run_gets_a_leading_quote(text):
    assert spreadsheet.cell(text) == "'" + text.replace("\r", "\n")


def test_a_carriage_return_in_a_cell_stays_in_its_row():
    frame = pd.DataFrame({"label": spreadsheet.cells(["a\r=1", "b\r\nc"]), "value": [1.5, -2.0]})
    rows = list(csv.reader(io.StringIO(frame.to_csv(index=False, lineterminator="\n"), newline="")))
    assert rows == [["label", "value"], ["a\n=1", "1.5"], ["b\nc", "-2.0"]]


def test_other_cells_stay_as_they_are():
    assert spreadsheet.cells(["nightly-001", "0123abc", "", " =1", "a=1", -3.5, 7, None]) == \
        ["nightly-001", "0123abc", "", " =1", "a=1", -3.5, 7, None]
    assert spreadsheet.cell("x\udc80") == "x\ufffd"  # writable as UTF-8


def read_rows(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:  # a CR inside a quoted cell is the cell's
        return list(csv.DictReader(handle))


def formula_cells(path, columns) -> list[str]:
    """The cells of `columns` a spreadsheet would read as a formula, as a CSV reader reads them."""
    rows = read_rows(path)
    assert rows
    return [row[column] for row in rows for column in columns if row[column].startswith(spreadsheet.FORMULA_STARTS)]


def test_the_otava_export_and_change_points_csv_hold_no_formula_from_a_label(tmp_path):
    requirements = write_hostile_store(tmp_path)
    assert cli.main(["history", "--requirements", str(requirements), "--experiments-results", str(tmp_path / "store"),
                     "--plots-directory", str(tmp_path / "plots"), "--no-plots"]) == s.EXIT_OK
    for sub in SUBS[:2]:
        otava = tmp_path / "plots" / hf.OTAVA_DIR / f"{sub}.csv"
        assert formula_cells(otava, (hf.OTAVA_LABEL, hf.OTAVA_COMMIT)) == []
        labels = [row[hf.OTAVA_LABEL] for row in read_rows(otava)]
        assert len(labels) == 30 and sum(label.startswith("'") for label in labels) == sum(
            hostile_label(position, 20).startswith(spreadsheet.FORMULA_STARTS) for position in range(30)) == 10
        # the measured values are numbers still
        assert all(float(row["median_16"]) > 0 for row in read_rows(otava))
    change_points = tmp_path / "plots" / hf.CHANGE_POINTS_CSV
    assert formula_cells(change_points, (s.LABEL, cp.COMMIT, cp.PREVIOUS_COMMIT)) == []
    rows = read_rows(change_points)
    assert all(float(row[cp.CHANGE]) > 0 for row in rows) and len(rows) == 6


def test_change_points_csv_neutralises_a_commit_and_keeps_negative_changes_numbers():
    table = {column: [None] for column in cp.CHANGE_POINT_COLUMNS}
    table.update({s.EXPERIMENT_TYPE: ["a"], s.BYTES: [16], cp.STATISTIC: [s.MEDIAN], cp.INDEX: [3],
                  s.LABEL: ["=cmd|' /C calc'!A0"], cp.COMMIT: ["@x"], cp.PREVIOUS_COMMIT: [None],
                  cp.BEFORE: [2.0], cp.AFTER: [1.0], cp.CHANGE: [-50.0], cp.P_VALUE: [0.001]})
    text = hf.format_change_points(pd.DataFrame(table))
    row = next(csv.DictReader(io.StringIO(text, newline="")))
    assert (row[s.LABEL], row[cp.COMMIT], row[cp.PREVIOUS_COMMIT]) == ("'=cmd|' /C calc'!A0", "'@x", "")
    assert row[cp.CHANGE] == "-50.000"
