"""The upstream engine: Fast DDS' own latency tests (test/performance/latency), run as the original
specification ran them, collected into an experiment folder with the contract's names.

    perfgate run --engine upstream --workspace WS --output DIR [--subexperiments a,b] [--label L]
                 [--pin-cpus PUB,SUB]

1. The workspace must hold a finished `perfgate build` (performance tests on).
2. Their XML profiles use every network interface (builtin transports) and multicast discovery. The
   engine writes loopback-only copies (every UDPv4/TCPv4 transport limited to 127.0.0.1, unicast
   discovery to 127.0.0.1, no multicast) into WS/perfgate/upstream/xml/, under the same file names,
   since their script names the CSV after the XML file.
3. ctest reads each test's command line from the build's CTestTestfile.cmake, so that is where the
   tests are pointed at the copies (and, for security tests, at certificates generated for this run
   instead of test certificates from the source tree). With --pin-cpus PUB,SUB their LatencyTest is
   started through a launcher that pins the publisher to PUB, the subscriber to SUB and `both` to
   the two, as `perfgate run` pins its harness. CMake writes the file anew when it reconfigures;
   the engine rewrites it before every run.
4. `colcon test --packages-select <fastrtps|fastdds> --ctest-args -R <their test names>`; each test
   writes `measurements_<name>.csv` (half the round trip, in microseconds) into its build folder.
5. Each CSV is validated and written as `measurements_<sub>.csv` (3 decimals); metadata.json says
   `latency_definition: half_round_trip`. A test that failed or wrote no file is an error (exit 3).

The engine, one concern per module (perfgate/measure/):

    upstream_names         which of their tests measures which sub-experiment, under any of their names
    upstream_profiles      the loopback-only copies of their XML profiles (pure)
    upstream_commands      their command lines in CTestTestfile.cmake, read and pointed at the copies;
                           the launcher that pins LatencyTest
    upstream_certificates  certificates and access-control documents for the security tests
    upstream_results       ctest's JUnit, what LatencyTest printed, each test's CSV collected

This module is the command around them: options, metadata, the ctest run, the experiment folder.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from .. import __version__
from . import cpu_latency
from .. import files
from . import platform_info
from . import scratch
from .. import schema as s
from ..clock import load_average, utc_now
from ..errors import IncompleteError, InputError
from ..escape.workflow import log_text
from ..fastdds.colcon import colcon_base, colcon_paths, run_colcon
from ..fastdds.record import fastdds_metadata, harness_paths, read_record
from ..fastdds.workspace import STATE_DIR, workspace_lock
from ..model import (CpuLatency, CpuPinning, Environment, Harness, LoadAverage, Metadata, Platform,
                     SubexperimentOutcome, write_metadata)
from .environment import CHILD_ENV, scrub_environment
from .options import check_output_folder, cpu_pinning_metadata, machine_pin_cpus, resolve_label
from .upstream_certificates import generate_certificates, latency_test_protection
from .upstream_commands import LatencyTestCommand, latency_tests, original_xml, point_tests_at, write_pinned_launcher
from .upstream_names import (LATENCY_TEST, LATENCY_TEST_SAMPLES, SUBEXPERIMENT_TESTS, TEST_PREFIX, select_tests,
                             subexperiment_tests, test_regex, unmapped_tests)
from .upstream_profiles import loopback_profiles
from .upstream_results import Collected, TestOutcome, collect, read_ctest_junit

# What other code reads from the engine: latency/run.py the command; the source-build tests and conftest the
# names of LatencyTest and of the tests, and the test list (the rest from perfgate/measure/upstream_*).
__all__ = ["command_upstream", "LATENCY_TEST", "SUBEXPERIMENT_TESTS", "latency_tests", "subexperiment_tests"]


# --- metadata -----------------------------------------------------------------------------------
def initial_metadata(label: str, record: dict, subs: list[str], platform: Platform, copies_dir: Path) -> Metadata:
    return Metadata.record(
        label=label,
        created_utc=utc_now(),
        fastdds=fastdds_metadata(record),
        harness=Harness.record(
            name=LATENCY_TEST,
            engine=s.ENGINE_UPSTREAM,
            version=(record.get("fastdds") or {}).get("version"),
            extra={
                "command": "colcon test --packages-select <package> --ctest-args -R <tests>",
                "xml_profiles": f"loopback-only copies in {copies_dir}",
                "security": "certificates and documents generated for the run; protected: " +
                            latency_test_protection((record.get("fastdds") or {}).get("version")),
                "domain": "chosen by latency_tests.py (its pid modulo 230)",
            },
        ),
        latency_definition=s.HALF_ROUND_TRIP,
        samples=LATENCY_TEST_SAMPLES,
        payloads=(),
        requested_subexperiments=tuple(subs),
        subexperiments={},
        platform=platform,
        load_average=LoadAverage.record(before=load_average(), after=None),
        perfgate_version=__version__,
        finished_utc=None,
    )


def metadata_entry(result: Collected) -> SubexperimentOutcome:
    return SubexperimentOutcome.record(
        outcome=result.outcome,
        error=result.error,
        test=result.test,
        csv=result.csv,
        duration_s=round(result.duration_s, 3),
        measured_samples={str(p): n for p, n in result.counts.items()},
        # each latency of this CSV is (end - start) / 2 minus this: add it back for the half round trip
        clock_overhead_subtracted_us=result.clock_overhead_us,
        # 1 for their "interprocess" tests of 2.10 to 3.3.0, which start LatencyTest as `both`
        latency_test_processes=result.processes,
    )


# --- the command --------------------------------------------------------------------------------
def check_options(workspace, samples, payloads, harness_options: dict) -> None:
    """Their tests run as they are: options of perfgate's harness cannot change them (InputError)."""
    if workspace is None:
        raise InputError("--engine upstream needs --workspace: a workspace made by `perfgate build`")
    if samples not in (None, s.DEFAULT_SAMPLES) or (payloads is not None and list(payloads) != list(s.PAYLOADS)):
        raise InputError(f"the upstream engine runs Fast DDS' tests as they are ({LATENCY_TEST_SAMPLES} samples, "
                         "payloads from their payloads_demands.csv): --samples and --payloads do not apply")
    given = [name for name, value in harness_options.items() if value is not None]
    if given:
        raise InputError(f"{', '.join(given)}: only for --engine {s.ENGINE_HARNESS}")


