"""JUnit XML of a check (docs/formats.md section 12), for Jenkins and the GitHub Actions test reporters.

One <testsuite> per sub-experiment (`latency.<sub>`), one <testcase> per requirement row and checked
magnitude (`Median[16384 B]`), in the order of the check report. A failed check is a <failure>, a
required result without measurements an <error>: every requirement row becomes a testcase, so that
missing data can never pass unseen. Each testcase carries `file` and `line` of its requirement row,
which is where a pull-request annotation lands.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd

from . import files, outputs
from . import schema as s
from .check import MissingData, describe_failure, format_percent, read_check_record, testcase_name
from .errors import InputError

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


def close_suite(suite: ET.Element, counts: dict[str, int], totals: dict[str, int]) -> None:
    """A <testsuite>'s counts as its attributes, added to the document's totals."""
    for key, value in counts.items():
        suite.set(key, str(value))
        totals[key] += value
    suite.set("skipped", "0")
    suite.set("time", "0")


def document(root: ET.Element, totals: dict[str, int]) -> str:
    """The <testsuites> document as text, its totals set."""
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def suite_properties(metadata: dict | None) -> dict[str, str]:
    """Fast DDS commit and version and the platform id of metadata.json; `unknown` where absent."""
    metadata = metadata or {}
    fastdds = metadata.get(s.META_FASTDDS) if isinstance(metadata.get(s.META_FASTDDS), dict) else {}
    platform = metadata.get(s.META_PLATFORM) if isinstance(metadata.get(s.META_PLATFORM), dict) else {}

    def text(value) -> str:
        return UNKNOWN if value in (None, "") else str(value)

    return {
        "fastdds.commit": text(fastdds.get("commit")),
        "fastdds.version": text(fastdds.get("version")),
        "platform.id": text(platform.get(s.META_PLATFORM_ID)),
        "latency_definition": text(metadata.get(s.META_LATENCY_DEFINITION)),
    }


def _ordered_subs(reports: dict[str, pd.DataFrame], requirements: pd.DataFrame) -> list[str]:
    subs = list(dict.fromkeys(requirements[s.EXPERIMENT_TYPE]))
    return subs + [sub for sub in reports if sub not in subs]


def build_junit_xml(reports: dict[str, pd.DataFrame], requirements: pd.DataFrame, requirements_path: Path,
                    missing: list[MissingData], metadata: dict | None, resources=None) -> str:
    """The JUnit document. Every requirement row without a report row is an <error>, with the reason
    from `missing` where it names one. `resources` (a resources_table.ResourceCheck) adds a suite
    `resources.<sub>` per sub-experiment after the latency suites."""
    file_attribute = annotation_path(requirements_path)
    reasons = {(item.subexperiment, item.bytes): item.reason for item in missing}
    properties = suite_properties(metadata)
    root = ET.Element("testsuites", name="perfgate latency")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for sub in _ordered_subs(reports, requirements):
        required = requirements[requirements[s.EXPERIMENT_TYPE] == sub]
        lines = dict(zip(required[s.BYTES].astype(int), required["line"].astype(int)))
        report = reports.get(sub)
        rows = {} if report is None else {
            (row[s.CHECK], int(row[s.BYTES])): row for _, row in report.iterrows()
        }
        payloads = list(lines) or [payload for (_, payload) in rows]
        suite = ET.SubElement(root, "testsuite", name=suite_name(sub))
        counts = {"tests": 0, "failures": 0, "errors": 0}
        props = ET.SubElement(suite, "properties")
        for name, value in properties.items():
            ET.SubElement(props, "property", name=name, value=value)
        for magnitude in s.CHECKED_MAGNITUDES:
            for payload in dict.fromkeys(payloads):
                case = ET.SubElement(suite, "testcase", name=testcase_name(magnitude, payload),
                                     classname=suite_name(sub), file=file_attribute, time="0")
                if payload in lines:
                    case.set("line", str(lines[payload]))
                where = f"{file_attribute}:{lines[payload]}" if payload in lines else file_attribute
                counts["tests"] += 1
                row = rows.get((magnitude, payload))
                if row is None:
                    reason = reasons.get((sub, payload), f"no check result in {s.check_csv_name(sub)}")
                    error = ET.SubElement(case, "error", type=ERROR_TYPE,
                                          message=f"no measurements for {sub} at {payload} B: {reason}")
                    error.text = f"The requirement at {where} has no measured result: {reason}."
                    counts["errors"] += 1
                elif row[s.STATUS] == s.FAILED:
                    # reporters show the message without the suite (mikepenz's job summary, annotation
                    # bodies): it names the sub-experiment and the payload itself, like the <error>'s
                    message = f"{sub} at {payload} B: " + describe_failure(magnitude, row[s.REQUIREMENT],
                                                                            row[s.EXPERIMENT], row[s.PERCENT_OVER])
                    failure = ET.SubElement(case, "failure", type=FAILURE_TYPE, message=message)
                    failure.text = (f"{sub}, {payload} B: {magnitude} measured {files.format_float(row[s.EXPERIMENT])} us, "
                                    f"requirement {files.format_float(row[s.REQUIREMENT])} us, "
                                    f"{files.format_float(row[s.DIFFERENCE])} us over "
                                    f"({format_percent(row[s.PERCENT_OVER])}). Requirement: {where}")
                    counts["failures"] += 1
        close_suite(suite, counts, totals)
    if resources is not None and resources.path is not None:
        _resource_suites(root, resources, properties, totals)
    return document(root, totals)


def _resource_suites(root: ET.Element, resources, properties: dict[str, str], totals: dict[str, int]) -> None:
    """`Resources[publisher rss]` testcases, each at the line of the JSON key that set its limit."""
    file_attribute = annotation_path(resources.path)
    for sub in dict.fromkeys(row.subexperiment for row in resources.rows):
        suite = ET.SubElement(root, "testsuite", name=f"{RESOURCE_SUITE_PREFIX}{sub}")
        props = ET.SubElement(suite, "properties")
        for name, value in properties.items():
            ET.SubElement(props, "property", name=name, value=value)
        counts = {"tests": 0, "failures": 0, "errors": 0}
        for row in (row for row in resources.rows if row.subexperiment == sub):
            case = ET.SubElement(suite, "testcase", name=row.name, classname=f"{RESOURCE_SUITE_PREFIX}{sub}",
                                 file=file_attribute, line=str(row.line), time="0")
            counts["tests"] += 1
            if row.status == s.FAILED:
                failure = ET.SubElement(case, "failure", type=RESOURCE_FAILURE_TYPE, message=row.describe())
                failure.text = f"{row.describe()}. Requirement: {file_attribute}:{row.line}"
                counts["failures"] += 1
            elif row.experiment is None:
                error = ET.SubElement(case, "error", type=ERROR_TYPE, message=row.describe())
                error.text = f"The requirement at {file_attribute}:{row.line} has no measured result: {row.reason}."
                counts["errors"] += 1
        close_suite(suite, counts, totals)


def junit_exit_code(xml_totals: dict[str, int]) -> int:
    if xml_totals["errors"]:
        return s.EXIT_INCOMPLETE
    return s.EXIT_REGRESSION if xml_totals["failures"] else s.EXIT_OK


# --- the command: JUnit from an experiment folder's check reports -----------------------------------
def _read_report(path: Path, requirements: pd.DataFrame, sub: str, requirements_path: Path) -> pd.DataFrame:
    report = files.read_check_report(path)
    for position, (_, row) in enumerate(report.iterrows()):
        line = files.row_line(report, position)
        if row[s.CHECK] not in s.CHECKED_MAGNITUDES:
            raise InputError(f"unknown check {row[s.CHECK]!r}", path, line)
        if row[s.STATUS] not in (s.PASSED, s.FAILED):
            raise InputError(f"unknown status {row[s.STATUS]!r}", path, line)
        if row[[s.REQUIREMENT, s.EXPERIMENT, s.DIFFERENCE, s.PERCENT_OVER]].isna().any():
            raise InputError("a value is not a number", path, line)
        covered = (requirements[s.EXPERIMENT_TYPE] == sub) & (requirements[s.BYTES] == row[s.BYTES])
        if not covered.any():
            raise InputError(f"{sub} at {row[s.BYTES]} B is not in the requirements ({requirements_path}); "
                             "check the experiment again with these requirements", path, line)
    return report


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
    metadata = files.read_metadata(experiment_dir)
    resources = None
    if isinstance((record or {}).get("resources_requirements"), str):
        from .resources_table import prepare_check

        resources = prepare_check(experiment_dir, record["resources_requirements"], list(reports), metadata)
    xml = build_junit_xml(reports, required, requirements_path, recorded, metadata, resources)
    with outputs.write_errors_as_input_errors():
        files.write_text(Path(output), xml)
    root = ET.fromstring(xml)
    totals = {key: int(root.get(key)) for key in ("tests", "failures", "errors")}
    print(f"wrote {output}: {totals['tests']} testcases, {totals['failures']} failures, {totals['errors']} errors")
    return junit_exit_code(totals)
