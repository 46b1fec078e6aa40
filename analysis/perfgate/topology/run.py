"""`perfgate topology`: a topology run on Fast DDS by the harness's perfgate-topology, in one process
(--ipc on|off) or one process per node, supervised as every harness run is (measure.supervise: ready
lines, process groups, nothing left behind), each process's CPU and memory sampled; the harness's
per-subscription summaries and histograms (a fixed size: nothing per message is kept) and its events
files turned into latency_all.csv, latency_total.csv, events.csv (streamed), resources.csv and
metadata.json (docs/formats.md, "Topology experiments"). Its scratch folder is watched as every
command's (measure.scratch): removed when perfgate dies, and by the next run if the watcher died too."""
from __future__ import annotations

import json
import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import claims, clock, outputs
from .. import schema as s
from ..errors import IncompleteError, InputError
from ..fastdds.harness import FLOOR_EXECUTABLE, LATENCY_EXECUTABLE, HarnessPaths, ensure_harness, fastdds_version
from ..measure import resources
from ..measure.commands import ProcessSpec
from ..measure.domains import lease_domain
from ..measure import scratch as scratch_folders
from ..measure.environment import RUN_ID_ENV, scrub_environment
from ..measure.platform_info import fingerprint, read_readings
from ..measure.shm import ShmWitness, fastdds_shm_files, remove_orphaned_shm
from ..measure.supervise import supervise
from .. import model
from . import events as ev
from . import names as n
from . import tables
from .classify import Rules
from .metadata import TopologyMetadata, TopologyOptions, write_topology_metadata
from .model import Topology, read_topology
from .target import measured_resources, publishing_start_ms

EXECUTABLE = "perfgate-topology"
MAX_TIME_S = 3600.0
DISCOVERY_TIMEOUT_S = 30
FLOAT_FORMAT = "%.3f"  # ns readings in us and ms: three decimals are the clock's resolution
SETTLE_S = 30.0  # beyond --time: start, discovery, draining and writing


@dataclass(frozen=True)
class TopologyPlan:
    topology_file: Path
    topology: Topology
    output: Path
    time_s: float
    rules: Rules = Rules()
    ipc: bool = True
    per_node: bool = False
    transport: str = "udpv4"
    reliability: str = "reliable"
    sampling_ms: int = n.DEFAULT_SAMPLING_MS
    history_depth: int = 10
    label: str | None = None
    stall: tuple[str, int, int] | None = None  # tests only: (node, at ms, for ms), never from the command line
    publish_delay_ns: int = 0  # tests only: every publish busy-waits this long (a known slow-down, topology.ab's tests)
    plots: bool = True  # an A/B's rounds draw none: the A/B's own files say what was decided
    harness: Path | None = None
    extra: dict = field(default_factory=dict)


def spec_text(topology: Topology, rules: Rules = Rules()) -> str:
    """The harness's view of the topology (topology_spec.hpp): node, pub and sub lines, from the model;
    a sub line carries its late and too-late thresholds in us (repr: read back exactly)."""
    lines = []
    index = {(sub.node, sub.publisher.topic): sub.index for sub in topology.subscriptions()}
    for node in topology.nodes:
        lines.append(f"node {node.name}")
        for publisher in node.publishers:
            lines.append(f"pub {publisher.topic} {round(publisher.period_ms * 1000)} {publisher.size_bytes} "
                         f"{topology.subscribers_of(publisher.topic)}")
        for subscriber in node.subscribers:
            publisher = topology.publisher_of(subscriber.topic)
            lines.append(f"sub {index[(node.name, subscriber.topic)]} {subscriber.topic} {publisher.size_bytes} "
                         f"{round(publisher.period_ms * 1000)} {rules.late_us(publisher.period_ms)!r} "
                         f"{rules.too_late_us(publisher.period_ms)!r}")
    return "\n".join(lines) + "\n"


def plan_from_options(*, topology, time, output, ipc, processes, transport, reliability, sampling, late_percentage,
                      late_absolute, too_late_percentage, too_late_absolute, history_depth, label) -> TopologyPlan:
    outputs.require_paths(topology=topology, output=output)
    time_s = n.DEFAULT_TIME_S if time is None else float(time)
    if not 0 < time_s <= MAX_TIME_S or abs(time_s * 1000 - round(time_s * 1000)) > 1e-6:
        raise InputError(f"--time must be whole milliseconds from 0.001 to {MAX_TIME_S:.0f} seconds, got {time_s:g}")
    if not 10 <= sampling <= 60000:
        raise InputError(f"--sampling must be 10 to 60000 ms, got {sampling}")
    if not 1 <= history_depth <= 10000:
        raise InputError(f"--history-depth must be 1 to 10000, got {history_depth}")
    rules = Rules(late_percentage, late_absolute, too_late_percentage, too_late_absolute)
    if rules.problem():
        raise InputError(rules.problem())
    return TopologyPlan(Path(topology), read_topology(topology), Path(output), time_s, rules, ipc == "on",
                        processes == "per-node", transport, reliability, sampling, history_depth, label)