def command_upstream(*, output, workspace, subexperiments=None, label=None, samples=None, payloads=None,
                     pin_cpus=None, harness_options: dict | None = None, cpu_latency_request=None) -> int:
    check_options(workspace, samples, payloads, harness_options or {})
    pin = machine_pin_cpus(pin_cpus)
    awake_request = cpu_latency.parse_request(cpu_latency_request)
    output, workspace = Path(output), Path(workspace).resolve()
    check_output_folder(output)
    label = resolve_label(label, output)
    record = read_record(workspace)
    harness_paths(record, workspace)  # IncompleteError for a failed build
    if record.get("kept_from"):
        # LatencyTest lives in a colcon build tree: a kept install has none, and a workspace whose
        # record was reused from one holds the build tree of whatever colcon built last
        raise InputError(f"--engine upstream needs the build tree of the commit it measures; {workspace} holds a kept "
                         f"install of {record['fastdds'].get('commit')}: build that commit in {record['kept_from']} "
                         "with --keep-installs 0 (which always runs colcon) first")
    package = record["fastdds"]["package"]
    work_dir = workspace / "build" / package / "test" / "performance" / "latency"
    ctest_file = work_dir / "CTestTestfile.cmake"
    if not ctest_file.is_file():
        raise IncompleteError("the build has no performance tests (PERFORMANCE_TESTS=ON)", ctest_file)
    tests = latency_tests(ctest_file.read_text())
    measured_by = subexperiment_tests(tests)
    subs, lacking = select_tests(subexperiments, set(tests))
    if not subs:
        raise IncompleteError("this Fast DDS defines no latency test the upstream engine knows by any of its "
                              "names (<name>, latency_<name>_profile, <name>_profile); ctest defines: "
                              f"{', '.join(sorted(tests)) or f'no {TEST_PREFIX}* test'}", ctest_file)
    if lacking:
        print(f"perfgate run: note: this Fast DDS has no latency test for {', '.join(lacking)}", file=sys.stderr)
    unmapped = unmapped_tests(tests)
    if unmapped:
        print(f"perfgate run: note: not run, no sub-experiment measures what they measure: {', '.join(unmapped)}",
              file=sys.stderr)
    environment, ignored = scrub_environment(os.environ)
    for name in ignored:
        print(f"perfgate run: warning: ignoring {name} (Fast DDS configuration from the environment)", file=sys.stderr)

    copies_dir = workspace / STATE_DIR / "upstream" / "xml"
    output.mkdir(parents=True, exist_ok=True)
    metadata = initial_metadata(label, record, subs, platform_info.this_machine(), copies_dir)
    metadata = replace(metadata, environment=Environment(ignored=tuple(ignored)),
                       cpu_pinning=CpuPinning.record(**cpu_pinning_metadata(pin, pin_cpus)))
    write_metadata(output, metadata)
    # the certificates' private keys in RAM (perfgate.measure.scratch), never on disk, even if perfgate is killed
    with workspace_lock(workspace), scratch.scratch_folder("upstream") as private:
        write_loopback_copies(tests, copies_dir)
        certs = generate_certificates(private / "certs") if any("security" in sub for sub in subs) else None
        latency_test = work_dir / LATENCY_TEST
        if pin is not None:
            # beside the XML copies, not in /tmp, which may be mounted noexec
            latency_test = write_pinned_launcher(copies_dir.parent, latency_test, pin)
        files.write_text(ctest_file, point_tests_at(ctest_file.read_text(), copies_dir, certs, latency_test))
        for stale in work_dir.glob(f"{s.RAW_PREFIX}*.csv"):
            stale.unlink()  # a previous run's: never collected as this run's
        started = time.time() - 1
        with cpu_latency.hold_awake(awake_request) as awake:
            metadata = replace(metadata, cpu_latency=CpuLatency.record(**awake))
            cpu_latency.warn("perfgate run", awake)
            outcomes = run_ctest(workspace, package, subs, environment, measured_by)
    results = [collect(sub, outcomes.get(measured_by[sub]), work_dir, started, measured_by[sub]) for sub in subs]
    for result in results:
        if result.sub.startswith("interprocess") and result.processes == 1:
            print(f"perfgate run: note: {result.test} ran publisher and subscriber in one process (its CMake "
                  "gives this name no --interprocess)", file=sys.stderr)
    return write_experiment(output, metadata, results)


