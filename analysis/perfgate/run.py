"""run: measure every selected sub-experiment with the native harness and write the raw CSVs.

For each sub-experiment the run leases a DDS domain (a lock file per domain plus a probe that the
domain's RTPS ports are free), starts the harness processes in their own process groups with an
environment scrubbed of every Fast DDS variable, watches them (a peer that dies or stops, a
discovery that never completes, a time limit), kills what is left, removes the shared-memory
segments its processes left behind, and keeps the payloads that finished. metadata.json is
rewritten after every sub-experiment, so an interrupted run still says what it measured.

Pure parts: option validation, environment scrubbing, the harness command lines, the port layout,
outcome classification and the metadata. The rest is process and file plumbing around them.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping

import pandas as pd

from . import __version__, cpu_latency
from . import files
from . import harness as native_harness
from . import platform_info, scratch
from . import schema as s
from .errors import IncompleteError, InputError
from .harness import HarnessPaths

READY_LINE = "ready"
MATCHED_LINE = "matched"

# The default run: the ten of the contract, then the machine's floor (plain sockets), so that every
# report can say how much of the latency is Fast DDS and how much the machine. `check` only checks
# what the requirements list, so the floor is measured but never gated.
DEFAULT_RUN_SUBEXPERIMENTS: tuple[str, ...] = s.DEFAULT_SUBEXPERIMENT_NAMES + s.FLOOR_SUBEXPERIMENT_NAMES
DEFAULT_WARMUP = 100

# Time limits. A sub-experiment's default limit is a fixed allowance for start-up and discovery
# plus a budget per round trip far above any loopback round trip (even 16 KiB over TCP with
# security stays well under a millisecond), so only a hang reaches it.
STARTUP_ALLOWANCE_S = 60.0
ROUND_TRIP_BUDGET_S = 0.002
READY_TIMEOUT_S = 20.0  # a harness process prints "ready" once its participant (or socket) exists
DISCOVERY_TIMEOUT_S = 10  # passed to the harness, which reports the failure itself (exit 3)
DISCOVERY_WATCHDOG_S = DISCOVERY_TIMEOUT_S + 5.0  # ours, in case the harness does not
DISCOVERY_ATTEMPTS = 3  # a sub-experiment whose peers never matched is tried again, in a fresh domain
SAMPLE_TIMEOUT_MS = 1000  # one round trip waiting longer than this counts as lost
PEER_GRACE_S = 3.0  # after a peer died: time for the measuring side to write what finished
TERMINATE_GRACE_S = 2.0  # between SIGTERM and SIGKILL
STOPPED_LIMIT_S = 1.0  # a process stopped (SIGSTOP, state T) this long is hung
POLL_S = 0.05
INTERRUPTED = "interrupted"  # the error of a sub-experiment cut short by Ctrl-C, SIGTERM or a cancel

# Every variable Fast DDS reads to change its configuration behind the command line's back.
FASTDDS_ENV_PREFIXES = ("FASTRTPS_", "FASTDDS_")
FASTDDS_ENV_NAMES = ("SKIP_DEFAULT_XML", "ROS_DISCOVERY_SERVER", "ROS_SUPER_CLIENT")
CHILD_ENV = {"SKIP_DEFAULT_XML": "1"}  # and no DEFAULT_FASTRTPS_PROFILES.xml from any folder
RUN_ID_ENV = "PERFGATE_RUN_ID"  # marks the run's processes, so a leftover one can be found

# RTPS well-known ports (DDSI-RTPS 9.6.1.1): PB + DG*domain + offset (+ PG*participant for unicast).
RTPS_PORT_BASE = 7400
RTPS_DOMAIN_GAIN = 250
RTPS_PARTICIPANT_GAIN = 2
RTPS_OFFSETS_MULTICAST = (0, 1)  # d0 metatraffic, d2 user traffic
RTPS_OFFSETS_UNICAST = (10, 11)  # d1 metatraffic, d3 user traffic
PROBED_PARTICIPANTS = 4
# The run's own TCP port sits in its domain's block of 250 ports, beyond any port RTPS gives to the
# first 90 participants of that domain: holding the domain's lock reserves it too.
OWN_PORT_OFFSET = 200
MAX_DOMAIN = (65535 - RTPS_PORT_BASE - OWN_PORT_OFFSET) // RTPS_DOMAIN_GAIN  # 231: own port < 65536
LOCK_DIR = Path(tempfile.gettempdir()) / "perfgate-domains"

# Shared-memory files Fast DDS creates: SHM transport segments, their mutexes and lock files,
# and data-sharing pools.
SHM_DIR = Path("/dev/shm")
SHM_PREFIXES = ("fastrtps_", "fastdds_", "fast_datasharing_", "sem.fastrtps_", "sem.fastdds_", "sem.fast_datasharing_")


# --- options ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunOptions:
    output: Path
    label: str
    samples: int
    payloads: tuple[int, ...]
    subexperiments: tuple[s.SubExperiment, ...]
    warmup: int
    timeout_s: float
    pin_cpus: tuple[int, int] | None  # (publisher's CPU, subscriber's CPU)
    pin_request: str  # as asked: auto, none, or the CPUs
    harness: Path | None
    fastdds_prefix: Path | None
    # sub-experiment -> ns the echoing side busy-waits before each echo (perfgate ab --inject-delay-ns)
    echo_delay_ns: Mapping[str, int] = field(default_factory=dict)
    cpu_latency: str = cpu_latency.LATENCY_SYSTEM  # awake: idle CPUs kept polling while measuring (cpu_latency.py)


def default_timeout(samples: int, warmup: int, payloads: int) -> float:
    return STARTUP_ALLOWANCE_S + (samples + warmup) * payloads * ROUND_TRIP_BUDGET_S


def parse_pin_cpus(text: str | None, allowed: set[int], isolated: list[int] | None = None) -> tuple[int, int] | None:
    """--pin-cpus -> (publisher's CPU, subscriber's CPU), or None for not pinned.

    "auto" (the default, also for None): two distinct CPUs, isolated ones first, when the machine
    has two (unpinned, publisher and subscriber share a CPU in some runs and not in others, the
    largest noise source measured here); "none": not pinned; "PUB,SUB" or one CPU for both.
    """
    text = s.PIN_AUTO if text is None else str(text).strip()
    if text == s.PIN_NONE:
        return None
    if text == s.PIN_AUTO:
        pin = platform_info.choose_pinned_cpus(allowed, isolated if isolated is not None else [])
        if pin is not None and shutil.which("taskset") is None:
            return None  # auto never fails a run: it pins where it can
        return pin
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not 1 <= len(parts) <= 2 or not all(p.isdigit() for p in parts):
        raise InputError(f"--pin-cpus takes auto, none, or one or two CPU numbers (PUB,SUB), got {text!r}")
    cpus = [int(p) for p in parts]
    unavailable = [c for c in cpus if c not in allowed]
    if unavailable:
        raise InputError(f"--pin-cpus: CPU {unavailable[0]} is not available to this process "
                         f"(available: {','.join(map(str, sorted(allowed)))})")
    if shutil.which("taskset") is None:
        raise InputError("--pin-cpus needs taskset (util-linux), which is not on PATH")
    return (cpus[0], cpus[-1])


def machine_pin_cpus(text: str | None) -> tuple[int, int] | None:
    """parse_pin_cpus on this machine's CPUs."""
    return parse_pin_cpus(text, platform_info.pinnable_cpus(), platform_info.isolated_cpus())


