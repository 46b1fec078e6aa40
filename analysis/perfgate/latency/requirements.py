"""determine-requirements: requirements from many runs of one commit, and what that choice costs.

Pure computations first: `run_values` (summaries -> one array of checked values per run),
`requirements_from_values` (a percentile across runs, raised by a relative margin), `leave_one_out`
(how often an unchanged run would fail the derived requirements).

Why a margin: with hundreds of checks per run, requirements at even the largest value of the runs
seen fail nearly every unchanged run (a new run beats the maximum of n others in about 1 of n+1
checks). The leave-one-out figures say what a margin buys; `MARGINS_SHOWN` are printed beside the
chosen one so that the choice is made with its cost in view. `command_determine_requirements` reads, prints and writes
around them.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from . import experiments as ex
from .. import files, outputs, plausibility
from .. import schema as s
from .check import is_over
from ..errors import InputError
from ..escape.workflow import log_list, log_text

MARGINS_SHOWN = (0.0, 0.1, 0.25, 0.5, 1.0)


@dataclass(frozen=True)
class RunValues:
    """Checked values of several runs: `values[run, key]`, keys are (sub-experiment, Bytes, check)."""

    keys: pd.MultiIndex
    values: np.ndarray  # runs x keys, NaN where a run lacks the payload


def run_values(summaries: list[dict[str, pd.DataFrame]]) -> RunValues:
    """One row per run of every checked magnitude, sub-experiment and payload, aligned on one key set.

    Keys are ordered by sub-experiment (the contract's order), payload, then check.
    """
    rows = []
    for run, by_sub in enumerate(summaries):
        for sub, summary in by_sub.items():
            long = summary.melt(id_vars=[s.BYTES], value_vars=list(s.CHECKED_MAGNITUDES), var_name=s.CHECK,
                                value_name="value")
            long.insert(0, s.EXPERIMENT_TYPE, sub)
            long.insert(0, "run", run)
            rows.append(long)
    table = pd.concat(rows, ignore_index=True)
    wide = table.pivot_table(index="run", columns=[s.EXPERIMENT_TYPE, s.BYTES, s.CHECK], values="value",
                             aggfunc="first", sort=False)
    wide = wide.reindex(range(len(summaries)))
    sub_rank = {name: rank for rank, name in enumerate(ex.sort_subexperiments(set(table[s.EXPERIMENT_TYPE])))}
    check_rank = {name: rank for rank, name in enumerate(s.CHECKED_MAGNITUDES)}
    ordered = sorted(wide.columns, key=lambda key: (sub_rank[key[0]], int(key[1]), check_rank[key[2]]))
    wide = wide.loc[:, ordered]
    return RunValues(keys=pd.MultiIndex.from_tuples(ordered, names=[s.EXPERIMENT_TYPE, s.BYTES, s.CHECK]),
                     values=wide.to_numpy(dtype=float))


def percentile_across_runs(values: np.ndarray, percentile: float, margin: float = 0.0) -> np.ndarray:
    """The percentile of each column across runs (linear interpolation), ignoring runs without it,
    times (1 + margin)."""
    return np.nanpercentile(values, percentile, axis=0, method="linear") * (1.0 + margin)


def requirements_from_values(run: RunValues, percentile: float, margin: float = 0.0) -> pd.DataFrame:
    """The requirements table (REQUIREMENT_COLUMNS): one row per sub-experiment and payload."""
    derived = pd.Series(percentile_across_runs(run.values, percentile, margin), index=run.keys)
    table = derived.unstack(s.CHECK, sort=False).reset_index()
    table = table.loc[:, list(s.REQUIREMENT_COLUMNS)]
    table[s.BYTES] = table[s.BYTES].astype(np.int64)
    return table


@dataclass(frozen=True)
class FalseAlarms:
    """Leave-one-out estimate of how an unchanged run fares against requirements from the others."""

    failed_checks_per_run: list[int]  # for each left-out run
    checks_per_run: list[int]

    @property
    def mean_failed_checks(self) -> float:
        return float(np.mean(self.failed_checks_per_run))

    @property
    def failing_run_fraction(self) -> float:
        return float(np.mean([failed > 0 for failed in self.failed_checks_per_run]))


def leave_one_out(run: RunValues, percentile: float, margin: float = 0.0) -> FalseAlarms:
    """For each run: requirements from all other runs, then the run checked against them.

    A check counts when the left-out run has the value and some other run does too.
    """
    failed, checked = [], []
    for left_out in range(run.values.shape[0]):
        others = np.delete(run.values, left_out, axis=0)
        has_requirement = ~np.isnan(others).all(axis=0)
        requirements = np.full(run.values.shape[1], np.nan)
        requirements[has_requirement] = percentile_across_runs(others[:, has_requirement], percentile, margin)
        value = run.values[left_out]
        checkable = has_requirement & ~np.isnan(value)
        failed.append(int(is_over(value[checkable], requirements[checkable]).sum()))
        checked.append(int(checkable.sum()))
    return FalseAlarms(failed_checks_per_run=failed, checks_per_run=checked)


def sparse_keys(run: RunValues, minimum_runs: int = 2) -> list[tuple]:
    """(sub, payload) pairs measured by fewer than `minimum_runs` runs: too few to derive anything."""
    counts = (~np.isnan(run.values)).sum(axis=0)
    return sorted({key[:2] for key, count in zip(run.keys, counts) if count < minimum_runs})


# --- the command --------------------------------------------------------------------------------
def fastdds_builds(recorded: list) -> list[dict]:
    """Each distinct Fast DDS the runs measured, with how many runs measured it: a file derived for
    several supported versions says which ones, not only the first run's."""
    counts: dict[str, int] = {}
    for metadata in recorded:
        key = json.dumps(metadata.fastdds.to_json() if metadata.fastdds else None, sort_keys=True)
        counts[key] = counts.get(key, 0) + 1
    return [{"fastdds": json.loads(key), "runs": n} for key, n in counts.items()]


def provenance(experiments: list[ex.Experiment], percentile: float, margin: float, alarms: FalseAlarms,
               other_margins: dict[float, FalseAlarms], requirements_csv: Path) -> dict:
    recorded = [e.metadata for e in experiments if e.metadata is not None]
    platforms = [m.platform.to_json() for m in recorded if m.platform is not None]
    harnesses = sorted({json.dumps(m.harness.to_json(), sort_keys=True) for m in recorded if m.harness})
    # requirements only hold for runs placed on the CPUs as these were (pinned runs differ several-fold)
    pinnings = sorted({json.dumps(m.cpu_pinning.to_json(), sort_keys=True) for m in recorded if m.cpu_pinning})
    return {
        "requirements_file": requirements_csv.name,
        "derived_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "fastdds": (experiments[0].metadata.fastdds.to_json()
                    if experiments[0].metadata and experiments[0].metadata.fastdds else None),
        "fastdds_builds": fastdds_builds(recorded),
        "harness": [json.loads(h) for h in harnesses],
        "cpu_pinning": [json.loads(p) for p in pinnings],
        "runs": len(experiments),
        "experiments": [e.path.name for e in experiments],
        "percentile": percentile,
        "interpolation": "linear",
        "margin": margin,
        "commits": ex.commits(experiments),
        "latency_definition": experiments[0].latency_definition,
        "platform": platforms[0] if platforms else None,
        "expected_false_alarms": {
            "method": "leave-one-out: requirements from the other runs, the left-out run checked against them "
                      "(failed when value > requirement at 3 decimals)",
            "failed_checks_per_unchanged_run": round(alarms.mean_failed_checks, 3),
            "unchanged_runs_failing_gate_fraction": round(alarms.failing_run_fraction, 3),
            "checks_per_run": max(alarms.checks_per_run),
            "failed_checks_by_left_out_run": dict(zip((e.path.name for e in experiments),
                                                      alarms.failed_checks_per_run)),
        },
        "expected_false_alarms_by_margin": [
            {"margin": m, "failed_checks_per_unchanged_run": round(a.mean_failed_checks, 3),
             "unchanged_runs_failing_gate_fraction": round(a.failing_run_fraction, 3)}
            for m, a in other_margins.items()
        ],
    }