def command_topology(**options) -> int:
    return measure_topology(plan_from_options(**options))


def _process_specs(plan: TopologyPlan, executable: Path, scratch: Path, domain: int) -> list[ProcessSpec]:
    groups = [(node.name, [node.name]) for node in plan.topology.nodes] if plan.per_node \
        else [(n.ALL_NODES_PROCESS, [node.name for node in plan.topology.nodes])]
    specs = []
    for number, (process, nodes) in enumerate(groups):
        argv = [str(executable), "--spec", str(scratch / "spec.txt"), "--nodes", ",".join(nodes),
                "--time-ms", str(round(plan.time_s * 1000)), "--domain", str(domain), "--ipc",
                "on" if plan.ipc else "off", "--transport", plan.transport, "--reliability", plan.reliability,
                "--history-depth", str(plan.history_depth), "--participants", str(len(plan.topology.nodes)),
                "--discovery-timeout-s", str(DISCOVERY_TIMEOUT_S), "--summary", str(scratch / f"summary_{number}.csv"),
                "--histogram", str(scratch / f"histogram_{number}.csv"), "--events-dir", str(scratch),
                "--sent", str(scratch / f"sent_{number}.csv"), "--matched", str(scratch / f"matched_{number}.txt"),
                "--barrier", str(len(groups)),
                "--allocator", str(scratch / f"allocator_{number}.csv"), "--sampling-ms", str(plan.sampling_ms)]
        if plan.stall is not None and plan.stall[0] in nodes:
            argv += ["--stall", ",".join(map(str, plan.stall))]
        if plan.publish_delay_ns:
            argv += ["--publish-delay-ns", str(plan.publish_delay_ns)]
        specs.append(ProcessSpec(process, tuple(argv), measures=number == 0))
    return specs


@claims.claims_output
def measure_topology(plan: TopologyPlan) -> int:
    """Run the plan into plan.output. Exit 0, 3 when the run or a subscription's result is missing."""
    executable = plan.harness or ensure_harness().build_dir / EXECUTABLE
    if not executable.is_file():
        raise IncompleteError(f"the harness build has no {EXECUTABLE}", executable)
    environment, ignored = scrub_environment(os.environ)
    run_id = uuid.uuid4().hex  # marks the harness processes: the watcher kills them if perfgate dies
    environment[RUN_ID_ENV] = run_id
    load_before, started_at = clock.load_average(), clock.utc_now()
    subscriptions = len(plan.topology.subscriptions())
    print(f"perfgate topology: {len(plan.topology.nodes)} nodes, {subscriptions} subscriptions, {plan.time_s:g} s, "
          f"{'one process per node' if plan.per_node else 'one process'}, ipc {'on' if plan.ipc else 'off'}, "
          f"{plan.transport}, {plan.reliability}", flush=True)
    # on disk, not in RAM: the events files grow with the late messages (there are no keys to hide)
    with scratch_folders.scratch_folder("topology", run_id, in_ram=False) as scratch, lease_domain() as domain:
        (scratch / "spec.txt").write_text(spec_text(plan.topology, plan.rules))
        specs = _process_specs(plan, executable, scratch, domain)
        start_ns = time.monotonic_ns()
        shm_before, witness = fastdds_shm_files(), ShmWitness()
        try:
            with resources.collecting(plan.sampling_ms / 1000.0) as collected:
                result = supervise(specs, environment, scratch, plan.time_s + SETTLE_S, witness=witness,
                                   on_ready=lambda: print(f"perfgate topology: {len(specs)} processes ready",
                                                          flush=True))
        finally:
            # a harness process killed (SIGKILL, a crash, a peer's death) unlinks none of its Fast DDS
            # segments: the run removes those of its domain or seen held by its processes that no one holds now
            removed = remove_orphaned_shm(shm_before, witness, [domain])
        if result.outcome != s.OUTCOME_OK:
            _write_metadata(plan, result.outcome, result.error, load_before, started_at, ignored, executable,
                            {"removed_shared_memory": tuple(removed)})
            raise IncompleteError(f"the topology run did not finish: {result.error}")
        summary = _concat(scratch, "summary", len(specs), tables.SUMMARY_COLUMNS)
        histogram = _concat(scratch, "histogram", len(specs), tables.HISTOGRAM_COLUMNS)
        sent = pd.concat([pd.read_csv(scratch / f"sent_{i}.csv") for i in range(len(specs))], ignore_index=True)
        matched = [(spec.role, int((scratch / f"matched_{i}.txt").read_text())) for i, spec in enumerate(specs)]
        allocator = {spec.role: pd.read_csv(scratch / f"allocator_{i}.csv") for i, spec in enumerate(specs)}
        event_files = [scratch / f"events_{node.name}.csv" for node in plan.topology.nodes]
        try:  # streamed from the scratch folder while it exists
            ev.write_events(plan.output / n.EVENTS_CSV, plan.topology, plan.rules, start_ns, matched, event_files)
        except (OSError, ValueError) as error:
            raise IncompleteError(f"the harness's events: {error}") from None
    usage = resources_frame(collected.samples, os.cpu_count() or 1, allocator, start_ns)
    return _write_results(plan, (summary, histogram), sent, matched, start_ns, usage, load_before, started_at,
                          ignored, executable, removed)


