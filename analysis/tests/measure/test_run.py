"""perfgate run: options, environment, domain leases, command lines, results; then the real Fast DDS."""
from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from perfgate import cli, files
from perfgate.measure import cpu_latency
from perfgate.measure import commands, domains, shm, subexperiment
from perfgate.measure import environment as run_environment
from perfgate.measure import options as run_options
from perfgate.measure import supervise as supervision
from perfgate import schema as s
from perfgate.errors import InputError
from conftest import live_processes_of



def options_for(tmp_path: Path, **overrides) -> run_options.RunOptions:
    arguments = dict(output=tmp_path / "out", samples=200, payloads=None, subexperiments=None, label=None,
                     warmup=None, harness=None, fastdds_prefix=None, pin_cpus=None, timeout=None)
    arguments.update(overrides)
    return run_options.resolve_options(**arguments)


# --- options ------------------------------------------------------------------------------------
def test_default_run_is_the_ten_then_the_floor(tmp_path):
    options = options_for(tmp_path)
    names = [sub.name for sub in options.subexperiments]
    assert names[:10] == list(s.DEFAULT_SUBEXPERIMENT_NAMES)
    assert names[10:] == ["floor_udp", "floor_tcp"]
    assert options.payloads == s.PAYLOADS
    assert options.warmup == 100
    assert options.label == "out"
    # 60 s for start-up plus 2 ms for each of (200 + 100) x 11 round trips
    assert options.timeout_s == pytest.approx(60 + 300 * 11 * 0.002)


