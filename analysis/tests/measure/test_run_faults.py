"""Faults: peers that die or hang, discovery that never completes, mismatched QoS, hostile environment.

The first part drives the supervisor with small Python programs that misbehave on cue (the thing
under test is the supervisor, and these make each fault exact); the second does the same to the
real harness on the real Fast DDS, through `perfgate run` and through the supervisor.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from perfgate import files
from perfgate.measure import commands, domains, shm
from perfgate.measure import environment as run_environment
from perfgate.measure import options as run_options
from perfgate.measure import supervise as supervision
from perfgate import schema as s
from conftest import live_processes_of


def program(role: str, code: str, *, measures: bool) -> commands.ProcessSpec:
    """A process that announces itself as the harness does, then runs `code`."""
    body = textwrap.dedent(code)
    script = f"import os, signal, sys, time\nprint('fake: ready', flush=True)\n{body}"
    return commands.ProcessSpec(role, (sys.executable, "-c", script), measures=measures)


MEASURING_FOREVER = """
print('fake: matched', flush=True)
time.sleep(120)
"""


def marked_environment() -> tuple[dict[str, str], str]:
    marker = uuid.uuid4().hex
    environment, _ = run_environment.scrub_environment(os.environ)
    environment[run_environment.RUN_ID_ENV] = marker
    return environment, marker



def supervise(tmp_path: Path, specs: list[commands.ProcessSpec], timeout_s: float = 60) -> tuple[supervision.Supervision, float, str]:
    environment, marker = marked_environment()
    started = time.monotonic()
    result = supervision.supervise(specs, environment, tmp_path, timeout_s)
    return result, time.monotonic() - started, marker


# --- the supervisor, with processes that fail on cue --------------------------------------------
@pytest.mark.heavy
def test_killed_peer_ends_the_subexperiment_quickly_and_leaves_nothing(tmp_path):
    result, elapsed, marker = supervise(tmp_path, [
        program("publisher", MEASURING_FOREVER, measures=True),
        program("subscriber", "time.sleep(0.5); os.kill(os.getpid(), signal.SIGKILL)", measures=False),
    ])
    assert result.outcome == s.OUTCOME_INCOMPLETE
    assert result.error == "the subscriber was killed by SIGKILL during the measurement"
    assert elapsed < 10
    assert result.exit_codes == {"publisher": -signal.SIGTERM, "subscriber": -signal.SIGKILL}
    assert live_processes_of(marker) == []


@pytest.mark.heavy
def test_stopped_peer_is_a_hang_and_is_killed(tmp_path):
    result, elapsed, marker = supervise(tmp_path, [
        program("publisher", MEASURING_FOREVER, measures=True),
        program("subscriber", "time.sleep(0.5); os.kill(os.getpid(), signal.SIGSTOP); time.sleep(120)", measures=False),
    ])
    assert result.outcome == s.OUTCOME_INCOMPLETE
    assert result.error.startswith("the subscriber stopped responding")
    assert elapsed < 10
    assert result.exit_codes["subscriber"] == -signal.SIGKILL
    assert live_processes_of(marker) == []


@pytest.mark.heavy
def test_measuring_side_writes_what_finished_on_sigterm(tmp_path):
    partial = tmp_path / "partial.csv"
    result, elapsed, _ = supervise(tmp_path, [
        program("publisher", f"""
            def finish(signum, frame):
                open({str(partial)!r}, 'w').write('done\\n')
                sys.exit(3)
            signal.signal(signal.SIGTERM, finish)
            print('fake: matched', flush=True)
            time.sleep(120)
        """, measures=True),
        program("subscriber", "time.sleep(0.3); sys.exit(1)", measures=False),
    ])
    assert result.outcome == s.OUTCOME_INCOMPLETE
    assert result.error == "the subscriber exited with code 1 during the measurement"
    assert partial.read_text() == "done\n"
    assert result.exit_codes["publisher"] == 3
    assert elapsed < 10


def test_harness_exit_3_is_reported_with_its_own_words(tmp_path):
    result, _, _ = supervise(tmp_path, [program("publisher", """
        print('perfgate-latency: discovery timed out after 1 s (udpv4, publisher): no subscriber matched', file=sys.stderr)
        sys.exit(3)
    """, measures=True)])
    assert result.outcome == s.OUTCOME_INCOMPLETE
    assert result.error == ("the publisher exited with code 3: perfgate-latency: discovery timed out after 1 s "
                            "(udpv4, publisher): no subscriber matched")


def test_process_that_dies_before_ready_failed_to_start(tmp_path):
    spec = commands.ProcessSpec("publisher", (sys.executable, "-c",
                                         "import sys; print('cannot load libfastrtps.so.2.9', file=sys.stderr); sys.exit(127)"),
                           measures=True)
    result, _, _ = supervise(tmp_path, [spec])
    assert result.outcome == s.OUTCOME_FAILED_TO_START
    assert result.error == "the publisher exited with code 127 before it was ready: cannot load libfastrtps.so.2.9"


def test_process_never_ready_failed_to_start(tmp_path, monkeypatch):
    monkeypatch.setattr(supervision, "READY_TIMEOUT_S", 1.0)
    spec = commands.ProcessSpec("server", (sys.executable, "-c", "import time; time.sleep(60)"), measures=False)
    result, elapsed, marker = supervise(tmp_path, [spec, program("client", MEASURING_FOREVER, measures=True)])
    assert result.outcome == s.OUTCOME_FAILED_TO_START
    assert result.error == "the server was not ready within 1 s"
    assert elapsed < 5
    assert list(result.exit_codes) == ["server"]  # the client was never started
    assert live_processes_of(marker) == []


def test_time_limit_kills_a_measurement_that_never_ends(tmp_path):
    result, elapsed, marker = supervise(tmp_path, [program("both", MEASURING_FOREVER, measures=True)], timeout_s=1)
    assert result.outcome == s.OUTCOME_INCOMPLETE
    assert result.error == "time limit of 1 s reached"
    assert elapsed < 5
    assert live_processes_of(marker) == []


@pytest.mark.heavy
def test_the_whole_process_group_is_killed(tmp_path):
    """A child the harness started itself (a helper, a shell) goes with it."""
    result, _, marker = supervise(tmp_path, [
        program("publisher", """
            import subprocess
            subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])
            print('fake: matched', flush=True)
            time.sleep(120)
        """, measures=True),
        program("subscriber", "time.sleep(0.5); sys.exit(0)", measures=False),
    ])
    assert result.outcome == s.OUTCOME_INCOMPLETE
    time.sleep(0.2)
    assert live_processes_of(marker) == []


# --- the real harness on the real Fast DDS ------------------------------------------------------
def start_run(tmp_path: Path, harness_paths, *arguments: str, environment: dict | None = None):
    output = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "perfgate.cli", "run", "--output", str(output),
                                "--harness", str(harness_paths.latency), *arguments],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
    return process, output


def wait_for_subscriber(output: Path, process: subprocess.Popen, timeout_s: float = 60) -> tuple[str, int]:
    """The run's id (from metadata.json, written first) and its subscriber's pid, once it runs."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        metadata = files.read_metadata(output) if (output / s.METADATA_FILE).exists() else None
        if metadata is not None:
            for pid in live_processes_of(metadata["run_id"]):
                try:
                    arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if b"--role" in arguments and arguments[arguments.index(b"--role") + 1] == b"subscriber":
                    return metadata["run_id"], pid
        time.sleep(0.05)
    raise AssertionError(f"no subscriber appeared; run exited {process.poll()}")


