"""perfgate.model: metadata.json read and written again is the same file; a bad field is named."""
from __future__ import annotations

import json

import pytest

from perfgate import files, model
from perfgate import schema as s
from perfgate.errors import InputError

# a run's metadata.json as perfgate run writes it (trimmed to one sub-experiment), nulls included
RUN = {
    "label": "nightly", "created_utc": "2026-11-23T01:02:03.456789Z", "finished_utc": None, "interrupted": False,
    "fastdds": {"version": "2.9.1", "commit": None, "source": "system_package", "prefix": "/usr"},
    "harness": {"name": "perfgate-latency", "version": "0.1.0", "warmup": 100, "timeout_s": 80.0},
    "latency_definition": "round_trip", "samples": 10000, "payloads": [16, 1024], "warmup": 100,
    "requested_subexperiments": ["interprocess_best_effort_zero_copy"],
    "subexperiments": {"interprocess_best_effort_zero_copy": {
        "outcome": "ok", "error": None, "transport": "shm", "domain": 7, "port": None, "subscribers": 1,
        "zero_copy": {"data_sharing": True, "loans_used": True}, "measured_samples": {"16": 10000},
        "resources": {"publisher": {"samples": 12, "cpu_peak_percent": 99.5, "cpu_mean_percent": 50.25,
                                    "rss_peak_kb": 20480, "rss_mean_kb": 20000.5}},
        "a_key_of_a_newer_perfgate": [1, 2]}},
    "platform": {"id": "0123456789abcdef", "cores": 2, "warnings": ["turbo/boost is on"], "state": {"smt": "off"}},
    "load_average": {"before": [0.5, 0.4, 0.3], "after": None},
    "cpu_pinning": {"pinned": True, "publisher_cpu": 1, "subscriber_cpu": 0, "requested": "auto"},
    "cpu_latency": {"requested": "system", "held_us": None, "idle_driver": None},
    "environment": {"ignored": [], "set_for_harness": {"FASTDDS_BUILTIN_TRANSPORTS": "DEFAULT"}},
    "run_id": "abc", "perfgate_version": "0.1.0",
}


def test_a_run_s_metadata_reads_typed_and_writes_back_the_same_file(tmp_path):
    files.write_metadata(tmp_path, RUN)
    before = (tmp_path / s.METADATA_FILE).read_text()
    metadata = model.read_metadata(tmp_path)
    assert (metadata.platform_id, metadata.fastdds.version, metadata.commit) == ("0123456789abcdef", "2.9.1", None)
    entry = metadata.outcome_of("interprocess_best_effort_zero_copy")
    assert (entry.status, entry.port, entry.zero_copy.loans_used, entry.resources["publisher"].rss_peak_kb) == (
        s.OUTCOME_OK, None, True, 20480)
    assert metadata.payloads == (16, 1024) and metadata.load_average.after is None
    model.write_metadata(tmp_path, metadata)
    assert (tmp_path / s.METADATA_FILE).read_text() == before
    assert model.Metadata.from_json(metadata.to_json()) == metadata


def test_a_writer_s_record_writes_what_it_names_and_the_class_s_always_fields_as_null():
    entry = model.SubexperimentOutcome.record(outcome=s.OUTCOME_OK, domain=None)
    assert entry.to_json() == {"outcome": "ok", "error": None, "domain": None}
    assert model.SubexperimentOutcome(outcome=s.OUTCOME_OK).to_json() == {"outcome": "ok"}
    assert model.SubexperimentOutcome().status == s.OUTCOME_OK  # older tooling wrote no outcome
    finished = model.Metadata.record(label="x", finished_utc=None, load_average=model.LoadAverage.record(
        before=(1.0, 1.0, 1.0))).finish("2026-11-23T02:00:00Z", [2.0, 2.0, 2.0])
    assert finished.to_json() == {"label": "x", "finished_utc": "2026-11-23T02:00:00Z",
                                  "load_average": {"before": [1.0, 1.0, 1.0], "after": [2.0, 2.0, 2.0]}}


@pytest.mark.parametrize("change, message", [
    ({"platform": {"id": 5}}, "'platform.id' is 5; expected a string"),
    ({"samples": "10000"}, "'samples' is '10000'; expected an integer"),
    ({"subexperiments": {"a": {"outcome": ["ok"]}}}, "'subexperiments.a.outcome' is ['ok']; expected a string"),
    ({"subexperiments": {"a": {"resources": {"publisher": {"rss_peak_kb": "big"}}}}},
     "'subexperiments.a.resources.publisher.rss_peak_kb' is 'big'; expected a number"),
    ({"fastdds": "2.9.1"}, "'fastdds' is '2.9.1'; expected an object"),
])
def test_a_bad_field_is_an_input_error_naming_the_file_and_the_field(tmp_path, change, message):
    (tmp_path / s.METADATA_FILE).write_text(json.dumps({**RUN, **change}))
    with pytest.raises(InputError) as error:
        model.read_metadata(tmp_path)
    assert str(error.value) == f"{tmp_path / s.METADATA_FILE}: {message}"


def test_a_folder_without_metadata_reads_as_none(tmp_path):
    assert model.read_metadata(tmp_path) is None
