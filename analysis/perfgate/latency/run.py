"""latency.run: the `perfgate run` command: measure every selected sub-experiment and write the experiment folder.

What one sub-experiment takes (a leased DDS domain, the harness's command lines and environment,
supervised processes, shared memory left behind, reading and classifying what was measured) lives in
perfgate.measure, one concern per module. This module is the command around it: the harness built or
given, the platform read, the loop over sub-experiments with a progress line each, the raw CSVs, and
metadata.json rewritten after every sub-experiment, so an interrupted run still says what it measured.
`--engine upstream` hands the whole run to perfgate.measure.upstream (Fast DDS' own latency tests).
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Iterator

from .. import __version__, claims, files
from ..measure import cpu_latency, platform_info, scratch, upstream
from . import resources_table
from ..fastdds import harness as native_harness
from .. import schema as s
from ..clock import load_average, utc_now
from ..errors import InputError
from ..escape.workflow import log_text
from ..fastdds.record import fastdds_metadata, harness_paths, read_record
from ..fastdds.harness import HarnessPaths
from ..model import (CpuLatency, CpuPinning, Environment, FastDDS, Harness, LoadAverage, Metadata, Platform,
                     SubexperimentOutcome, write_metadata)
from ..measure.commands import DISCOVERY_TIMEOUT_S, SAMPLE_TIMEOUT_MS, describe
from ..measure.environment import CHILD_ENV, RUN_ID_ENV, scrub_environment
from ..measure import resources
from ..measure.options import RunOptions, check_output_folder, cpu_pinning_metadata, resolve_options
from ..measure.subexperiment import SubexperimentResult, median_first_payload, run_subexperiment
from ..measure.supervise import INTERRUPTED
from ..throughput.table import best_subscription_throughput

# --- harness and Fast DDS -----------------------------------------------------------------------
def fastdds_commit(prefix: Path | None) -> str | None:
    """The commit of a colcon-built Fast DDS: HEAD of its source checkout beside the install prefix.

    A system package has no commit (None). colcon workspaces keep sources in <ws>/src/<name> and
    install into <ws>/install (merged) or <ws>/install/<package> (isolated).
    """
    if prefix is None:
        return None
    for workspace in (prefix.parent, prefix.parent.parent):
        for name in ("fastdds", "Fast-DDS", "fastrtps", "Fast-RTPS"):
            checkout = workspace / "src" / name
            if (checkout / ".git").exists():
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    completed = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"],
                                               capture_output=True, text=True, timeout=10)
                    if completed.returncode == 0:
                        return completed.stdout.strip()
    return None


def kept_install_record(prefix: Path) -> dict | None:
    """The build record of a prefix `perfgate build` wrote (WS/installs/<commit>, a name linked to one, or
    a workspace's install copied with its record), else None. Its commit is the install's own: the
    checkout fastdds_commit would find beside a kept install is the workspace's, at whatever was built last."""
    return read_record(prefix) if (prefix / s.BUILD_RECORD_FILE).is_file() else None


def prepare_harness(options: RunOptions) -> HarnessPaths:
    """The harness executables: the given one (with perfgate-floor beside it), or native/ built once."""
    if options.harness is not None:
        return HarnessPaths(options.harness, options.harness.parent / native_harness.FLOOR_EXECUTABLE, options.harness.parent)
    return native_harness.ensure_harness(fastdds_prefix=options.fastdds_prefix)


def prepare_measurement(options: RunOptions) -> tuple[dict[str, str], list[str], str, HarnessPaths, str, Platform]:
    """What a measuring command needs before its first sub-experiment: the harness's scrubbed environment
    (with this run's id), the names of what was ignored, the run id, the harness and its Fast DDS
    version, and the platform; warnings printed."""
    environment, ignored = scrub_environment(os.environ)
    run_id = uuid.uuid4().hex
    environment[RUN_ID_ENV] = run_id
    paths = prepare_harness(options)
    version = native_harness.fastdds_version(paths)
    platform = platform_info.this_machine()
    for warning in platform.warnings or ():
        print(f"perfgate {options.command}: warning: {warning}", file=sys.stderr)
    for name in ignored:
        print(f"perfgate {options.command}: warning: ignoring {name} (Fast DDS configuration from the environment "
              "would change what is measured)", file=sys.stderr)
    return environment, ignored, run_id, paths, version, platform


# --- metadata -----------------------------------------------------------------------------------
def initial_metadata(options: RunOptions, paths: HarnessPaths, version: str, platform: Platform, ignored: list[str],
                     run_id: str) -> Metadata:
    return Metadata.record(
        label=options.label,
        created_utc=utc_now(),
        fastdds=FastDDS.record(
            version=version,
            commit=fastdds_commit(options.fastdds_prefix),
            source=s.FASTDDS_SOURCE_SYSTEM if options.fastdds_prefix is None else s.FASTDDS_SOURCE_COLCON,
            prefix=str(options.fastdds_prefix) if options.fastdds_prefix is not None else "/usr",
        ),
        harness=Harness.record(
            name=native_harness.LATENCY_EXECUTABLE,
            version=__version__,  # built from this package's native/
            floor=native_harness.FLOOR_EXECUTABLE,
            path=str(paths.latency),
            warmup=options.warmup,
            timeout_s=round(options.timeout_s, 3),
            discovery_timeout_s=DISCOVERY_TIMEOUT_S,
            sample_timeout_ms=SAMPLE_TIMEOUT_MS,
        ),
        latency_definition=s.ROUND_TRIP,
        samples=options.samples,
        payloads=tuple(options.payloads),
        warmup=options.warmup,
        requested_subexperiments=tuple(sub.name for sub in options.subexperiments),
        subexperiments={},
        platform=platform,
        load_average=LoadAverage.record(before=load_average(), after=None),
        cpu_pinning=CpuPinning.record(**cpu_pinning_metadata(options.pin_cpus, options.pin_request)),
        cpu_latency=CpuLatency.record(**cpu_latency.request_metadata(options.cpu_latency, None, None,
                                                                     "not measuring yet")),
        environment=Environment.record(ignored=tuple(ignored), set_for_harness=dict(CHILD_ENV)),
        run_id=run_id,
        perfgate_version=__version__,
        finished_utc=None,
        interrupted=False,
    )


# --- the command --------------------------------------------------------------------------------
def progress_line(index: int, total: int, result: SubexperimentResult) -> str:
    head = f"[{index}/{total}] {result.sub.name}: {result.outcome}"
    median = median_first_payload(result.measured.frame)
    if median is not None:
        head += f", median {median[1]:.3f} us at {median[0]} B"
    best = best_subscription_throughput(result.measured.frame)
    if best is not None:
        head += f", up to {best[2]:.1f} Mb/s received ({best[0]} B x {best[1]})"
    return f"{head} ({result.duration_s:.1f} s)"


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (a cancelled CI job) ends the run like Ctrl-C: children killed, metadata written."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def command_run(*, output, samples=s.DEFAULT_SAMPLES, payloads=None, subexperiments=None, label=None,
                warmup=None, harness=None, fastdds_prefix=None, pin_cpus=None, timeout=None,
                engine=s.ENGINE_HARNESS, workspace=None, cpu_latency_request=None, subscribers=None) -> int:
    if engine == s.ENGINE_UPSTREAM:  # Fast DDS' own latency tests (perfgate.measure.upstream)
        check_output_folder(Path(output))  # "a file, not a folder" said before a claim tries to make it
        with claims.claimed(Path(output)):  # a folder it made for a refused command is removed again
            return upstream.command_upstream(output=output, workspace=workspace, subexperiments=subexperiments,
                                             label=label, samples=samples, payloads=payloads, pin_cpus=pin_cpus,
                                             cpu_latency_request=cpu_latency_request,
                                             harness_options={"--warmup": warmup, "--harness": harness,
                                                              "--fastdds-prefix": fastdds_prefix, "--timeout": timeout,
                                                              "--subscribers": subscribers})
    build_record = None
    if workspace is not None:  # a `perfgate build` workspace: its harness, its Fast DDS, its record
        if harness is not None or fastdds_prefix is not None:
            raise InputError("--workspace names the harness and the Fast DDS prefix: drop --harness/--fastdds-prefix")
        build_record = read_record(workspace)
        harness, fastdds_prefix = harness_paths(build_record, Path(workspace))
    elif fastdds_prefix is not None:
        build_record = kept_install_record(Path(fastdds_prefix))
    options = resolve_options(output=output, samples=samples, payloads=payloads, subexperiments=subexperiments,
                              label=label, warmup=warmup, harness=harness, fastdds_prefix=fastdds_prefix,
                              pin_cpus=pin_cpus, timeout=timeout, cpu_latency_request=cpu_latency_request,
                              subscribers=subscribers)
    return measure_latency(options, build_record)


