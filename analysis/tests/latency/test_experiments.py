"""Experiment folders and results stores: loading, ordering, comparability."""
from __future__ import annotations

import shutil

import pytest

from conftest import PLATFORM_A, metadata, tiny_summary, write_experiment
from perfgate.latency import experiments as ex
from perfgate import files
from perfgate import schema as s
from perfgate.errors import InputError


def test_describes_an_experiment_from_metadata_and_summaries(tmp_path):
    folder = write_experiment(tmp_path / "run-1", {"interprocess_reliable": tiny_summary({16: (10, 20, 30)})},
                              metadata("nightly-1", "2024-03-01T10:00:00Z", commit="abc123"))
    experiment = ex.describe_experiment(folder)
    assert experiment.label == "nightly-1"
    assert experiment.created.isoformat() == "2024-03-01T10:00:00+00:00"
    assert experiment.platform_id == "platform-a"
    assert experiment.commit == "abc123"
    assert experiment.subexperiments == ["interprocess_reliable"]
    assert experiment.summary("interprocess_reliable")[s.MEDIAN].tolist() == [10.0]


def test_folder_without_metadata_is_labelled_by_its_name(tmp_path):
    folder = write_experiment(tmp_path / "legacy_run", {"intraprocess_reliable": tiny_summary({16: (1, 2, 3)})}, None)
    experiment = ex.describe_experiment(folder)
    assert (experiment.label, experiment.created, experiment.platform_id) == ("legacy_run", None, None)
    assert experiment.latency_definition == s.ROUND_TRIP and not experiment.latency_definition_recorded


def test_raw_only_sub_experiment_is_summarised_and_summaries_are_preferred(tmp_path, fastdds_fixtures, real_summary):
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(fastdds_fixtures / "v193" / "measurements_interprocess.csv", folder / s.raw_csv_name("interprocess_best_effort"))
    # a raw file beside a summary must not be read: make it unreadable as raw to prove it
    write_experiment(folder, {"interprocess_reliable": tiny_summary({16: (10, 20, 30)})}, None)
    (folder / s.raw_csv_name("interprocess_reliable")).write_text("not,a,raw file\n")
    experiment = ex.describe_experiment(folder)
    assert experiment.subexperiments == ["interprocess_best_effort", "interprocess_reliable"]
    assert files.format_csv(experiment.summary("interprocess_best_effort")) == files.format_csv(real_summary)
    assert experiment.summary("interprocess_reliable")[s.MAX].tolist() == [30.0]


def test_folder_with_neither_summaries_nor_raw_is_a_usage_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no summaries") as raised:
        ex.describe_experiment(tmp_path / "empty")
    assert raised.value.exit_code == s.EXIT_USAGE


def test_unknown_latency_definition_and_bad_time_name_the_metadata_file(tmp_path):
    one = {"interprocess_reliable": tiny_summary({16: (10, 20, 30)})}
    write_experiment(tmp_path / "a", one, metadata("a", "2024-01-01T00:00:00Z", latency_definition="one_way"))
    with pytest.raises(InputError, match="one_way") as raised:
        ex.describe_experiment(tmp_path / "a")
    assert str(raised.value.path).endswith("a/metadata.json")
    write_experiment(tmp_path / "b", one, metadata("b", "yesterday"))
    with pytest.raises(InputError, match="ISO 8601"):
        ex.describe_experiment(tmp_path / "b")


# --- the store: where, which order --------------------------------------------------------------
def _store(tmp_path):
    one = {"interprocess_reliable": tiny_summary({16: (10, 20, 30)})}
    root = tmp_path / "store" / s.STORE_EXPERIMENTS_DIR
    # names sort the other way round from creation times
    write_experiment(root / "a_newest", one, metadata("newest", "2024-03-01T00:00:00Z"))
    write_experiment(root / "m_middle", one, metadata("middle", "2024-02-01T00:00:00+01:00"))
    write_experiment(root / "z_oldest", one, metadata("oldest", "2024-01-01T00:00:00Z"))
    # older tooling: no metadata, come first by name
    write_experiment(root / "y_legacy", one, None)
    write_experiment(root / "b_legacy", one, None)
    return tmp_path / "store"


def test_history_order_is_creation_time_then_untimed_folders_first_by_name(tmp_path):
    store = _store(tmp_path)
    ordered = [e.path.name for e in ex.load_store(store)]
    assert ordered == ["b_legacy", "y_legacy", "z_oldest", "m_middle", "a_newest"]


def test_store_root_and_its_experiments_folder_are_both_accepted(tmp_path):
    store = _store(tmp_path)
    from_root = [e.path for e in ex.load_store(store)]
    from_folder = [e.path for e in ex.load_store(store / s.STORE_EXPERIMENTS_DIR)]
    assert from_root == from_folder and len(from_root) == 5


