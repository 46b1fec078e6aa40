"""The one typed model of metadata.json (docs/formats.md section 8, docs/run.md "metadata.json").

Every command that writes an experiment folder builds a `Metadata` and writes its `to_json()`; every
command that reads one gets a `Metadata` from `read_metadata`, which validates the JSON types of the
fields it knows and names the file and the field of the first bad one (InputError, exit 2).

The JSON form is the one perfgate always wrote, kept exactly:
- a field is written when it holds a value; a field that is None is left out unless it is in `nulls`:
  what a file read held as null, or what a writer's `record(...)` was given as None or did not give
  of the class's `_ALWAYS` (a sub-experiment's `error` is null when it finished). A file read and
  written again is the same file;
- keys the model does not know are kept in `extra` and written back as they were: metadata.json of
  older or newer perfgates reads, and nothing is lost.
Lists are held as tuples and mappings as dicts; the dataclasses are frozen: a writer that records a run as it
goes makes a new value with `dataclasses.replace` (or `with_outcome`) and writes it again."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping

from . import files
from . import schema as s
from .errors import InputError

KIND_THROUGHPUT = "throughput"  # Metadata.kind of a throughput experiment (docs/formats.md section 15)
KIND_AB = "ab"  # of an A/B folder (section 10); a latency experiment has no kind
KIND_TOPOLOGY = "topology"  # of a topology experiment (section 18): topology.metadata.TopologyMetadata

STR, INT, NUMBER, BOOL, OBJECT, LIST, ANY = "a string", "an integer", "a number", "true or false", "an object", "a list", "any"
_IS = {
    STR: lambda v: isinstance(v, str),
    INT: lambda v: isinstance(v, int) and not isinstance(v, bool),
    NUMBER: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    BOOL: lambda v: isinstance(v, bool),
    OBJECT: lambda v: isinstance(v, dict),
    LIST: lambda v: isinstance(v, list),
    ANY: lambda v: True,
}


def as_json(value: Any) -> Any:
    """The JSON form of a field's value (a record, a mapping of records, a tuple, ...)."""
    return _plain(value)


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    return value


def _bad(keys: tuple[str, ...], value: Any, expected: str, path: Path | None) -> InputError:
    return InputError(f"{'.'.join(keys)!r} is {value!r}; expected {expected}", path)


def _read(kind: Any, value: Any, keys: tuple[str, ...], path: Path | None) -> Any:
    """One field's value from JSON, validated; `kind`: a JSON kind, a Record class, or (kind,) for name -> kind."""
    if isinstance(kind, tuple):
        if not isinstance(value, dict):
            raise _bad(keys, value, OBJECT, path)
        return {str(k): _read(kind[0], v, keys + (str(k),), path) for k, v in value.items()}
    if isinstance(kind, type) and issubclass(kind, Record):
        return kind.from_json(value, path, keys)
    if not _IS[kind](value):
        raise _bad(keys, value, kind, path)
    return tuple(value) if kind == LIST else value


class Record:
    """A part of metadata.json: the dataclass fields named as their JSON keys, `extra` and `nulls`."""

    _KINDS: ClassVar[dict[str, Any]] = {}  # field -> JSON kind (see _read)
    _ALWAYS: ClassVar[frozenset[str]] = frozenset()  # fields `record` writes as null when not given

    @classmethod
    def record(cls, **values):
        """A new value as a writer records it: the fields it gives as None, and those of `_ALWAYS` it
        does not give, are written as null."""
        given = {k for k, v in values.items() if v is not None}
        return cls(**values, nulls=frozenset((set(values) | cls._ALWAYS) - given))

    def to_json(self) -> dict:
        data = {k: _plain(v) for k, v in self.extra.items()}
        for name in self._KINDS:
            value = getattr(self, name)
            if value is not None or name in self.nulls:
                data[name] = _plain(value)
        return data

    @classmethod
    def from_json(cls, data: Any, path: Path | None = None, keys: tuple[str, ...] = ()):
        """The value of a JSON object; InputError naming `path` and the dotted field when a field
        the model knows has the wrong JSON type."""
        if not isinstance(data, dict):
            raise _bad(keys, data, OBJECT, path)
        values, nulls = {}, set()
        for name, kind in cls._KINDS.items():
            if name in data:
                if data[name] is None:
                    nulls.add(name)
                else:
                    values[name] = _read(kind, data[name], keys + (name,), path)
        extra = {k: v for k, v in data.items() if k not in cls._KINDS}
        return cls(**values, extra=extra, nulls=frozenset(nulls))


