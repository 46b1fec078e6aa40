"""latency.check: each summary of an experiment against the platform's requirements (docs/formats.md sections 6, 11, 12).

The pure part takes frames and returns check reports and the list of required results that have no
measurements; the command around it reads, validates, writes the reports, the check plots, the
record for `perfgate junit` (check.json) and, if asked, the JUnit file.

Values are compared as the CSV files write them (3 decimals), in whole thousandths of a
microsecond, so that what a maintainer reads in the report is exactly what was compared: a result
equal to its requirement passes, one 0.001 us above fails.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import files, outcome, outputs
from . import listing, resources_table
from . import junit as junit_xml
from .. import schema as s
from .check_terms import MissingData, describe_failure, testcase_name
from .gross import GrossMargins, statuses as gross_statuses
from ..errors import InputError
from ..escape.workflow import log_text
from ..model import read_metadata
from ..pools import stop_requested, worker_pool
from .requested import EVERYTHING, Requested, not_asked_summary, requested_of


# --- what a check finds ---------------------------------------------------------------------------
@dataclass
class ExperimentCheck:
    reports: dict[str, pd.DataFrame]  # sub-experiment -> check report (docs/formats.md section 6)
    missing: list[MissingData] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)  # floors and one-to-many ones without requirements
    not_asked: list[MissingData] = field(default_factory=list)  # rows the run was not asked for (requested)

    @property
    def failed(self) -> int:
        return sum(int((report[s.STATUS] == s.FAILED).sum()) for report in self.reports.values())

    @property
    def noted(self) -> int:
        """Misses within the gross margin (a gate with a baseline build): notes, never failures."""
        return sum(int((report[s.STATUS] == s.NOTED).sum()) for report in self.reports.values())

    @property
    def exit_code(self) -> int:
        return outcome.exit_code(outcome.verdict_of(incomplete=bool(self.missing), regressed=bool(self.failed)))


# --- pure computation -----------------------------------------------------------------------------
def is_over(values, requirements) -> np.ndarray:
    """The contract's rule: failed when the value is above its requirement, both as written (3 decimals)."""
    return files.thousandths(values) > files.thousandths(requirements)


def requirements_of(requirements: pd.DataFrame, sub: str) -> pd.DataFrame:
    """The requirement rows of one sub-experiment, in the file's order."""
    return requirements[requirements[s.EXPERIMENT_TYPE] == sub]


def check_summary(summary: pd.DataFrame, requirements: pd.DataFrame, sub: str,
                  margins: GrossMargins | None = None) -> pd.DataFrame:
    """The check report of one sub-experiment: every Median row, then every 99% row, then every Max
    row, each in the requirements' payload order. Payloads without measurements are left out (see
    split_missing); measured payloads without requirements are ignored (see uncovered_rows). With
    gross margins (a gate with a baseline build) only a gross miss fails, a smaller one is noted."""
    required = requirements_of(requirements, sub)
    required = required[required[s.BYTES].isin(summary[s.BYTES])]
    measured = summary.set_index(s.BYTES).loc[required[s.BYTES]]
    blocks = []
    for magnitude in s.CHECKED_MAGNITUDES:
        requirement = files.thousandths(required[magnitude])
        experiment = files.thousandths(measured[magnitude])
        with np.errstate(divide="ignore", invalid="ignore"):
            percent = (experiment - requirement) / requirement * 100.0
        blocks.append(pd.DataFrame({
            s.CHECK: magnitude,
            s.BYTES: required[s.BYTES].to_numpy(dtype=np.int64),
            s.REQUIREMENT: requirement / 1000.0,
            s.EXPERIMENT: experiment / 1000.0,
            s.DIFFERENCE: np.abs(requirement - experiment) / 1000.0,
            s.PERCENT_OVER: percent,
            s.STATUS: gross_statuses(magnitude, experiment, requirement, margins),
        }))
    return pd.concat(blocks, ignore_index=True).loc[:, list(s.CHECK_COLUMNS)]


def uncovered_rows(summary: pd.DataFrame, requirements: pd.DataFrame, sub: str) -> list[int]:
    """Positions of the summary rows whose payload the requirements of `sub` do not cover."""
    covered = requirements_of(requirements, sub)[s.BYTES]
    return np.flatnonzero(~summary[s.BYTES].isin(covered).to_numpy()).tolist()


