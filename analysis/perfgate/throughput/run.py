"""throughput.run: the `perfgate throughput` command: Fast DDS' throughput experiment (bursts of samples
at a pace, counted by the subscriber) for the latency experiment's transports, reliabilities and
security, written as throughput_<sub>.csv per sub-experiment (docs/formats.md section 15).

The measuring machinery is the latency experiment's (perfgate.measure: leased domains, pinned
processes, DDS Security files, supervision); only the harness's mode and the table differ.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from .. import claims, outputs
from .. import schema as s
from ..errors import InputError
from ..fastdds.record import fastdds_metadata, harness_paths, read_record
from ..measure.options import RunOptions, ThroughputSettings, resolve_options
from .. import model
from ..model import KIND_THROUGHPUT, Metadata, write_metadata
from ..latency.run import initial_metadata, prepare_measurement, run_all
from .files import MAX_DEMAND, MAX_RECOVERY_MS, read_throughput

MAX_TIME_S = 600.0
LOST_RELIABLE = "reliable sub-experiment lost samples"


def plan_settings(demands, recovery_times_ms, time_s) -> ThroughputSettings:
    """The tests to run; InputError (exit 2) for what the harness could not do."""
    demands = tuple(int(d) for d in (demands or s.DEFAULT_DEMANDS))
    recovery = tuple(int(r) for r in (recovery_times_ms if recovery_times_ms is not None else s.DEFAULT_RECOVERY_TIMES_MS))
    time_s = s.DEFAULT_THROUGHPUT_TIME_S if time_s is None else float(time_s)
    if not recovery:
        raise InputError("--recovery-times lists no recovery time")
    for what, values, low, high in (("--demands", demands, 1, MAX_DEMAND), ("--recovery-times", recovery, 0, MAX_RECOVERY_MS)):
        bad = [v for v in values if not low <= v <= high]
        if bad:
            raise InputError(f"{what}: {bad[0]} is outside {low} to {high}")
        if len(set(values)) != len(values):
            raise InputError(f"{what} names {sorted(v for v in values if values.count(v) > 1)[0]} twice")
    if not 0 < time_s <= MAX_TIME_S:
        raise InputError(f"--time must be more than 0 and at most {MAX_TIME_S:.0f} seconds, got {time_s:g}")
    if round(time_s * 1000) < 1:
        raise InputError(f"--time must be at least a millisecond, got {time_s:g}")
    if abs(time_s * 1000 - round(time_s * 1000)) > 1e-6:  # the harness times in ms: metadata would not say what ran
        raise InputError(f"--time is whole milliseconds (e.g. 0.25), got {time_s:g}")
    return ThroughputSettings(demands, recovery, time_s)


def refuse_without_throughput(names: list[str]) -> None:
    """InputError (exit 2) for a sub-experiment the throughput experiment does not have."""
    floors = [n for n in names if n in s.KNOWN_SUBEXPERIMENTS and s.KNOWN_SUBEXPERIMENTS[n].is_floor]
    if floors:
        raise InputError(f"{floors[0]} measures plain sockets, not Fast DDS: it has no throughput experiment")
    copying = [n for n in names if n in s.KNOWN_SUBEXPERIMENTS and s.KNOWN_SUBEXPERIMENTS[n].zero_copy]
    if copying:  # the harness loans samples in the latency experiment only
        raise InputError(f"{copying[0]} is a zero-copy latency sub-experiment; the throughput experiment has none")
    many = [n for n in names if n in s.KNOWN_SUBEXPERIMENTS and s.KNOWN_SUBEXPERIMENTS[n].subscribers > 1]
    if many:  # received and lost are defined for one subscriber (formats.md section 15)
        raise InputError(f"{many[0]} has {s.KNOWN_SUBEXPERIMENTS[many[0]].subscribers} subscribers; the throughput "
                         "experiment takes one")


def reliable_losses(output: Path, subexperiments) -> list[str]:
    """'<sub>: N lost at P B x D' for every reliable sub-experiment that lost samples."""
    found = []
    for sub in subexperiments:
        path = output / s.throughput_csv_name(sub.name)
        if sub.reliability != "reliable" or not path.is_file():
            continue
        table = read_throughput(path)
        lossy = table[table[s.LOST] > 0]
        found += [f"{sub.name}: {int(row[s.LOST])} of {int(row[s.SENT])} lost at {int(row[s.PAYLOAD])} B x "
                  f"{int(row[s.DEMAND])}" for _, row in lossy.iterrows()]
    return found


def command_throughput(*, output, subexperiments=None, payloads=None, demands=None, recovery_times=None, time=None,
                       quick=False, label=None, pin_cpus=None, workspace=None, fastdds_prefix=None,
                       cpu_latency_request=None) -> int:
    outputs.require_paths(output=output, workspace=workspace, fastdds_prefix=fastdds_prefix)
    names = list(subexperiments) if subexperiments else list(s.DEFAULT_SUBEXPERIMENT_NAMES)
    refuse_without_throughput(names)
    settings = plan_settings(demands, recovery_times, time)
    if quick and payloads is None:
        payloads = list(s.QUICK_THROUGHPUT_PAYLOADS)
    build_record = None
    if workspace is not None:
        if fastdds_prefix is not None:
            raise InputError("--workspace names the Fast DDS prefix: drop --fastdds-prefix")
        build_record = read_record(workspace)
        harness, fastdds_prefix = harness_paths(build_record, Path(workspace))
    else:
        harness = None
    options = throughput_options(output=Path(output), names=names, settings=settings, payloads=payloads, label=label,
                                 harness=harness, fastdds_prefix=fastdds_prefix, pin_cpus=pin_cpus,
                                 cpu_latency_request=cpu_latency_request)
    return measure_throughput(options, build_record)


def throughput_options(*, output: Path, names: list[str], settings: ThroughputSettings, payloads: list[int] | None,
                       label: str | None, harness: Path | None, fastdds_prefix: Path | None, pin_cpus: str | None,
                       cpu_latency_request: str | None) -> RunOptions:
    """The run options of a throughput experiment, validated (InputError)."""
    # samples and warm-up are the latency experiment's; a throughput test is timed instead
    options = resolve_options(output=output, samples=2, payloads=payloads, subexperiments=names, label=label,
                              warmup=0, harness=harness, fastdds_prefix=fastdds_prefix, pin_cpus=pin_cpus,
                              timeout=None, cpu_latency_request=cpu_latency_request, command="throughput")
    return replace(options, throughput=settings, timeout_s=settings.timeout_s(len(options.payloads)))


@claims.claims_output  # two commands started at once into one --output: one measures, one is exit 2
def measure_throughput(options: RunOptions, build_record: dict | None = None) -> int:
    """The throughput experiment of throughput_options; build_record: the `perfgate build` workspace's
    record when its Fast DDS is measured. Exit 0, 1 when a reliable test lost samples, 3 when a
    sub-experiment failed."""
    settings = options.throughput
    environment, ignored, run_id, paths, version, platform = prepare_measurement(options)
    tests = len(options.payloads) * len(settings.demands) * len(settings.recovery_times_ms)
    print(f"perfgate throughput: {len(options.subexperiments)} sub-experiment(s) x {tests} test(s) of "
          f"{settings.time_s:g} s (payloads {','.join(map(str, options.payloads))} B; demands "
          f"{','.join(map(str, settings.demands))} samples/burst; recovery {','.join(map(str, settings.recovery_times_ms))} ms)",
          flush=True)
    options.output.mkdir(parents=True, exist_ok=True)
    metadata = throughput_metadata(initial_metadata(options, paths, version, platform, ignored, run_id), settings)
    if build_record is not None:
        metadata = replace(metadata, fastdds=fastdds_metadata(build_record))
    write_metadata(options.output, metadata)
    failures = run_all(options, paths, environment, metadata)
    losses = reliable_losses(options.output, options.subexperiments)
    for loss in losses:
        print(f"perfgate throughput: {LOST_RELIABLE}: {loss}", file=sys.stderr)
    if failures:
        print(f"perfgate throughput: {len(failures)} of {len(options.subexperiments)} sub-experiments did not finish: "
              f"{', '.join(failures)}", file=sys.stderr)
        return s.EXIT_INCOMPLETE
    return s.EXIT_REGRESSION if losses else s.EXIT_OK


def throughput_metadata(metadata: Metadata, settings: ThroughputSettings) -> Metadata:
    """The run's metadata with the latency experiment's round-trip fields replaced by the tests'."""
    return replace(metadata, samples=None, warmup=None, latency_definition=None,
                   harness=replace(metadata.harness, warmup=None), kind=KIND_THROUGHPUT,
                   throughput=model.ThroughputRecord.record(
                       demands=tuple(settings.demands), recovery_times_ms=tuple(settings.recovery_times_ms),
                       time_s=settings.time_s,
                       names={sub: s.throughput_name(sub) for sub in metadata.requested_subexperiments}))