def describe_alarms(alarms: FalseAlarms) -> str:
    return (f"{alarms.mean_failed_checks:.3f} of {max(alarms.checks_per_run)} checks fail per unchanged run; "
            f"{alarms.failing_run_fraction:.1%} of unchanged runs would fail the gate")


def print_false_alarms(alarms: FalseAlarms, by_margin: dict[float, FalseAlarms], margin: float) -> None:
    """The leave-one-out false alarms at the chosen margin, then at each other margin shown."""
    print(f"expected false alarms (leave-one-out): {describe_alarms(alarms)}")
    for other, other_alarms in by_margin.items():
        if other != margin:
            print(f"  with --margin {other:g} instead: {describe_alarms(other_alarms)}")


def command_determine_requirements(experiments_results: str, output_file: str, percentile: float,
                                   margin: float = 0.0) -> int:
    outputs.require_paths(experiments_results=experiments_results, output_file=output_file)
    output = Path(output_file)
    experiments = ex.load_store(Path(experiments_results))
    if len(experiments) < 2:
        raise InputError(f"{len(experiments)} run in the results store; determining requirements needs at least 2 "
                         f"runs of one commit", ex.experiments_folder(Path(experiments_results)))
    for note in ex.require_comparable(experiments):
        print(f"perfgate determine-requirements: note: {log_text(note)}", file=sys.stderr)
    found_commits = ex.commits(experiments)
    if len(found_commits) > 1:
        print(f"perfgate determine-requirements: warning: the runs measured {len(found_commits)} different Fast DDS "
              f"commits ({log_list(c[:12] for c in found_commits[:4])}{', ...' if len(found_commits) > 4 else ''}); requirements "
              f"are meant to come from many runs of one commit", file=sys.stderr)

    run = run_values([{sub: e.summary(sub) for sub in e.subexperiments} for e in experiments])
    sparse = sparse_keys(run)
    if sparse:
        sub, payload = sparse[0]
        raise InputError(f"{sub} at {payload} B is measured by only one of the {len(experiments)} runs; "
                         f"too few to derive a requirement ({len(sparse)} such payload(s))",
                         ex.experiments_folder(Path(experiments_results)))
    with np.errstate(over="ignore"):  # a margin that overflows is refused just below, not warned about
        table = requirements_from_values(run, percentile, margin)
    largest = table[list(s.CHECKED_MAGNITUDES)].to_numpy(dtype=float).max()
    if not largest <= plausibility.MAX_LATENCY_US:  # inf and NaN too
        raise InputError(f"--margin {margin:g} makes a requirement of {largest:g} us, which is not a latency "
                         f"(at most {plausibility.MAX_LATENCY_US:g} us)")
    alarms = leave_one_out(run, percentile, margin)
    other_margins = {m: leave_one_out(run, percentile, m) for m in sorted(set(MARGINS_SHOWN) | {margin})}
    record = provenance(experiments, percentile, margin, alarms, other_margins, output)

    outputs.require_writable(output, "requirements file")  # first: "." or a folder has no provenance name
    runs = ex.experiments_folder(Path(experiments_results))
    for written, what in ((output, "requirements file"), (s.requirements_provenance_json(output), "provenance file")):
        if written.resolve().is_relative_to(runs.resolve()):  # over a run's file, or a stray file among them
            raise InputError(f"the {what} would be written among the runs it is derived from ({runs})", written)
    outputs.require_writable(s.requirements_provenance_json(output), "provenance file")
    with outputs.write_errors_as_input_errors():
        files.write_csv(output, table)
        files.write_text(s.requirements_provenance_json(output), json.dumps(record, indent=2) + "\n")
    print(f"{output}: {len(table)} requirements from the {percentile:g}th percentile of {len(experiments)} runs"
          + (f", plus {margin:.0%}" if margin else ""))
    print_false_alarms(alarms, other_margins, margin)
    print(f"provenance: {s.requirements_provenance_json(output)}")
    return s.EXIT_OK