def cpu_pinning_metadata(pin: tuple[int, int] | None, requested: str | None = None) -> dict:
    return {"pinned": pin is not None, "publisher_cpu": pin[0] if pin else None,
            "subscriber_cpu": pin[1] if pin else None,
            "requested": s.PIN_AUTO if requested is None else str(requested)}


def check_output_folder(output: Path) -> None:
    if output.exists() and not output.is_dir():
        raise InputError("output is a file, not a folder", output)
    if output.is_dir() and any(output.iterdir()):
        raise InputError("output folder is not empty (a run writes a fresh experiment folder)", output)


def resolve_options(*, output, samples, payloads, subexperiments, label, warmup, harness,
                    fastdds_prefix, pin_cpus, timeout, cpu_latency_request=None) -> RunOptions:
    """Validate the command line; InputError (exit 2) before anything is built or written."""
    output = Path(output)
    check_output_folder(output)
    names = list(subexperiments) if subexperiments else list(DEFAULT_RUN_SUBEXPERIMENTS)
    unknown = [n for n in names if n not in s.KNOWN_SUBEXPERIMENTS]
    if unknown:
        raise InputError(f"unknown sub-experiment {unknown[0]!r}; known: {', '.join(s.KNOWN_SUBEXPERIMENTS)}")
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InputError(f"sub-experiment {duplicated[0]!r} is named twice")
    payloads = tuple(payloads) if payloads else s.PAYLOADS
    if len(set(payloads)) != len(payloads):
        raise InputError(f"--payloads names a payload twice: {','.join(map(str, payloads))}")
    if samples is None or samples < 2:
        raise InputError(f"--samples must be at least 2 (a payload needs two samples), got {samples}")
    warmup = DEFAULT_WARMUP if warmup is None else int(warmup)
    if warmup < 0:
        raise InputError(f"--warmup must be zero or more, got {warmup}")
    if timeout is not None and not float(timeout) > 0:  # 0 is not "no limit": refused, never quietly replaced
        raise InputError(f"--timeout must be more than zero seconds, got {timeout}")
    if harness is not None and not Path(harness).is_file():
        raise InputError("harness executable not found", harness)
    if fastdds_prefix is not None and not Path(fastdds_prefix).is_dir():
        raise InputError("Fast DDS prefix is not a folder", fastdds_prefix)
    return RunOptions(
        output=output,
        label=label if label else output.resolve().name,
        samples=int(samples),
        payloads=payloads,
        subexperiments=tuple(s.KNOWN_SUBEXPERIMENTS[n] for n in names),
        warmup=warmup,
        timeout_s=float(timeout) if timeout is not None else default_timeout(samples, warmup, len(payloads)),
        pin_cpus=machine_pin_cpus(pin_cpus),
        pin_request=s.PIN_AUTO if pin_cpus is None else str(pin_cpus),
        harness=Path(harness).resolve() if harness is not None else None,
        fastdds_prefix=Path(fastdds_prefix).resolve() if fastdds_prefix is not None else None,
        cpu_latency=cpu_latency.parse_request(cpu_latency_request),
    )


# --- environment --------------------------------------------------------------------------------
def is_fastdds_variable(name: str) -> bool:
    return name.startswith(FASTDDS_ENV_PREFIXES) or name in FASTDDS_ENV_NAMES


