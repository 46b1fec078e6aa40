"""latency.resources_table: what the harness processes used, per sub-experiment and role, and its check against
requirements/<platform>_resources.json (docs/formats.md section 16).

Pure but for the readers: resources_<sub>.csv in, peak and mean of cpu[%] and rss[KB] per role out;
the requirements (read by resources_requirements) in, check rows out, each carrying the line of the
JSON key that set its limit, for JUnit's pull-request annotations.

What is checked against what: cpu[%] against each role's mean (a 0.2 s reading is one 10 ms clock
tick in 5 %, and any process is busy for a moment while discovery runs, so a peak says little);
rss[KB] against its peak (the memory the machine must have); lost[%] against the lost round trips of
metadata.json over all round trips tried; late[%] against the share of the recorded round trips
above the sub-experiment's `late_limit_us`.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import csv_lines, files, outcome, outputs
from .. import schema as s
from ..errors import InputError
from ..escape.workflow import log_text
from ..measure.commands import subscriber_names
from ..model import Metadata, RoleResources
from .resources_requirements import CPU, LATE, LOST, RSS, ResourceRequirements, read_resource_requirements

TOTAL_ROLE = "total"  # the rows of latency_total: the sub-experiment's round trips as a whole
UNITS = {CPU: "%", RSS: "KB", LOST: "%", LATE: "%"}
MISSING = "missing"


# --- resources_<sub>.csv ---------------------------------------------------------------------------------
def read_resources(path: Path) -> pd.DataFrame:
    path = Path(path)
    frame, lines = csv_lines.read_csv(path, s.RESOURCE_COLUMNS, "resources")
    roles = frame[s.RESOURCE_ROLE].astype(str).str.strip()
    empty = (roles == "") | frame[s.RESOURCE_ROLE].isna()
    if empty.any():
        raise InputError("'role' is empty", path, int(lines[int(np.flatnonzero(empty.to_numpy())[0])]))
    clean = pd.DataFrame({
        s.RESOURCE_TIME: files.numeric_column(frame, s.RESOURCE_TIME, path, lines, integer=False),
        s.RESOURCE_ROLE: roles,
        s.RESOURCE_CPU: files.numeric_column(frame, s.RESOURCE_CPU, path, lines, integer=False),
        s.RESOURCE_RSS: files.numeric_column(frame, s.RESOURCE_RSS, path, lines, integer=True),
        s.RESOURCE_VSZ: files.numeric_column(frame, s.RESOURCE_VSZ, path, lines, integer=True),
    })
    clean.attrs[files.ROW_LINES] = lines
    return clean


def resources_files(experiment_dir: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(Path(experiment_dir).glob(f"{s.RESOURCES_PREFIX}*.csv")):
        sub = s.sub_from_resources_csv(path)
        if sub is not None:
            found[sub] = path
    return found


@dataclass(frozen=True)
class RoleSummary:
    role: str
    samples: int
    cpu_peak: float
    cpu_mean: float
    rss_peak: int
    rss_mean: float


def role_summaries(frame: pd.DataFrame) -> list[RoleSummary]:
    """Per role, in the order the roles first appear (the order the processes started)."""
    found = []
    for role, rows in frame.groupby(s.RESOURCE_ROLE, sort=False):
        found.append(RoleSummary(str(role), len(rows), float(rows[s.RESOURCE_CPU].max()),
                                 float(rows[s.RESOURCE_CPU].mean()), int(rows[s.RESOURCE_RSS].max()),
                                 float(rows[s.RESOURCE_RSS].mean())))
    return found


def summary_metadata(frame: pd.DataFrame) -> dict[str, RoleResources]:
    """metadata.json's `resources` entry of a sub-experiment."""
    return {r.role: RoleResources.record(samples=r.samples, cpu_peak_percent=round(r.cpu_peak, 3),
                                         cpu_mean_percent=round(r.cpu_mean, 3), rss_peak_kb=r.rss_peak,
                                         rss_mean_kb=round(r.rss_mean, 3)) for r in role_summaries(frame)}


def summary_line(sub: str, frame: pd.DataFrame) -> str:
    parts = [f"{r.role} cpu peak {r.cpu_peak:.1f} % mean {r.cpu_mean:.1f} %, rss peak {r.rss_peak} KB "
             f"mean {r.rss_mean:.0f} KB" for r in role_summaries(frame)]
    return f"{sub} resources: " + "; ".join(parts)