def test_equal_times_are_ordered_by_folder_name(tmp_path):
    one = {"interprocess_reliable": tiny_summary({16: (10, 20, 30)})}
    write_experiment(tmp_path / "q", one, metadata("q", "2024-01-01T00:00:00Z"))
    write_experiment(tmp_path / "p", one, metadata("p", "2024-01-01T00:00:00Z"))
    assert [e.path.name for e in ex.load_store(tmp_path)] == ["p", "q"]


def test_stray_file_in_store_is_a_usage_error_naming_it(tmp_path):
    store = _store(tmp_path)
    stray = store / s.STORE_EXPERIMENTS_DIR / "notes.txt"
    stray.write_text("hello\n")
    (store / s.STORE_EXPERIMENTS_DIR / ".DS_Store").write_text("")  # dot files are ignored
    with pytest.raises(InputError, match="stray file") as raised:
        ex.load_store(store)
    assert raised.value.path == stray


def test_an_experiment_folder_is_not_a_store_and_an_empty_store_is_an_error(tmp_path):
    folder = write_experiment(tmp_path / "run", {"interprocess_reliable": tiny_summary({16: (10, 20, 30)})}, None)
    with pytest.raises(InputError, match="one experiment folder"):
        ex.load_store(folder)
    (tmp_path / "empty_store" / s.STORE_EXPERIMENTS_DIR).mkdir(parents=True)
    with pytest.raises(InputError, match="no experiment folders"):
        ex.load_store(tmp_path / "empty_store")


# --- comparability ------------------------------------------------------------------------------
def _two(tmp_path, first: dict | None, second: dict | None):
    one = {"interprocess_reliable": tiny_summary({16: (10, 20, 30)})}
    return [ex.describe_experiment(write_experiment(tmp_path / name, one, meta))
            for name, meta in (("first", first), ("second", second))]


def test_different_latency_definitions_are_refused_naming_both_folders(tmp_path):
    pair = _two(tmp_path, metadata("x", "2024-01-01T00:00:00Z"),
                metadata("y", "2024-01-02T00:00:00Z", latency_definition=s.HALF_ROUND_TRIP))
    with pytest.raises(InputError, match="latency definitions differ") as raised:
        ex.require_comparable(pair)
    assert str(tmp_path / "first") in str(raised.value) and str(tmp_path / "second") in str(raised.value)


def test_unrecorded_latency_definition_counts_as_round_trip(tmp_path):
    pair = _two(tmp_path, None, metadata("y", "2024-01-02T00:00:00Z", latency_definition=s.HALF_ROUND_TRIP))
    with pytest.raises(InputError, match="round_trip"):
        ex.require_comparable(pair)
    (tmp_path / "again").mkdir()
    pair = _two(tmp_path / "again", None, metadata("y", "2024-01-02T00:00:00Z"))
    notes = ex.require_comparable(pair)
    assert len(notes) == 2 and "taken as round_trip" in notes[0] and "platform-a" in notes[1]


def test_different_platform_ids_are_refused_naming_both_folders(tmp_path):
    pair = _two(tmp_path, metadata("x", "2024-01-01T00:00:00Z"),
                metadata("y", "2024-01-02T00:00:00Z", platform=dict(PLATFORM_A, id="platform-b")))
    with pytest.raises(InputError, match="platform ids differ") as raised:
        ex.require_comparable(pair)
    assert "'platform-a'" in str(raised.value) and "'platform-b'" in str(raised.value)
    assert str(tmp_path / "first") in str(raised.value) and str(tmp_path / "second") in str(raised.value)


def test_summary_table_keeps_each_experiments_position(tmp_path):
    root = tmp_path / "store"
    write_experiment(root / "a", {"interprocess_reliable": tiny_summary({16: (10, 20, 30), 32: (11, 21, 31)})},
                     metadata("a", "2024-01-01T00:00:00Z"))
    write_experiment(root / "b", {"intraprocess_reliable": tiny_summary({16: (1, 2, 3)})},
                     metadata("b", "2024-01-02T00:00:00Z"))
    write_experiment(root / "c", {"interprocess_reliable": tiny_summary({16: (12, 22, 32)})},
                     metadata("c", "2024-01-03T00:00:00Z"))
    experiments = ex.load_store(root)
    table = ex.summary_table(experiments, "interprocess_reliable")
    assert table[ex.ORDER].tolist() == [0, 0, 2]  # b lacks it: position 1 is a gap
    assert table[s.LABEL].tolist() == ["a", "a", "c"]
    assert table[s.MEDIAN].tolist() == [10.0, 11.0, 12.0]
    # the contract's order of sub-experiments, not alphabetical
    assert ex.all_subexperiments(experiments) == ["intraprocess_reliable", "interprocess_reliable"]
