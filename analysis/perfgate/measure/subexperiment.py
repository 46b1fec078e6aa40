"""One sub-experiment: a leased domain, the processes supervised, what they measured read and classified."""
from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import files
from .. import schema as s
from ..clock import utc_now
from ..errors import InputError
from ..fastdds.harness import HarnessPaths
from ..model import SubexperimentOutcome, ZeroCopy
from ..throughput.files import read_harness_throughput
from ..throughput.table import expected_tests, keys_of, throughput_table
from . import completeness
from .commands import ProcessSpec, Turns, floor_commands, latency_commands, describe, participant_names
from .domains import lease_domain, own_port
from .options import RunOptions
from .shm import ShmWitness, fastdds_shm_files, remove_orphaned_shm
from .supervise import INTERRUPTED, Supervision, supervise

DISCOVERY_ATTEMPTS = 3  # a sub-experiment whose peers never matched is tried again, in a fresh domain


# --- what the harness measured ------------------------------------------------------------------
@dataclass
class Measured:
    """The payloads a sub-experiment finished, and what was missing or lost."""

    frame: pd.DataFrame | None  # only the complete payloads, in measured order
    counts: dict[int, int]  # payload -> samples in the harness's CSV
    lost: dict[int, int]
    problem: str | None  # why the data is short, when it is
    loans: bool | None = None  # the harness's report: every sample it wrote was loaned (zero copy)
    notes: list[str] = field(default_factory=list)  # complete best-effort payloads that lost round trips


def complete_rows(raw: pd.DataFrame, payloads: tuple[int, ...], samples: int, reliability: str,
                  lost: dict[int, int]) -> tuple[pd.DataFrame, dict[int, int]]:
    """The rows of the complete payloads (measure.completeness), and every payload's row count."""
    counts = raw.groupby(s.PAYLOAD, sort=False).size()
    found = {int(p): int(counts.get(p, 0)) for p in payloads}
    complete = completeness.complete_payloads(reliability, found, lost, samples)
    return raw[raw[s.PAYLOAD].isin(complete)].reset_index(drop=True), found


def read_measured(csv: Path, report: Path | None, payloads: tuple[int, ...], samples: int,
                  reliability: str) -> Measured:
    """What the harness measured: the complete payloads' rows, every payload's rows and lost round
    trips, and why the data is short when it is (a best-effort payload may lose a few round trips and
    still be complete: measure.completeness)."""
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
    frame, counts = complete_rows(raw, payloads, samples, reliability, lost)
    return Measured(frame if not frame.empty else None, counts, lost,
                    completeness.shortfall(reliability, counts, lost, samples), _loans(report),
                    notes=completeness.loss_notes(reliability, counts, lost, samples))


def read_throughput_measured(csv: Path, options: RunOptions) -> Measured:
    """The throughput tests the harness finished (it writes them even when it could not go on)."""
    settings = options.throughput
    expected = expected_tests(options.payloads, settings.demands, settings.recovery_times_ms)
    if not csv.exists():
        return Measured(None, {}, {}, "the harness wrote no measurements")
    try:
        table = throughput_table(read_harness_throughput(csv))
    except InputError as error:
        return Measured(None, {}, {}, f"the harness wrote a malformed CSV: {error}")
    done = keys_of(table)
    if done != expected[:len(done)]:
        return Measured(None, {}, {}, "the harness measured tests not asked for, or out of order")
    missing = expected[len(done):]
    problem = (f"{len(missing)} of {len(expected)} throughput tests not finished, from {missing[0][0]} B x "
               f"{missing[0][1]}, {missing[0][2]} ms") if missing else None
    return Measured(table if not table.empty else None, {}, {}, problem)


def _loans(report: Path | None) -> bool | None:
    if report is None or not report.exists():
        return None
    with contextlib.suppress(ValueError, OSError, AttributeError, TypeError):
        loans = json.loads(report.read_text()).get("loans")
        return loans if isinstance(loans, bool) else None
    return None


def _lost_samples(report: Path | None) -> dict[int, int]:
    if report is None or not report.exists():
        return {}
    with contextlib.suppress(ValueError, OSError, AttributeError, TypeError):
        entries = json.loads(report.read_text())["payloads"]
        return {int(p): int(entry.get("lost", 0)) for p, entry in entries.items()}
    return {}


