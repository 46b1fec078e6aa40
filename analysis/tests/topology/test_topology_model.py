"""The topology file parsed into its model: the project's own topologies, the benchmark's fields
(unknown ones ignored), and one line naming the node and the field for each kind of bad input."""
from __future__ import annotations

import json

import pytest

from conftest import REPO_ROOT, perfgate_in_process
from perfgate.errors import InputError
from perfgate.topology.model import MAX_FILE_BYTES, read_topology

TOPOLOGIES = REPO_ROOT / "topologies"


def test_the_light_topology_has_its_nodes_sizes_and_rates():
    topology = read_topology(TOPOLOGIES / "light.json")
    assert len(topology.nodes) == 10
    subscriptions = topology.subscriptions()
    assert len(subscriptions) == sum(len(node.subscribers) for node in topology.nodes) == 16
    sizes = {s.publisher.topic: s.publisher.size_bytes for s in subscriptions}
    assert sizes["imu"] == 36 and sizes["clock_tick"] == 8 and sizes["map_tiles"] == 8000 and sizes["health"] == 100
    assert topology.publisher_of("path").frequency_hz == 10.0
    assert topology.subscribers_of("clock_tick") == 3


def test_the_heavy_topology_has_a_250kb_topic_at_40_hz_among_20_nodes():
    topology = read_topology(TOPOLOGIES / "heavy.json")
    assert len(topology.nodes) == 20
    image = topology.publisher_of("image")
    assert (image.size_bytes, image.frequency_hz) == (250000, 40.0)
    assert topology.publisher_of("cmd").frequency_hz == 100.0


def test_the_benchmark_format_with_unknown_fields_is_read(tmp_path):
    # the benchmark's own fields (msg_passing_type) and any other unknown ones are ignored
    document = {"version": 3, "nodes": [
        {"node_name": "a", "extra": {"x": 1},
         "publishers": [{"topic_name": "t", "msg_type": "vector", "msg_size": 10000, "period_ms": 100,
                         "msg_passing_type": "shared_ptr"}]},
        {"node_name": "b", "subscribers": [{"topic_name": "t", "msg_type": "vector", "qos": "anything"}]}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    topology = read_topology(path)
    assert topology.subscriptions()[0].publisher.size_bytes == 10000
    assert topology.as_json()["nodes"][0]["publishers"][0] == {"topic_name": "t", "msg_type": "vector",
                                                                "period_ms": 100.0, "msg_size": 10000}


GOOD_PUBLISHER = {"topic_name": "t", "msg_type": "int64", "period_ms": 10}


def _file(tmp_path, publisher=None, subscriber=None, extra_nodes=()):
    nodes = [{"node_name": "source", "publishers": [publisher or GOOD_PUBLISHER]},
             {"node_name": "sink", "subscribers": [subscriber or {"topic_name": "t", "msg_type": "int64"}]},
             *extra_nodes]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"nodes": nodes}))
    return path


@pytest.mark.parametrize("publisher, subscriber, expected", [
    (GOOD_PUBLISHER | {"period_ms": 0}, None, "node source, publisher t: period_ms must be a number"),
    (GOOD_PUBLISHER | {"period_ms": "10"}, None, "node source, publisher t: period_ms"),
    (GOOD_PUBLISHER | {"period_ms": True}, None, "node source, publisher t: period_ms"),
    (GOOD_PUBLISHER | {"msg_type": "quaternion"}, {"topic_name": "t", "msg_type": "quaternion"},
     "node source, publisher t: msg_type 'quaternion' is not one of"),
    (GOOD_PUBLISHER | {"msg_type": "vector"}, {"topic_name": "t", "msg_type": "vector"},
     "node source, publisher t: msg_size must be a whole number"),
    (GOOD_PUBLISHER | {"msg_type": "vector", "msg_size": -1}, {"topic_name": "t", "msg_type": "vector"},
     "msg_size must be"),
    (GOOD_PUBLISHER | {"topic_name": "t;rm -rf"}, None, "node source, publisher 1: topic_name must be a letter"),
    (None, {"topic_name": "u", "msg_type": "int64"}, "node sink, subscriber u: topic_name is published by no node"),
    (None, {"topic_name": "t", "msg_type": "4int32"}, "node sink, subscriber t: msg_type '4int32' is not the"),
])
def test_a_bad_field_is_one_line_naming_the_node_and_field(tmp_path, publisher, subscriber, expected):
    path = _file(tmp_path, publisher, subscriber)
    with pytest.raises(InputError) as raised:
        read_topology(path)
    assert str(raised.value).startswith(f"{path}: ") and expected in str(raised.value)


def test_structural_problems_are_named(tmp_path):
    cases = {
        "[]": "non-empty list `nodes`",
        '{"nodes": [{"node_name": "a\\nb"}]}': "node 1: node_name must be",
        '{"nodes": [{"node_name": "a", "publishers": {}}]}': "node a: publishers must be a list of objects",
        '{"nodes": [': "not JSON",
        "[" * 100000: "nested too deeply",
    }
    for text, expected in cases.items():
        path = tmp_path / "t.json"
        path.write_text(text)
        with pytest.raises(InputError) as raised:
            read_topology(path)
        assert expected in str(raised.value) and "\n" not in str(raised.value), text[:40]
    twice = _file(tmp_path, extra_nodes=[{"node_name": "source"}])
    with pytest.raises(InputError, match="node source: node_name names a second node"):
        read_topology(twice)
    path = tmp_path / "big.json"
    path.write_text(" " * (MAX_FILE_BYTES + 1))
    with pytest.raises(InputError, match="over"):
        read_topology(path)


def test_a_bad_topology_exits_2_with_one_line_and_writes_nothing(tmp_path):
    path = _file(tmp_path, GOOD_PUBLISHER | {"period_ms": -5})
    output = tmp_path / "out"
    result = perfgate_in_process("topology", "--topology", str(path), "--time", "1", "--output", str(output))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "node source, publisher t: period_ms" in result.stderr
    assert "Traceback" not in result.stderr and not output.exists()