def scrub_environment(environment: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """(the children's environment, the NAMES of the Fast DDS variables left out: a value may be a secret)."""
    ignored = sorted(k for k in environment if is_fastdds_variable(k))
    clean = {k: v for k, v in environment.items() if not is_fastdds_variable(k)}
    clean.update(CHILD_ENV)
    return clean, ignored


# --- domains and ports --------------------------------------------------------------------------
def rtps_ports(domain: int, participants: int = PROBED_PARTICIPANTS) -> list[int]:
    """The well-known RTPS ports of a domain's first participants (multicast and unicast)."""
    base = RTPS_PORT_BASE + RTPS_DOMAIN_GAIN * domain
    ports = [base + offset for offset in RTPS_OFFSETS_MULTICAST]
    for participant in range(participants):
        ports.extend(base + offset + RTPS_PARTICIPANT_GAIN * participant for offset in RTPS_OFFSETS_UNICAST)
    return ports


def own_port(domain: int) -> int:
    """The TCP (or floor) port of a run in this domain."""
    return RTPS_PORT_BASE + RTPS_DOMAIN_GAIN * domain + OWN_PORT_OFFSET


def port_is_free(port: int, kind: int) -> bool:
    # No SO_REUSEADDR: the bind fails while any socket (even a reusing one, even TIME_WAIT) holds it.
    with socket.socket(socket.AF_INET, kind) as probe:
        try:
            probe.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def domain_is_free(domain: int) -> bool:
    return all(port_is_free(p, socket.SOCK_DGRAM) for p in rtps_ports(domain)) and all(
        port_is_free(own_port(domain), kind) for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM)
    )


