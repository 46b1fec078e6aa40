"""Many summaries read at once (summary_batch): each file accepted with the very values, or refused with
the very message and line, that files.read_summary gives it on its own (issue 45 item 7)."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from perfgate import files
from perfgate.history import summary_batch
from perfgate import schema as s
from perfgate.errors import InputError
from history_synthetic import summary

GOOD = summary({16: 101.123, 1024: 140.5, 65536: 880.25})


def write(path, text: str | bytes) -> None:
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))


def written(tmp_path, name: str, table: pd.DataFrame = GOOD) -> str:
    path = tmp_path / name
    files.write_csv(path, table)
    return path.read_text()


def one_by_one(paths):
    """What read_summary gives each file: its frame or its error's text."""
    results = []
    for path in paths:
        try:
            results.append(files.read_summary(path))
        except InputError as error:
            results.append(str(error))
    return results


def assert_same_as_one_by_one(paths) -> tuple[pd.DataFrame, np.ndarray, dict]:
    table, owner, refused = summary_batch.read_summaries(paths)
    expected = one_by_one(paths)
    assert np.all(np.diff(owner) >= 0)  # files in the given order
    for position, result in enumerate(expected):
        rows = table[owner == position].reset_index(drop=True)
        if isinstance(result, str):
            assert str(refused[position]) == result and rows.empty
        else:
            assert position not in refused
            # exact: the very floats read_summary parsed, not merely close ones
            pd.testing.assert_frame_equal(rows, result.loc[:, list(s.SUMMARY_COLUMNS)].reset_index(drop=True),
                                          check_exact=True)
    return table, owner, refused


def test_plain_summaries_are_read_at_once_with_read_summarys_values(tmp_path, monkeypatch):
    tables = [summary({16: 100 + i + 0.001 * i, 64: 120.0 + i}) for i in range(30)]
    paths = []
    for i, table in enumerate(tables):
        paths.append(tmp_path / f"{i}.csv")
        files.write_csv(paths[-1], table)
    reads = []
    original = files.read_summary
    monkeypatch.setattr(files, "read_summary", lambda path: reads.append(path) or original(path))
    table, owner, refused = summary_batch.read_summaries(paths)
    assert reads == [] and refused == {}  # one parse, no file on its own
    assert owner.tolist() == [i for i in range(30) for _ in range(2)]
    assert table[s.MEDIAN].tolist() == [value for t in tables for value in t[s.MEDIAN]]
    assert table[s.BYTES].dtype == np.int64 and table[s.SAMPLES].dtype == np.int64
    monkeypatch.undo()
    assert_same_as_one_by_one(paths)


def test_the_same_payload_in_two_files_is_no_duplicate_but_twice_in_one_file_is(tmp_path):
    good = written(tmp_path, "a.csv")
    header, first, *rest = good.splitlines(keepends=True)
    write(tmp_path / "b.csv", good)
    write(tmp_path / "twice.csv", header + first + first)
    paths = [tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "twice.csv"]
    table, owner, refused = assert_same_as_one_by_one(paths)
    assert set(refused) == {2} and "duplicate payload row (Bytes=16)" in str(refused[2])
    assert owner.tolist() == [0, 0, 0, 1, 1, 1]


def test_files_that_are_not_plain_are_judged_by_read_summary_itself(tmp_path):
    good = written(tmp_path, "good.csv")
    header, first, *rest = good.splitlines(keepends=True)
    variants = {
        "crlf.csv": good.replace("\n", "\r\n"),                     # valid, not plain
        "bom.csv": "\ufeff" + good,                                 # valid, not plain
        "blank.csv": header + "\n" + first,                         # valid: a blank line is no row
        "spaces.csv": header + first.replace(",", ", "),            # valid: skipinitialspace
        "no-end.csv": good.rstrip("\n"),                            # valid: no last line end
        "columns.csv": ",".join(reversed(s.SUMMARY_COLUMNS)) + "\n" + ",".join(reversed(first.strip().split(","))) + "\n",
        "quoted.csv": header + '"16"' + first[2:],                  # valid: a quoted number
        "short.csv": header + first.rsplit(",", 1)[0] + "\n",       # a cell missing
        "long.csv": header + first.strip() + ",7\n",                # a cell too many
        "balanced.csv": header + first.strip() + ",7\n" + rest[0].rsplit(",", 1)[0] + "\n",
        "empty.csv": header,
        "nothing.csv": "",
        "zero.csv": header + "16,1000,0,0,0,0,0,0,0,0,0,0\n",
        "text.csv": header + first.replace("1000", "x", 1),
        "nul.csv": good.replace("1000", "10\x000", 1),
        "latin1.csv": (header + first).encode("utf-8") + b"\xe9\n",
    }
    paths = []
    for name, text in variants.items():
        write(tmp_path / name, text)
        paths.append(tmp_path / name)
    os.mkfifo(tmp_path / "fifo.csv")  # never opened for waiting: refused as read_summary refuses it
    (tmp_path / "folder.csv").mkdir()
    paths += [tmp_path / "fifo.csv", tmp_path / "folder.csv", tmp_path / "missing.csv", tmp_path / "good.csv"]
    table, owner, refused = assert_same_as_one_by_one(paths)
    accepted = {paths[p].name for p in set(owner.tolist())}
    assert accepted == {"crlf.csv", "bom.csv", "blank.csv", "spaces.csv", "no-end.csv", "columns.csv",
                        "quoted.csv", "good.csv"}
    assert {p.name for p in paths} - accepted == {paths[p].name for p in refused}


def test_a_broken_file_among_plain_ones_refuses_only_itself_with_its_own_line(tmp_path):
    paths = []
    for i in range(12):
        paths.append(tmp_path / f"{i:02d}.csv")
        files.write_csv(paths[-1], summary({16: 50.0 + i, 64: 60.0 + i}))
    lines = paths[5].read_text().splitlines(keepends=True)
    cells = lines[2].split(",")
    cells[3] = "999999.000"  # Min above Median: a rule of one row, refused by the joined check
    write(paths[5], "".join([*lines[:2], ",".join(cells)]))
    table, owner, refused = assert_same_as_one_by_one(paths)
    assert list(refused) == [5] and str(refused[5]).startswith(f"{paths[5]}:3: Min 999999 is above")
    assert sorted(set(owner.tolist())) == [p for p in range(12) if p != 5]


@pytest.mark.parametrize("batch", [1, 4, 1000])
def test_batches_of_any_size_give_the_same_table(tmp_path, monkeypatch, batch):
    paths = []
    for i in range(9):
        paths.append(tmp_path / f"{i}.csv")
        files.write_csv(paths[-1], summary({16 * (i + 1): 10.0 + i}))
    write(paths[4], "not a summary\n")
    monkeypatch.setattr(summary_batch, "BATCH_FILES", batch)
    table, owner, refused = assert_same_as_one_by_one(paths)
    assert list(refused) == [4] and len(table) == 8