def _record(cls):
    """A frozen dataclass with `extra` and `nulls` last."""
    cls.__annotations__ = {**cls.__annotations__, "extra": "Mapping[str, Any]", "nulls": "frozenset[str]"}
    cls.extra = field(default_factory=dict, compare=True)
    cls.nulls = field(default_factory=frozenset, compare=False)
    made = dataclass(frozen=True)(cls)
    fields = {f.name for f in dataclasses.fields(made)} - {"extra", "nulls"}
    if fields != set(cls._KINDS):  # the JSON kinds name every field, and nothing else
        raise TypeError(f"{cls.__name__}._KINDS and its fields differ: {sorted(fields ^ set(cls._KINDS))}")
    return made


record_class = _record  # for the typed metadata of other rooms, in this model's terms (topology.metadata)


# --- the Fast DDS measured ----------------------------------------------------------------------
@_record
class FastDDS(Record):
    """`fastdds`: what the harness was built against. Colcon builds (`perfgate build`) add where the
    source came from and `build`, the build record's part (docs/build.md)."""
    version: str | None = None
    commit: str | None = None  # null for the system package
    source: str | None = None  # s.FASTDDS_SOURCE_SYSTEM / s.FASTDDS_SOURCE_COLCON
    prefix: str | None = None
    package: str | None = None
    repository: str | None = None
    source_path: str | None = None
    uncommitted_changes: Any = None
    build: Mapping[str, Any] | None = None  # workspace, finished_utc, duration_s, cmake_args, ccache, dependencies, kept_from
    _KINDS: ClassVar = {"version": STR, "commit": STR, "source": STR, "prefix": STR, "package": STR,
                        "repository": STR, "source_path": STR, "uncommitted_changes": BOOL, "build": OBJECT}
    _ALWAYS: ClassVar = frozenset({"version", "commit", "source", "prefix"})


@_record
class Platform(Record):
    """`platform`: the machine's fingerprint (perfgate.measure.platform_info) and its state's warnings."""
    id: str | None = None
    machine: str | None = None
    cpu_model: str | None = None
    cores: int | None = None
    logical_cpus: int | None = None
    memory_gib: int | None = None
    memory_bytes: int | None = None
    kernel: str | None = None
    hostname: str | None = None
    governor: str | None = None
    state: Mapping[str, Any] | None = None
    warnings: tuple[str, ...] | None = None
    _KINDS: ClassVar = {"id": STR, "machine": STR, "cpu_model": STR, "cores": INT, "logical_cpus": INT,
                        "memory_gib": INT, "memory_bytes": INT, "kernel": STR, "hostname": STR, "governor": STR,
                        "state": OBJECT, "warnings": LIST}


@_record
class Harness(Record):
    """`harness`: the program that measured (perfgate's own harness, or Fast DDS' LatencyTest)."""
    name: str | None = None
    version: str | None = None
    engine: str | None = None  # s.ENGINE_UPSTREAM; absent for perfgate's harness
    floor: str | None = None
    path: str | None = None
    warmup: int | None = None
    timeout_s: float | None = None
    discovery_timeout_s: float | None = None
    sample_timeout_ms: int | None = None
    _KINDS: ClassVar = {"name": STR, "version": STR, "engine": STR, "floor": STR, "path": STR, "warmup": INT,
                        "timeout_s": NUMBER, "discovery_timeout_s": NUMBER, "sample_timeout_ms": NUMBER}


@_record
class LoadAverage(Record):
    before: tuple[float, ...] | None = None
    after: tuple[float, ...] | None = None  # null until the run ends
    _KINDS: ClassVar = {"before": LIST, "after": LIST}
    _ALWAYS: ClassVar = frozenset({"before", "after"})


@_record
class CpuPinning(Record):
    pinned: bool | None = None
    publisher_cpu: int | None = None
    subscriber_cpu: int | None = None
    requested: str | None = None
    _KINDS: ClassVar = {"pinned": BOOL, "publisher_cpu": INT, "subscriber_cpu": INT, "requested": STR}
    _ALWAYS: ClassVar = frozenset(_KINDS)


@_record
class CpuLatency(Record):
    """`cpu_latency` (perfgate.measure.cpu_latency): the idle-CPU wake-up latency asked for and held."""
    requested: str | None = None
    held_us: int | None = None
    idle_driver: str | None = None
    problem: str | None = None
    _KINDS: ClassVar = {"requested": STR, "held_us": INT, "idle_driver": STR, "problem": STR}
    _ALWAYS: ClassVar = frozenset({"requested", "held_us", "idle_driver"})

    def mode(self) -> str:
        """Awake only when the request was held; an unheld request or an unknown value ran under the system's."""
        return IDLE_AWAKE if self.requested == IDLE_AWAKE and self.held_us is not None else IDLE_SYSTEM


IDLE_SYSTEM, IDLE_AWAKE = "system", "awake"  # CpuLatency.requested: the system's idle policy; 0 us held