@contextlib.contextmanager
def lease_domain(lock_dir: Path = LOCK_DIR) -> Iterator[int]:
    """A domain no other perfgate run holds and no other participant uses, locked while in use.

    flock locks vanish with the process that holds them, so a killed run never blocks a domain.
    """
    lock_dir.mkdir(mode=0o777, parents=True, exist_ok=True)
    for domain in range(1, MAX_DOMAIN + 1):
        handle = os.open(lock_dir / f"domain-{domain}.lock", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            continue
        try:
            if domain_is_free(domain):
                yield domain
                return
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            os.close(handle)
    raise IncompleteError(f"no free DDS domain: every domain 1..{MAX_DOMAIN} is locked or its RTPS ports are in use")


# --- the harness command lines ------------------------------------------------------------------
@dataclass(frozen=True)
class ProcessSpec:
    """One harness process: started in list order, each after the previous printed "ready"."""

    role: str
    argv: tuple[str, ...]
    measures: bool  # writes the CSV and the report; the sub-experiment ends when it does
    cpus: tuple[int, ...] | None = None
    expects_match: bool = True  # prints "matched" once discovery completed
    pass_fds: tuple[int, ...] = ()  # inherited descriptors (the turn-taking socket)


@dataclass(frozen=True)
class Turns:
    """Measuring in turns with another build's publisher (perfgate ab, turns.hpp in the harness):
    this side's end of the socket pair, the recorded round trips per turn, and the unrecorded ones
    that begin each turn after the payload's first."""

    socket: int
    samples: int
    warmup: int = 0


def _payload_text(payloads: tuple[int, ...]) -> str:
    return ",".join(str(p) for p in payloads)


def latency_commands(sub: s.SubExperiment, options: RunOptions, harness: Path, domain: int,
                     csv: Path, report: Path, security_dir: Path | None, turns: Turns | None = None) -> list[ProcessSpec]:
    """perfgate-latency: one "both" process for intra-process delivery, else publisher then subscriber."""
    common = [
        str(harness),
        "--transport", sub.transport,
        "--reliability", sub.reliability,
        "--domain", str(domain),
        "--shm", "on" if sub.transport == "shm" else "off",
        "--data-sharing", "off",
        "--discovery-timeout-s", str(DISCOVERY_TIMEOUT_S),
        "--sample-timeout-ms", str(SAMPLE_TIMEOUT_MS),
    ]
    if sub.transport == "tcpv4":
        common += ["--tcp-port", str(own_port(domain))]
    measuring = [
        "--samples", str(options.samples),
        "--warmup", str(options.warmup),
        "--payloads", _payload_text(options.payloads),
        "--output", str(csv),
        "--report", str(report),
    ]
    fds: tuple[int, ...] = ()
    if turns is not None:
        measuring += ["--take-turns", str(turns.socket), "--turn-samples", str(turns.samples),
                      "--turn-warmup", str(turns.warmup)]
        fds = (turns.socket,)
    pin = options.pin_cpus

    def security(name: str) -> list[str]:
        return ["--security-dir", str(security_dir), "--security-name", name] if security_dir else []

    delay = options.echo_delay_ns.get(sub.name, 0)
    echo_delay = ["--echo-delay-ns", str(delay)] if delay else []
    if sub.transport == "intraprocess":
        return [ProcessSpec("both", tuple(common + ["--role", "both"] + measuring + echo_delay),
                            measures=True, cpus=tuple(sorted(set(pin))) if pin else None, pass_fds=fds)]
    return [
        ProcessSpec("publisher", tuple(common + ["--role", "publisher", "--subscribers", "1"] + measuring
                                       + security("publisher")),
                    measures=True, cpus=(pin[0],) if pin else None, pass_fds=fds),
        ProcessSpec("subscriber", tuple(common + ["--role", "subscriber", "--subscriber-index", "0", "--echo", "on"]
                                        + echo_delay + security("subscriber")),
                    measures=False, cpus=(pin[1],) if pin else None),
    ]


def floor_commands(sub: s.SubExperiment, options: RunOptions, harness: Path, port: int,
                   csv: Path) -> list[ProcessSpec]:
    """perfgate-floor: the echoing server first (it must listen), then the measuring client."""
    common = [str(harness), "--transport", sub.transport, "--port", str(port)]
    pin = options.pin_cpus
    return [
        ProcessSpec("server", tuple(common + ["--role", "server"]), measures=False,
                    cpus=(pin[1],) if pin else None, expects_match=False),
        ProcessSpec("client", tuple(common + [
            "--role", "client", "--samples", str(options.samples), "--warmup", str(options.warmup),
            "--payloads", _payload_text(options.payloads), "--output", str(csv)]),
                    measures=True, cpus=(pin[0],) if pin else None, expects_match=False),
    ]


def describe(sub: s.SubExperiment) -> str:
    """How a sub-experiment is named in errors: name, transport, reliability, security."""
    parts = [sub.transport, sub.reliability] + (["security"] if sub.security else [])
    return f"{sub.name} ({', '.join(parts)})"


# --- process supervision ------------------------------------------------------------------------
def process_state(pid: int) -> str | None:
    """The kernel's one-letter state of a process (R, S, T, Z, ...), None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:][:1] or None


def exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class HarnessProcess:
    """A harness process in its own process group, its output read by two threads.

    The group is what gets killed, so nothing the harness might start survives it.
    """

    def __init__(self, spec: ProcessSpec, environment: dict[str, str], cwd: Path,
                 register: Callable[[HarnessProcess], None]):
        """`register` is called as soon as the process exists, before anything else can fail or be
        interrupted (Ctrl-C, or SIGTERM in the gate), so whoever kills the processes knows this one."""
        self.spec = spec
        self.ready = threading.Event()
        self.matched = threading.Event()
        self.stdout_tail: deque[str] = deque(maxlen=20)
        self.stderr_tail: deque[str] = deque(maxlen=20)
        self.stopped_since: float | None = None
        prefix = ["taskset", "-c", ",".join(map(str, spec.cpus))] if spec.cpus else []
        self.popen = subprocess.Popen(
            prefix + list(spec.argv), env=environment, cwd=cwd, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
            start_new_session=True, pass_fds=spec.pass_fds,
        )
        self._readers: list[threading.Thread] = []
        register(self)
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @property
    def role(self) -> str:
        return self.spec.role

    def _read_stdout(self) -> None:
        for line in self.popen.stdout:
            line = line.rstrip()
            self.stdout_tail.append(line)
            if line.endswith(f": {READY_LINE}"):
                self.ready.set()
            elif line.endswith(f": {MATCHED_LINE}"):
                self.matched.set()

    def _read_stderr(self) -> None:
        for line in self.popen.stderr:
            if line.strip():
                self.stderr_tail.append(line.rstrip())

    def poll(self) -> int | None:
        return self.popen.poll()

    def is_stopped_too_long(self, now: float) -> bool:
        if process_state(self.popen.pid) in ("T", "t"):
            self.stopped_since = self.stopped_since or now
            return now - self.stopped_since >= STOPPED_LIMIT_S
        self.stopped_since = None
        return False

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signum)

    def kill(self) -> None:
        """SIGKILL the whole group (works on stopped processes too) and reap."""
        self.signal_group(signal.SIGKILL)
        self.popen.wait()
        for reader in self._readers:
            if reader.ident is not None:  # an interrupt may have come before it started
                reader.join(timeout=2)

    def last_error(self) -> str:
        """The harness's own account of what went wrong: its last line on stderr."""
        return self.stderr_tail[-1] if self.stderr_tail else ""


@dataclass
class Supervision:
    """What happened to a sub-experiment's processes."""

    outcome: str
    error: str | None = None
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    discovered: bool = False  # the peers found each other (the floor: all started)


def _failure(outcome: str, what: str, process: HarnessProcess | None = None) -> Supervision:
    said = process.last_error() if process is not None else ""
    return Supervision(outcome, f"{what}: {said}" if said and said not in what else what)


def _wait_ready(process: HarnessProcess, others: list[HarnessProcess], limit_s: float,
                cancel: threading.Event | None) -> Supervision | None:
    deadline = time.monotonic() + limit_s
    while not process.ready.wait(POLL_S):
        if cancel is not None and cancel.is_set():
            return Supervision(s.OUTCOME_INCOMPLETE, INTERRUPTED)
        code = process.poll()
        if code is not None:
            process.ready.wait(0.2)  # the line may still be in the pipe
            if process.ready.is_set():
                return None
            return _failure(s.OUTCOME_FAILED_TO_START, f"the {process.role} {exit_text(code)} before it was ready", process)
        for other in others:
            if other.poll() is not None:
                return _failure(s.OUTCOME_INCOMPLETE,
                                f"the {other.role} {exit_text(other.poll())} while the {process.role} started", other)
        if time.monotonic() > deadline:
            return _failure(s.OUTCOME_FAILED_TO_START, f"the {process.role} was not ready within {limit_s:.0f} s", process)
    return None


def _stop(process: HarnessProcess, grace_s: float) -> None:
    """Ask the measuring process to stop (it writes what finished on SIGTERM), then kill it."""
    if process.poll() is None:
        process.signal_group(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.popen.wait(grace_s)
    process.kill()


def _peer_problem(peers: list[HarnessProcess], now: float) -> tuple[HarnessProcess, str, bool] | None:
    """(peer, what happened, whether the peer failed) for the first peer that left or hangs."""
    for peer in peers:
        code = peer.poll()
        if code is not None:
            return peer, f"the {peer.role} {exit_text(code)} during the measurement", code != 0
        if peer.is_stopped_too_long(now):
            return peer, f"the {peer.role} stopped responding (process stopped for {STOPPED_LIMIT_S:.0f} s)", True
    return None


def _watch(measuring: HarnessProcess, peers: list[HarnessProcess], timeout_s: float, started: float,
           cancel: threading.Event | None) -> Supervision:
    """Wait for the measuring process; end early on a dead or hung peer, a stalled discovery, the limit,
    or `cancel` (set by a supervisor that runs several sub-experiments at once and was interrupted)."""
    discovery_deadline = time.monotonic() + DISCOVERY_WATCHDOG_S
    while True:
        code = measuring.poll()
        if code is not None:
            return _with_peer_failures(_measuring_ended(measuring, code), peers)
        if cancel is not None and cancel.is_set():
            _stop(measuring, TERMINATE_GRACE_S)
            return Supervision(s.OUTCOME_INCOMPLETE, INTERRUPTED)
        now = time.monotonic()
        problem = _peer_problem(peers, now)
        if problem is not None:
            peer, what, peer_failed = problem
            with contextlib.suppress(subprocess.TimeoutExpired):
                measuring.popen.wait(PEER_GRACE_S)
            code = measuring.poll()
            if code == 0:
                return Supervision(s.OUTCOME_OK)  # the peer only left first
            if code is not None and not peer_failed:
                return _measuring_ended(measuring, code)  # the peer ended cleanly: the failure is the measuring side's
            _stop(measuring, TERMINATE_GRACE_S)
            return _failure(s.OUTCOME_INCOMPLETE, what, peer)
        if measuring.is_stopped_too_long(now):
            _stop(measuring, 0)
            return Supervision(s.OUTCOME_INCOMPLETE, f"the {measuring.role} stopped responding (process stopped)")
        if measuring.spec.expects_match and not measuring.matched.is_set() and now > discovery_deadline:
            _stop(measuring, TERMINATE_GRACE_S)
            return _failure(s.OUTCOME_INCOMPLETE,
                            f"discovery did not complete within {DISCOVERY_WATCHDOG_S:.0f} s", measuring)
        if now - started > timeout_s:
            _stop(measuring, TERMINATE_GRACE_S)
            return Supervision(s.OUTCOME_INCOMPLETE, f"time limit of {timeout_s:.0f} s reached")
        time.sleep(POLL_S)


def _measuring_ended(measuring: HarnessProcess, code: int) -> Supervision:
    measuring.kill()  # reaps and lets the readers finish, so the last stderr line is in
    if code == 0:
        return Supervision(s.OUTCOME_OK)
    if code == s.EXIT_USAGE:
        return _failure(s.OUTCOME_FAILED_TO_START, f"the {measuring.role} rejected its options", measuring)
    return _failure(s.OUTCOME_INCOMPLETE, f"the {measuring.role} {exit_text(code)}", measuring)


def _with_peer_failures(result: Supervision, peers: list[HarnessProcess]) -> Supervision:
    """A failed measuring side often only reports the consequence ("peer lost") of a peer's failure
    (incompatible QoS, a crash): wait briefly for the peers and name their failures too."""
    if result.outcome == s.OUTCOME_OK:
        return result
    deadline = time.monotonic() + PEER_GRACE_S
    while any(p.poll() is None for p in peers) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    for peer in peers:
        code = peer.poll()
        if code:
            peer.kill()  # reaps and lets the readers finish, so the last stderr line is in
            result.error += "; " + _failure(result.outcome, f"the {peer.role} {exit_text(code)}", peer).error
    return result


def supervise(specs: list[ProcessSpec], environment: dict[str, str], cwd: Path, timeout_s: float,
              cancel: threading.Event | None = None) -> Supervision:
    """Start the processes in order (each once the previous is ready), watch them, leave none behind."""
    processes: list[HarnessProcess] = []
    try:
        result = _start_and_watch(specs, processes, environment, cwd, timeout_s, cancel)
    finally:
        for process in processes:
            process.kill()
    result.exit_codes = {p.role: p.popen.returncode for p in processes}
    return result


def _start_and_watch(specs: list[ProcessSpec], processes: list[HarnessProcess], environment: dict[str, str],
                     cwd: Path, timeout_s: float, cancel: threading.Event | None) -> Supervision:
    started = time.monotonic()
    for spec in specs:
        try:
            HarnessProcess(spec, environment, cwd, register=processes.append)
        except OSError as error:
            return Supervision(s.OUTCOME_FAILED_TO_START, f"could not start the {spec.role}: {error}")
        failure = _wait_ready(processes[-1], processes[:-1], READY_TIMEOUT_S, cancel)
        if failure is not None:
            return failure
    measuring = next(p for p in processes if p.spec.measures)
    peers = [p for p in processes if p is not measuring]
    result = _watch(measuring, peers, timeout_s, started, cancel)
    result.discovered = measuring.matched.is_set() or not measuring.spec.expects_match
    if result.outcome == s.OUTCOME_OK:
        _let_peers_finish(peers)
    return result


def _let_peers_finish(peers: list[HarnessProcess]) -> None:
    """After a complete measurement the echoing side ends on its own; give it a moment."""
    deadline = time.monotonic() + PEER_GRACE_S
    while any(p.poll() is None for p in peers) and time.monotonic() < deadline:
        time.sleep(POLL_S)


# --- shared memory left behind ------------------------------------------------------------------
def fastdds_shm_files(shm_dir: Path = SHM_DIR) -> set[str]:
    try:
        return {p.name for p in shm_dir.iterdir() if p.name.startswith(SHM_PREFIXES)}
    except OSError:
        return set()


def shm_files_in_use(shm_dir: Path = SHM_DIR) -> set[str]:
    """Names of the files under shm_dir that a live process has mapped or open."""
    in_use: set[str] = set()
    prefix = f"{shm_dir}/"
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            for line in (proc / "maps").read_text(errors="replace").splitlines():
                fields = line.split(maxsplit=5)  # address perms offset dev inode [path]
                if len(fields) == 6 and fields[5].startswith(prefix):
                    in_use.add(fields[5][len(prefix):].removesuffix(" (deleted)"))
        with contextlib.suppress(OSError):
            for fd in (proc / "fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith(prefix):
                        in_use.add(target[len(prefix):])
    return in_use


def orphaned_shm_files(before: set[str], after: set[str], in_use: set[str]) -> set[str]:
    """Files that appeared while the sub-experiment ran and that no live process holds: ours, dead.

    A concurrent run's files are mapped by its live processes, so they are never among these.
    """
    return (after - before) - in_use


def remove_orphaned_shm(before: set[str], shm_dir: Path = SHM_DIR) -> list[str]:
    removed = sorted(orphaned_shm_files(before, fastdds_shm_files(shm_dir), shm_files_in_use(shm_dir)))
    for name in removed:
        with contextlib.suppress(FileNotFoundError):
            (shm_dir / name).unlink()
    return removed


# --- what the harness measured ------------------------------------------------------------------
@dataclass
class Measured:
    """The payloads a sub-experiment finished, and what was missing or lost."""

    frame: pd.DataFrame | None  # only the complete payloads, in measured order
    counts: dict[int, int]  # payload -> samples in the harness's CSV
    lost: dict[int, int]
    problem: str | None  # why the data is short, when it is


def complete_payloads(raw: pd.DataFrame, payloads: tuple[int, ...], samples: int) -> tuple[pd.DataFrame, dict[int, int]]:
    """The rows of the payloads that have all their samples, and every payload's sample count."""
    counts = raw.groupby(s.PAYLOAD, sort=False).size()
    found = {int(p): int(counts.get(p, 0)) for p in payloads}
    complete = [p for p, n in found.items() if n == samples]
    return raw[raw[s.PAYLOAD].isin(complete)].reset_index(drop=True), found


def shortfall(counts: dict[int, int], samples: int) -> str | None:
    short = [f"{p} B ({n} of {samples})" for p, n in counts.items() if n != samples]
    return f"payloads without all their samples: {', '.join(short)}" if short else None


def read_measured(csv: Path, report: Path | None, payloads: tuple[int, ...], samples: int) -> Measured:
    lost = _lost_samples(report)
    if not csv.exists():
        return Measured(None, {p: 0 for p in payloads}, lost, "the harness wrote no measurements")
    try:
        raw = files.read_raw(csv)
    except InputError as error:
        if "no data rows" in error.message:
            return Measured(None, {p: 0 for p in payloads}, lost, "the harness wrote no measurements")
        return Measured(None, {p: 0 for p in payloads}, lost, f"the harness wrote a malformed CSV: {error}")
    unexpected = sorted(set(raw[s.PAYLOAD]) - set(payloads))
    if unexpected:
        return Measured(None, {p: 0 for p in payloads}, lost, f"the harness measured payloads not asked for: {unexpected}")
    frame, counts = complete_payloads(raw, payloads, samples)
    return Measured(frame if not frame.empty else None, counts, lost, shortfall(counts, samples))


def _lost_samples(report: Path | None) -> dict[int, int]:
    if report is None or not report.exists():
        return {}
    with contextlib.suppress(ValueError, OSError, AttributeError, TypeError):
        entries = json.loads(report.read_text())["payloads"]
        return {int(p): int(entry.get("lost", 0)) for p, entry in entries.items()}
    return {}


def median_first_payload(frame: pd.DataFrame | None) -> tuple[int, float] | None:
    if frame is None or frame.empty:
        return None
    payload = int(frame[s.PAYLOAD].iloc[0])
    return payload, float(frame.loc[frame[s.PAYLOAD] == payload, s.LATENCY].median())


# --- one sub-experiment -------------------------------------------------------------------------
@dataclass
class SubexperimentResult:
    sub: s.SubExperiment
    outcome: str
    error: str | None
    measured: Measured
    domain: int | None = None
    port: int | None = None
    started_utc: str | None = None
    duration_s: float = 0.0
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    removed_shm: list[str] = field(default_factory=list)
    discovered: bool = False
    earlier_errors: list[str] = field(default_factory=list)  # attempts that never got past discovery

    def metadata_entry(self) -> dict:
        median = median_first_payload(self.measured.frame)
        return {
            s.META_OUTCOME: self.outcome,
            "error": self.error,
            "transport": self.sub.transport,
            "reliability": self.sub.reliability,
            "security": self.sub.security,
            "floor": self.sub.is_floor,
            "domain": self.domain,
            "port": self.port,
            "started_utc": self.started_utc,
            "duration_s": round(self.duration_s, 3),
            "measured_samples": {str(p): n for p, n in self.measured.counts.items()},
            "kept_payloads": sorted(set(self.measured.frame[s.PAYLOAD].tolist())) if self.measured.frame is not None else [],
            "lost_samples": {str(p): n for p, n in self.measured.lost.items()},
            "median_us": {str(median[0]): round(median[1], 3)} if median else {},
            "exit_codes": self.exit_codes,
            "removed_shared_memory": self.removed_shm,
            "attempts": len(self.earlier_errors) + 1,
            "earlier_errors": self.earlier_errors,
        }


def classify(supervision: Supervision, measured: Measured) -> tuple[str, str | None]:
    """The sub-experiment's outcome: the processes' account first, then whether the data is whole."""
    if supervision.outcome != s.OUTCOME_OK:
        return supervision.outcome, supervision.error
    if measured.problem is not None:
        return s.OUTCOME_INCOMPLETE, measured.problem
    return s.OUTCOME_OK, None


def run_subexperiment(sub: s.SubExperiment, options: RunOptions, paths: HarnessPaths, environment: dict[str, str],
                      workdir: Path, *, turns: Turns | None = None,
                      cancel: threading.Event | None = None) -> SubexperimentResult:
    """Measure one sub-experiment; tried again in a fresh domain when its peers never discovered each other.

    Over TCP on loopback, Fast DDS 2.9 sometimes never completes discovery although the connection
    is up (about one attempt in twenty here); that says nothing about latency, so it gets up to
    DISCOVERY_ATTEMPTS tries. Earlier failures stay in metadata.json and are printed as warnings.
    Taking `turns` with another publisher allows that too: before discovery completed, no turn was taken.
    """
    earlier_errors: list[str] = []
    while True:
        result = _attempt_subexperiment(sub, options, paths, environment, workdir, turns, cancel)
        if not worth_another_attempt(result.outcome, result.discovered, len(earlier_errors) + 1):
            result.earlier_errors = earlier_errors
            return result
        earlier_errors.append(result.error)
        print(f"perfgate run: warning: {describe(sub)}: {result.error}; trying again in a fresh domain",
              file=sys.stderr, flush=True)


def worth_another_attempt(outcome: str, discovered: bool, attempts: int) -> bool:
    """Only after a failure before discovery; never after a failed start or a failure while measuring."""
    return outcome == s.OUTCOME_INCOMPLETE and not discovered and attempts < DISCOVERY_ATTEMPTS


def _attempt_subexperiment(sub: s.SubExperiment, options: RunOptions, paths: HarnessPaths,
                           environment: dict[str, str], workdir: Path, turns: Turns | None,
                           cancel: threading.Event | None) -> SubexperimentResult:
    started, started_utc = time.monotonic(), utc_now()
    with lease_domain() as domain:
        shm_before = fastdds_shm_files()
        # The private folder holds the harness's output and, for security, the run's private keys.
        private = Path(tempfile.mkdtemp(prefix=f"{sub.name}-", dir=workdir))
        try:
            csv, report = private / "measurements.csv", private / "report.json"
            specs, failure = _commands(sub, options, paths, domain, csv, report, private, turns)
            if failure is None:
                supervision = supervise(specs, environment, private, options.timeout_s, cancel)
            else:
                supervision = Supervision(s.OUTCOME_FAILED_TO_START, failure)
            measured = read_measured(csv, None if sub.is_floor else report, options.payloads, options.samples)
        finally:
            shutil.rmtree(private, ignore_errors=True)
            removed = remove_orphaned_shm(shm_before)
    outcome, error = classify(supervision, measured)
    return SubexperimentResult(
        sub, outcome, error, measured, domain=domain,
        port=own_port(domain) if sub.is_floor or sub.transport == "tcpv4" else None, started_utc=started_utc,
        duration_s=time.monotonic() - started, exit_codes=supervision.exit_codes, removed_shm=removed,
        discovered=supervision.discovered,
    )


def _commands(sub: s.SubExperiment, options: RunOptions, paths: HarnessPaths, domain: int, csv: Path, report: Path,
              private: Path, turns: Turns | None = None) -> tuple[list[ProcessSpec], str | None]:
    if sub.is_floor:
        return floor_commands(sub, options, paths.floor, own_port(domain), csv), None
    security_dir = None
    if sub.security:
        security_dir = private / "security"
        security_dir.mkdir(mode=0o700)
        try:
            from . import security

            security.generate_security_files(security_dir, domain, ["publisher", "subscriber"])
        except Exception as error:  # any failure here is this sub-experiment's, the run goes on
            return [], f"could not generate the security files: {error}"
    return latency_commands(sub, options, paths.latency, domain, csv, report, security_dir, turns), None


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


def prepare_harness(options: RunOptions) -> HarnessPaths:
    """The harness executables: the given one (with perfgate-floor beside it), or native/ built once."""
    if options.harness is not None:
        return HarnessPaths(options.harness, options.harness.parent / native_harness.FLOOR_EXECUTABLE, options.harness.parent)
    return native_harness.ensure_harness(fastdds_prefix=options.fastdds_prefix)


# --- metadata -----------------------------------------------------------------------------------
def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def initial_metadata(options: RunOptions, paths: HarnessPaths, version: str, platform: dict, ignored: list[str],
                     run_id: str) -> dict:
    return {
        s.META_LABEL: options.label,
        s.META_CREATED: utc_now(),
        s.META_FASTDDS: {
            "version": version,
            "commit": fastdds_commit(options.fastdds_prefix),
            "source": s.FASTDDS_SOURCE_SYSTEM if options.fastdds_prefix is None else s.FASTDDS_SOURCE_COLCON,
            "prefix": str(options.fastdds_prefix) if options.fastdds_prefix is not None else "/usr",
        },
        s.META_HARNESS: {
            "name": native_harness.LATENCY_EXECUTABLE,
            "version": __version__,  # built from this package's native/
            "floor": native_harness.FLOOR_EXECUTABLE,
            "path": str(paths.latency),
            "warmup": options.warmup,
            "timeout_s": round(options.timeout_s, 3),
            "discovery_timeout_s": DISCOVERY_TIMEOUT_S,
            "sample_timeout_ms": SAMPLE_TIMEOUT_MS,
        },
        s.META_LATENCY_DEFINITION: s.ROUND_TRIP,
        s.META_SAMPLES: options.samples,
        s.META_PAYLOADS: list(options.payloads),
        "warmup": options.warmup,
        "requested_subexperiments": [sub.name for sub in options.subexperiments],
        s.META_SUBEXPERIMENTS: {},
        s.META_PLATFORM: platform,
        "load_average": {"before": load_average(), "after": None},
        "cpu_pinning": cpu_pinning_metadata(options.pin_cpus, options.pin_request),
        "cpu_latency": cpu_latency.request_metadata(options.cpu_latency, None, None, "not measuring yet"),
        "environment": {"ignored": ignored, "set_for_harness": dict(CHILD_ENV)},
        "run_id": run_id,
        "perfgate_version": __version__,
        "finished_utc": None,
        "interrupted": False,
    }


# --- the command --------------------------------------------------------------------------------
def progress_line(index: int, total: int, result: SubexperimentResult) -> str:
    head = f"[{index}/{total}] {result.sub.name}: {result.outcome}"
    median = median_first_payload(result.measured.frame)
    if median is not None:
        head += f", median {median[1]:.3f} us at {median[0]} B"
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
                engine=s.ENGINE_HARNESS, workspace=None, cpu_latency_request=None) -> int:
    if engine == s.ENGINE_UPSTREAM:  # Fast DDS' own latency tests (perfgate.upstream)
        from . import upstream

        return upstream.command_upstream(output=output, workspace=workspace, subexperiments=subexperiments,
                                         label=label, samples=samples, payloads=payloads, pin_cpus=pin_cpus,
                                         cpu_latency_request=cpu_latency_request,
                                         harness_options={"--warmup": warmup, "--harness": harness,
                                                          "--fastdds-prefix": fastdds_prefix, "--timeout": timeout})
    build_record = None
    if workspace is not None:  # a `perfgate build` workspace: its harness, its Fast DDS, its record
        from . import build

        if harness is not None or fastdds_prefix is not None:
            raise InputError("--workspace names the harness and the Fast DDS prefix: drop --harness/--fastdds-prefix")
        build_record = build.read_record(workspace)
        harness, fastdds_prefix = build.harness_paths(build_record, Path(workspace))
    options = resolve_options(output=output, samples=samples, payloads=payloads, subexperiments=subexperiments,
                              label=label, warmup=warmup, harness=harness, fastdds_prefix=fastdds_prefix,
                              pin_cpus=pin_cpus, timeout=timeout, cpu_latency_request=cpu_latency_request)
    environment, ignored = scrub_environment(os.environ)
    run_id = uuid.uuid4().hex
    environment[RUN_ID_ENV] = run_id
    paths = prepare_harness(options)
    version = native_harness.fastdds_version(paths)
    platform = platform_info.this_machine()
    for warning in platform["warnings"]:
        print(f"perfgate run: warning: {warning}", file=sys.stderr)
    for name in ignored:
        print(f"perfgate run: warning: ignoring {name} (Fast DDS configuration from the environment "
              "would change what is measured)", file=sys.stderr)

    options.output.mkdir(parents=True, exist_ok=True)
    metadata = initial_metadata(options, paths, version, platform, ignored, run_id)
    if build_record is not None:
        metadata[s.META_FASTDDS] = build.fastdds_metadata(build_record)
    files.write_metadata(options.output, metadata)
    failures = run_all(options, paths, environment, metadata)
    if failures:
        print(f"perfgate run: {len(failures)} of {len(options.subexperiments)} sub-experiments did not finish: "
              f"{', '.join(failures)}", file=sys.stderr)
        return s.EXIT_INCOMPLETE
    return s.EXIT_OK


def run_all(options: RunOptions, paths: HarnessPaths, environment: dict[str, str], metadata: dict) -> list[str]:
    """Every sub-experiment in turn; metadata.json rewritten after each. Returns the ones that failed."""
    failures = []
    entries = metadata[s.META_SUBEXPERIMENTS]
    current = None
    try:
        with terminate_as_interrupt(), cpu_latency.hold_awake(options.cpu_latency) as awake, \
                scratch.scratch_folder("run") as workdir:
            metadata["cpu_latency"] = awake
            cpu_latency.warn("perfgate run", awake)
            for index, sub in enumerate(options.subexperiments, 1):
                current = sub
                result = run_subexperiment(sub, options, paths, environment, Path(workdir))
                if result.measured.frame is not None:
                    files.write_csv(options.output / s.raw_csv_name(sub.name), result.measured.frame)
                entries[sub.name] = result.metadata_entry()
                files.write_metadata(options.output, metadata)
                print(progress_line(index, len(options.subexperiments), result), flush=True)
                if result.outcome != s.OUTCOME_OK:
                    failures.append(sub.name)
                    print(f"perfgate run: error: {describe(sub)}: {result.error}", file=sys.stderr, flush=True)
            current = None
    except KeyboardInterrupt:
        metadata["interrupted"] = True
        if current is not None:
            entries[current.name] = {s.META_OUTCOME: s.OUTCOME_INCOMPLETE, "error": INTERRUPTED}
        raise
    finally:
        metadata["load_average"]["after"] = load_average()
        metadata["finished_utc"] = utc_now()
        files.write_metadata(options.output, metadata)
    return failures
