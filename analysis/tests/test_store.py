"""The results store: an experiment is added whole and never replaced; adding waits for the lock
that another process (a gate, the nightly history) holds, and goes on once that process dies."""
from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from perfgate import schema as s
from perfgate import store
from perfgate.errors import InputError


def sources(tmp_path, text):
    folder = tmp_path / f"run-{text}"
    folder.mkdir()
    (folder / s.METADATA_FILE).write_text(f'{{"label": "{text}"}}')
    (folder / s.summary_csv_name("intraprocess_best_effort")).write_text(text)
    return sorted(folder.iterdir())


def test_an_experiment_is_added_whole_and_a_taken_label_is_never_replaced(tmp_path):
    target = store.add_experiment(tmp_path / "store", "first", sources(tmp_path, "one"))
    assert target == tmp_path / "store" / s.STORE_EXPERIMENTS_DIR / "first"
    assert sorted(p.name for p in target.iterdir()) == sorted([s.METADATA_FILE,
                                                               s.summary_csv_name("intraprocess_best_effort")])
    with pytest.raises(InputError, match="already has an experiment labelled 'first'") as refused:
        store.add_experiment(tmp_path / "store", "first", sources(tmp_path, "two"))
    assert str(target) in str(refused.value)
    assert (target / s.summary_csv_name("intraprocess_best_effort")).read_text() == "one"
    assert [p.name for p in (tmp_path / "store" / s.STORE_EXPERIMENTS_DIR).iterdir()] == ["first"]  # no staging left


def test_adding_waits_for_the_store_lock_and_a_dead_holder_releases_it(tmp_path):
    (tmp_path / "store" / s.STORE_EXPERIMENTS_DIR).mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import time; from pathlib import Path; from perfgate import store\n"
         f"with store.locked(Path({str(tmp_path / 'store')!r})):\n"
         "    print('held', flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True)
    added = threading.Event()
    try:
        assert holder.stdout.readline().strip() == "held"
        adder = threading.Thread(target=lambda: (store.add_experiment(tmp_path / "store", "second",
                                                                      sources(tmp_path, "x")), added.set()))
        adder.start()
        assert not added.wait(1.0)  # blocked: the holder has the lock, however long we wait
        assert not (tmp_path / "store" / s.STORE_EXPERIMENTS_DIR / "second").exists()
    finally:
        holder.kill()
        holder.wait()
    assert added.wait(60)  # the lock died with its holder
    adder.join()
    assert (tmp_path / "store" / s.STORE_EXPERIMENTS_DIR / "second" / s.METADATA_FILE).is_file()
