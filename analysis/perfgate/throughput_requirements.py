"""determine-throughput-requirements: throughput minimums from several runs of one build, and what
that choice costs (the throughput counterpart of perfgate.requirements).

Each requirement is the smallest Subscription throughput the runs measured for that sub-experiment,
payload, demand and recovery time, divided by 1 + margin. Leave-one-out over the runs says how many
checks an unchanged run would fail at the chosen margin and at MARGINS_SHOWN, so the margin is
chosen with its cost in view. Lost [%] is left empty (best-effort loss on a shared machine varies
from run to run by tens of per cent; reliable loss always fails anyway).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from . import files, outputs
from . import schema as s
from .clock import utc_now
from .errors import InputError
from .throughput_files import (REQUIREMENT_BYTES, REQUIREMENT_DEMAND, REQUIREMENT_RECOVERY, REQUIREMENT_THROUGHPUT,
                               THROUGHPUT_REQUIREMENT_COLUMNS, read_throughput)

MARGINS_SHOWN = (0.0, 0.25, 0.5, 1.0)
KEY = [s.EXPERIMENT_TYPE, REQUIREMENT_BYTES, REQUIREMENT_DEMAND, REQUIREMENT_RECOVERY]


# --- pure ---------------------------------------------------------------------------------------------
def run_values(tables: dict[str, dict[str, pd.DataFrame]]) -> pd.DataFrame:
    """run -> {throughput sub-experiment -> table}  ->  rows x runs of Subscription throughput (NaN where a
    run lacks the test), indexed by KEY."""
    columns = {}
    for run, subs in tables.items():
        parts = [table.assign(**{s.EXPERIMENT_TYPE: name}) for name, table in subs.items()]
        frame = pd.concat(parts, ignore_index=True).rename(columns={
            s.PAYLOAD: REQUIREMENT_BYTES, s.DEMAND: REQUIREMENT_DEMAND, s.RECOVERY_TIME: REQUIREMENT_RECOVERY})
        columns[run] = frame.set_index(KEY)[s.SUBSCRIPTION_THROUGHPUT]
    return pd.DataFrame(columns)


def minimums(values: pd.DataFrame, margin: float) -> pd.Series:
    """The smallest value of every row over the runs, divided by 1 + margin."""
    return values.min(axis=1, skipna=True) / (1.0 + margin)


def leave_one_out(values: pd.DataFrame, margin: float) -> tuple[float, float]:
    """(failed checks per unchanged run, share of unchanged runs with any failure): each run checked
    against requirements derived from the others."""
    failures = []
    for run in values.columns:
        others = values.drop(columns=run)
        required = minimums(others, margin)
        measured = values[run]
        usable = measured.notna() & required.notna()
        failures.append(int((files.thousandths(measured[usable]) < files.thousandths(required[usable])).sum()))
    counts = np.array(failures, dtype=float)
    return float(counts.mean()), float((counts > 0).mean())


def requirements_frame(values: pd.DataFrame, margin: float) -> pd.DataFrame:
    frame = minimums(values, margin).rename(REQUIREMENT_THROUGHPUT).reset_index()
    return frame[list(THROUGHPUT_REQUIREMENT_COLUMNS)]


# --- the command ----------------------------------------------------------------------------------------
def read_runs(results: Path) -> tuple[dict[str, dict[str, pd.DataFrame]], list[dict]]:
    """Every folder under `results` (itself included) that holds throughput tables."""
    runs, metadata = {}, []
    folders = [results] + sorted(p for p in results.rglob("*") if p.is_dir())
    for folder in folders:
        paths = sorted(folder.glob(f"{s.THROUGHPUT_PREFIX}*.csv"))
        paths = [p for p in paths if p.name != "throughput_checks.csv"]
        if paths:
            runs[str(folder.relative_to(results)) or folder.name] = {p.stem: read_throughput(p) for p in paths}
            metadata.append(files.read_metadata(folder) or {})
    if len(runs) < 2:
        raise InputError(f"needs throughput tables of at least 2 runs, found {len(runs)}", results)
    return runs, metadata


def command_determine_throughput_requirements(*, experiments_results, output_file, margin=1.0) -> int:
    outputs.require_paths(experiments_results=experiments_results, output_file=output_file)
    if not 0 <= margin <= 100:
        raise InputError(f"--margin must be from 0 to 100, got {margin}")
    results = files.require_dir(Path(experiments_results), "experiments results folder")
    output = outputs.require_writable(Path(output_file), "requirements file")
    runs, metadata = read_runs(results)
    values = run_values(runs)
    figures = {f"{m:g}": leave_one_out(values, m) for m in sorted(set(MARGINS_SHOWN) | {margin})}
    print(f"{len(runs)} runs, {len(values)} tests; leave-one-out over the runs:")
    for shown, (per_run, share) in figures.items():
        chosen = "  <- chosen" if float(shown) == margin else ""
        print(f"  margin {float(shown):.0%}: {per_run:.2f} failed checks per unchanged run, {share:.0%} of "
              f"unchanged runs fail{chosen}")
    frame = requirements_frame(values, margin)
    provenance = {
        "requirements_file": output.name, "derived_utc": utc_now(), "runs": len(runs), "experiments": sorted(runs),
        "rule": f"smallest Subscription throughput over the runs / (1 + {margin:g})", "margin": margin,
        "leave_one_out": {shown: {"failed_checks_per_run": round(per_run, 3), "runs_failing": round(share, 3)}
                          for shown, (per_run, share) in figures.items()},
        "fastdds": sorted({json.dumps(m.get(s.META_FASTDDS), sort_keys=True) for m in metadata}),
        "throughput": sorted({json.dumps(m.get("throughput"), sort_keys=True) for m in metadata}),
        "cpu_pinning": sorted({json.dumps(m.get("cpu_pinning"), sort_keys=True) for m in metadata}),
        "load_average": [m.get("load_average") for m in metadata],
    }
    with outputs.write_errors_as_input_errors():
        files.write_csv(output, frame)
        files.write_text(output.with_name(output.stem + "_provenance.json"),
                         json.dumps(provenance, indent=2, sort_keys=True) + "\n")
    print(f"wrote {len(frame)} requirements to {output}", file=sys.stderr)
    return s.EXIT_OK
