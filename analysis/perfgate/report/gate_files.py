"""report.gate_files: a gate's report files as the pull-request comment reads them (report.comment), from
the gate's output folder or its `perfgate-report-<platform>` artifact: the verdict from the first line of
`report.md`, the checks from `junit.xml`, what was measured from `metadata.json`, the A/B tables from
`ab/verdict.csv` and `ab/verdict.json` (also the gate's pages', report.ab_view), and the same under
`throughput/`. Written on the runner by the code under test: every file is bounded, read a row or an element
at a time where it can be large, and checked; what is shown of it is escaped by whoever shows it.
"""
from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from .. import files
from .. import schema as s
from ..errors import InputError
from ..model import read_metadata
from .. import outcome
from ..outcome import INCOMPLETE, PASS, REGRESSION
from .ab_baseline import baseline_text

STATUSES = (PASS, REGRESSION, INCOMPLETE)
# report.md's first line: the gate's ("## perfgate latency gate: **PASS**"), or a failed build's
# ("## perfgate: INCOMPLETE: the Fast DDS build failed"; fastdds_build.failed_gate)
VERDICT_LINE = re.compile(r"## perfgate(?: latency gate)?: (?:\*\*)?(PASS|REGRESSION|INCOMPLETE)\b")
MAX_ROWS = 20  # per table; the rest is counted ("and N more")
MAX_VERDICT_LINE = 4096  # bytes of report.md read for its first line (a gate's is under 100)
# the largest junit.xml read: junit_writer bounds a gate's to its 16 MiB of values plus markup (28 MB for the
# 30000 testcases of a requirements file at its cap); it is read a testcase at a time, never held whole
MAX_JUNIT_BYTES = 64 << 20
MAX_TABLE_BYTES = 16 << 20  # an A/B's verdict.csv (a row per test: a gate's has tens), read a row at a time
MAX_JSON_BYTES = 1 << 20  # verdict.json and metadata.json: a gate's are tens of kB, and are read whole


# --- what the files say -------------------------------------------------------------------------
@dataclass(frozen=True)
class Checks:
    """junit.xml of a gate or a throughput check: testcases, and the failed and errored ones."""
    total: int
    failed: list[tuple[str, str, str]]  # (suite, testcase, message) of the first MAX_ROWS <failure>s
    errors: list[tuple[str, str, str]]  # the same of the first <error>s: missing data, a failed build
    failures: int = 0  # all of them, counted
    error_count: int = 0

    @property
    def status(self) -> str:
        """What the checks alone say, by the gate's own rule."""
        return outcome.verdict_of(incomplete=self.error_count > 0, regressed=self.failures > 0)


@dataclass(frozen=True)
class AbVerdict:
    """An A/B folder's verdict.json (status, headline) and verdict.csv (one row per test)."""
    status: str
    headline: str
    bound_column: str  # "Lower bound" (latency) or "Upper bound" (throughput)
    rows: list[dict[str, str]] = field(default_factory=list)
    # (sub-experiment, statistic) of the tests that passed at a layout threshold the global one would fail
    layout_sized: frozenset[tuple[str, str]] = frozenset()
    # the rounds planned: per sub-experiment, or the same for all (None: not recorded, an uncurtailed A/B)
    planned: int | dict[str, int] | None = None
    alignments: dict[str, int] = field(default_factory=dict)  # arm -> --align-functions (verdict.json)
    tests: int = 0  # rows of verdict.csv: all of them (`rows` may hold only the first, failed first)
    failed_tests: int = 0

    @property
    def table_status(self) -> str:
        """verdict.json's status, or REGRESSION where its verdict.csv holds a failed test and it says PASS."""
        return REGRESSION if self.status == PASS and self.failed_tests else self.status

    def rounds_text(self, row: dict[str, str]) -> str:
        """'6' or, with the plan known, '6 of 16' (a curtailed A/B stops decided tests early); plain text,
        escaped by whoever shows it."""
        used = str(row.get("Rounds") or "")
        try:
            used = f"{float(used):.0f}"
        except ValueError:
            pass
        sub = row.get(s.EXPERIMENT_TYPE, "")
        planned = self.planned.get(sub) if isinstance(self.planned, dict) else self.planned
        return f"{used} of {planned}" if planned is not None and used else used