def fastdds_orphans(before: set[str]) -> set[str]:
    """Fast DDS shared-memory files created since `before` that no live process holds."""
    return (shm.fastdds_shm_files() - before) - shm.shm_files_in_use()


def sub_end(entry: dict) -> float:
    from pandas import Timestamp

    return Timestamp(entry["started_utc"]).timestamp() + entry["duration_s"]


# Many short payloads: the first finishes long before the fault, the last long after it.
FAULT_SAMPLES = 5000
FAULT_PAYLOADS = tuple(range(16, 76))


@pytest.mark.fastdds
@pytest.mark.parametrize("fault, words", [(signal.SIGKILL, "the subscriber was killed by SIGKILL during the measurement"),
                                          (signal.SIGSTOP, "the subscriber stopped responding")])
def test_subscriber_killed_or_hung_mid_run(harness_paths, tmp_path, fault, words):
    shm_before = shm.fastdds_shm_files()
    process, output = start_run(tmp_path, harness_paths, "--samples", str(FAULT_SAMPLES),
                                "--payloads", ",".join(map(str, FAULT_PAYLOADS)),
                                "--subexperiments", "interprocess_best_effort_shm,floor_tcp")
    run_id, subscriber = wait_for_subscriber(output, process)
    time.sleep(2.5)  # into the measurement (at least 60 x 5000 round trips), several payloads done
    os.kill(subscriber, fault)
    faulted_at = time.time()
    # a guard against a hung run, not a time limit: floor_tcp's 300000 round trips that follow took over
    # 120 s beside another worker's Fast DDS test in CI (TimeoutExpired, the run itself fine)
    stdout, stderr = process.communicate(timeout=600)

    assert process.returncode == s.EXIT_INCOMPLETE, stderr
    assert (f"perfgate run: error: interprocess_best_effort_shm (shm, best_effort): {words}") in stderr
    metadata = files.read_metadata(output)
    faulted = metadata["subexperiments"]["interprocess_best_effort_shm"]
    assert faulted["outcome"] == s.OUTCOME_INCOMPLETE
    assert faulted["error"].startswith(words)
    assert sub_end(faulted) - faulted_at < 10
    # the run went on
    assert metadata["subexperiments"]["floor_tcp"]["outcome"] == s.OUTCOME_OK
    assert files.read_raw(output / s.raw_csv_name("floor_tcp"))[s.PAYLOAD].value_counts().to_dict() == {
        p: FAULT_SAMPLES for p in FAULT_PAYLOADS}
    # The publisher, stopped with SIGTERM, wrote the payloads it finished before the subscriber died
    # (at least the first), each whole, and nothing of the payload the fault cut short.
    assert faulted["exit_codes"]["publisher"] == s.EXIT_INCOMPLETE
    kept = faulted["kept_payloads"]
    assert kept[:1] == [FAULT_PAYLOADS[0]] and kept == list(FAULT_PAYLOADS[:len(kept)])
    assert len(kept) < len(FAULT_PAYLOADS)
    assert faulted["measured_samples"] == {str(p): FAULT_SAMPLES if p in kept else 0 for p in FAULT_PAYLOADS}
    raw = files.read_raw(output / s.raw_csv_name("interprocess_best_effort_shm"))
    assert raw[s.PAYLOAD].value_counts(sort=False).to_dict() == {p: FAULT_SAMPLES for p in kept}
    # nothing left behind
    assert live_processes_of(run_id) == []
    assert fastdds_orphans(shm_before) == set()


