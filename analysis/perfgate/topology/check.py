"""`perfgate check-topology`: an experiment of `perfgate topology` against a performance target;
one JUnit testcase per limit, on the target's file and line. Exit 0 all within, 1 a limit missed,
2 a bad target, 3 the experiment's files missing or without measurements."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from .. import junit_writer, outputs
from ..escape.workflow import log_text
from .. import schema as s
from ..errors import IncompleteError, InputError
from ..junit_writer import TestCase
from . import classify
from . import names as n
from .target import Outcome, Target, compare, measured_resources, publishing_start_ms, read_target

SUITE = "topology"
FAILURE_TYPE = "TargetMissed"


def _read(folder: Path, name: str, columns) -> pd.DataFrame:
    path = folder / name
    if path.exists() and not path.is_file():  # a link to /dev/zero would be read for ever
        raise IncompleteError(f"{name} is not a regular file: not a perfgate topology result", path)
    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError) as error:
        raise IncompleteError(f"cannot read {name}: {error}", path) from None
    missing = [column for column in columns if column not in frame.columns]
    if missing or frame.empty:
        raise IncompleteError(f"no {missing[0] if missing else 'rows'}: not a perfgate topology result", path)
    if frame[list(columns)].select_dtypes(exclude="number").columns.difference([n.PROCESS]).size:
        raise IncompleteError("a column that should hold numbers does not", path)
    return frame


def measured_figures(folder: Path) -> tuple[dict[str, dict[str, float]], pd.DataFrame, float]:
    """(the figures a target limits, resources.csv, when publishing started in ms)."""
    total = _read(folder, n.LATENCY_TOTAL_CSV, n.LATENCY_TOTAL_COLUMNS).iloc[0]
    usage = _read(folder, n.RESOURCES_CSV, (n.RESOURCE_TIME, n.PROCESS, n.RESOURCE_CPU, n.RESOURCE_RSS))
    publishing_ms = publishing_start_ms(_read(folder, n.EVENTS_CSV, (n.EVENT_TIME, n.EVENT_CODE)))
    # a count or share that is empty, NaN, infinite or negative is no measurement (and int(NaN) raises):
    # a missing result is an error, never a pass
    broken = [column for column in n.LATENCY_TOTAL_COLUMNS
              if not (math.isfinite(float(total[column])) and float(total[column]) >= 0)]
    if broken:
        raise IncompleteError(f"{broken[0]} is {float(total[broken[0]]):g}, not a measured count or share",
                              folder / n.LATENCY_TOTAL_CSV)
    if int(total[n.RECEIVED]) == 0:
        raise IncompleteError("no message was received: nothing to check", folder / n.LATENCY_TOTAL_CSV)
    contradicted_share(total, folder / n.LATENCY_TOTAL_CSV)
    if not (usage[n.RESOURCE_TIME] > publishing_ms).any():
        raise IncompleteError("no CPU sample while publishing (a run shorter than --sampling?)",
                              folder / n.RESOURCES_CSV)
    return ({n.TARGET_RESOURCES: measured_resources(usage, publishing_ms),
             n.TARGET_LATENCY_TOTAL: {key: float(total[key]) for key in n.TARGET_LATENCY_KEYS}}, usage, publishing_ms)


# each share a target limits, and the counts it is written from (topology.tables: classify.percent)
SHARES = ((n.LATE_PERCENT, n.LATE, (n.RECEIVED,)), (n.TOO_LATE_PERCENT, n.TOO_LATE, (n.RECEIVED,)),
          (n.LOST_PERCENT, n.LOST, (n.RECEIVED, n.LOST)))
SHARE_TOLERANCE = 0.0005 + 1e-9  # half the last of the 3 decimals run.FLOAT_FORMAT writes (and a float's error)


def contradicted_share(total: pd.Series, path: Path) -> None:
    """A share that is not its counts' (late[%] = 100 late / received, lost[%] = 100 lost / (received + lost)),
    to the 3 decimals written: the target would judge a figure the run never measured. InputError (exit 2)."""
    for share, part, whole in SHARES:
        expected = classify.percent(float(total[part]), sum(float(total[column]) for column in whole))
        if not abs(float(total[share]) - expected) <= SHARE_TOLERANCE:
            raise InputError(f"{share} is {float(total[share]):g}, but {part} {float(total[part]):g} of "
                             f"{' + '.join(whole)} {sum(float(total[c]) for c in whole):g} is {expected:.3f} %: "
                             "the file contradicts itself", path)


def draw_with_target(usage: pd.DataFrame, target: Target, publishing_ms: float, path: Path) -> None:
    from ..plotting import topology_plots  # drawing only here
    limits = {limit.metric: limit.limit for limit in target.limits if limit.section == n.TARGET_RESOURCES}
    path.parent.mkdir(parents=True, exist_ok=True)
    topology_plots.draw_resources(usage, f"CPU and memory against {target.path.name}", path,
                                  limits.get(n.RESOURCE_CPU), limits.get(n.RESOURCE_RSS), publishing_ms)


def junit_text(outcomes: list[Outcome], target_file: str) -> str:
    cases = []
    for outcome in outcomes:
        limit = outcome.limit
        case = TestCase(f"{limit.section}.{limit.metric}", classname=SUITE, file=target_file, line=limit.line)
        if not outcome.passed:
            case.add_failure_info(f"{limit.section} {limit.metric}: {outcome.measured:g} above the target's "
                                  f"{limit.limit:g}", f"{target_file}:{limit.line}: measured {outcome.measured:g}, "
                                  f"target at most {limit.limit:g}", FAILURE_TYPE)
        else:
            case.stdout = f"measured {outcome.measured:g}, target at most {limit.limit:g}"
        cases.append(case)
    return junit_writer.document("perfgate topology", [junit_writer.suite(SUITE, cases)])


def command_check_topology(*, target, experiment_directory, junit=None, plots_directory=None, no_plots=False) -> int:
    outputs.require_paths(target=target, experiment_directory=experiment_directory, junit=junit,
                          plots_directory=plots_directory)
    parsed = read_target(target)
    figures, usage, publishing_ms = measured_figures(Path(experiment_directory))
    outcomes = compare(parsed, figures)
    if not no_plots:
        plots = Path(plots_directory) if plots_directory else Path(experiment_directory) / s.PLOTS_DIR
        with outputs.write_errors_as_input_errors():
            draw_with_target(usage, parsed, publishing_ms, outputs.require_writable(plots, "--plots-directory",
                                                                                     folder=True) / n.RESOURCES_PLOT)
    if junit is not None:
        path = outputs.require_writable(Path(junit), "--junit")
        with outputs.write_errors_as_input_errors():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(junit_text(outcomes, str(target)))
    missed = [o for o in outcomes if not o.passed]
    shown = log_text(str(target))  # a path from the command line: printed, never a workflow command
    for outcome in outcomes:
        limit = outcome.limit
        print(f"{'FAIL' if not outcome.passed else 'ok  '} {limit.section} {limit.metric}: {outcome.measured:.4g} "
              f"(target at most {limit.limit:g}, {shown}:{limit.line})")
    print(f"perfgate check-topology: {len(outcomes)} checks, {len(missed)} missed")
    return s.EXIT_REGRESSION if missed else s.EXIT_OK
