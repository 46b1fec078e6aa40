"""The results store: an experiment is added whole and never replaced; adding waits for the lock
that another process (a gate, the nightly history) holds, and goes on once that process dies."""
from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import threading

import pandas as pd
import pytest

from perfgate import cli, files
from perfgate.gate import run as gate
from perfgate.store import experiments as store
from perfgate import schema as s
from perfgate.errors import InputError


def sources(tmp_path, text):
    folder = tmp_path / f"run-{text}"
    folder.mkdir()
    (folder / s.METADATA_FILE).write_text(f'{{"label": "{text}"}}')
    (folder / s.summary_csv_name("intraprocess_best_effort")).write_text(text)
    return {path.name: path for path in sorted(folder.iterdir())}


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
         "import time; from pathlib import Path; from perfgate.store import experiments as store\n"
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


# --- raw measurements kept gzip'd, and re-processed from the store ----------------------------------
def test_a_stored_run_keeps_its_raw_measurements_gzipd_and_reprocessing_it_gives_the_same_summaries(
        tmp_path, fastdds_fixtures):
    # a real run's raw measurements (Fast DDS 1.9.3, published), processed as the gate processes them
    run = tmp_path / "run"
    run.mkdir()
    sub = "intraprocess_best_effort"
    shutil.copy(fastdds_fixtures / "v193" / "measurements_intraprocess.csv", run / s.raw_csv_name(sub))
    assert cli.main(["process", "--experiment-directory", str(run), "--no-plots"]) == s.EXIT_OK
    (run / s.METADATA_FILE).write_text('{"label": "old"}')
    kept = gate.store_files(run)
    assert sorted(kept) == sorted([s.METADATA_FILE, s.summary_csv_name(sub), s.stored_raw_name(sub)])
    assert all(store.is_kept(name) for name in kept)
    stored = store.add_experiment(tmp_path / "store", "old", kept)
    packed = stored / f"measurements_{sub}.csv.gz"
    raw_bytes = (run / s.raw_csv_name(sub)).read_bytes()
    assert gzip.decompress(packed.read_bytes()) == raw_bytes
    assert packed.stat().st_size < len(raw_bytes) / 2  # it is compressed
    assert not (stored / s.raw_csv_name(sub)).exists()
    # the same measurements compress to the same bytes (no time or name in the gzip header)
    again = store.add_experiment(tmp_path / "store", "old-again", kept)
    assert (again / packed.name).read_bytes() == packed.read_bytes()
    assert files.raw_files(stored) == {sub: packed}
    pd.testing.assert_frame_equal(files.read_raw(packed), files.read_raw(run / s.raw_csv_name(sub)))

    # re-processing a copy of the stored run (its summaries removed) writes byte-identical summaries
    copy = tmp_path / "reprocessed"
    shutil.copytree(stored, copy)
    (copy / s.summary_csv_name(sub)).unlink()
    assert cli.main(["process", "--experiment-directory", str(copy), "--no-plots"]) == s.EXIT_OK
    assert (copy / s.summary_csv_name(sub)).read_bytes() == (stored / s.summary_csv_name(sub)).read_bytes()
    # and one stored raw file alone, through --raw-csv
    out = tmp_path / "one_summary.csv"
    assert cli.main(["process", "--raw-csv", str(packed), "--output-csv", str(out), "--no-plots"]) == s.EXIT_OK
    assert out.read_bytes() == (stored / s.summary_csv_name(sub)).read_bytes()


def test_a_damaged_stored_raw_file_and_two_raw_files_of_one_sub_experiment_are_refused(tmp_path, capsys):
    folder = tmp_path / "old"
    folder.mkdir()
    sub = "interprocess_reliable"
    text = "Sample,Payload [Bytes],Latency [us]\n0,16,10.000\n1,16,11.000\n"
    (folder / s.stored_raw_name(sub)).write_bytes(gzip.compress(text.encode())[:-9])  # cut short
    assert cli.main(["process", "--experiment-directory", str(folder), "--no-plots"]) == s.EXIT_USAGE
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith(f"perfgate process: error: {folder / s.stored_raw_name(sub)}: raw measurements file is "
                           "not readable gzip")
    assert not (folder / s.summary_csv_name(sub)).exists()
    (folder / s.stored_raw_name(sub)).write_bytes(gzip.compress(text.encode()))
    (folder / s.raw_csv_name(sub)).write_text(text)
    with pytest.raises(InputError, match=f"two raw measurements of '{sub}': {s.raw_csv_name(sub)} and "
                                         rf"{s.stored_raw_name(sub)}; keep one"):
        files.raw_files(folder)


def test_what_the_store_keeps_of_an_experiment_folder():
    kept = [s.METADATA_FILE, s.JUNIT_FILE, s.summary_csv_name("x"), s.check_csv_name("x"), s.stored_raw_name("x"),
            s.raw_csv_name("x"), s.throughput_csv_name("x"), f"{s.AB_DIR}/{s.VERDICT_CSV}", f"{s.AB_DIR}/{s.VERDICT_JSON}"]
    assert all(store.is_kept(name) for name in kept)
    for name in ("plots/x/histogram_16.png", "report.html", f"{s.AB_DIR}/rounds/01/baseline/metadata.json",
                 f"{s.AB_DIR}/{s.METADATA_FILE}", "notes.txt", ".perfgate-summary-index/x.csv.gz"):
        assert not store.is_kept(name), name


def test_a_stored_experiment_folder_has_the_usual_mode_not_mkdtemps_private_one(tmp_path):
    mask = os.umask(0o022)
    try:
        target = store.add_experiment(tmp_path / "store", "first", sources(tmp_path, "one"))
    finally:
        os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o755