@pytest.mark.parametrize("overrides, message", [
    ({"subexperiments": ["interprocess_best_effort", "udp_fast"]}, "unknown sub-experiment 'udp_fast'"),
    ({"subexperiments": ["floor_udp", "floor_udp"]}, "'floor_udp' is named twice"),
    ({"payloads": [16, 32, 16]}, "names a payload twice"),
    ({"samples": 1}, "at least 2"),
    ({"warmup": -1}, "from 0 to 100000000"),
    ({"warmup": 100_000_001}, "from 0 to 100000000"),
    ({"samples": 100_000_001}, "at most 100000000"),
    ({"pin_cpus": "0,1,2"}, "one or two CPU numbers"),
    ({"pin_cpus": "0,4096"}, "CPU 4096 is not available"),
    ({"pin_cpus": "0,"}, "'0,' has an empty item"),
    ({"harness": "/nonexistent/perfgate-latency"}, "harness executable not found"),
])
def test_bad_options_are_usage_errors(tmp_path, overrides, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        options_for(tmp_path, **overrides)


def test_output_must_be_absent_or_empty(tmp_path):
    (tmp_path / "out").mkdir()
    options_for(tmp_path)  # empty: fine
    (tmp_path / "out" / "old.csv").write_text("x\n")
    with pytest.raises(InputError, match="not empty"):
        options_for(tmp_path)
    (tmp_path / "file").write_text("x\n")
    with pytest.raises(InputError, match="is a file"):
        options_for(tmp_path, output=tmp_path / "file")


def test_command_line_usage_error_is_one_line_and_exit_2(tmp_path, capsys):
    code = cli.main(["run", "--output", str(tmp_path / "out"), "--subexperiments", "interprocess_udp_magic"])
    assert code == s.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("perfgate run: error: unknown sub-experiment 'interprocess_udp_magic'")
    assert not (tmp_path / "out").exists()


def test_pin_cpus(tmp_path):
    cpu = min(os.sched_getaffinity(0))
    assert options_for(tmp_path, pin_cpus=f"{cpu}").pin_cpus == (cpu, cpu)
    assert options_for(tmp_path, pin_cpus=f"{cpu},{cpu}").pin_cpus == (cpu, cpu)
    assert options_for(tmp_path, pin_cpus="none").pin_cpus is None
    assert options_for(tmp_path, pin_cpus="none").pin_request == "none"
    chosen = options_for(tmp_path, pin_cpus=None)
    assert chosen.pin_request == "auto" and chosen.pin_cpus == options_for(tmp_path, pin_cpus="auto").pin_cpus
    if len(os.sched_getaffinity(0)) >= 2:
        assert chosen.pin_cpus is not None and chosen.pin_cpus[0] != chosen.pin_cpus[1]


def test_auto_pinning_prefers_isolated_cpus_then_the_highest():
    from perfgate.measure.options import parse_pin_cpus

    assert parse_pin_cpus("auto", {0, 1, 2, 3}, isolated=[2, 3]) == (2, 3)
    assert parse_pin_cpus("auto", {0, 1, 2, 3}, isolated=[]) == (3, 2)
    assert parse_pin_cpus("auto", {0, 1, 2, 3}, isolated=[1]) == (1, 3)
    assert parse_pin_cpus("auto", {0, 1}, isolated=[]) == (1, 0)
    assert parse_pin_cpus("auto", {0}, isolated=[]) is None  # one CPU: nothing to keep apart
    assert parse_pin_cpus("none", {0, 1}, isolated=[]) is None


# --- environment --------------------------------------------------------------------------------
def test_every_fastdds_variable_is_scrubbed():
    environment = {
        "PATH": "/usr/bin", "HOME": "/root", "LD_LIBRARY_PATH": "/opt/fastdds/lib",
        "FASTRTPS_DEFAULT_PROFILES_FILE": "/tmp/tcp_only.xml", "FASTDDS_DEFAULT_PROFILES_FILE": "/tmp/x.xml",
        "SKIP_DEFAULT_XML": "0", "FASTDDS_ENVIRONMENT_FILE": "/tmp/env.json",
        "ROS_DISCOVERY_SERVER": "127.0.0.1:11811", "FASTDDS_BUILTIN_TRANSPORTS": "LARGE_DATA",
        "FASTDDS_STATISTICS": "HISTORY_LATENCY_TOPIC", "FASTRTPS_SOMETHING_NEW": "1", "ROS_DOMAIN_ID": "7",
    }
    clean, ignored = run_environment.scrub_environment(environment)
    assert clean == {"PATH": "/usr/bin", "HOME": "/root", "LD_LIBRARY_PATH": "/opt/fastdds/lib",
                     "ROS_DOMAIN_ID": "7", "SKIP_DEFAULT_XML": "1"}
    assert ignored == sorted(set(environment) - {"PATH", "HOME", "LD_LIBRARY_PATH", "ROS_DOMAIN_ID"})
    # names only: a value may be a secret, and what scrub_environment returns goes into metadata.json
    assert not {"/tmp/tcp_only.xml", "127.0.0.1:11811", "LARGE_DATA"} & set(map(str, ignored))


# --- domains and ports --------------------------------------------------------------------------
def test_rtps_port_layout():
    assert domains.rtps_ports(0) == [7400, 7401, 7410, 7411, 7412, 7413, 7414, 7415, 7416, 7417]
    assert domains.rtps_ports(1)[:3] == [7650, 7651, 7660]
    assert max(domains.rtps_ports(domains.MAX_DOMAIN)) < 65536
    assert domains.own_port(domains.MAX_DOMAIN) < 65536
    for domain in (1, 50, domains.MAX_DOMAIN):
        port = domains.own_port(domain)
        assert port not in domains.rtps_ports(domain, participants=90)
        # inside the domain's own block of 250 ports, so no other domain's RTPS ports reach it
        assert 7400 + 250 * domain <= port < 7400 + 250 * (domain + 1)


def _lock_is_free(lock_dir, domain):
    """Whether a domain's lock file can be taken now: the lease's own test, without its port probe
    (another test worker's real experiment may use a domain's ports at any moment)."""
    with open(lock_dir / f"domain-{domain}.lock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def test_leases_held_at_once_are_distinct_and_released(tmp_path):
    with domains.lease_domain(tmp_path) as first, domains.lease_domain(tmp_path) as second:
        assert first != second
        assert not _lock_is_free(tmp_path, first) and not _lock_is_free(tmp_path, second)
    assert _lock_is_free(tmp_path, first) and _lock_is_free(tmp_path, second)


def test_lease_skips_a_domain_another_process_holds(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from perfgate.measure import domains\n"
         f"with domains.lease_domain(Path({str(tmp_path)!r})) as d:\n"
         "    print(d, flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        held = int(holder.stdout.readline())
        with domains.lease_domain(tmp_path) as mine:
            assert mine != held
    finally:
        holder.kill()
        holder.wait()
    assert _lock_is_free(tmp_path, held)  # the lock died with its process


def test_lease_skips_a_domain_whose_rtps_ports_are_in_use(tmp_path):
    with domains.lease_domain(tmp_path) as free:
        pass
    # a participant of another program in that domain: Fast DDS binds multicast ports with SO_REUSEADDR
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as participant:
        participant.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        participant.bind(("0.0.0.0", domains.rtps_ports(free)[0]))
        with domains.lease_domain(tmp_path) as leased:
            assert leased != free
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", domains.own_port(free)))
        listener.listen()
        with domains.lease_domain(tmp_path) as leased:
            assert leased != free


# --- command lines ------------------------------------------------------------------------------
def test_tcp_security_commands(tmp_path):
    sub = s.KNOWN_SUBEXPERIMENTS["interprocess_reliable_tcp_security"]
    options = options_for(tmp_path, payloads=[16, 64], pin_cpus=f"{min(os.sched_getaffinity(0))}")
    specs = commands.latency_commands(sub, options, Path("/h/perfgate-latency"), 7, tmp_path / "m.csv",
                                 tmp_path / "r.json", tmp_path / "sec")
    assert [spec.role for spec in specs] == ["publisher", "subscriber"]
    publisher, subscriber = (list(spec.argv) for spec in specs)

    def value(argv, option):
        return argv[argv.index(option) + 1]

    for argv in (publisher, subscriber):
        assert value(argv, "--transport") == "tcpv4"
        assert value(argv, "--reliability") == "reliable"
        assert value(argv, "--domain") == "7"
        assert value(argv, "--tcp-port") == str(7400 + 250 * 7 + 200)
        assert value(argv, "--security-dir") == str(tmp_path / "sec")
        assert value(argv, "--shm") == "off"
    assert value(publisher, "--security-name") == "publisher"
    assert value(subscriber, "--security-name") == "subscriber"
    assert value(publisher, "--payloads") == "16,64"
    assert value(publisher, "--samples") == "200"
    assert value(publisher, "--output") == str(tmp_path / "m.csv")
    assert "--output" not in subscriber and "--report" not in subscriber
    assert specs[0].measures and not specs[1].measures
    assert specs[0].cpus == specs[1].cpus == (min(os.sched_getaffinity(0)),)


def test_intraprocess_is_one_process_and_floor_is_server_then_client(tmp_path):
    options = options_for(tmp_path)
    specs = commands.latency_commands(s.KNOWN_SUBEXPERIMENTS["intraprocess_reliable"], options, Path("h"), 3,
                                 tmp_path / "m.csv", tmp_path / "r.json", None)
    assert [spec.role for spec in specs] == ["both"]
    assert "--security-dir" not in specs[0].argv and "--tcp-port" not in specs[0].argv
    floor = commands.floor_commands(s.KNOWN_SUBEXPERIMENTS["floor_tcp"], options, Path("f"), 9000, tmp_path / "m.csv")
    assert [spec.role for spec in floor] == ["server", "client"]
    assert floor[1].measures and "--output" in floor[1].argv and "--output" not in floor[0].argv
    assert floor[0].argv[floor[0].argv.index("--port") + 1] == "9000"


def test_only_a_failed_discovery_gets_a_second_attempt():
    assert subexperiment.worth_another_attempt(s.OUTCOME_INCOMPLETE, discovered=False, attempts=1)
    assert subexperiment.worth_another_attempt(s.OUTCOME_INCOMPLETE, discovered=False, attempts=2)
    assert not subexperiment.worth_another_attempt(s.OUTCOME_INCOMPLETE, discovered=False, attempts=3)
    assert not subexperiment.worth_another_attempt(s.OUTCOME_INCOMPLETE, discovered=True, attempts=1)  # died while measuring
    assert not subexperiment.worth_another_attempt(s.OUTCOME_FAILED_TO_START, discovered=False, attempts=1)
    assert not subexperiment.worth_another_attempt(s.OUTCOME_OK, discovered=True, attempts=1)
    # cut short by Ctrl-C, SIGTERM or a cancel before discovery: the run is ending, no fresh domain helps
    assert not subexperiment.worth_another_attempt(s.OUTCOME_INCOMPLETE, discovered=False, attempts=1, interrupted=True)


# --- shared memory left behind ------------------------------------------------------------------
def test_only_new_unheld_fastdds_files_of_the_run_are_removed(tmp_path):
    shm_dir = tmp_path / "shm"
    shm_dir.mkdir()
    (shm_dir / "fastrtps_port7661").write_bytes(b"x")  # there before the sub-experiment, in its domain
    before = shm.fastdds_shm_files(shm_dir)
    ours = ("fastrtps_port7660", "sem.fastrtps_port7660_mutex", "fastrtps_port7899_el",  # domain 1: 7650-7899
            "fast_datasharing_01.0f.aa", "fastrtps_5e9f1c2d3b4a6978", "fastrtps_5e9f1c2d3b4a6978_el")
    theirs = ("fastrtps_port7900", "fastrtps_port7649_sl", "fastrtps_0123456789abcdef", "fastdds_held")
    for name in (*ours, *theirs, "unrelated_segment"):
        (shm_dir / name).write_bytes(b"x")
    witness = shm.ShmWitness(shm_dir)
    # what the run's processes were seen holding: a pool and a segment (its lock file is its companion)
    with open(shm_dir / "fast_datasharing_01.0f.aa", "rb"), open(shm_dir / "fastrtps_5e9f1c2d3b4a6978", "rb"), \
            open(shm_dir / "fastdds_held", "rb"):
        witness.look([os.getpid()])
    held = open(shm_dir / "fastdds_held", "rb")  # still held by a live process (this one): never removed
    try:
        removed = shm.remove_orphaned_shm(before, witness, [1])
    finally:
        held.close()
    assert removed == sorted(ours)
    assert sorted(p.name for p in shm_dir.iterdir()) == sorted(("fastrtps_port7661", *theirs, "unrelated_segment"))


def test_segment_stems_and_domain_port_files():
    assert shm.segment_stem("sem.fastrtps_port7411_mutex") == "fastrtps_port7411"
    assert shm.segment_stem("fastrtps_48e8f2cb08a689c6_el") == "fastrtps_48e8f2cb08a689c6"
    assert shm.segment_stem("fastdds_port7411_sl") == "fastdds_port7411"
    assert shm.segment_stem("fast_datasharing_01.0f.aa") == "fast_datasharing_01.0f.aa"
    assert shm.is_port_file_of("fastrtps_port7400", [0]) and shm.is_port_file_of("fastrtps_port7649_el", [0])
    assert not shm.is_port_file_of("fastrtps_port7650", [0]) and shm.is_port_file_of("fastrtps_port7650", [0, 1])
    assert not shm.is_port_file_of("fastrtps_48e8f2cb08a689c6", [0, 1])


def test_a_mapped_file_counts_as_held(tmp_path):
    import mmap

    shm_dir = tmp_path / "shm"
    shm_dir.mkdir()
    path = shm_dir / "fastrtps_mapped"
    path.write_bytes(b"\0" * 4096)
    witness = shm.ShmWitness(shm_dir)
    with open(path, "r+b") as handle:
        mapping = mmap.mmap(handle.fileno(), 4096)
    try:  # the file is closed, only mapped, as a Fast DDS segment is
        assert "fastrtps_mapped" in shm.shm_files_in_use(shm_dir)
        witness.look([os.getpid()])
        assert witness.stems == {"fastrtps_mapped"}
        assert shm.remove_orphaned_shm(set(), witness, [0]) == []
    finally:
        mapping.close()
    assert shm.remove_orphaned_shm(set(), witness, [0]) == ["fastrtps_mapped"]


# --- what the harness measured ------------------------------------------------------------------
def write_raw(path: Path, rows: list[tuple[int, int, float]]) -> Path:
    frame = pd.DataFrame(rows, columns=list(s.RAW_COLUMNS))
    files.write_csv(path, frame)
    return path


def test_only_complete_payloads_are_kept(tmp_path):
    rows = [(i, 16, 10.0 + i) for i in range(1, 4)] + [(i, 32, 20.0 + i) for i in range(1, 4)] + [(1, 64, 30.5), (2, 64, 31.5)]
    csv = write_raw(tmp_path / "m.csv", rows)
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"payloads": {"16": {"samples": 3, "lost": 0}, "32": {"samples": 3, "lost": 2},
                                               "64": {"samples": 2, "lost": 0}}}))
    measured = subexperiment.read_measured(csv, report, (16, 32, 64, 128), 3, "reliable")
    assert measured.frame[s.PAYLOAD].tolist() == [16, 16, 16, 32, 32, 32]
    assert measured.frame[s.LATENCY].tolist() == [11.0, 12.0, 13.0, 21.0, 22.0, 23.0]
    assert measured.counts == {16: 3, 32: 3, 64: 2, 128: 0}
    assert measured.lost == {16: 0, 32: 2, 64: 0}
    assert measured.problem == "payloads without all their samples: 64 B (2 of 3), 128 B (0 of 3)"
    assert subexperiment.median_first_payload(measured.frame) == (16, 12.0)


