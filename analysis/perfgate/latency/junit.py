"""JUnit XML of a check (docs/formats.md section 12), for Jenkins and the GitHub Actions test reporters.

One <testsuite> per sub-experiment (`latency.<sub>`), one <testcase> per requirement row and checked
magnitude (`Median[16384 B]`), in the order of the check report. A failed check is a <failure>, a
required result without measurements an <error>: every requirement row becomes a testcase, so that
missing data can never pass unseen, except the rows the run was not asked for (perfgate.latency.requested:
no testcase, a run narrowed to two sub-experiments is no failure of the other eight). Each testcase
carries `file` and `line` of its requirement row, which is where a pull-request annotation lands.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd

from .. import files, outcome, outputs
from .. import junit_writer
from .. import schema as s
from .check_terms import MissingData, describe_failure, format_percent, read_check_record, testcase_name
from ..errors import InputError
from ..escape.workflow import log_text
from ..junit_writer import TestCase
from ..model import FastDDS, Metadata, read_metadata
from .requested import Requested, requested_of
from .resources_table import prepare_check

SUITE_PREFIX = "latency."
FAILURE_TYPE = "latency_regression"
ERROR_TYPE = "missing_measurements"
UNKNOWN = "unknown"
RESOURCE_SUITE_PREFIX = "resources."
RESOURCE_FAILURE_TYPE = "resource_regression"


def suite_name(sub: str) -> str:
    return f"{SUITE_PREFIX}{sub}"


def annotation_path(path: Path, working_dir: Path | None = None) -> str:
    """The path a pull-request annotation needs: relative to the enclosing git repository, else to the
    working folder, else absolute."""
    path = Path(path).resolve()
    for folder in path.parents:
        if (folder / ".git").exists():
            return path.relative_to(folder).as_posix()
    working_dir = Path(working_dir or os.getcwd()).resolve()
    if path.is_relative_to(working_dir):
        return path.relative_to(working_dir).as_posix()
    return path.as_posix()


def suite_properties(metadata: Metadata | None) -> dict[str, str]:
    """Fast DDS commit and version and the platform id of metadata.json; `unknown` where absent."""
    metadata = metadata or Metadata()
    fastdds = metadata.fastdds or FastDDS()

    def text(value) -> str:
        return UNKNOWN if value in (None, "") else str(value)

    return {
        "fastdds.commit": text(fastdds.commit),
        "fastdds.version": text(fastdds.version),
        "platform.id": text(metadata.platform_id),
        "latency_definition": text(metadata.latency_definition),
    }


def _ordered_subs(reports: dict[str, pd.DataFrame], requirements: pd.DataFrame) -> list[str]:
    subs = list(dict.fromkeys(requirements[s.EXPERIMENT_TYPE]))
    return subs + [sub for sub in reports if sub not in subs]


def build_junit_xml(reports: dict[str, pd.DataFrame], requirements: pd.DataFrame, requirements_path: Path,
                    missing: list[MissingData], metadata: Metadata | None, resources=None,
                    not_asked: list[MissingData] = ()) -> str:
    """The JUnit document. Every requirement row without a report row is an <error>, with the reason
    from `missing` where it names one, unless it is one of `not_asked` (no testcase). `resources` (a
    resources_table.ResourceCheck) adds a suite `resources.<sub>` per sub-experiment after the latency
    suites."""
    file_attribute = annotation_path(requirements_path)
    reasons = {(item.subexperiment, item.bytes): item.reason for item in missing}
    left_out = {(item.subexperiment, int(item.bytes)) for item in not_asked}  # rows without measurements only
    if left_out:
        keys = zip(requirements[s.EXPERIMENT_TYPE], requirements[s.BYTES].astype(int))
        requirements = requirements[[key not in left_out for key in keys]]
    properties = suite_properties(metadata)
    suites = []
    for sub in _ordered_subs(reports, requirements):
        required = requirements[requirements[s.EXPERIMENT_TYPE] == sub]
        lines = dict(zip(required[s.BYTES].astype(int), required["line"].astype(int)))
        report = reports.get(sub)
        rows = {} if report is None else {
            (row[s.CHECK], int(row[s.BYTES])): row for _, row in report.iterrows()
        }
        payloads = list(lines) or [payload for (_, payload) in rows]
        cases = []
        for magnitude in s.CHECKED_MAGNITUDES:
            for payload in dict.fromkeys(payloads):
                case = TestCase(testcase_name(magnitude, payload), classname=suite_name(sub), file=file_attribute,
                                line=lines.get(payload))
                where = f"{file_attribute}:{lines[payload]}" if payload in lines else file_attribute
                row = rows.get((magnitude, payload))
                if row is None:
                    reason = reasons.get((sub, payload), f"no check result in {s.check_csv_name(sub)}")
                    case.add_error_info(f"no measurements for {sub} at {payload} B: {reason}",
                                        f"The requirement at {where} has no measured result: {reason}.", ERROR_TYPE)
                elif row[s.STATUS] == s.FAILED:
                    # reporters show the message without the suite (mikepenz's job summary, annotation
                    # bodies): it names the sub-experiment and the payload itself, like the <error>'s
                    message = f"{sub} at {payload} B: " + describe_failure(magnitude, row[s.REQUIREMENT],
                                                                            row[s.EXPERIMENT], row[s.PERCENT_OVER])
                    case.add_failure_info(message, (
                        f"{sub}, {payload} B: {magnitude} measured {files.format_float(row[s.EXPERIMENT])} us, "
                        f"requirement {files.format_float(row[s.REQUIREMENT])} us, "
                        f"{files.format_float(row[s.DIFFERENCE])} us over "
                        f"({format_percent(row[s.PERCENT_OVER])}). Requirement: {where}"), FAILURE_TYPE)
                elif row[s.STATUS] == s.NOTED:
                    # a miss within the gross margin (a baseline build decides): <skipped> with the
                    # reason, which every reporter counts and lists apart, without failing the job;
                    # a passing testcase's <system-out> would stay hidden in most of them
                    case.add_skipped_info(
                        f"note: {sub} at {payload} B: " + describe_failure(magnitude, row[s.REQUIREMENT],
                                                                          row[s.EXPERIMENT], row[s.PERCENT_OVER])
                        + " (within the gross margin: not a failure, the A/B against the baseline build decides)")
                cases.append(case)
        suites.append(junit_writer.suite(suite_name(sub), cases, properties))
    if resources is not None and resources.path is not None:
        suites += _resource_suites(resources, properties)
    return junit_writer.document("perfgate latency", suites)


def _resource_suites(resources, properties: dict[str, str]) -> list:
    """`Resources[publisher rss]` testcases, each at the line of the JSON key that set its limit."""
    file_attribute = annotation_path(resources.path)
    suites = []
    for sub in dict.fromkeys(row.subexperiment for row in resources.rows):
        cases = []
        for row in (row for row in resources.rows if row.subexperiment == sub):
            case = TestCase(row.name, classname=f"{RESOURCE_SUITE_PREFIX}{sub}", file=file_attribute, line=row.line)
            if row.status == s.FAILED:
                case.add_failure_info(row.describe(), f"{row.describe()}. Requirement: {file_attribute}:{row.line}",
                                      RESOURCE_FAILURE_TYPE)
            elif row.experiment is None:
                case.add_error_info(row.describe(), f"The requirement at {file_attribute}:{row.line} has no measured "
                                    f"result: {row.reason}.", ERROR_TYPE)
            cases.append(case)
        suites.append(junit_writer.suite(f"{RESOURCE_SUITE_PREFIX}{sub}", cases, properties))
    return suites


def junit_exit_code(xml_totals: dict[str, int]) -> int:
    return outcome.exit_code(outcome.verdict_of(incomplete=xml_totals["errors"] > 0, regressed=xml_totals["failures"] > 0))


# --- the command: JUnit from an experiment folder's check reports -----------------------------------
def _read_report(path: Path, requirements: pd.DataFrame, sub: str, requirements_path: Path) -> pd.DataFrame:
    report = files.read_check_report(path)
    for position, (_, row) in enumerate(report.iterrows()):
        line = files.row_line(report, position)
        if row[s.CHECK] not in s.CHECKED_MAGNITUDES:
            raise InputError(f"unknown check {row[s.CHECK]!r}", path, line)
        if row[s.STATUS] not in s.CHECK_STATUSES:
            raise InputError(f"unknown status {row[s.STATUS]!r}", path, line)
        if row[[s.REQUIREMENT, s.EXPERIMENT, s.DIFFERENCE, s.PERCENT_OVER]].isna().any():
            raise InputError("a value is not a number", path, line)
        covered = (requirements[s.EXPERIMENT_TYPE] == sub) & (requirements[s.BYTES] == row[s.BYTES])
        if not covered.any():
            raise InputError(f"{sub} at {row[s.BYTES]} B is not in the requirements ({requirements_path}); "
                             "check the experiment again with these requirements", path, line)
    return report


def not_asked_rows(requirements: pd.DataFrame, reports: dict[str, pd.DataFrame], requested: Requested) -> list[MissingData]:
    """The requirement rows without a check result that the run was not asked for, found from its
    metadata again (never from check.json, which only reports what check found)."""
    checked = {(sub, int(payload)) for sub, report in reports.items() for payload in report[s.BYTES]}
    return [MissingData(sub, int(payload), int(line), "not asked for")
            for sub, payload, line in zip(requirements[s.EXPERIMENT_TYPE], requirements[s.BYTES], requirements["line"])
            if (sub, int(payload)) not in checked and not requested.asks_for(sub, int(payload))]


def command_junit(experiment_directory, output, requirements=None) -> int:
    outputs.require_paths(experiment_directory=experiment_directory, output=output, requirements=requirements)
    experiment_dir = files.require_dir(Path(experiment_directory), "experiment folder")
    record = read_check_record(experiment_dir)
    outputs.require_writable(Path(output), "JUnit file")
    if requirements is None:
        if record is None or not record.get("requirements"):
            raise InputError(f"no requirements: give --requirements, or run `perfgate check` first "
                             f"(it records the requirements it used in {s.CHECK_RECORD_FILE})", experiment_dir)
        requirements = record["requirements"]
    requirements_path = Path(requirements)
    required = files.read_requirements(requirements_path)
    report_paths = files.check_files(experiment_dir)
    if not report_paths:
        raise InputError(f"no check reports ({s.check_csv_name('<sub>')}) in the experiment folder; "
                         "run `perfgate check` first", experiment_dir)
    reports = {sub: _read_report(path, required, sub, requirements_path) for sub, path in report_paths.items()}
    outputs.require_not_input(Path(output), [requirements_path, *report_paths.values(),
                                           *files.summary_files(experiment_dir, required=False).values(),
                                           experiment_dir / s.METADATA_FILE, experiment_dir / s.CHECK_RECORD_FILE],
                            "JUnit file")
    try:
        recorded = [MissingData(**item) for item in (record or {}).get("missing", [])]
    except TypeError:
        raise InputError("malformed list of missing measurements", experiment_dir / s.CHECK_RECORD_FILE) from None
    metadata = read_metadata(experiment_dir)
    resources = None
    if isinstance((record or {}).get("resources_requirements"), str):
        resources = prepare_check(experiment_dir, record["resources_requirements"], list(reports), metadata)
    xml = build_junit_xml(reports, required, requirements_path, recorded, metadata, resources,
                          not_asked=not_asked_rows(required, reports, requested_of(metadata,
                                                                                   experiment_dir / s.METADATA_FILE)))
    with outputs.write_errors_as_input_errors():
        files.write_text(Path(output), xml)
    root = ET.fromstring(xml)
    totals = {key: int(root.get(key)) for key in ("tests", "failures", "errors")}
    print(f"wrote {log_text(output)}: {totals['tests']} testcases, {totals['failures']} failures, {totals['errors']} errors")
    return junit_exit_code(totals)