@claims.claims_output  # two commands started at once into one --output: one measures, one is exit 2
def measure_latency(options: RunOptions, build_record: dict | None = None) -> int:
    """The latency experiment of validated options (resolve_options); build_record: the `perfgate
    build` workspace's record when its Fast DDS is measured. Exit 0, or 3 when a sub-experiment failed."""
    environment, ignored, run_id, paths, version, platform = prepare_measurement(options)

    options.output.mkdir(parents=True, exist_ok=True)
    metadata = initial_metadata(options, paths, version, platform, ignored, run_id)
    if build_record is not None:
        metadata = replace(metadata, fastdds=fastdds_metadata(build_record))
    write_metadata(options.output, metadata)
    failures = run_all(options, paths, environment, metadata)
    if failures:
        print(f"perfgate run: {len(failures)} of {len(options.subexperiments)} sub-experiments did not finish: "
              f"{', '.join(failures)}", file=sys.stderr)
        return s.EXIT_INCOMPLETE
    return s.EXIT_OK


def run_all(options: RunOptions, paths: HarnessPaths, environment: dict[str, str], metadata: Metadata) -> list[str]:
    """Every sub-experiment in turn; metadata.json rewritten after each. Returns the ones that failed."""
    failures = []
    current = None
    try:
        with terminate_as_interrupt(), cpu_latency.hold_awake(options.cpu_latency) as awake, \
                scratch.scratch_folder("run", metadata.run_id) as workdir:
            metadata = replace(metadata, cpu_latency=CpuLatency.record(**awake),
                               resource_sampling=resources.sampling_metadata())
            cpu_latency.warn(f"perfgate {options.command}", awake)
            for index, sub in enumerate(options.subexperiments, 1):
                current = sub
                with resources.collecting() as collected:
                    result = run_subexperiment(sub, options, paths, environment, Path(workdir))
                if result.measured.frame is not None:
                    name = s.raw_csv_name(sub.name) if options.throughput is None else s.throughput_csv_name(sub.name)
                    files.write_csv(options.output / name, result.measured.frame)
                entry = result.metadata_entry()
                if collected.samples:  # kept whatever the outcome: a failed run's memory can be its story
                    table = resources.samples_frame(collected.samples)
                    named = sub.name if options.throughput is None else s.throughput_name(sub.name)
                    files.write_csv(options.output / s.resources_csv_name(named), table)
                    entry = replace(entry, resources=resources_table.summary_metadata(table))
                metadata = metadata.with_outcome(sub.name, entry)
                write_metadata(options.output, metadata)
                print(progress_line(index, len(options.subexperiments), result), flush=True)
                if result.outcome != s.OUTCOME_OK:
                    failures.append(sub.name)
                    print(f"perfgate {options.command}: error: {describe(sub)}: {log_text(result.error)}", file=sys.stderr,
                          flush=True)
            current = None
    except KeyboardInterrupt:
        metadata = replace(metadata, interrupted=True)
        if current is not None:
            metadata = metadata.with_outcome(current.name, SubexperimentOutcome.record(
                outcome=s.OUTCOME_INCOMPLETE, error=INTERRUPTED))
        raise
    finally:
        write_metadata(options.output, metadata.finish(utc_now(), load_average()))
    return failures
