"""How the real harness processes end: the floor's UDP goodbye, and SIGTERM/SIGINT on perfgate-latency.

`perfgate run` stops a publisher whose peer died with SIGTERM (SIGKILL 2 s later): the harness must
then write the payloads it completed and exit 3 at once. The floor's client must exit 0 whenever
every sample was measured, however its server leaves.
"""
from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time

import pytest

from perfgate import files
from perfgate.measure import domains
from perfgate.measure import environment as run_environment
from perfgate import schema as s

FLOOR_RUNS = 30
STOP_LIMIT_S = 2.0  # latency/run.py's grace between SIGTERM and SIGKILL
SAMPLES = 20000  # a payload takes about a second over udpv4 here: long enough to stop in the middle
PAYLOADS = (16, 32, 64, 128)


class LineReader:
    """A process's stdout, line by line, read by a thread so that waiting for a line has a deadline."""

    def __init__(self, process: subprocess.Popen):
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, text: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            assert line is not None, f"the process ended before printing {text!r}: {self.seen}"
            self.seen.append(line)
            if line.endswith(text):
                return

    def rest(self) -> list[str]:
        self._thread.join(timeout=10)
        while True:
            line = self.lines.get_nowait()
            if line is None:
                return self.seen
            self.seen.append(line)


def harness_environment() -> dict[str, str]:
    environment, _ = run_environment.scrub_environment(os.environ)
    return environment


@contextlib.contextmanager
def started(*argv: str):
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=harness_environment())
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


# --- the floor's goodbye ------------------------------------------------------------------------
@pytest.mark.fastdds
@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_the_floor_client_exits_0_every_time_its_samples_were_measured(harness_paths, transport):
    """The client says goodbye; the server leaving right after must never turn a full run into a failure."""
    failures = []
    with domains.lease_domain() as domain:
        port = str(domains.own_port(domain))
        for attempt in range(FLOOR_RUNS):
            with started(str(harness_paths.floor), "--role", "server", "--transport", transport,
                         "--port", port) as server:
                assert server.stdout.readline().strip() == "perfgate-floor: ready"
                client = subprocess.run([str(harness_paths.floor), "--role", "client", "--transport", transport,
                                         "--port", port, "--samples", "50", "--warmup", "5", "--payloads", "16"],
                                        capture_output=True, text=True, timeout=30)
                server_code = server.wait(timeout=5)
            if client.returncode != 0 or server_code != 0 or client.stderr:
                failures.append((attempt, client.returncode, server_code, client.stderr.strip()))
    assert failures == []


@pytest.mark.fastdds
def test_the_floor_in_one_process_exits_0_every_time(harness_paths, tmp_path):
    with domains.lease_domain() as domain:
        for attempt in range(FLOOR_RUNS):
            csv = tmp_path / f"floor-{attempt}.csv"
            both = subprocess.run([str(harness_paths.floor), "--role", "both", "--transport", "udp",
                                   "--port", str(domains.own_port(domain)), "--samples", "50", "--warmup", "5",
                                   "--payloads", "16", "--output", str(csv)],
                                  capture_output=True, text=True, timeout=30)
            assert (both.returncode, both.stderr) == (0, "")
            assert len(files.read_raw(csv)) == 50


# --- SIGTERM and SIGINT on perfgate-latency ----------------------------------------------------
def latency_argv(harness_paths, domain: int, role: str, *extra: str) -> list[str]:
    return [str(harness_paths.latency), "--role", role, "--transport", "udpv4", "--domain", str(domain),
            "--discovery-timeout-s", "10", *extra]


def announced_payloads(stdout: list[str]) -> list[int]:
    """The payloads the publisher said it measured completely ("payload 16 measured (...)")."""
    prefix = "perfgate-latency: payload "
    return [int(line[len(prefix):].split()[0]) for line in stdout if line.startswith(prefix) and " measured " in line]


@pytest.mark.fastdds
@pytest.mark.parametrize("signum, peer_alive", [(signal.SIGTERM, True), (signal.SIGTERM, False),
                                                (signal.SIGINT, True)])
def test_a_stopped_publisher_writes_the_payloads_it_completed(harness_paths, tmp_path, signum, peer_alive):
    """Stopped in the middle of the second payload (its subscriber still echoing, or killed as in
    `perfgate run`'s fault handling): exit 3 within 2 s, the CSV and report hold exactly the payloads
    completed, each with every sample, and the report says why it is incomplete."""
    csv, report = tmp_path / "measurements.csv", tmp_path / "report.json"
    with domains.lease_domain() as domain, \
            started(*latency_argv(harness_paths, domain, "publisher", "--samples", str(SAMPLES), "--warmup", "10",
                                  "--payloads", ",".join(map(str, PAYLOADS)), "--output", str(csv),
                                  "--report", str(report))) as publisher:
        stdout = LineReader(publisher)
        stdout.wait_for(": ready", 20)
        with started(*latency_argv(harness_paths, domain, "subscriber")) as subscriber:
            stdout.wait_for(": matched", 20)
            stdout.wait_for(f"payload {PAYLOADS[0]} measured ({SAMPLES} samples, 0 lost)", 60)
            if not peer_alive:
                subscriber.kill()
                time.sleep(0.5)  # pongs stop: the publisher now waits on lost samples
            signalled = time.monotonic()
            publisher.send_signal(signum)
            code = publisher.wait(timeout=10)
            stopped_after = time.monotonic() - signalled
        stderr = publisher.stderr.read()

    completed = announced_payloads(stdout.rest())
    assert code == s.EXIT_INCOMPLETE, stderr
    assert stopped_after < STOP_LIMIT_S
    assert stderr.strip().splitlines()[-1] == "perfgate-latency: interrupted by signal"
    assert completed[0] == PAYLOADS[0] and completed == list(PAYLOADS[:len(completed)])
    assert len(completed) < len(PAYLOADS), "the run ended before the signal: nothing was cut short"
    raw = files.read_raw(csv)
    assert raw[s.PAYLOAD].value_counts(sort=False).to_dict() == {p: SAMPLES for p in completed}
    written = json.loads(report.read_text())
    assert (written["complete"], written["error"], written["matched"]) == (False, "interrupted by signal", True)
    assert written["payloads"] == {str(p): {"samples": SAMPLES, "lost": 0} for p in completed}


@pytest.mark.fastdds
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_subscriber_exits_3_at_once(harness_paths, signum):
    with domains.lease_domain() as domain, started(*latency_argv(harness_paths, domain, "subscriber")) as subscriber:
        stdout = LineReader(subscriber)
        stdout.wait_for(": ready", 20)  # waiting for a publisher that never comes
        signalled = time.monotonic()
        subscriber.send_signal(signum)
        code = subscriber.wait(timeout=10)
        stopped_after = time.monotonic() - signalled
        stderr = subscriber.stderr.read()
    assert code == s.EXIT_INCOMPLETE
    assert stopped_after < STOP_LIMIT_S
    assert stderr.strip().splitlines()[-1] == "perfgate-latency: interrupted by signal (subscriber on udpv4)"