def split_missing(summaries: dict[str, pd.DataFrame], requirements: pd.DataFrame,
                  requested: Requested = EVERYTHING) -> tuple[list[MissingData], list[MissingData]]:
    """The requirement rows without measurements (in file order): those the run asked for (missing
    data, exit 3) and those it was not asked for (perfgate.latency.requested: listed, never checked)."""
    missing, not_asked = [], []
    measured = {sub: set(summary[s.BYTES].astype(int)) for sub, summary in summaries.items()}  # once, not per row
    for sub, payload, line in zip(requirements[s.EXPERIMENT_TYPE], requirements[s.BYTES], requirements["line"]):
        payload, line = int(payload), int(line)
        if sub not in summaries:
            reason = f"no {s.summary_csv_name(sub)} in the experiment folder"
        elif payload not in measured[sub]:
            reason = f"no {payload} B row in {s.summary_csv_name(sub)}"
        else:
            continue
        (missing if requested.asks_for(sub, payload) else not_asked).append(MissingData(sub, payload, line, reason))
    return missing, not_asked


def check_experiment(summaries: dict[str, pd.DataFrame], requirements: pd.DataFrame, *,
                     requirements_path: Path | None = None, summary_paths: dict[str, Path] | None = None,
                     requested: Requested = EVERYTHING, margins: GrossMargins | None = None) -> ExperimentCheck:
    """Check every summary; InputError (exit 2) when the requirements do not cover a measured
    sub-experiment or payload, when a requirement that would be checked is zero, or when rows were
    left out as not asked for and nothing is left to check (a run of nothing is no pass)."""
    summary_paths = summary_paths or {}
    required_subs = set(requirements[s.EXPERIMENT_TYPE])
    where = f" ({requirements_path})" if requirements_path is not None else ""
    checked, not_checked = {}, []
    order = list(dict.fromkeys(requirements[s.EXPERIMENT_TYPE]))  # report in the requirements' order
    for sub, summary in sorted(summaries.items(), key=lambda item: _position(order, item[0])):
        if sub not in required_subs:
            if not s.checked_by_default(sub):  # a floor or a one-to-many one: measured for reference
                not_checked.append(sub)
                continue
            raise InputError(f"sub-experiment {sub!r} is not in the requirements{where}", summary_paths.get(sub))
        uncovered = uncovered_rows(summary, requirements, sub)
        if uncovered:
            payload = int(summary[s.BYTES].iloc[uncovered[0]])
            raise InputError(f"payload {payload} B of {sub} is not in the requirements{where}",
                             summary_paths.get(sub), files.row_line(summary, uncovered[0]))
        _no_zero_requirements(requirements_of(requirements, sub), requirements_path)
        checked[sub] = summary
    reports = {sub: check_summary(summary, requirements, sub, margins) for sub, summary in checked.items()}
    missing, not_asked = split_missing(summaries, requirements, requested)
    if not_asked and not missing and not any(len(report) for report in reports.values()):
        raise InputError(f"no requirement row names a result this run was asked for ({len(not_asked)} row(s) name "
                         "others): nothing to check", requirements_path)
    return ExperimentCheck(reports, missing, not_checked, not_asked)


def _position(order: list[str], sub: str) -> tuple[int, str]:
    return (order.index(sub) if sub in order else len(order), sub)


def _no_zero_requirements(required: pd.DataFrame, requirements_path: Path | None) -> None:
    for magnitude in s.CHECKED_MAGNITUDES:
        zero = files.thousandths(required[magnitude]) == 0
        if zero.any():
            row = required.iloc[int(np.flatnonzero(zero)[0])]
            raise InputError(f"{magnitude} requirement of {row[s.EXPERIMENT_TYPE]} at {row[s.BYTES]} B is 0.000 us; "
                             "a percentage over it is undefined", requirements_path, int(row["line"]))


# --- words for people (check_terms holds those every output of the check shares) ------------------
def report_table(sub: str, report: pd.DataFrame) -> str:
    """A check report as a readable table, for --print-summaries."""
    shown = report.copy()
    for column in (s.REQUIREMENT, s.EXPERIMENT, s.DIFFERENCE, s.PERCENT_OVER):
        shown[column] = [files.format_float(v) for v in shown[column]]
    return f"{sub}\n{shown.to_string(index=False)}"


