"""metadata.json of a topology experiment as the typed model (topology.metadata.TopologyMetadata, in
perfgate.model's terms): the fields `perfgate topology` writes read back and are written again unchanged,
unknown ones kept; a field of the wrong type is one error naming the file and the field."""
from __future__ import annotations

import json

import pytest

from perfgate import model
from perfgate.errors import InputError
from perfgate.topology.metadata import TopologyMetadata, read_topology_metadata, write_topology_metadata

# as `perfgate topology` wrote it before the typed model (docs/formats.md section 18), plus a newer key
WRITTEN = {
    "kind": "topology", "label": "light-01", "outcome": "ok", "error": None, "topology_file": "topologies/light.json",
    "nodes": 10, "subscriptions": 16, "time_s": 10.0,
    "options": {"ipc": "on", "processes": "one", "transport": "udpv4", "reliability": "reliable", "sampling_ms": 500,
                "history_depth": 10, "late_percentage": 20.0, "late_absolute_us": 5000.0, "too_late_percentage": 100.0,
                "too_late_absolute_us": 50000.0, "stall": None, "publish_delay_ns": 0},
    "fastdds_version": None, "harness": "/cache/perfgate-topology", "started_at": "2026-11-27T06:00:00.000000Z",
    "finished_at": "2026-11-27T06:00:12.000000Z", "load_before": [1.0, 0.5, 0.2], "load_after": [1.1, 0.6, 0.2],
    "ignored_environment": ["FASTDDS_DEFAULT_PROFILES_FILE"],
    "platform": {"id": "abc123", "cores": 2, "cpu_model": "x", "warnings": []},
    "sent": [{"node": "imu_driver", "topic": "imu", "sent": 1000, "rate_hz": 100.0}],
    "publishing_start_ms": 312.5, "removed_shared_memory": [], "a_newer_field": {"kept": True},
}


def test_a_written_topology_metadata_reads_typed_and_writes_back_the_same_fields(tmp_path):
    (tmp_path / "metadata.json").write_text(json.dumps(WRITTEN))
    metadata = read_topology_metadata(tmp_path)
    assert metadata.kind == model.KIND_TOPOLOGY and metadata.nodes == 10 and metadata.options.sampling_ms == 500
    assert metadata.platform.cores == 2 and metadata.publishing_start_ms == 312.5
    assert metadata.sent[0]["rate_hz"] == 100.0 and metadata.options.publish_delay_ns == 0 and metadata.options.extra == {}
    out = tmp_path / "again"
    out.mkdir()
    write_topology_metadata(out, metadata)
    assert json.loads((out / "metadata.json").read_text()) == WRITTEN  # nulls, lists and unknown keys as they were


@pytest.mark.parametrize("field, value, named", [
    ("nodes", "ten", "'nodes' is 'ten'; expected an integer"),
    ("options", {"sampling_ms": 0.5}, "'options.sampling_ms' is 0.5; expected an integer"),
    ("kind", "throughput", "'kind' is 'throughput', not 'topology'"),
    ("sent", ["imu"], "'sent' holds an entry that is not an object"),
])
def test_a_field_of_the_wrong_type_is_one_error_naming_the_file_and_field(tmp_path, field, value, named):
    (tmp_path / "metadata.json").write_text(json.dumps({**WRITTEN, field: value}))
    with pytest.raises(InputError) as raised:
        read_topology_metadata(tmp_path)
    assert named in raised.value.message and raised.value.path == tmp_path / "metadata.json"


def test_the_record_is_the_models_kind_of_record():
    assert issubclass(TopologyMetadata, model.Record)