@_record
class Environment(Record):
    ignored: tuple[str, ...] | None = None  # names of Fast DDS variables left out, never their values
    set_for_harness: Mapping[str, str] | None = None
    _KINDS: ClassVar = {"ignored": ANY, "set_for_harness": OBJECT}  # A/B arms of before 2026-11 wrote {}
    _ALWAYS: ClassVar = frozenset(_KINDS)


@_record
class ThroughputRecord(Record):
    """`throughput` of a throughput run (docs/formats.md section 15)."""
    demands: tuple[int, ...] | None = None
    recovery_times_ms: tuple[int, ...] | None = None
    time_s: float | None = None
    names: Mapping[str, str] | None = None  # latency sub-experiment -> throughput name
    _KINDS: ClassVar = {"demands": LIST, "recovery_times_ms": LIST, "time_s": NUMBER, "names": OBJECT}


@_record
class BuildFailure(Record):
    """`build_failed`: the metadata of a gate whose Fast DDS build failed (nothing measured)."""
    error: str | None = None
    failed_package: str | None = None
    log: str | None = None
    _KINDS: ClassVar = {"error": STR, "failed_package": STR, "log": STR}
    _ALWAYS: ClassVar = frozenset(_KINDS)


# --- one sub-experiment's outcome ----------------------------------------------------------------
@_record
class ZeroCopy(Record):
    data_sharing: bool | None = None
    loans_used: bool | None = None  # the harness's report: every sample it wrote was loaned
    _KINDS: ClassVar = {"data_sharing": BOOL, "loans_used": BOOL}
    _ALWAYS: ClassVar = frozenset(_KINDS)


@_record
class RoleResources(Record):
    """Peak and mean of one process role's resources over a sub-experiment (docs/formats.md section 16)."""
    samples: int | None = None
    cpu_peak_percent: float | None = None
    cpu_mean_percent: float | None = None
    rss_peak_kb: int | None = None
    rss_mean_kb: float | None = None
    _KINDS: ClassVar = {"samples": INT, "cpu_peak_percent": NUMBER, "cpu_mean_percent": NUMBER,
                        "rss_peak_kb": NUMBER, "rss_mean_kb": NUMBER}


@_record
class SubexperimentOutcome(Record):
    """`subexperiments.<sub>`: how one sub-experiment ended and what it measured. Perfgate's harness
    records transport ... earlier_errors; the upstream engine records test ... latency_test_processes."""
    outcome: str | None = None  # ok, incomplete or failed_to_start; absent (older tooling) counts as ok
    error: str | None = None  # null when it finished
    transport: str | None = None
    reliability: str | None = None
    security: bool | None = None
    floor: bool | None = None
    subscribers: int | None = None  # N of a one-to-many sub-experiment, else 1
    zero_copy: ZeroCopy | None = None
    domain: int | None = None
    port: int | None = None
    started_utc: str | None = None
    duration_s: float | None = None
    measured_samples: Mapping[str, int] | None = None  # per payload (a string, as JSON keys are)
    kept_payloads: tuple[int, ...] | None = None
    lost_samples: Mapping[str, int] | None = None
    median_us: Mapping[str, float] | None = None  # of the first payload
    exit_codes: Mapping[str, int | None] | None = None  # per role
    removed_shared_memory: tuple[str, ...] | None = None
    attempts: int | None = None
    earlier_errors: tuple[str, ...] | None = None
    resources: Mapping[str, RoleResources] | None = None  # per role
    test: str | None = None  # the upstream engine's
    csv: str | None = None
    clock_overhead_subtracted_us: float | None = None
    latency_test_processes: int | None = None
    _KINDS: ClassVar = {
        "outcome": STR, "error": STR, "transport": STR, "reliability": STR, "security": BOOL, "floor": BOOL,
        "subscribers": INT, "zero_copy": ZeroCopy, "domain": INT, "port": INT, "started_utc": STR,
        "duration_s": NUMBER, "measured_samples": OBJECT, "kept_payloads": LIST, "lost_samples": OBJECT,
        "median_us": OBJECT, "exit_codes": OBJECT, "removed_shared_memory": LIST, "attempts": INT,
        "earlier_errors": LIST, "resources": (RoleResources,), "test": STR, "csv": STR,
        "clock_overhead_subtracted_us": NUMBER, "latency_test_processes": INT}
    _ALWAYS: ClassVar = frozenset({"outcome", "error"})

    @property
    def status(self) -> str:
        """The outcome, ok when not recorded."""
        return self.outcome or s.OUTCOME_OK