def outcome_lines(result: ExperimentCheck) -> list[str]:
    """One line per sub-experiment, then one per failed check: what a maintainer reads first."""
    lines = []
    for sub, report in result.reports.items():
        failed = report[report[s.STATUS] == s.FAILED]
        noted = report[report[s.STATUS] == s.NOTED]
        lines.append(f"{sub}: {len(report)} checks, {len(failed)} failed" + (f", {len(noted)} noted" if len(noted) else ""))
        for row in pd.concat([failed, noted]).itertuples(index=False):
            check, payload, requirement, experiment, _, percent, status = row
            word = "FAILED" if status == s.FAILED else "NOTE (within the gross margin)"
            lines.append(f"  {word} {testcase_name(check, payload)}: "
                         f"{describe_failure(check, requirement, experiment, percent)}")
    for sub in result.not_checked:
        kind = "a floor" if s.KNOWN_SUBEXPERIMENTS[sub].is_floor else "a one-to-many"
        lines.append(f"{sub}: not checked ({kind} sub-experiment without requirements)")
    return lines


def not_asked_line(result: ExperimentCheck) -> str | None:
    """The requirement rows the run was not asked for, on one line (docs/formats.md section 6)."""
    if not result.not_asked:
        return None
    rows = [(item.subexperiment, item.bytes) for item in result.not_asked]
    return (f"note: {len(rows)} requirement row(s) name results this run was not asked for (--subexperiments, "
            f"--payloads): not checked: {not_asked_summary(rows)}")


def missing_lines(result: ExperimentCheck, requirements_path: Path) -> list[str]:
    """One line per sub-experiment and kind of problem (a whole missing sub-experiment, or payloads
    missing in its summary), naming a few payloads and lines and how many; at most listing.MAX_LINES
    of them and one line for the rest, whatever the number of requirement rows."""
    grouped: dict[str, list[MissingData]] = {}
    for item in result.missing:
        grouped.setdefault(item.subexperiment, []).append(item)
    lines = []
    for sub, items in grouped.items():
        whole = sub not in result.reports  # no summary at all: one reason for every payload
        reason = items[0].reason if whole or len(items) == 1 else f"no rows of these payloads in {s.summary_csv_name(sub)}"
        where = f" (lines {listing.some([item.line for item in items])})" if len(items) > listing.SHOWN else ""
        lines.append(f"{requirements_path}:{items[0].line}: no measurements for {sub} "
                     f"({listing.some([item.bytes for item in items])} B): {reason}{where}")
    return listing.first_lines(lines, f"{requirements_path}: and {{count}} more sub-experiment(s) with required "
                                      "results that have no measurements (check.json lists every one)")


# --- the record that `perfgate junit` reads ---------------------------------------------------------
def write_check_record(experiment_dir: Path, requirements_path: Path, result: ExperimentCheck,
                       resources_path: Path | None = None, margins: GrossMargins | None = None) -> None:
    record = {
        "requirements": str(Path(requirements_path).resolve()),
        **({"gross_margins": {"file": str(margins.path.resolve()) if margins.path else None,
                              "margins": margins.margins}} if margins is not None else {}),
        "missing": [asdict(item) for item in result.missing],
        "not_checked": list(result.not_checked),
    }
    if resources_path is not None:  # `perfgate junit` checks the resources again, missing ones included
        record["resources_requirements"] = str(Path(resources_path).resolve())
    files.write_text(Path(experiment_dir) / s.CHECK_RECORD_FILE, json.dumps(record, indent=2) + "\n")


# --- the command ----------------------------------------------------------------------------------
def _draw_sub_check_plots(sub: str, report: pd.DataFrame, plots_dir: Path) -> None:
    from ..plotting import check_plots

    for magnitude in s.CHECKED_MAGNITUDES:
        if stop_requested():
            return
        check_plots.draw_check(report, sub, magnitude, s.check_png(plots_dir, sub, magnitude))