def test_missing_or_malformed_csv_is_a_problem_not_a_crash(tmp_path):
    assert subexperiment.read_measured(tmp_path / "none.csv", None, (16,), 3, "reliable").problem == "the harness wrote no measurements"
    bad = tmp_path / "bad.csv"
    bad.write_text("Sample,Payload [Bytes],Latency [us]\n1,16,abc\n2,16,1.0\n")
    measured = subexperiment.read_measured(bad, None, (16,), 2, "reliable")
    assert measured.frame is None
    assert measured.problem.startswith("the harness wrote a malformed CSV:") and "abc" in measured.problem


def test_outcome_classification():
    whole = subexperiment.Measured(None, {16: 3}, {}, None)
    short = subexperiment.Measured(None, {16: 1}, {}, "payloads without all their samples: 16 B (1 of 3)")
    assert subexperiment.classify(supervision.Supervision(s.OUTCOME_OK), whole) == (s.OUTCOME_OK, None)
    assert subexperiment.classify(supervision.Supervision(s.OUTCOME_OK), short) == (s.OUTCOME_INCOMPLETE, short.problem)
    died = supervision.Supervision(s.OUTCOME_INCOMPLETE, "the subscriber was killed by SIGKILL during the measurement")
    assert subexperiment.classify(died, short) == (s.OUTCOME_INCOMPLETE, died.error)