# --- the check (pure, given what was read) -----------------------------------------------------------------
@dataclass(frozen=True)
class ResourceCheckRow:
    subexperiment: str
    role: str
    check: str  # cpu, rss, lost, late
    requirement: float
    experiment: float | None  # None: not measured (then `reason`)
    line: int
    detail: str = ""  # how the value was taken: "mean", "peak", "round trips above 500.000 us"
    reason: str = ""

    @property
    def status(self) -> str:
        if self.experiment is None:
            return MISSING
        return s.FAILED if files.thousandths([self.experiment])[0] > files.thousandths([self.requirement])[0] else s.PASSED

    @property
    def name(self) -> str:
        return testcase_name(self.role, self.check)

    def describe(self) -> str:
        unit = UNITS[self.check]
        measured = f"{self.role} {self.check}" + (f" ({self.detail})" if self.detail else "")
        if self.experiment is None:
            return f"no measurement of {self.subexperiment} {measured}: {self.reason}"
        sign = ">" if self.status == s.FAILED else "<="
        return (f"{self.subexperiment}: {measured} {value_text(self.check, self.experiment)} {unit} {sign} requirement "
                f"{value_text(self.check, self.requirement)} {unit}{percent_text(self.experiment, self.requirement)}")


def value_text(check: str, value: float) -> str:
    """Memory in whole KB, as the resources CSV holds it; shares as the CSV files write floats."""
    return f"{value:.0f}" if check == RSS else files.format_float(value)


def testcase_name(role: str, check: str) -> str:
    """`Resources[publisher rss]`: one check of one role of one sub-experiment, in the output and in JUnit."""
    return f"Resources[{role} {check}]"


def percent_over(experiment: float, requirement: float) -> float:
    """(Experiment - Requirement) / Requirement x 100 at the 3 decimals written; NaN for a requirement of 0."""
    low, high = files.thousandths([requirement, experiment])
    return float("nan") if low == 0 else (high - low) / low * 100.0


def percent_text(experiment: float, requirement: float) -> str:
    percent = percent_over(experiment, requirement)
    return "" if np.isnan(percent) else f" ({percent:+.2f}%)"


def expected_roles(sub: str, frame: pd.DataFrame | None) -> list[str]:
    """The roles a sub-experiment's processes have (measure.commands), then any other the file holds."""
    known = s.KNOWN_SUBEXPERIMENTS.get(sub)
    roles = [] if known is None else (["server", "client"] if known.is_floor else ["both"]
                                      if known.transport == "intraprocess" else ["publisher", *subscriber_names(known)])
    if frame is not None:
        roles += [role for role in dict.fromkeys(frame[s.RESOURCE_ROLE]) if role not in roles]
    return roles


@dataclass
class SubResources:
    """What one sub-experiment measured, as far as the check needs it; None where it is missing."""

    frame: pd.DataFrame | None
    frame_missing: str = ""
    latencies: np.ndarray | None = None
    latencies_missing: str = ""
    lost: tuple[int, int] | None = None  # (lost, tried)
    lost_missing: str = ""


def check_subexperiment(sub: str, measured: SubResources, required: ResourceRequirements) -> list[ResourceCheckRow]:
    rows = []
    limits = required.resource_limits(sub)
    summaries = {} if measured.frame is None else {r.role: r for r in role_summaries(measured.frame)}
    for role in expected_roles(sub, measured.frame):
        for check, limit in limits.items():
            summary = summaries.get(role)
            value = None if summary is None else summary.cpu_mean if check == CPU else float(summary.rss_peak)
            reason = measured.frame_missing or f"no {role} rows in {s.resources_csv_name(sub)}"
            rows.append(ResourceCheckRow(sub, role, check, limit.value, value, limit.line,
                                         "mean" if check == CPU else "peak", "" if value is not None else reason))
    if LOST in required.latency_total:
        limit = required.latency_total[LOST]
        value = None if measured.lost is None else (100.0 * measured.lost[0] / measured.lost[1] if measured.lost[1] else 0.0)
        rows.append(ResourceCheckRow(sub, TOTAL_ROLE, LOST, limit.value, value, limit.line,
                                     "of the round trips tried", measured.lost_missing))
    if LATE in required.latency_total:
        limit = required.latency_total[LATE]
        if sub not in required.late_limit_us:
            raise InputError(f"'latency_total.late[%]' is required but 'late_limit_us' has no limit for {sub}",
                             required.path, limit.line)
        late_us = required.late_limit_us[sub].value
        value = None
        if measured.latencies is not None and len(measured.latencies):
            over = files.thousandths(measured.latencies) > files.thousandths([late_us])[0]
            value = 100.0 * float(over.sum()) / len(over)
        rows.append(ResourceCheckRow(sub, TOTAL_ROLE, LATE, limit.value, value, limit.line,
                                     f"round trips above {files.format_float(late_us)} us",
                                     measured.latencies_missing or "no round trips"))
    return rows


