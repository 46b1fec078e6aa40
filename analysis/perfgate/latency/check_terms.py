"""latency.check_terms: what a latency check says, in the words every output of it shares: the testcase name
(`Median[16 B]`), the description of a failure, the required result that has no measurements, and
the check record (check.json) that `perfgate junit` reads. Used by check, junit and the check plots,
which check itself writes (so they never import check)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import files
from .. import schema as s
from ..errors import InputError


@dataclass(frozen=True)
class MissingData:
    """A result the requirements ask for that the experiment did not measure (an error: exit 3)."""

    subexperiment: str
    bytes: int
    line: int  # the requirement row's line in the requirements CSV
    reason: str

    def describe(self) -> str:
        return f"no measurements for {self.subexperiment} at {self.bytes} B: {self.reason}"


def format_percent(percent: float) -> str:
    return f"{percent:+.2f}%" if abs(percent) >= 0.01 or percent == 0 else f"{percent:+.2g}%"


def describe_failure(magnitude: str, requirement: float, experiment: float, percent: float) -> str:
    """`Median 105.123 us > requirement 100.000 us (+5.12%)`"""
    return (f"{magnitude} {files.format_float(experiment)} us > requirement {files.format_float(requirement)} us "
            f"({format_percent(percent)})")


def testcase_name(magnitude: str, payload: int) -> str:
    """`Median[16384 B]`: one check of one payload, in the output and in JUnit."""
    return f"{magnitude}[{int(payload)} B]"


def read_check_record(experiment_dir: Path) -> dict | None:
    """check.json of an experiment folder, or None before the first check."""
    path = Path(experiment_dir) / s.CHECK_RECORD_FILE
    record = files.read_json_object(path, "check record")
    if record is not None and not isinstance(record.get("missing", []), list):
        raise InputError("not a check record", path)
    if record is not None and not isinstance(record.get("requirements", ""), str):
        raise InputError(f"'requirements' is {record['requirements']!r}; expected the path of a requirements file",
                         path)
    return record