# --- the real Fast DDS --------------------------------------------------------------------------
def installed_fastdds_version() -> str:
    """The version of the Fast DDS headers the harness is built against (Debian's libfastrtps-dev)."""
    # Debian puts the generated config.h under the multiarch include folder
    config = next(Path("/usr/include").glob("*/fastrtps/config.h"), Path("/usr/include/fastrtps/config.h")).read_text()
    return config.split('#define FASTRTPS_VERSION_STR "', 1)[1].split('"', 1)[0]


def perfgate_run(*arguments: str, environment: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "perfgate.cli", "run", *arguments], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=environment)



def assert_complete_raw_csv(path: Path, payloads: tuple[int, ...], samples: int) -> None:
    raw = files.read_raw(path)  # the contract's validation
    assert len(raw) == samples * len(payloads)
    assert raw[s.PAYLOAD].drop_duplicates().tolist() == list(payloads)
    assert (raw.groupby(s.PAYLOAD).size() == samples).all()
    assert (raw[s.LATENCY] > 0).all()
    header, first = path.read_text().splitlines()[:2]
    assert header == ",".join(s.RAW_COLUMNS)
    assert len(first.split(",")[2].split(".")[1]) == 3


@pytest.mark.fastdds
def test_quick_run_of_the_default_set(harness_paths, tmp_path):
    from perfgate.measure import platform_info

    output = tmp_path / "out"
    started = time.time()
    process = perfgate_run("--samples", "200", "--output", str(output))
    stdout, stderr = process.communicate(timeout=600)
    elapsed = time.time() - started
    assert process.returncode == 0, stderr

    names = list(s.DEFAULT_SUBEXPERIMENT_NAMES) + list(s.FLOOR_SUBEXPERIMENT_NAMES)
    assert sorted(p.name for p in output.iterdir()) == sorted([s.raw_csv_name(n) for n in names] + [s.METADATA_FILE]
                                                              + [s.resources_csv_name(n) for n in names])
    for name in names:
        assert_complete_raw_csv(output / s.raw_csv_name(name), s.PAYLOADS, 200)

    progress = [line for line in stdout.splitlines() if line.startswith("[")]
    assert len(progress) == 12 and progress[0].startswith("[1/12] intraprocess_best_effort: ok, median ")

    metadata = files.read_metadata(output)
    assert metadata["fastdds"] == {"version": installed_fastdds_version(), "commit": None,
                                        "source": s.FASTDDS_SOURCE_SYSTEM, "prefix": "/usr"}
    assert metadata["fastdds"]["version"] == "2.9.1"
    assert metadata["latency_definition"] == s.ROUND_TRIP
    assert metadata["harness"]["name"] == "perfgate-latency" and metadata["harness"]["warmup"] == 100
    assert metadata["samples"] == 200 and metadata["payloads"] == list(s.PAYLOADS)
    assert metadata["label"] == "out" and metadata["created_utc"].endswith("Z")
    assert metadata["requested_subexperiments"] == names
    assert sorted(metadata["subexperiments"]) == sorted(names)
    for name, entry in metadata["subexperiments"].items():
        assert entry["outcome"] == s.OUTCOME_OK, (name, entry)
        assert entry["error"] is None
        assert entry["measured_samples"] == {str(p): 200 for p in s.PAYLOADS}
        assert entry["duration_s"] < elapsed
    platform = metadata["platform"]
    assert platform["id"] == platform_info.this_machine().id
    assert {"cpu_model", "cores", "kernel", "governor", "hostname", "state", "warnings"} <= set(platform)
    assert len(metadata["load_average"]["before"]) == len(metadata["load_average"]["after"]) == 3
    expected_pin = platform_info.choose_pinned_cpus(platform_info.pinnable_cpus(), platform_info.isolated_cpus())
    assert metadata["cpu_pinning"] == {"pinned": expected_pin is not None, "requested": s.PIN_AUTO,
                                       "publisher_cpu": expected_pin[0] if expected_pin else None,
                                       "subscriber_cpu": expected_pin[1] if expected_pin else None}
    assert metadata["cpu_latency"] == {"requested": "system", "held_us": None, "idle_driver": cpu_latency.idle_driver()}
    assert metadata["interrupted"] is False
    assert live_processes_of(metadata["run_id"]) == []


