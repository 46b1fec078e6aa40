"""What the upstream engine reads back from a run of Fast DDS' latency tests: ctest's JUnit, what
LatencyTest printed (its clock overhead, how many processes it ran in), and each test's CSV,
validated, or why there is none."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import files
from .. import schema as s
from ..errors import IncompleteError, InputError
from ..fastdds.logs import printable
from .upstream_names import SUBEXPERIMENT_TESTS, expected_csv_name

_EXPORT = re.compile(r"--export_raw_data\s+(\S+\.csv)")


def exported_csv_name(output: str, test: str) -> str:
    """The CSV a test's publisher was told to write (its command line is in the output), else the rule."""
    match = _EXPORT.search(output or "")
    return Path(match.group(1)).name if match else expected_csv_name(test)


# --- ctest's results ----------------------------------------------------------------------------
# LatencyTest records (end - start) / 2 - overhead, the overhead being one clock read that it measures
# and prints as "Overhead 0.0235 ns" (the value is in microseconds, whatever the label says).
_CLOCK_OVERHEAD = re.compile(r"^Overhead ([0-9.eE+-]+) ns", re.MULTILINE)


def clock_overhead_us(output: str) -> float | None:
    """What LatencyTest subtracted from every half round trip, from its printed output."""
    match = _CLOCK_OVERHEAD.search(output or "")
    return float(match.group(1)) if match else None


@dataclass(frozen=True)
class TestOutcome:
    passed: bool
    output: str
    duration_s: float


def read_ctest_junit(path: Path) -> dict[str, TestOutcome]:
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as error:
        raise IncompleteError(f"ctest wrote no readable results: {error}", path) from None
    outcomes = {}
    for case in root.iter("testcase"):
        output = "".join(o.text or "" for o in case.iter("system-out"))
        outcomes[case.get("name", "")] = TestOutcome(case.get("status") == "run" and case.find("failure") is None,
                                                     output, float(case.get("time") or 0))
    return outcomes


# --- collecting one test's CSV ------------------------------------------------------------------
@dataclass
class Collected:
    sub: str
    test: str
    outcome: str
    error: str | None
    frame: pd.DataFrame | None = None
    csv: str | None = None
    duration_s: float = 0.0
    counts: dict[int, int] = field(default_factory=dict)
    clock_overhead_us: float | None = None
    processes: int | None = None


def latency_test_processes(output: str) -> int | None:
    """How many LatencyTest processes latency_tests.py started, by what it printed: "Publisher
    command:" and "Subscriber command:" (two, --interprocess), or "Executable command:" (one, `both`)."""
    if "Publisher command:" in (output or ""):
        return 2
    return 1 if "Executable command:" in (output or "") else None


def collect(sub: str, outcome: TestOutcome | None, work_dir: Path, started: float, test: str | None = None) -> Collected:
    """One test's result: its CSV validated, or why there is none. test: the build's name for the
    sub-experiment's test (default: 2.9's)."""
    test = test or SUBEXPERIMENT_TESTS[sub]
    if outcome is None:
        return Collected(sub, test, s.OUTCOME_FAILED_TO_START, f"ctest did not run {test}")
    csv = work_dir / exported_csv_name(outcome.output, test)
    problem = None if outcome.passed else f"{test} failed: {_last_lines(outcome.output)}"
    frame, counts = None, {}
    if not csv.is_file() or csv.stat().st_mtime < started:
        problem = problem or f"{test} passed but wrote no {csv.name} in {work_dir}"
    else:
        try:
            frame = files.read_raw(csv)
            counts = {int(p): int(n) for p, n in frame.groupby(s.PAYLOAD, sort=False).size().items()}
        except InputError as error:
            problem = problem or f"{test} wrote a malformed CSV: {error}"
    outcome_name = s.OUTCOME_OK if problem is None else s.OUTCOME_INCOMPLETE
    return Collected(sub, test, outcome_name, problem, frame, str(csv), outcome.duration_s, counts,
                     clock_overhead_us(outcome.output), latency_test_processes(outcome.output))


# ctest's JUnit stands for an escape character it cannot write: Fast DDS' coloured log lines
_CTEST_ESCAPE = re.compile(r"\[NON-XML-CHAR-0x1B\](?:\[[0-9;]*m)?")


def _last_lines(output: str, lines: int = 5) -> str:
    text = printable(_CTEST_ESCAPE.sub("", output or ""))
    kept = [line for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept) if kept else "no output"