@dataclass(frozen=True)
class Measured:
    """What metadata.json says was measured (all of it text of unknown origin)."""
    label: str | None
    fastdds_version: str | None
    fastdds_commit: str | None


@dataclass(frozen=True)
class GateOutput:
    status: str
    checks: Checks
    measured: Measured | None = None
    ab: AbVerdict | None = None
    throughput: Checks | None = None
    throughput_ab: AbVerdict | None = None
    platform_mismatch: str | None = None  # platform_files.json: thresholds derived on other machines, one line
    ab_baseline: str | None = None  # the latency A/B's baseline build, in one line (report.ab_baseline)


# --- reading the report files ---------------------------------------------------------------------------
def _read_verdict_line(path: Path) -> str:
    try:
        with files.open_input(path, s.REPORT_MARKDOWN) as handle:  # its first line only: of any size
            first = handle.readline(MAX_VERDICT_LINE).decode("utf-8").rstrip("\n")
    except FileNotFoundError:
        raise InputError("no report.md: the gate wrote no verdict here", path) from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"report.md cannot be read: {getattr(error, 'strerror', None) or error}", path) from None
    match = VERDICT_LINE.match(first)
    if match is None:
        raise InputError("its first line is not a perfgate gate's verdict", path, 1)
    return match.group(1)


def read_checks(path: Path) -> Checks:
    """The testcases of a JUnit file (any nesting of testsuites): each testcase of a testsuite counted,
    with its first <failure> or <error>. Read an element at a time, each dropped once read, so memory
    follows the largest element, not the file (of the code under test, of any size up to MAX_JUNIT_BYTES)."""
    try:
        with files.open_input(path, "the JUnit file", MAX_JUNIT_BYTES) as handle:
            counts = _count_testcases(handle)
    except FileNotFoundError:
        raise InputError("no JUnit file: the gate's results are missing", path) from None
    except ET.ParseError as error:
        raise InputError(f"malformed JUnit XML: {error}", path) from None
    except OSError as error:
        raise InputError(f"the JUnit file cannot be read: {error.strerror or error}", path) from None
    if counts.total == 0:
        raise InputError("the JUnit file has no testcase: a result without tests is never a pass", path)
    return counts


def _count_testcases(handle) -> Checks:
    total, found = 0, {"failure": [], "error": []}
    counted = {"failure": 0, "error": 0}
    path: list[ET.Element] = []  # the open elements, the root first
    case_result: dict[str, str] = {}  # tag -> message of the testcase being read
    for event, element in ET.iterparse(handle, events=("start", "end")):
        if event == "start":
            path.append(element)
            continue
        path.pop()
        parent = path[-1] if path else None
        if element.tag in found and parent is not None and parent.tag == "testcase":
            case_result.setdefault(element.tag, element.get("message", ""))
        elif element.tag == "testcase" and parent is not None and parent.tag == "testsuite":
            total += 1
            for tag, message in case_result.items():
                counted[tag] += 1
                if len(found[tag]) < MAX_ROWS:
                    found[tag].append((parent.get("name", ""), element.get("name", ""), message))
        if element.tag == "testcase":
            case_result = {}
        if parent is not None:  # read: dropped, so that the tree never grows
            parent.remove(element)
    return Checks(total, found["failure"], found["error"], counted["failure"], counted["error"])