def intervals_overlap(first: dict, second: dict) -> bool:
    def interval(entry):
        start = pd.Timestamp(entry["started_utc"]).timestamp()
        return start, start + entry["duration_s"]

    (a0, a1), (b0, b1) = interval(first), interval(second)
    return a0 < b1 and b0 < a1


@pytest.mark.fastdds
def test_two_runs_at_once_both_succeed(harness_paths, tmp_path):
    subs = "interprocess_reliable_tcp,interprocess_best_effort,floor_tcp"
    common = ["--samples", "300", "--payloads", "16,1024,8192", "--subexperiments", subs,
              "--harness", str(harness_paths.latency)]
    runs = [perfgate_run(*common, "--output", str(tmp_path / name)) for name in ("a", "b")]
    results = [process.communicate(timeout=300) for process in runs]
    for process, (_, stderr) in zip(runs, results):
        assert process.returncode == 0, stderr
    entries = [files.read_metadata(tmp_path / name)["subexperiments"] for name in ("a", "b")]
    overlapping = 0
    for name in subs.split(","):
        for folder in ("a", "b"):
            assert_complete_raw_csv(tmp_path / folder / s.raw_csv_name(name), (16, 1024, 8192), 300)
        for other in subs.split(","):
            if intervals_overlap(entries[0][name], entries[1][other]):
                overlapping += 1
                assert entries[0][name]["domain"] != entries[1][other]["domain"]
                if entries[0][name]["port"] is not None and entries[1][other]["port"] is not None:
                    assert entries[0][name]["port"] != entries[1][other]["port"]
    assert overlapping > 0  # they really ran at the same time


