"""throughput.check: an experiment's throughput tables against the platform's throughput requirements
(docs/formats.md section 15), and the JUnit of that check. Pure: frames in, a check table out.

Each requirement row (Experiment type, Bytes, Demand, Recovery time) asks for a minimum Subscription
throughput, compared as the CSV writes it (three decimals): equal passes. Samples lost by a reliable
sub-experiment always fail (reliable delivery loses nothing); a best-effort one is held to the row's
Lost [%] where the row gives one. A required test that was not measured is an error (exit 3).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import files, outputs
from ..latency import listing
from .. import schema as s
from ..errors import InputError
from ..outcome import INCOMPLETE, MEASURED, PASS, REGRESSION, exit_code, verdict_of
from ..model import Metadata, read_metadata
from ..latency.requested import require_list, requested_of
from .. import junit_writer
from ..latency.junit import annotation_path, suite_properties
from ..junit_writer import TestCase
from .files import (REQUIREMENT_BYTES, REQUIREMENT_DEMAND, REQUIREMENT_LOST, REQUIREMENT_RECOVERY,
                    REQUIREMENT_THROUGHPUT, read_throughput, read_throughput_requirements, table_paths)

THROUGHPUT_CHECK = "Throughput"
LOST_CHECK = "Lost"
CHECK_TABLE_COLUMNS = (s.EXPERIMENT_TYPE, s.CHECK, s.BYTES, REQUIREMENT_DEMAND, REQUIREMENT_RECOVERY, s.REQUIREMENT,
                       s.EXPERIMENT, s.STATUS, "line")
SUITE_PREFIX = "throughput."
FAILURE_TYPE = "throughput_regression"
ERROR_TYPE = "missing_measurements"
THROUGHPUT_CHECKS_FILE = "throughput_checks.csv"


@dataclass
class ThroughputCheck:
    table: pd.DataFrame  # CHECK_TABLE_COLUMNS, in requirement order
    missing: list[tuple[str, int, int, int, int, str]] = field(default_factory=list)  # sub, B, demand, ms, line, why

    @property
    def failed(self) -> int:
        return int((self.table[s.STATUS] == s.FAILED).sum())

    @property
    def exit_code(self) -> int:
        return exit_code(verdict_of(incomplete=bool(self.missing), regressed=bool(self.failed)))


def base_subexperiment(name: str) -> s.SubExperiment | None:
    """The latency sub-experiment whose transport a throughput_<sub> name runs, or None."""
    if not name.startswith(s.THROUGHPUT_PREFIX):
        return None
    return s.KNOWN_SUBEXPERIMENTS.get(name[len(s.THROUGHPUT_PREFIX):])


def lost_percent(sent: int, lost: int) -> float:
    return 100.0 * lost / sent if sent else 0.0


def check_throughput(tables: dict[str, pd.DataFrame], requirements: pd.DataFrame) -> ThroughputCheck:
    """tables: throughput sub-experiment name (throughput_<sub>) -> its throughput table."""
    rows, missing = [], []
    for _, req in requirements.iterrows():
        name = req[s.EXPERIMENT_TYPE]
        key = (int(req[REQUIREMENT_BYTES]), int(req[REQUIREMENT_DEMAND]), int(req[REQUIREMENT_RECOVERY]))
        table = tables.get(name)
        found = pd.DataFrame() if table is None else table[
            (table[s.PAYLOAD] == key[0]) & (table[s.DEMAND] == key[1]) & (table[s.RECOVERY_TIME] == key[2])]
        if found.empty:
            why = "the test was not measured" if table is not None else f"no {name}.csv"
            missing.append((name, *key, int(req["line"]), why))
            continue
        measured = found.iloc[0]
        minimum = float(req[REQUIREMENT_THROUGHPUT])
        value = float(measured[s.SUBSCRIPTION_THROUGHPUT])
        rows.append((name, THROUGHPUT_CHECK, *key, minimum, value,
                     s.PASSED if files.thousandths([value])[0] >= files.thousandths([minimum])[0] else s.FAILED,
                     int(req["line"])))
        base = base_subexperiment(name)
        reliable = base is not None and base.reliability == "reliable"
        allowed = 0.0 if reliable else req.get(REQUIREMENT_LOST, math.nan)
        if allowed is not None and not (isinstance(allowed, float) and math.isnan(allowed)):
            lost = lost_percent(int(measured[s.SENT]), int(measured[s.LOST]))
            over = int(measured[s.LOST]) > 0 if reliable else \
                files.thousandths([lost])[0] > files.thousandths([float(allowed)])[0]
            rows.append((name, LOST_CHECK, *key, float(allowed), lost, s.FAILED if over else s.PASSED,
                         int(req["line"])))
    return ThroughputCheck(pd.DataFrame(rows, columns=list(CHECK_TABLE_COLUMNS)), missing)


# --- JUnit ------------------------------------------------------------------------------------------
def testcase_name(check: str, payload: int, demand: int, recovery_ms: int, several_recoveries: bool) -> str:
    """`Throughput[16 B x 1000]`; with the recovery time where one payload and demand have several."""
    recovery = f", {recovery_ms} ms" if several_recoveries else ""
    return f"{check}[{payload} B x {demand}{recovery}]"


def several_recoveries(requirements: pd.DataFrame, name: str) -> bool:
    """Whether a payload and demand of this sub-experiment are required at several recovery times (then
    the testcase names carry the recovery time)."""
    required = requirements[requirements[s.EXPERIMENT_TYPE] == name]
    return bool(required.duplicated([REQUIREMENT_BYTES, REQUIREMENT_DEMAND], keep=False).any())


def _describe(row) -> str:
    if row[s.CHECK] == THROUGHPUT_CHECK:
        return (f"subscription throughput {files.format_float(row[s.EXPERIMENT])} Mb/s < requirement "
                f"{files.format_float(row[s.REQUIREMENT])} Mb/s")
    if row[s.REQUIREMENT] == 0:
        return f"lost {files.format_float(row[s.EXPERIMENT])} % of its samples; reliable delivery loses none"
    return f"lost {files.format_float(row[s.EXPERIMENT])} % > allowed {files.format_float(row[s.REQUIREMENT])} %"


def build_throughput_junit(result: ThroughputCheck, requirements: pd.DataFrame, requirements_path: Path,
                           metadata: Metadata | None) -> str:
    """One <testsuite> per throughput sub-experiment, one <testcase> per check of a requirement row, with
    the row's file and line; a required test without measurements is an <error>."""
    file_attribute = annotation_path(requirements_path)
    properties = suite_properties(metadata)
    properties.pop("latency_definition", None)
    suites = []
    for name in dict.fromkeys(requirements[s.EXPERIMENT_TYPE]):
        several = several_recoveries(requirements, name)
        cases = []

        def case(title: str, line: int) -> TestCase:
            cases.append(TestCase(title, classname=f"{SUITE_PREFIX}{name}", file=file_attribute, line=line))
            return cases[-1]

        for sub, payload, demand, recovery, line, why in (m for m in result.missing if m[0] == name):
            case(testcase_name(THROUGHPUT_CHECK, payload, demand, recovery, several), line).add_error_info(
                f"no measurements for {sub} at {payload} B x {demand}: {why}",
                f"The requirement at {file_attribute}:{line} has no measured result: {why}.", ERROR_TYPE)
        for _, row in result.table[result.table[s.EXPERIMENT_TYPE] == name].iterrows():
            title = testcase_name(row[s.CHECK], int(row[s.BYTES]), int(row[REQUIREMENT_DEMAND]),
                                  int(row[REQUIREMENT_RECOVERY]), several)
            element = case(title, int(row["line"]))
            if row[s.STATUS] == s.FAILED:
                message = f"{name} at {int(row[s.BYTES])} B x {int(row[REQUIREMENT_DEMAND])}: {_describe(row)}"
                element.add_failure_info(message, f"{message}. Requirement: {file_attribute}:{int(row['line'])}",
                                         FAILURE_TYPE)
        suites.append(junit_writer.suite(f"{SUITE_PREFIX}{name}", cases, properties))
    return junit_writer.document("perfgate throughput", suites)