# --- an A/B folder's arms (docs/formats.md section 10) ------------------------------------------
@_record
class AbArm(Record):
    spec: str | None = None
    fastdds: FastDDS | None = None
    harness: str | None = None
    injected_echo_delay_ns: Mapping[str, int] | None = None
    _KINDS: ClassVar = {"spec": STR, "fastdds": FastDDS, "harness": STR, "injected_echo_delay_ns": OBJECT}


# --- the experiment -------------------------------------------------------------------------------
@_record
class Metadata(Record):
    """metadata.json of an experiment folder (`perfgate run`, `throughput`, the upstream engine, a
    failed build's gate) or of an A/B folder (`kind` "ab": its arms and rounds)."""
    label: str | None = None  # else the folder's name
    created_utc: str | None = None  # ISO 8601 with Z; history orders by it
    finished_utc: str | None = None  # null while measuring
    kind: str | None = None  # "throughput", "ab"; absent for a latency experiment
    perfgate_version: str | None = None
    run_id: str | None = None  # in the environment of every harness process it started
    interrupted: bool | None = None
    fastdds: FastDDS | None = None
    harness: Harness | None = None
    latency_definition: str | None = None  # s.LATENCY_DEFINITIONS; absent counts as round trip
    samples: int | None = None
    payloads: tuple[int, ...] | None = None
    warmup: int | None = None
    requested_subexperiments: tuple[str, ...] | None = None
    subexperiments: Mapping[str, SubexperimentOutcome] | None = None
    platform: Platform | None = None
    load_average: LoadAverage | None = None
    cpu_pinning: CpuPinning | None = None
    cpu_latency: CpuLatency | None = None
    environment: Environment | None = None
    resource_sampling: Mapping[str, Any] | None = None  # interval_s, source (perfgate.measure.resources)
    throughput: ThroughputRecord | None = None
    build_failed: BuildFailure | None = None
    injected_echo_delay_ns: Mapping[str, int] | None = None  # an A/B arm's experiment
    arms: Mapping[str, AbArm] | None = None  # an A/B folder's
    rounds: int | None = None
    order: str | None = None
    turn_samples: int | None = None
    layouts: int | None = None  # an A/B's rounds rotating through this many layouts of each arm
    failures: tuple[str, ...] | None = None
    retried: tuple[str, ...] | None = None  # an A/B's failed attempts that were measured again (ab.attempts)
    _KINDS: ClassVar = {
        "label": STR, "created_utc": STR, "finished_utc": STR, "kind": STR, "perfgate_version": STR,
        "run_id": STR, "interrupted": BOOL, "fastdds": FastDDS, "harness": Harness, "latency_definition": STR,
        "samples": INT, "payloads": LIST, "warmup": INT, "requested_subexperiments": LIST, "layouts": INT,
        "failures": LIST, "retried": LIST, "subexperiments": (SubexperimentOutcome,), "platform": Platform,
        "load_average": LoadAverage, "cpu_pinning": CpuPinning, "cpu_latency": CpuLatency, "environment": Environment,
        "resource_sampling": OBJECT, "throughput": ThroughputRecord, "build_failed": BuildFailure,
        "injected_echo_delay_ns": OBJECT, "arms": (AbArm,), "rounds": INT, "order": STR, "turn_samples": INT}

    @property
    def platform_id(self) -> str | None:
        return self.platform.id if self.platform is not None else None

    @property
    def commit(self) -> str | None:
        return self.fastdds.commit if self.fastdds is not None else None

    def outcome_of(self, sub: str) -> SubexperimentOutcome | None:
        """The recorded outcome of a sub-experiment; None when metadata.json does not name it."""
        return (self.subexperiments or {}).get(sub)

    def with_outcome(self, sub: str, outcome: SubexperimentOutcome) -> Metadata:
        return dataclasses.replace(self, subexperiments={**(self.subexperiments or {}), sub: outcome})

    def finish(self, finished_utc: str, load_after: list[float] | tuple[float, ...], **changes) -> Metadata:
        """The metadata of a run that ended (however it ended): its end time and load average after."""
        load = dataclasses.replace(self.load_average or LoadAverage.record(before=None), after=tuple(load_after))
        return dataclasses.replace(self, finished_utc=finished_utc, load_average=load, **changes)


def read_metadata(folder: Path) -> Metadata | None:
    """metadata.json of an experiment (or A/B) folder, or None when the folder has none (older
    tooling); InputError naming the file and the field when it is malformed."""
    path = Path(folder) / s.METADATA_FILE
    data = files.read_json_object(path, "metadata")
    return None if data is None else Metadata.from_json(data, path)


def write_metadata(folder: Path, metadata: Metadata) -> None:
    """Atomically, sorted keys, two-space indent (perfgate.files.write_metadata)."""
    files.write_metadata(folder, metadata.to_json())
