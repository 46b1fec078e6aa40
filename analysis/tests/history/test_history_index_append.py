"""The summary index after new runs: appended to, not rewritten, and read back exactly (issue 24 item 5)."""
from __future__ import annotations

import shutil

import pandas as pd

from perfgate.history import summary_batch
from perfgate import schema as s
from perfgate.history import index as si
from perfgate.history import latency as history
from perfgate.latency import experiments as ex
from history_synthetic import SUBS, write_store

SUB = SUBS[1]


def load(store):
    table, damaged = history._load_sub(ex.load_store(store), SUB, history.index_folder(store))
    assert damaged == []
    return table


def test_a_new_run_is_appended_to_the_index_and_reads_back_as_the_files_do(tmp_path, monkeypatch):
    write_store(tmp_path / "all", 12, 6)
    store = tmp_path / "store"
    shutil.copytree(tmp_path / "all", store, ignore=lambda folder, names: [n for n in names if n == "run-011"])
    load(store)
    index = si.index_path(store / s.STORE_EXPERIMENTS_DIR, SUB)
    before = index.read_bytes()
    # the nightly's case: one more run in the store
    shutil.copytree(tmp_path / "all" / s.STORE_EXPERIMENTS_DIR / "run-011", store / s.STORE_EXPERIMENTS_DIR / "run-011")
    reads = []
    original = summary_batch.plain_rows  # every summary file read goes through it once
    monkeypatch.setattr(summary_batch, "plain_rows", lambda path: reads.append(path) or original(path))
    table = load(store)
    assert reads == [store / s.STORE_EXPERIMENTS_DIR / "run-011" / s.summary_csv_name(SUB)]
    # the file kept its bytes and gained the new run's rows after them
    after = index.read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    # read back: every row, exactly, nothing read again; the same as the files and an index written whole
    again = load(store)
    assert len(reads) == 1
    pd.testing.assert_frame_equal(again, table)
    direct = ex.summary_table(ex.load_store(store), SUB)
    pd.testing.assert_frame_equal(table.reset_index(drop=True), direct.reset_index(drop=True), check_dtype=False)
    assert len(si.read_index(index)) == len(direct)
    index.unlink()
    pd.testing.assert_frame_equal(load(store), table)
    assert not index.read_bytes().startswith(before)  # rebuilt whole: one member