# --- headlines for the gate's reports ---------------------------------------------------------------------
def measured_headline(folder: Path, code: int) -> str:
    """A throughput run without requirements: measured, not checked (reliable losses still fail)."""
    tables = sorted(folder.glob(f"{s.THROUGHPUT_PREFIX}*.csv"))
    if code == s.EXIT_INCOMPLETE or not tables:
        return f"{INCOMPLETE}: throughput measured for {len(tables)} sub-experiment(s), not all finished"
    if code == s.EXIT_REGRESSION:
        return f"{REGRESSION}: a reliable throughput sub-experiment lost samples ({len(tables)} measured)"
    return f"{MEASURED}: throughput of {len(tables)} sub-experiment(s), no throughput requirements to check"


def checked_headline(folder: Path, code: int) -> str:
    path = folder / THROUGHPUT_CHECKS_FILE
    table = pd.read_csv(path) if path.is_file() else pd.DataFrame(columns=[s.STATUS])
    failed = int((table[s.STATUS] == s.FAILED).sum())
    if code == s.EXIT_INCOMPLETE:
        return f"{INCOMPLETE}: {len(table)} throughput checks, {failed} failed; a required test or sub-experiment missing"
    if failed:
        return f"{REGRESSION}: {failed} of {len(table)} throughput checks failed"
    return f"{PASS}: all {len(table)} throughput checks passed"


