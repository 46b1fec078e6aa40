"""check: each summary of an experiment against the platform's requirements (docs/formats.md sections 6, 11, 12).

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

from . import files, outcome, outputs, resources_table
from . import junit as junit_xml
from . import schema as s
from .check_terms import MissingData, describe_failure, testcase_name
from .errors import InputError
from .escape.workflow import log_text
from .model import read_metadata
from .pools import stop_requested, worker_pool


# --- what a check finds ---------------------------------------------------------------------------
@dataclass
class ExperimentCheck:
    reports: dict[str, pd.DataFrame]  # sub-experiment -> check report (docs/formats.md section 6)
    missing: list[MissingData] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)  # floors and one-to-many ones without requirements

    @property
    def failed(self) -> int:
        return sum(int((report[s.STATUS] == s.FAILED).sum()) for report in self.reports.values())

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


def check_summary(summary: pd.DataFrame, requirements: pd.DataFrame, sub: str) -> pd.DataFrame:
    """The check report of one sub-experiment: every Median row, then every 99% row, then every Max
    row, each in the requirements' payload order. Payloads without measurements are left out (see
    find_missing); measured payloads without requirements are ignored (see uncovered_rows)."""
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
            s.STATUS: np.where(experiment > requirement, s.FAILED, s.PASSED),
        }))
    return pd.concat(blocks, ignore_index=True).loc[:, list(s.CHECK_COLUMNS)]


def uncovered_rows(summary: pd.DataFrame, requirements: pd.DataFrame, sub: str) -> list[int]:
    """Positions of the summary rows whose payload the requirements of `sub` do not cover."""
    covered = requirements_of(requirements, sub)[s.BYTES]
    return np.flatnonzero(~summary[s.BYTES].isin(covered).to_numpy()).tolist()


def find_missing(summaries: dict[str, pd.DataFrame], requirements: pd.DataFrame) -> list[MissingData]:
    """Every requirement row (in file order) whose sub-experiment or payload has no measurements."""
    missing = []
    for sub, payload, line in zip(requirements[s.EXPERIMENT_TYPE], requirements[s.BYTES], requirements["line"]):
        payload, line = int(payload), int(line)
        if sub not in summaries:
            reason = f"no {s.summary_csv_name(sub)} in the experiment folder"
        elif payload not in set(summaries[sub][s.BYTES]):
            reason = f"no {payload} B row in {s.summary_csv_name(sub)}"
        else:
            continue
        missing.append(MissingData(sub, payload, line, reason))
    return missing


def check_experiment(summaries: dict[str, pd.DataFrame], requirements: pd.DataFrame, *,
                     requirements_path: Path | None = None,
                     summary_paths: dict[str, Path] | None = None) -> ExperimentCheck:
    """Check every summary; InputError (exit 2) when the requirements do not cover a measured
    sub-experiment or payload, or when a requirement that would be checked is zero."""
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
    reports = {sub: check_summary(summary, requirements, sub) for sub, summary in checked.items()}
    return ExperimentCheck(reports, find_missing(summaries, requirements), not_checked)


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
        lines.append(f"{sub}: {len(report)} checks, {len(failed)} failed")
        for row in failed.itertuples(index=False):
            check, payload, requirement, experiment, _, percent, _ = row
            lines.append(f"  FAILED {testcase_name(check, payload)}: "
                         f"{describe_failure(check, requirement, experiment, percent)}")
    for sub in result.not_checked:
        kind = "a floor" if s.KNOWN_SUBEXPERIMENTS[sub].is_floor else "a one-to-many"
        lines.append(f"{sub}: not checked ({kind} sub-experiment without requirements)")
    return lines


def missing_lines(result: ExperimentCheck, requirements_path: Path) -> list[str]:
    """One line per sub-experiment and reason (a whole missing sub-experiment is one line, not eleven)."""
    grouped: dict[tuple[str, str], list[MissingData]] = {}
    for item in result.missing:
        grouped.setdefault((item.subexperiment, item.reason), []).append(item)
    lines = []
    for (sub, reason), items in grouped.items():
        payloads = ", ".join(str(item.bytes) for item in items)
        lines.append(f"{requirements_path}:{items[0].line}: no measurements for {sub} ({payloads} B): {reason}")
    return lines


# --- the record that `perfgate junit` reads ---------------------------------------------------------
def write_check_record(experiment_dir: Path, requirements_path: Path, result: ExperimentCheck,
                       resources_path: Path | None = None) -> None:
    record = {
        "requirements": str(Path(requirements_path).resolve()),
        "missing": [asdict(item) for item in result.missing],
        "not_checked": list(result.not_checked),
    }
    if resources_path is not None:  # `perfgate junit` checks the resources again, missing ones included
        record["resources_requirements"] = str(Path(resources_path).resolve())
    files.write_text(Path(experiment_dir) / s.CHECK_RECORD_FILE, json.dumps(record, indent=2) + "\n")


# --- the command ----------------------------------------------------------------------------------
def _draw_sub_check_plots(sub: str, report: pd.DataFrame, plots_dir: Path) -> None:
    from .plotting import check_plots

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
                 junit: Path | None, resources_requirements: Path | None = None, print_summaries: bool = False) -> int:
    """Check an experiment folder's summaries against requirements (files.read_requirements of
    requirements_path): check reports, check.json, JUnit and plots (none when plots is None)."""
    summaries, summary_paths = read_experiment_summaries(experiment_dir)
    result = check_experiment(summaries, required, requirements_path=requirements_path, summary_paths=summary_paths)
    metadata = read_metadata(experiment_dir)  # read before anything is written: it may be malformed
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
        write_check_record(experiment_dir, requirements_path, result, resources.path)
        if junit is not None:
            files.write_text(junit, junit_xml.build_junit_xml(result.reports, required, requirements_path,
                                                                    result.missing, metadata, resources))
        if plots is not None:
            draw_check_plots(result.reports, plots, jobs=os.cpu_count() or 1)
        resources_table.write_resource_outputs(experiment_dir, resources, plots)

    if print_summaries:
        for sub, report in result.reports.items():
            print(report_table(sub, report) + "\n")
    for line in outcome_lines(result):
        print(log_text(line))
    for line in missing_lines(result, requirements_path):
        print(f"perfgate check: error: {log_text(line)}", file=sys.stderr)
    checks = sum(len(report) for report in result.reports.values())
    print(f"{checks} checks in {len(result.reports)} sub-experiment(s): {result.failed} failed; "
          f"{len(result.missing)} required payload result(s) without measurements")
    return resources_table.report(resources, result.exit_code)