def lease_two_domains(tmp_path: Path):
    """Two domains nobody else uses, for runs built by hand."""
    import contextlib

    stack = contextlib.ExitStack()
    first = stack.enter_context(domains.lease_domain())
    second = stack.enter_context(domains.lease_domain())
    return stack, first, second


def hand_built(tmp_path: Path, harness_paths, sub_name: str, domain: int, **changes: str) -> list[commands.ProcessSpec]:
    options = run_options.resolve_options(output=tmp_path / "unused", samples=100, payloads=[16], subexperiments=[sub_name],
                                  label=None, warmup=10, harness=None, fastdds_prefix=None, pin_cpus=None, timeout=None)
    specs = commands.latency_commands(s.KNOWN_SUBEXPERIMENTS[sub_name], options, Path(harness_paths.latency), domain,
                                 tmp_path / "m.csv", tmp_path / "r.json", None)
    changed = []
    for spec in specs:
        argv = list(spec.argv)
        for option, value in changes.items():
            argv[argv.index(f"--{option.replace('_', '-')}") + 1] = value
        changed.append(commands.ProcessSpec(spec.role, tuple(argv), spec.measures, spec.cpus, spec.expects_match))
    return changed


@pytest.mark.fastdds
def test_discovery_that_never_completes_names_transport(harness_paths, tmp_path):
    stack, domain, _ = lease_two_domains(tmp_path)
    with stack:
        publisher_only = hand_built(tmp_path, harness_paths, "interprocess_reliable_tcp", domain,
                                    discovery_timeout_s="2")[:1]
        result, elapsed, marker = supervise(tmp_path, publisher_only)
    assert result.outcome == s.OUTCOME_INCOMPLETE
    assert result.error.startswith("the publisher exited with code 3: ")
    assert "discovery timeout after 2 s" in result.error and "tcpv4" in result.error
    assert elapsed < 10
    assert live_processes_of(marker) == []


@pytest.mark.fastdds
def test_peers_in_different_domains_never_discover(harness_paths, tmp_path):
    stack, domain, other = lease_two_domains(tmp_path)
    with stack:
        publisher, _ = hand_built(tmp_path, harness_paths, "interprocess_best_effort", domain, discovery_timeout_s="2")
        _, subscriber = hand_built(tmp_path, harness_paths, "interprocess_best_effort", other, discovery_timeout_s="2")
        result, elapsed, marker = supervise(tmp_path, [publisher, subscriber])
    assert result.outcome == s.OUTCOME_INCOMPLETE
    assert "discovery timeout" in result.error and "udpv4" in result.error
    assert elapsed < 10
    assert live_processes_of(marker) == []