def _concat(scratch: Path, name: str, processes: int, columns: tuple[str, ...]) -> pd.DataFrame:
    """<name>_<i>.csv of every process in one frame; a process without subscriptions wrote none."""
    frames = [frame for i in range(processes) if not (frame := pd.read_csv(scratch / f"{name}_{i}.csv")).empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(columns))


def resources_frame(samples: list[resources.Sample], cpus: int, allocator: dict[str, pd.DataFrame],
                    start_ns: int) -> pd.DataFrame:
    """resources.csv: /proc's readings, cpu[%] over all cores (the seed's: 100 % is every core busy), per
    process, each beside that process's allocator reading nearest in time (its own thread, same period)."""
    frame = resources.samples_frame(samples)
    proc = pd.DataFrame({n.RESOURCE_TIME: frame[s.RESOURCE_TIME], n.PROCESS: frame[s.RESOURCE_ROLE],
                         n.RESOURCE_CPU: frame[s.RESOURCE_CPU] / cpus, n.RESOURCE_RSS: frame[s.RESOURCE_RSS],
                         n.RESOURCE_VSZ: frame[s.RESOURCE_VSZ]})
    parts = []
    for process, rows in proc.groupby(n.PROCESS, sort=False):
        readings = allocator.get(process, pd.DataFrame(columns=["time_ns", *n.ALLOCATOR_COLUMNS]))
        readings = readings.assign(**{n.RESOURCE_TIME: (readings["time_ns"].astype("int64") - start_ns) / 1e6})
        readings = readings.drop(columns="time_ns").rename(columns=n.ALLOCATOR_COLUMNS).sort_values(n.RESOURCE_TIME)
        parts.append(pd.merge_asof(rows.sort_values(n.RESOURCE_TIME), readings, on=n.RESOURCE_TIME,
                                   direction="nearest"))
    if not parts:
        return pd.DataFrame(columns=list(n.RESOURCES_COLUMNS))
    return pd.concat(parts, ignore_index=True).sort_values(n.RESOURCE_TIME, kind="stable")[list(n.RESOURCES_COLUMNS)]