def check_table(rows: list[ResourceCheckRow]) -> pd.DataFrame:
    """resource_checks.csv: the measured rows (the missing ones are JUnit errors and stderr lines)."""
    kept = [row for row in rows if row.experiment is not None]
    # the values as written (3 decimals), so that the difference is the one a maintainer computes
    requirement = files.thousandths([row.requirement for row in kept]) / 1000.0
    experiment = files.thousandths([row.experiment for row in kept]) / 1000.0
    return pd.DataFrame({
        s.EXPERIMENT_TYPE: [row.subexperiment for row in kept],
        s.ROLE: [row.role for row in kept],
        s.CHECK: [row.check for row in kept],
        s.REQUIREMENT: requirement,
        s.EXPERIMENT: experiment,
        s.DIFFERENCE: np.abs(experiment - requirement),
        s.PERCENT_OVER: [percent_over(row.experiment, row.requirement) for row in kept],
        s.STATUS: [row.status for row in kept],
    }, columns=list(s.RESOURCE_CHECK_COLUMNS))


# --- reading an experiment for the check ------------------------------------------------------------------
def read_sub_resources(experiment_dir: Path, sub: str, metadata: Metadata | None,
                       frames: dict[str, pd.DataFrame]) -> SubResources:
    measured = SubResources(frames.get(sub))
    if measured.frame is None:
        measured.frame_missing = f"no {s.resources_csv_name(sub)} in the experiment folder"
    raw = Path(experiment_dir) / s.raw_csv_name(sub)
    if raw.is_file():
        measured.latencies = files.read_raw(raw)[s.LATENCY].to_numpy()
    else:
        measured.latencies_missing = f"no {s.raw_csv_name(sub)} in the experiment folder"
    entry = metadata.outcome_of(sub) if metadata is not None else None
    try:
        lost = sum(int(n) for n in entry.lost_samples.values())
        measured.lost = (lost, lost + sum(int(n) for n in entry.measured_samples.values()))
    except (TypeError, AttributeError, ValueError):
        measured.lost_missing = f"no lost_samples and measured_samples of {sub} in {s.METADATA_FILE}"
    return measured


@dataclass
class ResourceCheck:
    frames: dict[str, pd.DataFrame]  # the checked sub-experiments' resources_<sub>.csv
    path: Path | None = None  # the resource requirements, when given
    rows: list[ResourceCheckRow] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return sum(row.status == s.FAILED for row in self.rows)

    @property
    def missing(self) -> int:
        return sum(row.status == MISSING for row in self.rows)


def prepare_check(experiment_dir: Path, given: str | None, subs: list[str], metadata: Metadata | None) -> ResourceCheck:
    """Everything read and checked before `perfgate check` writes anything. Without resource
    requirements nothing is read (the gate does not give them: its outputs stay as they were). With
    them, the rows of the sub-experiments the latency check checked; one without its resources file,
    raw measurements or metadata is missing data (exit 3), as in the latency check."""
    if given is None:
        return ResourceCheck({})
    outputs.require_paths(resources_requirements=given)
    required = read_resource_requirements(Path(given))
    paths = resources_files(experiment_dir)
    frames = {sub: read_resources(paths[sub]) for sub in subs if sub in paths}
    rows = []
    for sub in subs:
        rows += check_subexperiment(sub, read_sub_resources(experiment_dir, sub, metadata, frames), required)
    outputs.require_writable(Path(experiment_dir) / s.RESOURCE_CHECKS_FILE, "resource check report")
    return ResourceCheck(frames, Path(given), rows)


def write_resource_outputs(experiment_dir: Path, result: ResourceCheck, plots_dir: Path | None) -> None:
    if result.path is None:
        return
    files.write_csv(Path(experiment_dir) / s.RESOURCE_CHECKS_FILE, check_table(result.rows))
    if plots_dir is not None:
        from ..plotting import resource_plots

        for sub, frame in result.frames.items():
            resource_plots.draw_resources(frame, sub, s.resources_png(plots_dir, sub))


def report(result: ResourceCheck, latency_exit: int) -> int:
    """Print the resource checks after the latency check's lines; the exit code of both (1 over 3 over 0)."""
    if result.path is None:
        return latency_exit
    for sub in dict.fromkeys(row.subexperiment for row in result.rows):
        rows = [row for row in result.rows if row.subexperiment == sub]
        print(f"{sub}: {len(rows)} resource checks, {sum(r.status == s.FAILED for r in rows)} failed")
        for row in rows:
            if row.status == s.FAILED:
                print(f"  FAILED {row.name}: {row.describe()}")
    for row in result.rows:
        if row.status == MISSING:
            print(f"perfgate check: error: {log_text(result.path)}:{row.line}: {log_text(row.describe())}", file=sys.stderr)
    print(f"{len(result.rows)} resource checks: {result.failed} failed, {result.missing} without measurements")
    resources_exit = outcome.exit_code(outcome.verdict_of(incomplete=bool(result.missing), regressed=bool(result.failed)))
    return outcome.most_severe(latency_exit, resources_exit)