def role_processes(run_id: str) -> dict[str, int]:
    """role -> pid of the run's live harness processes."""
    roles = {}
    for pid in live_processes_of(run_id):
        try:
            arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--role" in arguments:
            roles[arguments[arguments.index(b"--role") + 1].decode()] = pid
    return roles


def thread_affinities(pid: int) -> set[str]:
    """Cpus_allowed_list of every thread of a process (Fast DDS starts several)."""
    found = set()
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        for line in status.read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                found.add(line.split(":", 1)[1].strip())
    return found


@pytest.mark.fastdds
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning publisher and subscriber apart needs two CPUs")
@pytest.mark.parametrize("explicit", [True, False], ids=["pin-cpus given", "auto by default"])
def test_pinned_publisher_and_subscriber_run_on_their_cpus(harness_paths, tmp_path, explicit):
    from perfgate.measure import platform_info

    if explicit:
        publisher_cpu, subscriber_cpu = sorted(os.sched_getaffinity(0))[:2]
        pin_option = ["--pin-cpus", f"{publisher_cpu},{subscriber_cpu}"]
    else:  # the default pins to two distinct CPUs, isolated ones first
        publisher_cpu, subscriber_cpu = platform_info.choose_pinned_cpus(platform_info.pinnable_cpus(),
                                                                         platform_info.isolated_cpus())
        pin_option = []
    assert publisher_cpu != subscriber_cpu
    output = tmp_path / "out"
    process = perfgate_run("--samples", "20000", "--payloads", "16,64", "--subexperiments", "interprocess_reliable",
                           *pin_option, "--harness", str(harness_paths.latency), "--output", str(output))
    affinities = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None and len(affinities) < 2:
        metadata = files.read_metadata(output) if (output / s.METADATA_FILE).exists() else None
        if metadata is not None:
            for role, pid in role_processes(metadata["run_id"]).items():
                time.sleep(0.3)  # let the participant start its threads
                try:
                    affinities[role] = thread_affinities(pid)
                except OSError:
                    pass
        time.sleep(0.05)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert affinities == {"publisher": {str(publisher_cpu)}, "subscriber": {str(subscriber_cpu)}}
    assert files.read_metadata(output)["cpu_pinning"] == {
        "pinned": True, "publisher_cpu": publisher_cpu, "subscriber_cpu": subscriber_cpu,
        "requested": pin_option[1] if explicit else s.PIN_AUTO}


