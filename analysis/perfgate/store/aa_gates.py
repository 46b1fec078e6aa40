"""The A/A gates of a results store: which stored gate runs measured a Fast DDS against itself, and
whether the whole gate failed (a false alarm, since nothing changed).

A stored gate run with `--baseline-build` keeps its latency A/B verdict (`ab/verdict.json`, whose
`arms` name the baseline's and the candidate's Fast DDS), the throughput A/B's when it ran
(`throughput/ab/verdict.json`), its `junit.xml` (the gross requirement checks, and any testcase a
topology added) and `throughput_checks.csv` (the throughput requirement checks). A run is an **A/A
gate** when its latency A/B's arms record the same Fast DDS commit, or, both without a commit (the
system package, an install of unknown origin), the same install spec; and neither arm had a delay
injected (a deliberate regression, `perfgate ab --inject-delay-ns`, is no A/A).

The whole gate of an A/A run:
- **false alarm**: any part failed (the latency A/B or the throughput A/B REGRESSION, a JUnit
  `<failure>`, a failed throughput check): the gate would have exited 1;
- **incomplete**: nothing failed but some part could not decide (an A/B INCOMPLETE, a JUnit
  `<error>`, no junit.xml): exit 3, counted apart, never a pass nor a false alarm;
- **pass**: every part passed.

Everything here is read from the store, which a results branch fills: untrusted. A malformed
metadata.json, verdict.json, junit.xml or throughput_checks.csv is an InputError naming the file;
the texts are returned as read and escaped by whoever prints them. `whole_gate` and `is_aa` are pure.
"""
from __future__ import annotations

import csv
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from .. import files
from .. import schema as s
from ..errors import InputError
from ..history.verdict_file import read_stored_verdict
from ..latency import experiments as ex
from ..model import Metadata, read_metadata
from ..outcome import INCOMPLETE, PASS, REGRESSION
from ..throughput.check import THROUGHPUT_CHECKS_FILE
from .branch import TABLE_LIMIT

LATENCY_AB, THROUGHPUT_AB, GROSS_CHECKS = "latency A/B", "throughput A/B", "gross checks"
PARTS = (LATENCY_AB, THROUGHPUT_AB, GROSS_CHECKS)  # the parts of the gate's budget (gate.budget)
FALSE_ALARM = "false alarm"  # the whole gate's status of an A/A run, beside PASS and INCOMPLETE
JUNIT_MAX_BYTES = TABLE_LIMIT  # what a results branch may hold of junit.xml
JUNIT_ROOTS = ("testsuites", "testsuite")
THROUGHPUT_VERDICT = f"{s.THROUGHPUT_DIR}/{s.AB_DIR}/{s.VERDICT_JSON}"


@dataclass(frozen=True)
class Arm:
    """What an A/B verdict's `arms` record of one arm's Fast DDS (texts as read: untrusted)."""
    spec: str | None
    commit: str | None
    injected: bool  # a delay was injected into this arm's echo


@dataclass(frozen=True)
class PartResult:
    """One part of the gate: PASS, REGRESSION or INCOMPLETE, and what it counted (for the reader)."""
    part: str
    status: str


@dataclass(frozen=True)
class AaGate:
    """One stored A/A gate run and its whole-gate outcome."""
    label: str  # the stored experiment's folder name
    commit: str  # the Fast DDS commit both arms measured, or the install spec without one
    date: str  # metadata.json's created_utc, "" when not recorded
    status: str  # PASS, FALSE_ALARM or INCOMPLETE
    failed: tuple[str, ...]  # the PARTS that failed (a false alarm's)
    incomplete: tuple[str, ...]  # the PARTS that could not decide


def is_aa(baseline: Arm, candidate: Arm) -> bool:
    """The same Fast DDS in both arms: the same commit, or no commit in either and the same spec; no
    injected delay."""
    if baseline.injected or candidate.injected:
        return False
    if baseline.commit is not None or candidate.commit is not None:
        return baseline.commit == candidate.commit
    return baseline.spec is not None and baseline.spec == candidate.spec