def draw_check_plots(reports: dict[str, pd.DataFrame], plots_dir: Path, jobs: int) -> None:
    """Three plots per sub-experiment, one sub-experiment per worker process."""
    if jobs > 1 and len(reports) > 1:
        with worker_pool(min(jobs, len(reports)), output=plots_dir) as pool:
            futures = [pool.submit(_draw_sub_check_plots, sub, report, plots_dir) for sub, report in reports.items()]
            for future in futures:
                future.result()
    else:
        for sub, report in reports.items():
            _draw_sub_check_plots(sub, report, plots_dir)


def read_experiment_summaries(experiment_dir: Path) -> tuple[dict[str, pd.DataFrame], dict[str, Path]]:
    paths = files.summary_files(experiment_dir)
    return {sub: files.read_summary(path) for sub, path in paths.items()}, paths


def command_check(requirements, experiment_directory, plots_directory, print_summaries=False, junit=None,
                  no_plots=False, resources_requirements=None) -> int:
    outputs.require_paths(requirements=requirements, experiment_directory=experiment_directory,
                        plots_directory=plots_directory, junit=junit, resources_requirements=resources_requirements)
    requirements_path = Path(requirements)
    return check_folder(files.read_requirements(requirements_path), requirements_path, Path(experiment_directory),
                        plots=None if no_plots else Path(plots_directory), junit=Path(junit) if junit else None,
                        resources_requirements=Path(resources_requirements) if resources_requirements else None,
                        print_summaries=print_summaries)


def check_folder(required: pd.DataFrame, requirements_path: Path, experiment_dir: Path, *, plots: Path | None,
                 junit: Path | None, resources_requirements: Path | None = None, print_summaries: bool = False,
                 margins: GrossMargins | None = None) -> int:
    """Check an experiment folder's summaries against requirements (files.read_requirements of
    requirements_path): check reports, check.json, JUnit and plots (none when plots is None); with
    gross margins (latency.gross) only a gross miss fails."""
    summaries, summary_paths = read_experiment_summaries(experiment_dir)
    metadata = read_metadata(experiment_dir)  # read before anything is written: it may be malformed
    result = check_experiment(summaries, required, requirements_path=requirements_path, summary_paths=summary_paths,
                              requested=requested_of(metadata, experiment_dir / s.METADATA_FILE), margins=margins)
    resources = resources_table.prepare_check(experiment_dir, resources_requirements, list(result.reports), metadata)
    # every output location is tried before the first report is written
    for sub in result.reports:
        outputs.require_writable(experiment_dir / s.check_csv_name(sub), "check report")
        outputs.require_not_input(experiment_dir / s.check_csv_name(sub), [requirements_path], "check report")
    if junit is not None:
        outputs.require_writable(junit, "JUnit file")
        outputs.require_not_input(junit, [requirements_path, *summary_paths.values(),
                                              experiment_dir / s.METADATA_FILE, resources.path], "JUnit file")
    if plots is not None:
        outputs.require_writable(plots, "plots folder", folder=True)

    with outputs.write_errors_as_input_errors():
        for sub, report in result.reports.items():
            files.write_csv(experiment_dir / s.check_csv_name(sub), report)
        write_check_record(experiment_dir, requirements_path, result, resources.path, margins)
        if junit is not None:
            files.write_text(junit, junit_xml.build_junit_xml(result.reports, required, requirements_path,
                                                                    result.missing, metadata, resources,
                                                                    not_asked=result.not_asked))
        if plots is not None:
            draw_check_plots(result.reports, plots, jobs=os.cpu_count() or 1)
        resources_table.write_resource_outputs(experiment_dir, resources, plots)

    if print_summaries:
        for sub, report in result.reports.items():
            print(report_table(sub, report) + "\n")
    note = not_asked_line(result)
    for line in outcome_lines(result) + ([note] if note else []):
        print(log_text(line))
    for line in missing_lines(result, requirements_path):
        print(f"perfgate check: error: {log_text(line)}", file=sys.stderr)
    checks = sum(len(report) for report in result.reports.values())
    print(f"{checks} checks in {len(result.reports)} sub-experiment(s): {result.failed} failed"
          + (f" grossly, {result.noted} noted (within the gross margins of {log_text(margins.path or 'the gate')})"
             if margins is not None else "") + "; "
          f"{len(result.missing)} required payload result(s) without measurements")
    return resources_table.report(resources, result.exit_code)