# --- zero copy ---------------------------------------------------------------------------------------
def test_zero_copy_sub_experiments_ask_for_data_sharing_and_loans(tmp_path):
    options = options_for(tmp_path, subexperiments=["interprocess_reliable_zero_copy", "interprocess_reliable_shm"])
    for sub in options.subexperiments:
        for spec in commands.latency_commands(sub, options, Path("/h"), 3, tmp_path / "m.csv", tmp_path / "r.json", None):
            argv = list(spec.argv)
            assert argv[argv.index("--shm") + 1] == "on"
            assert argv[argv.index("--data-sharing") + 1] == ("on" if sub.zero_copy else "off")
            assert ("--loans" in argv) == sub.zero_copy and (not sub.zero_copy or argv[argv.index("--loans") + 1] == "on")
            if sub.zero_copy:  # both sides size the plain type by the largest payload: one type name
                assert argv[argv.index("--payloads") + 1] == ",".join(map(str, options.payloads))


@pytest.mark.fastdds
def test_zero_copy_runs_with_loans_on_the_real_fastdds(harness_paths, tmp_path):
    output = tmp_path / "zc"
    subs = ["interprocess_best_effort_zero_copy", "interprocess_reliable_zero_copy"]
    # payloads below the default largest: the subscriber must size its type like the publisher (it did not)
    completed = subprocess.run([sys.executable, "-m", "perfgate.cli", "run", "--output", str(output), "--samples", "200",
                                "--payloads", "16,1024", "--subexperiments", ",".join(subs),
                                "--harness", str(harness_paths.latency)], capture_output=True, text=True)
    assert completed.returncode == s.EXIT_OK, completed.stderr
    metadata = files.read_metadata(output)
    for sub in subs:
        entry = metadata["subexperiments"][sub]
        # the harness reports that every sample it wrote was loaned from Fast DDS
        assert entry["zero_copy"] == {"data_sharing": True, "loans_used": True}
        assert entry["transport"] == "shm" and entry["exit_codes"] == {"publisher": 0, "subscriber": 0}
        raw = files.read_raw(output / s.raw_csv_name(sub))
        assert raw.groupby(s.PAYLOAD).size().to_dict() == {16: 200, 1024: 200}