def whole_gate(parts: list[PartResult]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(status, failed parts, incomplete parts): a false alarm when any part failed, else incomplete
    when any could not decide, else a pass; a gate with no part at all is incomplete (never a pass)."""
    failed = tuple(part for part in PARTS if any(r.part == part and r.status == REGRESSION for r in parts))
    incomplete = tuple(part for part in PARTS if any(r.part == part and r.status == INCOMPLETE for r in parts))
    if failed:
        return FALSE_ALARM, failed, incomplete
    if incomplete or not parts:
        return INCOMPLETE, failed, incomplete or (GROSS_CHECKS,)
    return PASS, failed, incomplete


# --- reading a stored experiment ----------------------------------------------------------------------
def read_arm(record: dict, name: str) -> Arm | None:
    """verdict.json's `arms.<name>` (its types checked by history.verdict_file); None when the verdict
    records no arms (an A/B without metadata)."""
    arm = (record.get("arms") or {}).get(name)
    if arm is None:
        return None
    fastdds, injected = arm.get("fastdds") or {}, arm.get("injected_echo_delay_ns") or {}
    injected_any = any(value not in (0, None) for value in injected.values())
    return Arm(arm.get("spec"), fastdds.get("commit") or None, injected_any)


def read_verdict_status(path: Path, what: str) -> tuple[dict | None, str | None]:
    """(verdict.json, its status) of an A/B folder, read by the one reader of a stored verdict
    (history.verdict_file: every field checked); (None, None) without one."""
    record = read_stored_verdict(path, what)
    return (None, None) if record is None else (record, record["status"])


def junit_status(path: Path) -> str:
    """The stored JUnit file's checks: REGRESSION on a <failure>, else INCOMPLETE on an <error> or no
    file (a missing result is never a pass), else PASS. `perfgate store check`, push and pull read it
    here too: a junit.xml that is not the JUnit XML of section 12 (not XML, another root element, over
    JUNIT_MAX_BYTES) is an InputError naming it, so it is never pulled and false-alarms never meets it."""
    if not path.exists():
        return INCOMPLETE
    try:
        if path.stat().st_size > JUNIT_MAX_BYTES:
            raise InputError(f"the JUnit file is over {JUNIT_MAX_BYTES} bytes, more than any gate writes", path)
        root = ET.parse(path).getroot()
    except ET.ParseError as error:
        raise InputError(f"malformed JUnit XML: {error}", path) from None
    except OSError as error:
        raise InputError(f"the JUnit file cannot be read: {error.strerror or error}", path) from None
    if root.tag not in JUNIT_ROOTS:
        raise InputError(f"malformed JUnit XML: the root element is {ascii(root.tag[:60])}, not "
                         f"{' or '.join(JUNIT_ROOTS)}", path)
    cases = list(root.iter("testcase"))
    if any(case.find("failure") is not None for case in cases):
        return REGRESSION
    return INCOMPLETE if not cases or any(case.find("error") is not None for case in cases) else PASS


def throughput_checks_status(path: Path) -> str | None:
    """REGRESSION when a stored throughput check failed, else PASS; None when the run kept none."""
    if not path.exists():
        return None
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise InputError(f"throughput checks cannot be read: {error}", path) from None
    if rows and s.STATUS not in rows[0]:
        raise InputError(f"no {s.STATUS} column: not a throughput check report", path)
    return REGRESSION if any(row.get(s.STATUS) == s.FAILED for row in rows) else PASS


def read_stored_gate(folder: Path, metadata: Metadata | None) -> AaGate | None:
    """The A/A gate of one stored experiment folder (`metadata` its metadata.json); None when it is no
    A/A gate (no latency A/B verdict, arms not recorded, or two different Fast DDS)."""
    record, latency = read_verdict_status(folder / s.AB_DIR / s.VERDICT_JSON, "A/B verdict")
    if record is None:
        return None
    baseline, candidate = read_arm(record, "baseline"), read_arm(record, "candidate")
    if baseline is None or candidate is None or not is_aa(baseline, candidate):
        return None
    _, throughput = read_verdict_status(folder / THROUGHPUT_VERDICT, "throughput A/B verdict")
    parts = [PartResult(LATENCY_AB, latency), PartResult(GROSS_CHECKS, junit_status(folder / s.JUNIT_FILE))]
    if throughput is not None:
        parts.append(PartResult(THROUGHPUT_AB, throughput))
    checked = throughput_checks_status(folder / THROUGHPUT_CHECKS_FILE)
    if checked is not None:
        parts.append(PartResult(GROSS_CHECKS, checked))
    status, failed, incomplete = whole_gate(parts)
    return AaGate(label=folder.name, commit=candidate.commit or candidate.spec or "",
                  date=(metadata.created_utc if metadata is not None else None) or "",
                  status=status, failed=failed, incomplete=incomplete)


def stored_aa_gates(store: Path, platform: str | None = None) -> tuple[list[AaGate], int]:
    """The A/A gates of a results store, oldest first (by created_utc, then label), and how many stored
    runs were not A/A gates; with `platform`, only the runs whose metadata.json `platform.id` is it."""
    if not (Path(store) / s.STORE_EXPERIMENTS_DIR).is_dir():
        raise InputError(f"not a results store (no {s.STORE_EXPERIMENTS_DIR}/ folder)", store)
    found, others = [], 0
    experiments = Path(store) / s.STORE_EXPERIMENTS_DIR
    if not any(not entry.name.startswith(".") for entry in experiments.iterdir()):
        return [], 0  # an empty store has no A/A gate: the caller's exit 3, not bad input
    for folder in ex.experiment_folders(Path(store)):
        metadata = read_metadata(folder)  # typed: a field of the wrong type is an InputError naming it
        if platform is not None and (metadata.platform_id if metadata is not None else None) != platform:
            continue
        gate = read_stored_gate(folder, metadata)
        if gate is None:
            others += 1
        else:
            found.append(gate)
    return sorted(found, key=lambda gate: (gate.date, gate.label)), others
