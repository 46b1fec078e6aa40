"""Supervising a sub-experiment's harness processes: started in order, watched (a peer that dies or
stops, a discovery that never completes, a time limit, a cancel), and none left behind; inside
measure.resources.collecting(), each process's CPU and memory sampled while it runs."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


from .. import schema as s
from . import resources
from .commands import DISCOVERY_TIMEOUT_S, ProcessSpec
from .shm import ShmWitness

READY_LINE = "ready"
MATCHED_LINE = "matched"
READY_TIMEOUT_S = 20.0  # a harness process prints "ready" once its participant (or socket) exists
DISCOVERY_WATCHDOG_S = DISCOVERY_TIMEOUT_S + 5.0  # ours, in case the harness does not
PEER_GRACE_S = 3.0  # after a peer died: time for the measuring side to write what finished
TERMINATE_GRACE_S = 2.0  # between SIGTERM and SIGKILL
STOPPED_LIMIT_S = 1.0  # a process stopped (SIGSTOP, state T) this long is hung
POLL_S = 0.05
WITNESS_EVERY_S = 1.0  # how often the live processes' shared memory is looked at while they measure
INTERRUPTED = "interrupted"  # the error of a sub-experiment cut short by Ctrl-C, SIGTERM or a cancel


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
           cancel: threading.Event | None, witness: ShmWitness) -> Supervision:
    """Wait for the measuring process; end early on a dead or hung peer, a stalled discovery, the limit,
    or `cancel` (set by a supervisor that runs several sub-experiments at once and was interrupted)."""
    discovery_deadline = time.monotonic() + DISCOVERY_WATCHDOG_S
    witnessed = time.monotonic()
    while True:
        if time.monotonic() - witnessed >= WITNESS_EVERY_S:  # a segment made after "ready" (a matched peer's pool)
            witness.look(p.popen.pid for p in [measuring, *peers])
            witnessed = time.monotonic()
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
              cancel: threading.Event | None = None, witness: ShmWitness | None = None,
              on_ready: Callable[[], None] | None = None) -> Supervision:
    """Start the processes in order (each once the previous is ready), watch them, leave none behind.

    `witness` learns the shared memory the processes hold while they live; `on_ready` is called once
    all of them are ready."""
    processes: list[HarnessProcess] = []
    witness = witness if witness is not None else ShmWitness()
    with resources.sampling() as sampler:
        try:
            result = _start_and_watch(specs, processes, environment, cwd, timeout_s, cancel, sampler, witness,
                                      on_ready)
        finally:
            witness.look(p.popen.pid for p in processes if p.poll() is None)  # before the kill: what they still hold
            for process in processes:
                process.kill()
    result.exit_codes = {p.role: p.popen.returncode for p in processes}
    return result


def _start_and_watch(specs: list[ProcessSpec], processes: list[HarnessProcess], environment: dict[str, str],
                     cwd: Path, timeout_s: float, cancel: threading.Event | None,
                     sampler: resources.ResourceSampler | None, witness: ShmWitness,
                     on_ready: Callable[[], None] | None) -> Supervision:
    started = time.monotonic()
    for spec in specs:
        if cancel is not None and cancel.is_set():  # interrupted: start nothing more, so nothing can match
            return Supervision(s.OUTCOME_INCOMPLETE, INTERRUPTED)
        try:
            HarnessProcess(spec, environment, cwd, register=processes.append)
        except OSError as error:
            return Supervision(s.OUTCOME_FAILED_TO_START, f"could not start the {spec.role}: {error}")
        if sampler is not None:
            sampler.watch(processes[-1].popen.pid, spec.role)
        failure = _wait_ready(processes[-1], processes[:-1], READY_TIMEOUT_S, cancel)
        witness.look([processes[-1].popen.pid])  # "ready": its participant, and so its own segments, exist
        if failure is not None:
            return failure
    if on_ready is not None:
        on_ready()
    measuring = next(p for p in processes if p.spec.measures)
    peers = [p for p in processes if p is not measuring]
    result = _watch(measuring, peers, timeout_s, started, cancel, witness)
    result.discovered = measuring.matched.is_set() or not measuring.spec.expects_match
    if result.outcome == s.OUTCOME_OK:
        _let_peers_finish(peers)
    return result


def _let_peers_finish(peers: list[HarnessProcess]) -> None:
    """After a complete measurement the echoing side ends on its own; give it a moment."""
    deadline = time.monotonic() + PEER_GRACE_S
    while any(p.poll() is None for p in peers) and time.monotonic() < deadline:
        time.sleep(POLL_S)