def read_ab(folder: Path, bound_column: str, max_rows: int | None = None) -> AbVerdict | None:
    """An A/B folder's verdict, or None when the gate ran no A/B (no verdict.json there). With `max_rows`,
    `rows` holds at most that many failed rows and that many others, in the file's order (the comment shows
    failed first); every row is counted."""
    record = files.read_json_object(folder / s.VERDICT_JSON, "A/B verdict", MAX_JSON_BYTES)
    if record is None:
        return None
    status = record.get("status")
    if status not in STATUSES:
        raise InputError(f"'status' is {status!r}; expected one of {', '.join(STATUSES)}", folder / s.VERDICT_JSON)
    table = folder / s.VERDICT_CSV
    rows, kept, tests, failed_tests = [], {True: 0, False: 0}, 0, 0
    try:
        with files.open_input(table, s.VERDICT_CSV, MAX_TABLE_BYTES) as raw, \
                io.TextIOWrapper(raw, encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                failed = row.get(s.STATUS) == s.FAILED
                tests, failed_tests = tests + 1, failed_tests + failed
                if max_rows is None or kept[failed] < max_rows:
                    rows.append(row)
                    kept[failed] += 1
    except FileNotFoundError:
        raise InputError("no verdict.csv beside verdict.json: the A/B's table is missing", table) from None
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise InputError(f"verdict.csv cannot be read: {error}", table) from None
    return AbVerdict(status, str(record.get("headline", "")), bound_column, rows,
                     _layout_sized(record.get("layout_sized"), folder / s.VERDICT_JSON),
                     _planned(record.get("planned_rounds"), folder / s.VERDICT_JSON),
                     _alignments(record.get("align_functions"), folder / s.VERDICT_JSON),
                     tests, failed_tests)


def _alignments(value, path: Path) -> dict[str, int]:
    """verdict.json's `align_functions`: arm -> bytes (0: the compiler's own); absent in older verdicts."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
            arm in s.AB_ARMS and isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= 4096 for arm, n in value.items()):
        raise InputError("'align_functions' is not the arms' alignments in bytes (0 to 4096)", path)
    return dict(value)


def _planned(value, path: Path) -> int | dict[str, int] | None:
    """verdict.json's `planned_rounds`: null, a number of rounds, or one per sub-experiment."""
    def rounds(n) -> bool:
        return isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 1000
    if value is None or rounds(value):
        return value
    if isinstance(value, dict) and all(isinstance(k, str) and rounds(n) for k, n in value.items()):
        return dict(value)
    raise InputError("'planned_rounds' is neither a number of rounds from 1 to 1000 nor one per sub-experiment", path)


def _layout_sized(entries, path: Path) -> frozenset[tuple[str, str]]:
    """verdict.json's `layout_sized` tests as (sub-experiment, statistic); absent in older verdicts."""
    if entries is None:
        return frozenset()
    if not isinstance(entries, list) or not all(
            isinstance(entry, dict) and isinstance(entry.get("subexperiment"), str)
            and isinstance(entry.get("statistic"), str) for entry in entries):
        raise InputError("'layout_sized' is not a list of tests with a subexperiment and a statistic", path)
    return frozenset((entry["subexperiment"], entry["statistic"]) for entry in entries)


def read_gate_output(folder: Path) -> GateOutput:
    folder = files.require_dir(Path(folder), "gate output folder")
    throughput = folder / s.THROUGHPUT_DIR
    throughput_junit = throughput / s.JUNIT_FILE
    if (folder / s.METADATA_FILE).exists():  # no named pipe, nor a file larger than any gate writes, read whole
        with files.open_input(folder / s.METADATA_FILE, "metadata", MAX_JSON_BYTES):
            pass
    metadata = read_metadata(folder)  # typed: a field of the wrong type is exit 2 naming it
    measured = None if metadata is None else Measured(
        metadata.label, metadata.fastdds.version if metadata.fastdds else None,
        metadata.fastdds.commit if metadata.fastdds else None)
    ab = read_ab(folder / s.AB_DIR, "Lower bound", MAX_ROWS)
    if ab is not None and (folder / s.AB_DIR / s.METADATA_FILE).exists():
        with files.open_input(folder / s.AB_DIR / s.METADATA_FILE, "metadata", MAX_JSON_BYTES):
            pass
    return GateOutput(status=_read_verdict_line(folder / s.REPORT_MARKDOWN),
                      checks=read_checks(folder / s.JUNIT_FILE), measured=measured,
                      ab=ab, ab_baseline=baseline_text(folder / s.AB_DIR, ab.alignments) if ab is not None else None,
                      throughput=read_checks(throughput_junit) if throughput_junit.exists() else None,
                      throughput_ab=read_ab(throughput / s.AB_DIR, "Upper bound", MAX_ROWS),
                      platform_mismatch=_platform_mismatch(folder / s.PLATFORM_FILES_JSON))


def _platform_mismatch(path: Path) -> str | None:
    """platform_files.json's line (gate.platform_files), None without the file (a gate from before it)."""
    record = files.read_json_object(path, "platform files record", max_bytes=65536)  # the gate's is one line
    value = (record or {}).get("platform_mismatch")
    if value is not None and not isinstance(value, str):
        raise InputError("'platform_mismatch' is neither text nor null", path)
    return value