def write_loopback_copies(tests: dict[str, LatencyTestCommand], copies_dir: Path) -> None:
    for command in tests.values():
        original = original_xml(command, copies_dir)
        if original is None:
            continue
        if not original.is_file():
            raise IncompleteError(f"{command.name}: its XML profiles are missing", original)
        try:
            files.write_text(copies_dir / original.name, loopback_profiles(original.read_text()))
        except InputError as error:
            raise InputError(error.message, original) from None


def run_ctest(workspace: Path, package: str, subs: list[str], environment: dict[str, str],
              tests: dict[str, str] | None = None) -> dict[str, TestOutcome]:
    junit = workspace / STATE_DIR / "upstream" / "ctest-junit.xml"
    junit.unlink(missing_ok=True)
    command = colcon_base(workspace) + ["test"] + colcon_paths(workspace) + [
        "--packages-select", package, "--event-handlers", "console_direct-",
        "--ctest-args", "-R", test_regex(subs, tests), "--output-junit", str(junit)]
    print(f"perfgate run: {log_text(' '.join(command))}", flush=True)
    code, _ = run_colcon(command, {**environment, **CHILD_ENV}, workspace / STATE_DIR / "colcon-test.log")
    if not junit.is_file():
        raise IncompleteError(f"colcon test ended (exit {code}) without ctest results; see its log",
                              workspace / STATE_DIR / "colcon-test.log")
    return read_ctest_junit(junit)


def write_experiment(output: Path, metadata: Metadata, results: list[Collected]) -> int:
    failures = []
    payloads: list[int] = []
    for result in results:
        if result.frame is not None:
            files.write_csv(output / s.raw_csv_name(result.sub), result.frame)
            payloads += [p for p in result.counts if p not in payloads]
        metadata = metadata.with_outcome(result.sub, metadata_entry(result))
        median = (f", median {result.frame[s.LATENCY].median():.3f} us (half round trip)"
                  if result.frame is not None else "")
        print(f"{result.sub} ({result.test}): {result.outcome}{median}", flush=True)
        if result.outcome != s.OUTCOME_OK:
            failures.append(result.sub)
            print(f"perfgate run: error: {result.sub}: {log_text(result.error)}", file=sys.stderr, flush=True)
    counts = {n for result in results for n in result.counts.values()}
    samples = counts.pop() if len(counts) == 1 else metadata.samples  # their tests' sample count, as measured
    write_metadata(output, metadata.finish(utc_now(), load_average(), payloads=tuple(payloads), samples=samples))
    if failures:
        print(f"perfgate run: {len(failures)} of {len(results)} Fast DDS latency tests did not deliver: "
              f"{', '.join(failures)}", file=sys.stderr)
        return s.EXIT_INCOMPLETE
    return s.EXIT_OK
