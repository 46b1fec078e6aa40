"""The store's summary index: read once, exact, never stale, rebuilt when damaged (issue 13)."""
from __future__ import annotations

import os
import shutil

import pandas as pd
import pytest

from perfgate.latency import experiments as ex
from perfgate import files
from perfgate.history import summary_batch
from perfgate.history import latency as history
from perfgate import schema as s
from perfgate.history import index as si
from history_synthetic import SUBS, summary, write_store

SUB = SUBS[1]


@pytest.fixture()
def store(tmp_path):
    write_store(tmp_path / "store", 12, 6)
    return tmp_path / "store"


def load(store):
    return load_sub(ex.load_store(store), history.index_folder(store))


def load_sub(experiments, indexed):
    table, damaged = history._load_sub(experiments, SUB, indexed)
    assert damaged == []
    return table


def counting_reads(monkeypatch) -> list:
    """The summary files read: every file the index does not hold goes through summary_batch.plain_rows
    once, whether it is then read with others or on its own."""
    reads = []
    original = summary_batch.plain_rows

    def read(path):
        reads.append(path)
        return original(path)

    monkeypatch.setattr(summary_batch, "plain_rows", read)
    return reads


def test_the_index_gives_exactly_what_the_files_give_and_spares_reading_them(store, monkeypatch):
    reads = counting_reads(monkeypatch)
    first = load(store)
    assert len(reads) == 12 and si.index_path(store / s.STORE_EXPERIMENTS_DIR, SUB).is_file()
    second = load(store)
    assert len(reads) == 12  # nothing read again
    pd.testing.assert_frame_equal(first, second)
    direct = ex.summary_table(ex.load_store(store), SUB)
    pd.testing.assert_frame_equal(second.reset_index(drop=True), direct.reset_index(drop=True), check_dtype=False)
    assert list(second[ex.ORDER].unique()) == list(range(12))


def test_an_edited_summary_is_read_again(store, monkeypatch):
    load(store)
    path = store / s.STORE_EXPERIMENTS_DIR / "run-003" / s.summary_csv_name(SUB)
    files.write_csv(path, summary({16: 99.0, 1024: 98.0}))
    os.utime(path, ns=(1, 1))  # a restored file: another time, whatever its size
    reads = counting_reads(monkeypatch)
    table = load(store)
    assert reads == [path]
    assert table[table[ex.ORDER] == 3][s.MEDIAN].tolist() == [99.0, 98.0]


def test_a_damaged_index_is_rebuilt_and_a_removed_run_leaves_it(store, monkeypatch):
    load(store)
    index = si.index_path(store / s.STORE_EXPERIMENTS_DIR, SUB)
    index.write_bytes(b"not gzip at all")
    shutil.rmtree(store / s.STORE_EXPERIMENTS_DIR / "run-000")
    reads = counting_reads(monkeypatch)
    table = load(store)
    assert len(reads) == 11 and len(table) == 22
    assert set(si.read_index(index)[si.FOLDER]) == {f"run-{i:03d}" for i in range(1, 12)}


def test_a_folder_of_experiments_that_is_no_store_gets_no_index(store, tmp_path):
    plain = tmp_path / "runs"
    shutil.copytree(store / s.STORE_EXPERIMENTS_DIR, plain)
    assert history.index_folder(plain) is None
    table = load_sub(ex.load_store(plain), None)
    assert len(table) == 24 and not (plain / si.INDEX_DIR).exists()


def test_a_store_of_raw_measurements_only_is_summarised_and_not_indexed(tmp_path, fastdds_fixtures):
    # results of the older tooling: raw CSVs, no summaries, no metadata
    for name in ("old-1", "old-2"):
        folder = tmp_path / "store" / s.STORE_EXPERIMENTS_DIR / name
        folder.mkdir(parents=True)
        shutil.copy(fastdds_fixtures / "v193" / "measurements_interprocess.csv", folder / s.raw_csv_name(SUB))
    store = tmp_path / "store"
    table = load(store)
    assert sorted(set(table[ex.ORDER])) == [0, 1] and len(table) == 2 * table[s.BYTES].nunique()
    assert not si.index_path(store / s.STORE_EXPERIMENTS_DIR, SUB).exists()