@pytest.mark.fastdds
def test_mismatched_reliability_is_reported_not_a_hang(harness_paths, tmp_path):
    """A best-effort subscriber's pong writer cannot serve the reliable publisher's pong reader."""
    stack, domain, _ = lease_two_domains(tmp_path)
    with stack:
        publisher, _ = hand_built(tmp_path, harness_paths, "interprocess_reliable", domain)
        _, subscriber = hand_built(tmp_path, harness_paths, "interprocess_best_effort", domain)
        result, elapsed, marker = supervise(tmp_path, [publisher, subscriber])
    assert result.outcome == s.OUTCOME_INCOMPLETE
    # whichever side notices first says so and exits 3
    assert "exited with code 3" in result.error and "incompatible QoS" in result.error
    assert " on udpv4)" in result.error
    assert "(RELIABILITY)" in result.error
    assert elapsed < commands.DISCOVERY_TIMEOUT_S
    assert live_processes_of(marker) == []


BREAKING_PROFILE = """<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <profiles>
    <transport_descriptors>
      <transport_descriptor>
        <transport_id>nowhere</transport_id>
        <type>UDPv4</type>
        <interfaceWhiteList><address>192.0.2.1</address></interfaceWhiteList>
      </transport_descriptor>
    </transport_descriptors>
    <participant profile_name="nowhere" is_default_profile="true">
      <rtps>
        <userTransports><transport_id>nowhere</transport_id></userTransports>
        <useBuiltinTransports>false</useBuiltinTransports>
      </rtps>
    </participant>
  </profiles>
</dds>
"""


@pytest.mark.fastdds
def test_fastdds_environment_does_not_change_the_result(harness_paths, tmp_path):
    """A default profile that would move every participant onto an address this machine lacks, a
    discovery server nobody runs, SHM-only builtin transports: the run measures as usual, the
    harness never sees them (it also drops them itself), and metadata.json says they were ignored."""
    profile = tmp_path / "nowhere.xml"
    profile.write_text(BREAKING_PROFILE)
    hostile = {"FASTRTPS_DEFAULT_PROFILES_FILE": str(profile), "FASTDDS_DEFAULT_PROFILES_FILE": str(profile),
               "SKIP_DEFAULT_XML": "0", "ROS_DISCOVERY_SERVER": "127.0.0.1:1", "FASTDDS_BUILTIN_TRANSPORTS": "SHM",
               "FASTDDS_STATISTICS": "HISTORY_LATENCY_TOPIC"}

    process, output = start_run(tmp_path, harness_paths, "--samples", "2000", "--payloads", "16,64",
                                "--subexperiments", "interprocess_reliable_tcp,interprocess_best_effort",
                                environment={**os.environ, **hostile})
    _, subscriber = wait_for_subscriber(output, process)
    try:
        harness_environment = dict(line.split(b"=", 1) for line in
                                   Path(f"/proc/{subscriber}/environ").read_bytes().split(b"\0") if b"=" in line)
    except OSError:
        harness_environment = None  # ended already; a longer run would catch it
    _, stderr = process.communicate(timeout=300)
    assert harness_environment is not None
    assert not [k for k in harness_environment if k.startswith((b"FASTRTPS_", b"FASTDDS_", b"ROS_DISCOVERY"))]
    assert harness_environment[b"SKIP_DEFAULT_XML"] == b"1"
    assert process.returncode == 0, stderr
    metadata = files.read_metadata(output)
    assert metadata["environment"]["ignored"] == sorted(hostile)  # names, never values (they may be secrets)
    assert str(profile) not in (output / s.METADATA_FILE).read_text()
    for name in ("interprocess_best_effort", "interprocess_reliable_tcp"):
        assert metadata["subexperiments"][name]["outcome"] == s.OUTCOME_OK
        assert len(files.read_raw(output / s.raw_csv_name(name))) == 4000
    for name in hostile:
        assert f"perfgate run: warning: ignoring {name} " in stderr


@pytest.mark.fastdds
def test_sigterm_ends_the_run_cleanly(harness_paths, tmp_path):
    """A cancelled CI job: children killed, metadata says interrupted, exit 130."""
    shm_before = shm.fastdds_shm_files()
    process, output = start_run(tmp_path, harness_paths, "--samples", "100000", "--payloads", "16,32",
                                "--subexperiments", "interprocess_best_effort_shm,interprocess_reliable")
    run_id, _ = wait_for_subscriber(output, process)
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert stderr.strip().endswith("perfgate run: interrupted")
    metadata = files.read_metadata(output)
    assert metadata["interrupted"] is True
    assert metadata["subexperiments"] == {
        "interprocess_best_effort_shm": {"outcome": s.OUTCOME_INCOMPLETE, "error": "interrupted"}}
    assert metadata["finished_utc"] is not None and len(metadata["load_average"]["after"]) == 3
    assert live_processes_of(run_id) == []
    assert fastdds_orphans(shm_before) == set()