# --- the command ------------------------------------------------------------------------------------


def requested_tests(metadata: Metadata | None, path: Path | None = None) -> set[tuple[str, int, int, int]] | None:
    """(throughput name, payload, demand, recovery time) of every test the run asked for, from its
    metadata.json; None when it is not a throughput run's (then every requirement row counts). A field of
    the wrong type is refused (exit 2): read loosely, it could make every row "not asked for", a pass."""
    settings = metadata.throughput if metadata is not None else None
    if settings is None:
        return None
    # the sub-experiments and payloads asked for are read as the latency check reads them (perfgate.latency.requested);
    # a throughput run records them always, and its demands and recovery times
    for key, value, kind in (("requested_subexperiments", metadata.requested_subexperiments, str),
                             ("payloads", metadata.payloads, int), ("throughput.demands", settings.demands, int),
                             ("throughput.recovery_times_ms", settings.recovery_times_ms, int)):
        require_list(key, value, kind, path)
    asked = requested_of(metadata, path)
    return {(s.throughput_name(sub), p, d, r) for sub in asked.subexperiments for p in asked.payloads
            for d in settings.demands for r in settings.recovery_times_ms}


def requested_requirements(required: pd.DataFrame, requested) -> tuple[pd.DataFrame, int]:
    """The requirement rows the run asked to measure, and how many others there are (a quick run, or
    a subset of sub-experiments, measures fewer tests than the platform's file lists: those are not
    missing, they were not asked for)."""
    if requested is None:
        return required, 0
    keys = zip(required[s.EXPERIMENT_TYPE], required[REQUIREMENT_BYTES].astype(int),
               required[REQUIREMENT_DEMAND].astype(int), required[REQUIREMENT_RECOVERY].astype(int))
    asked = [key in requested for key in keys]
    return required[asked].reset_index(drop=True), len(asked) - sum(asked)


def require_covered(experiment_dir: Path, requirements: pd.DataFrame, requirements_path: Path, requested) -> None:
    """Every throughput sub-experiment the run asked for (without metadata: every table in the folder)
    is in the requirements, unless it is measured for reference only (schema.checked_by_default), as in
    the latency check: a measured result that nothing checks would pass unseen (exit 2)."""
    asked = sorted({key[0] for key in requested}) if requested is not None else list(table_paths(experiment_dir))
    listed = set(requirements[s.EXPERIMENT_TYPE])
    for name in asked:
        base = base_subexperiment(name)
        if name not in listed and (base is None or s.checked_by_default(base.name)):
            where = experiment_dir / (f"{name}.csv" if requested is None else s.METADATA_FILE)
            raise InputError(f"{name} is measured but not in the requirements ({requirements_path})", where)


def read_tables(experiment_dir: Path, requirements: pd.DataFrame, requirements_path: Path,
                requested) -> dict[str, pd.DataFrame]:
    """The throughput tables the requirements name. A sub-experiment the run asked for but did not
    measure is missing data (its tests are errors, exit 3); one that names no sub-experiment this
    folder could hold, in a folder that does not say what it asked for, is bad input (exit 2)."""
    tables = {}
    for name in dict.fromkeys(requirements[s.EXPERIMENT_TYPE]):
        path = experiment_dir / f"{name}.csv"
        if path.exists() and not path.is_file():
            raise InputError("a throughput table is not a file", path)
        if path.is_file():
            tables[name] = read_throughput(path)
        elif requested is None or base_subexperiment(name) is None:
            line = int(requirements.loc[requirements[s.EXPERIMENT_TYPE] == name, "line"].iloc[0])
            raise InputError(f"requires {name}, which {experiment_dir} did not measure (no {path.name})",
                             requirements_path, line)
    return tables