def _write_results(plan, results, sent, matched, start_ns, usage, load_before, started_at, ignored,
                   executable, removed_shm: list[str] = ()) -> int:
    """The tables from the harness's (summary, histogram) frames; events.csv is written before."""
    summary, histogram = results
    dense = tables.histograms(histogram)
    latency_all = tables.latency_all(plan.topology, summary, dense, plan.time_s)
    latency_total = tables.latency_total(latency_all, dense)
    events = ev.discovery_frame(matched, start_ns)
    latency_all.to_csv(plan.output / n.LATENCY_ALL_CSV, index=False, float_format=FLOAT_FORMAT)
    latency_total.to_csv(plan.output / n.LATENCY_TOTAL_CSV, index=False, float_format=FLOAT_FORMAT)
    usage.to_csv(plan.output / n.RESOURCES_CSV, index=False, float_format=FLOAT_FORMAT)
    if plan.plots:
        draw_plots(plan, latency_all, usage, publishing_start_ms(events))
    (plan.output / n.TOPOLOGY_COPY).write_text(json.dumps(plan.topology.as_json(), indent=2) + "\n")
    silent = latency_all[latency_all[n.RECEIVED] == 0]
    outcome = s.OUTCOME_OK if silent.empty else s.OUTCOME_INCOMPLETE
    missing = ", ".join(f"{row[n.TOPIC]}->{row[n.NODE]}" for _, row in silent.iterrows())
    sent_rows = [{"node": row["node"], "topic": row["topic"], "sent": int(row["sent"]),
                  "rate_hz": _rate(row)} for _, row in sent.iterrows()]
    _write_metadata(plan, outcome, f"received nothing: {missing}" if missing else None, load_before, started_at,
                    ignored, executable, {"sent": tuple(sent_rows), "publishing_start_ms": publishing_start_ms(events),
                                          "removed_shared_memory": tuple(removed_shm)})
    total = latency_total.iloc[0]
    system = measured_resources(usage, publishing_start_ms(events)) if not usage.empty else \
        {n.RESOURCE_CPU: float("nan"), n.RESOURCE_RSS: float("nan")}
    print(f"perfgate topology: received {int(total[n.RECEIVED])}, late {int(total[n.LATE])} "
          f"({total[n.LATE_PERCENT]:.3f} %), too late {int(total[n.TOO_LATE])} ({total[n.TOO_LATE_PERCENT]:.3f} %), "
          f"lost {int(total[n.LOST])} "
          f"({total[n.LOST_PERCENT]:.3f} %), mean {total[n.MEAN]:.0f} us; CPU {system[n.RESOURCE_CPU]:.1f} % of all "
          f"cores while publishing, RSS {system[n.RESOURCE_RSS]:.0f} KB; load {clock.load_average()[0]}", flush=True)
    if missing:
        print(f"perfgate topology: error: subscriptions that received nothing (a missing result): {missing}",
              file=sys.stderr)
        return s.EXIT_INCOMPLETE
    return s.EXIT_OK


def draw_plots(plan: TopologyPlan, latency_all: pd.DataFrame, usage: pd.DataFrame, publishing_ms: float) -> None:
    from ..plotting import topology_plots  # drawing only here: the measuring never waits for matplotlib
    plots = plan.output / s.PLOTS_DIR
    plots.mkdir(exist_ok=True)
    title = f"{plan.topology_file.name}: {plan.time_s:g} s"
    late_us = [plan.rules.late_us(1000.0 / frequency) for frequency in latency_all[n.FREQUENCY]]
    topology_plots.draw_latency(latency_all, late_us, f"{title}, latency per subscription", plots / n.LATENCY_PLOT)
    if not usage.empty:
        topology_plots.draw_resources(usage, f"{title}, CPU and memory", plots / n.RESOURCES_PLOT,
                                      publishing_ms=publishing_ms)


def _rate(row) -> float | None:
    """Messages per second the publisher kept: (sent - 1) intervals over first to last."""
    span_s = (row["last_ns"] - row["first_ns"]) / 1e9
    return round((row["sent"] - 1) / span_s, 4) if row["sent"] > 1 and span_s > 0 else None


def _write_metadata(plan, outcome, error, load_before, started_at, ignored, executable, extra: dict) -> None:
    """metadata.json as the typed TopologyMetadata (topology.metadata); `extra`: more of its fields."""
    # the Fast DDS of the executable that ran (an A/B arm's build, not this machine's own harness), read
    # from the latency harness built beside it against the same Fast DDS
    folder = Path(executable).parent
    try:
        version = fastdds_version(HarnessPaths(folder / LATENCY_EXECUTABLE, folder / FLOOR_EXECUTABLE, folder))
    except IncompleteError:  # a version we cannot read is recorded as unknown: the run's own error matters
        version = None
    rules = plan.rules
    options = TopologyOptions.record(
        ipc="on" if plan.ipc else "off", processes="per-node" if plan.per_node else "one", transport=plan.transport,
        reliability=plan.reliability, sampling_ms=plan.sampling_ms, history_depth=plan.history_depth,
        late_percentage=rules.late_percentage, late_absolute_us=rules.late_absolute_us,
        too_late_percentage=rules.too_late_percentage, too_late_absolute_us=rules.too_late_absolute_us,
        stall=tuple(plan.stall) if plan.stall else None, publish_delay_ns=plan.publish_delay_ns)
    metadata = TopologyMetadata.record(
        kind=model.KIND_TOPOLOGY, label=plan.label or plan.output.name, outcome=outcome, error=error,
        topology_file=str(plan.topology_file), nodes=len(plan.topology.nodes),
        subscriptions=len(plan.topology.subscriptions()), time_s=plan.time_s, options=options,
        fastdds_version=version, harness=str(executable), started_at=started_at, finished_at=clock.utc_now(),
        load_before=tuple(load_before), load_after=tuple(clock.load_average()), ignored_environment=tuple(ignored),
        platform=model.Platform.from_json(fingerprint(read_readings())), **extra)
    write_topology_metadata(plan.output, metadata)
