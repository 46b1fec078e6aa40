"""determine-throughput-requirements: throughput minimums from several runs of one build, and what
that choice costs (the throughput counterpart of perfgate.latency.requirements).

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

from .. import files, outputs
from .. import schema as s
from ..clock import utc_now
from ..errors import InputError
from ..model import Metadata, as_json, read_metadata
from .files import (REQUIREMENT_BYTES, REQUIREMENT_DEMAND, REQUIREMENT_RECOVERY, REQUIREMENT_THROUGHPUT,
                    THROUGHPUT_REQUIREMENT_COLUMNS, read_throughput, table_paths)

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
def read_runs(results: Path) -> tuple[dict[str, dict[str, pd.DataFrame]], list[dict], list[Path]]:
    """Every folder under `results` (itself included) that holds throughput tables, its metadata, and
    every file read (so that no output replaces one)."""
    runs, metadata, read = {}, [], []
    folders = [results] + sorted(p for p in results.rglob("*") if p.is_dir())
    for folder in folders:
        paths = list(table_paths(folder).values())
        if paths:
            runs[str(folder.relative_to(results)) or folder.name] = {p.stem: read_throughput(p) for p in paths}
            metadata.append(read_metadata(folder) or Metadata())
            read += paths + [folder / s.METADATA_FILE]
    if len(runs) < 2:
        raise InputError(f"needs throughput tables of at least 2 runs, found {len(runs)}", results)
    return runs, metadata, read


def require_same_tests(results: Path, runs: dict[str, dict[str, pd.DataFrame]], metadata: list[Metadata]) -> None:
    """Every run measured the same tests with the same settings: a minimum over runs that measured
    different things (another --time, a demand only one run has) is not the spread of one build."""
    first = next(iter(runs))
    keys = {run: {(name, *key) for name, table in subs.items()
                  for key in zip(table[s.PAYLOAD], table[s.DEMAND], table[s.RECOVERY_TIME])}
            for run, subs in runs.items()}
    for run in runs:
        extra, lacking = sorted(keys[run] - keys[first]), sorted(keys[first] - keys[run])
        if extra or lacking:
            name, payload, demand, recovery = (extra or lacking)[0]
            raise InputError(f"{'has' if extra else 'lacks'} {name} at {payload} B x {demand}, {recovery} ms, which "
                             f"{first} {'lacks' if extra else 'has'}: requirements come from runs of the same tests",
                             results / run)
    settings = [(run, as_json(m.throughput)) for run, m in zip(runs, metadata) if m.throughput is not None]
    for run, given in settings[1:]:
        if given != settings[0][1]:
            raise InputError(f"throughput settings {json.dumps(given, sort_keys=True)} differ from "
                             f"{settings[0][0]}'s {json.dumps(settings[0][1], sort_keys=True)}: requirements come "
                             "from runs of the same tests", results / run / s.METADATA_FILE)


def require_nonzero(results: Path, values: pd.DataFrame, margin: float) -> None:
    """A requirement of 0.000 Mb/s is refused by check-throughput (met by a test that received nothing):
    the run that measured so little is named instead of writing a file that cannot be used."""
    zero = files.thousandths(minimums(values, margin)) == 0
    if zero.any():
        key = values.index[int(np.flatnonzero(zero)[0])]
        row = values.loc[[key]].iloc[0]
        run = row.idxmin()
        raise InputError(f"{key[0]} at {key[1]} B x {key[2]}, {key[3]} ms received {files.format_float(row.min())} Mb/s, "
                         f"/ (1 + {margin:g}) a minimum of 0.000 Mb/s, which checks nothing (leave that run out, "
                         "measure again, or take a smaller --margin)", results / run)


def command_determine_throughput_requirements(*, experiments_results, output_file, margin=1.0) -> int:
    outputs.require_paths(experiments_results=experiments_results, output_file=output_file)
    if not 0 <= margin <= 100:
        raise InputError(f"--margin must be from 0 to 100, got {margin}")
    results = files.require_dir(Path(experiments_results), "experiments results folder")
    output = outputs.require_writable(Path(output_file), "requirements file")
    provenance_path = outputs.require_writable(output.with_name(output.stem + "_provenance.json"), "provenance file")
    runs, metadata, read = read_runs(results)
    outputs.require_not_input(output, read, "requirements file")
    outputs.require_not_input(provenance_path, read + [output], "provenance file")
    require_same_tests(results, runs, metadata)
    values = run_values(runs)
    require_nonzero(results, values, margin)
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
        "fastdds": sorted({json.dumps(as_json(m.fastdds), sort_keys=True) for m in metadata}),
        "throughput": sorted({json.dumps(as_json(m.throughput), sort_keys=True) for m in metadata}),
        "cpu_pinning": sorted({json.dumps(as_json(m.cpu_pinning), sort_keys=True) for m in metadata}),
        # each machine the runs measured on (its fingerprint): a gate elsewhere says so (gate.platform_files)
        "platforms": [json.loads(p) for p in sorted({json.dumps(as_json(m.platform), sort_keys=True)
                                                    for m in metadata if m.platform is not None})],
        "load_average": [as_json(m.load_average) for m in metadata],
    }
    with outputs.write_errors_as_input_errors():
        files.write_csv(output, frame)
        files.write_text(provenance_path, json.dumps(provenance, indent=2, sort_keys=True) + "\n")
    print(f"wrote {len(frame)} requirements to {output}", file=sys.stderr)
    return s.EXIT_OK