def median_first_payload(frame: pd.DataFrame | None) -> tuple[int, float] | None:
    if frame is None or frame.empty or s.LATENCY not in frame.columns:  # a throughput table has no latency
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

    def metadata_entry(self) -> SubexperimentOutcome:
        median = median_first_payload(self.measured.frame)
        return SubexperimentOutcome.record(
            outcome=self.outcome,
            error=self.error,
            transport=self.sub.transport,
            reliability=self.sub.reliability,
            security=self.sub.security,
            floor=self.sub.is_floor,
            subscribers=self.sub.subscribers,
            **({"zero_copy": ZeroCopy.record(data_sharing=True, loans_used=self.measured.loans)} if self.sub.zero_copy else {}),
            domain=self.domain,
            port=self.port,
            started_utc=self.started_utc,
            duration_s=round(self.duration_s, 3),
            measured_samples={str(p): n for p, n in self.measured.counts.items()},
            kept_payloads=tuple(sorted(set(self.measured.frame[s.PAYLOAD].tolist()))) if self.measured.frame is not None else (),
            lost_samples={str(p): n for p, n in self.measured.lost.items()},
            median_us={str(median[0]): round(median[1], 3)} if median else {},
            exit_codes=self.exit_codes,
            removed_shared_memory=tuple(self.removed_shm),
            attempts=len(self.earlier_errors) + 1,
            earlier_errors=tuple(self.earlier_errors),
        )


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
        if not worth_another_attempt(result.outcome, result.discovered, len(earlier_errors) + 1,
                                     interrupted=result.error == INTERRUPTED):
            result.earlier_errors = earlier_errors
            for note in result.measured.notes:  # kept, and said in the log (metadata.json has lost_samples)
                print(f"perfgate {options.command}: note: {describe(sub)}: {note}", file=sys.stderr, flush=True)
            return result
        earlier_errors.append(result.error)
        print(f"perfgate {options.command}: warning: {describe(sub)}: {result.error}; trying again in a fresh domain",
              file=sys.stderr, flush=True)


def worth_another_attempt(outcome: str, discovered: bool, attempts: int, interrupted: bool = False) -> bool:
    """Only after a failure before discovery; never after a failed start, a failure while measuring,
    or an interruption (Ctrl-C, SIGTERM, a cancel: the run is ending, not the domain at fault)."""
    return outcome == s.OUTCOME_INCOMPLETE and not discovered and not interrupted and attempts < DISCOVERY_ATTEMPTS


def _attempt_subexperiment(sub: s.SubExperiment, options: RunOptions, paths: HarnessPaths,
                           environment: dict[str, str], workdir: Path, turns: Turns | None,
                           cancel: threading.Event | None) -> SubexperimentResult:
    with lease_domain() as domain:
        # The sub-experiment's interval in metadata is exactly the time it held its domain: the
        # probe for a free domain before and the release after are outside it.
        started, started_utc = time.monotonic(), utc_now()
        shm_before, witness = fastdds_shm_files(), ShmWitness()
        # The private folder holds the harness's output and, for security, the run's private keys.
        private = Path(tempfile.mkdtemp(prefix=f"{sub.name}-", dir=workdir))
        try:
            csv, report = private / "measurements.csv", private / "report.json"
            specs, failure = _commands(sub, options, paths, domain, csv, report, private, turns)
            if failure is None:
                supervision = supervise(specs, environment, private, options.timeout_s, cancel, witness)
            else:
                supervision = Supervision(s.OUTCOME_FAILED_TO_START, failure)
            if options.throughput is not None:
                measured = read_throughput_measured(csv, options)
            else:
                measured = read_measured(csv, None if sub.is_floor else report, options.payloads, options.samples,
                                         sub.reliability)
        finally:
            shutil.rmtree(private, ignore_errors=True)
            removed = remove_orphaned_shm(shm_before, witness, [domain])
            duration_s = time.monotonic() - started
    outcome, error = classify(supervision, measured)
    return SubexperimentResult(
        sub, outcome, error, measured, domain=domain,
        port=own_port(domain) if sub.is_floor or sub.transport == "tcpv4" else None, started_utc=started_utc,
        duration_s=duration_s, exit_codes=supervision.exit_codes, removed_shm=removed,
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
            from ..fastdds import security  # cryptography loads slowly: only for secure sub-experiments

            security.generate_security_files(security_dir, domain, participant_names(sub))
        except Exception as error:  # any failure here is this sub-experiment's, the run goes on
            return [], f"could not generate the security files: {error}"
    return latency_commands(sub, options, paths.latency, domain, csv, report, security_dir, turns), None