def require_outputs(experiment_dir: Path, junit, plots: Path | None, names, requirements_path: Path) -> None:
    """Every file the check writes, tried before the first is written; the JUnit file may be none of the
    files it reads or writes (a typo would replace a measured table or the metadata)."""
    report = outputs.require_writable(experiment_dir / THROUGHPUT_CHECKS_FILE, "check report")
    if plots is not None:
        if plots.is_symlink() and not plots.exists():
            raise InputError("the plots folder is a link to nothing (or a loop of links)", plots)
        outputs.require_writable(plots, "plots folder", folder=True)
    pictures = [outputs.require_writable(plots / f"{name}.png", "plot") for name in names] if plots else []
    if junit is not None:
        outputs.require_writable(Path(junit), "JUnit file")
        inputs = [requirements_path, experiment_dir / s.METADATA_FILE, report, *table_paths(experiment_dir).values(),
                  *pictures]
        outputs.require_not_input(Path(junit), inputs, "JUnit file")


def command_check_throughput(*, requirements, experiment_directory, junit=None, plots_directory=None,
                             no_plots=False) -> int:
    outputs.require_paths(requirements=requirements, experiment_directory=experiment_directory, junit=junit,
                          plots_directory=plots_directory)
    experiment_dir = Path(experiment_directory)
    plots = None if no_plots else Path(plots_directory) if plots_directory else experiment_dir / s.PLOTS_DIR
    return check_throughput_folder(read_throughput_requirements(Path(requirements)), Path(requirements),
                                   experiment_dir, junit=Path(junit) if junit else None, plots=plots)


def check_throughput_folder(everything: pd.DataFrame, requirements_path: Path, experiment_dir: Path, *,
                            junit: Path | None, plots: Path | None) -> int:
    """Check a throughput folder against throughput requirements (read_throughput_requirements of
    requirements_path): throughput_checks.csv, JUnit and plots (none when plots is None)."""
    from ..plotting.throughput_plots import draw_throughput

    experiment_dir = files.require_dir(experiment_dir, "experiment folder")
    metadata = read_metadata(experiment_dir)
    requested = requested_tests(metadata, experiment_dir / s.METADATA_FILE)
    required, not_asked = requested_requirements(everything, requested)
    tables = read_tables(experiment_dir, required, requirements_path, requested)
    require_covered(experiment_dir, everything, requirements_path, requested)
    require_outputs(experiment_dir, junit, plots, tables, requirements_path)
    result = check_throughput(tables, required)
    if result.table.empty and not result.missing:  # all asked for is beyond the requirements: not a pass
        raise InputError(f"no requirement row names a test this run measured ({not_asked} row(s) name others): "
                         "nothing to check", requirements_path)
    with outputs.write_errors_as_input_errors():
        files.write_csv(experiment_dir / THROUGHPUT_CHECKS_FILE, result.table.drop(columns=["line"]))
        if junit is not None:
            files.write_text(junit, build_throughput_junit(result, required, requirements_path, metadata))
        if plots is not None:
            plots.mkdir(parents=True, exist_ok=True)
            for name, table in tables.items():
                mine = result.table[(result.table[s.EXPERIMENT_TYPE] == name) & (result.table[s.CHECK] == THROUGHPUT_CHECK)]
                draw_throughput(name, table, mine, plots / f"{name}.png")
    if not_asked:
        print(f"note: {not_asked} requirement row(s) name tests this run did not ask for (fewer payloads, demands "
              "or sub-experiments): not checked")
    for name in dict.fromkeys(required[s.EXPERIMENT_TYPE]):
        mine = result.table[result.table[s.EXPERIMENT_TYPE] == name]
        print(f"{name}: {len(mine)} checks, {int((mine[s.STATUS] == s.FAILED).sum())} failed")
        for _, row in mine[mine[s.STATUS] == s.FAILED].iterrows():
            title = testcase_name(row[s.CHECK], int(row[s.BYTES]), int(row[REQUIREMENT_DEMAND]),
                                  int(row[REQUIREMENT_RECOVERY]), several_recoveries(required, name))
            print(f"  {title}: {_describe(row)}")
    missing = [f"no measurements for {sub} at {payload} B x {demand}, {recovery} ms ({requirements_path}:{line}): {why}"
               for sub, payload, demand, recovery, line, why in result.missing]
    for line in listing.first_lines(missing, "and {count} more required test(s) without measurements (JUnit lists "
                                             "every one)"):  # bounded, whatever the number of rows
        print(f"perfgate check-throughput: error: {line}", file=sys.stderr)
    print(f"{len(result.table)} throughput checks: {result.failed} failed; {len(result.missing)} required test(s) "
          "without measurements")
    return result.exit_code
