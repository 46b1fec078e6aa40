"""metadata.json of a topology experiment, typed: perfgate.model's records (model.Record), with the
fields `perfgate topology` has always written (docs/formats.md section 18), so the file keeps its
shape while every reader gets validated types (InputError naming the file and the field, exit 2).

A topology experiment is not a latency experiment: its `harness` is the executable's path (a string,
where model.Metadata has a record) and its times and loads are named as the benchmark's tools name
them (`started_at`, `load_before`), so it is its own record in the model's terms, not model.Metadata.
Keys the model does not know (a newer perfgate's) are kept in `extra` and written back unchanged.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Mapping

from .. import files
from .. import model as m
from .. import schema as s
from ..errors import InputError


@m.record_class
class TopologyOptions(m.Record):
    """`options`: how the topology was run (every option of `perfgate topology`)."""
    ipc: str | None = None
    processes: str | None = None
    transport: str | None = None
    reliability: str | None = None
    sampling_ms: int | None = None
    history_depth: int | None = None
    late_percentage: float | None = None
    late_absolute_us: float | None = None
    too_late_percentage: float | None = None
    too_late_absolute_us: float | None = None
    stall: tuple | None = None  # tests only: (node, at ms, for ms)
    publish_delay_ns: int | None = None  # tests only: a busy-wait before each publish (the topology A/B's tests)
    _KINDS: ClassVar = {"ipc": m.STR, "processes": m.STR, "transport": m.STR, "reliability": m.STR,
                        "sampling_ms": m.INT, "history_depth": m.INT, "late_percentage": m.NUMBER,
                        "late_absolute_us": m.NUMBER, "too_late_percentage": m.NUMBER,
                        "too_late_absolute_us": m.NUMBER, "stall": m.LIST,
                        "publish_delay_ns": m.INT}
    _ALWAYS: ClassVar = frozenset({"stall"})


@m.record_class
class TopologyMetadata(m.Record):
    """metadata.json of `perfgate topology` (kind "topology")."""
    kind: str | None = None
    label: str | None = None
    outcome: str | None = None
    error: str | None = None  # null when it finished
    topology_file: str | None = None
    nodes: int | None = None
    subscriptions: int | None = None
    time_s: float | None = None
    options: TopologyOptions | None = None
    fastdds_version: str | None = None  # null when the library's version could not be read
    harness: str | None = None  # the perfgate-topology executable
    started_at: str | None = None
    finished_at: str | None = None
    load_before: tuple[float, ...] | None = None
    load_after: tuple[float, ...] | None = None
    ignored_environment: tuple[str, ...] | None = None  # names of FASTDDS_*/FASTRTPS_* variables left out
    platform: m.Platform | None = None
    sent: tuple[Mapping[str, Any], ...] | None = None  # per publisher: node, topic, sent, rate_hz
    publishing_start_ms: float | None = None  # when every process had matched, ms from the run's start
    removed_shared_memory: tuple[str, ...] | None = None  # Fast DDS segments its dead processes left
    _KINDS: ClassVar = {
        "kind": m.STR, "label": m.STR, "outcome": m.STR, "error": m.STR, "topology_file": m.STR, "nodes": m.INT,
        "subscriptions": m.INT, "time_s": m.NUMBER, "options": TopologyOptions, "fastdds_version": m.STR,
        "harness": m.STR, "started_at": m.STR, "finished_at": m.STR, "load_before": m.LIST, "load_after": m.LIST,
        "ignored_environment": m.LIST, "platform": m.Platform, "sent": m.LIST, "publishing_start_ms": m.NUMBER,
        "removed_shared_memory": m.LIST}
    _ALWAYS: ClassVar = frozenset({"error", "fastdds_version"})


def read_topology_metadata(folder: Path) -> TopologyMetadata:
    """metadata.json of a topology experiment folder; InputError when it is missing, malformed, has a
    field of the wrong JSON type, or is not of kind topology."""
    path = Path(folder) / s.METADATA_FILE
    data = files.read_json_object(path, "topology metadata")
    if data is None:
        raise InputError("no metadata.json: not a perfgate topology experiment", path)
    metadata = TopologyMetadata.from_json(data, path)
    if metadata.kind != m.KIND_TOPOLOGY:
        raise InputError(f"'kind' is {metadata.kind!r}, not {m.KIND_TOPOLOGY!r}: not a topology experiment", path)
    if any(not isinstance(row, dict) for row in metadata.sent or ()):
        raise InputError("'sent' holds an entry that is not an object", path)
    return metadata


def write_topology_metadata(folder: Path, metadata: TopologyMetadata) -> None:
    """Atomically, sorted keys, two-space indent (model.write_metadata's form)."""
    files.write_metadata(folder, metadata.to_json())
