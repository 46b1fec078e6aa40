"""`perfgate determine-topology-targets`: a performance target (the benchmark's JSON) from several
topology runs of a known-good Fast DDS, and what that choice costs in false alarms.

Derived as `determine-requirements` derives latency limits, with its functions (latency.requirements):
each target figure (resources cpu[%] and rss[KB], latency_total late[%], too_late[%], lost[%]) is a
percentile across the runs raised by a relative margin, and the leave-one-out figures (each run
checked against the target derived from the others) say how often an unchanged Fast DDS would miss
it. A share that was 0 in every run stays 0 at any margin: one late or lost message then misses it,
which the leave-one-out figures show too.

Targets are rounded up to 3 decimals (rss to whole KB) as written, so that the written target is never
tighter than the derived one.
"""
from __future__ import annotations

import json
import math
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from .. import files, outputs
from .. import schema as s
from ..errors import InputError
from ..escape.workflow import log_text
from ..latency.requirements import MARGINS_SHOWN, FalseAlarms, RunValues, leave_one_out, print_false_alarms, \
    percentile_across_runs
from . import names as n
from .check import measured_figures

KEYS = tuple((n.TARGET_RESOURCES, metric) for metric in n.TARGET_RESOURCE_KEYS) + \
    tuple((n.TARGET_LATENCY_TOTAL, metric) for metric in n.TARGET_LATENCY_KEYS)
# what must be equal across the runs for one target to describe them (metadata.json's "options")
COMPARED_OPTIONS = ("ipc", "processes", "transport", "reliability", "history_depth", "late_percentage",
                    "late_absolute_us", "too_late_percentage", "too_late_absolute_us")


def run_values(figures: list[dict[str, dict[str, float]]]) -> RunValues:
    """The runs' target figures (check.measured_figures) as latency's RunValues: runs x KEYS."""
    values = np.array([[run[section][metric] for section, metric in KEYS] for run in figures], dtype=float)
    return RunValues(keys=pd.MultiIndex.from_tuples(KEYS, names=["section", "metric"]), values=values)


def target_values(run: RunValues, percentile: float, margin: float) -> dict[str, dict[str, float]]:
    """{section: {metric: target}}: the percentile across runs times (1 + margin), rounded up as written."""
    derived = percentile_across_runs(run.values, percentile, margin)
    target: dict[str, dict[str, float]] = {}
    for (section, metric), value in zip(KEYS, derived):
        written = math.ceil(value) if metric == n.RESOURCE_RSS else math.ceil(round(value * 1000, 6)) / 1000
        target.setdefault(section, {})[metric] = float(written)
    return target


def alarms_record(alarms: FalseAlarms, names: list[str]) -> dict:
    return {"failed_checks_per_unchanged_run": round(alarms.mean_failed_checks, 3),
            "unchanged_runs_failing_gate_fraction": round(alarms.failing_run_fraction, 3),
            "checks_per_run": max(alarms.checks_per_run),
            "failed_checks_by_left_out_run": dict(zip(names, alarms.failed_checks_per_run))}


# --- the command --------------------------------------------------------------------------------
def topology_runs(folder: Path) -> list[Path]:
    """The experiment folders of `folder` (each with a metadata.json), by name; `folder` itself when it is one."""
    if not folder.is_dir():
        raise InputError("not a folder of topology runs", folder)
    if (folder / s.METADATA_FILE).is_file():
        return [folder]
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def _metadata(folder: Path) -> dict:
    record = files.read_json_object(folder / s.METADATA_FILE, "topology metadata")
    if record is None or record.get("kind") != "topology":
        raise InputError("not a perfgate topology run (no metadata.json of kind topology)", folder)
    return record


def require_one_system(runs: list[Path], records: list[dict]) -> None:
    """One target describes one topology run one way: the same topology file and options in every run."""
    first = records[0]
    for folder, record in zip(runs[1:], records[1:]):
        if Path(str(record.get("topology_file"))).name != Path(str(first.get("topology_file"))).name:
            raise InputError(f"runs of different topologies ({log_text(Path(str(first.get('topology_file'))).name)} "
                             f"and {log_text(Path(str(record.get('topology_file'))).name)}): one target is for one topology",
                             folder / s.METADATA_FILE)
        for option in COMPARED_OPTIONS:
            mine, theirs = (record.get("options") or {}).get(option), (first.get("options") or {}).get(option)
            if mine != theirs:
                raise InputError(f"option {option} is {log_text(repr(mine))} here and {log_text(repr(theirs))} in "
                                 f"{log_text(runs[0].name)}: one target is for runs made one way", folder / s.METADATA_FILE)


def _platform(records: list[dict]) -> str | None:
    platform = records[0].get("platform")
    return str(platform.get("id")) if isinstance(platform, dict) and platform.get("id") else None


def command_determine_topology_targets(experiments_results: str, output_file: str, percentile: float,
                                       margin: float) -> int:
    outputs.require_paths(experiments_results=experiments_results, output_file=output_file)
    output, results = Path(output_file), Path(experiments_results)
    runs = topology_runs(results)
    if len(runs) < 2:
        raise InputError(f"{len(runs)} topology run(s); a target needs at least 2 runs of one Fast DDS", results)
    records = [_metadata(folder) for folder in runs]
    require_one_system(runs, records)
    versions = sorted({str(r.get("fastdds_version")) for r in records})
    if len(versions) > 1:
        print(f"perfgate determine-topology-targets: warning: the runs measured {len(versions)} Fast DDS versions "
              f"({log_text(', '.join(versions[:4]))}); a target is meant to come from one", file=sys.stderr)
    run = run_values([measured_figures(folder)[0] for folder in runs])
    with np.errstate(over="ignore"):
        target = target_values(run, percentile, margin)
    if not all(math.isfinite(v) for section in target.values() for v in section.values()):
        raise InputError(f"--margin {margin:g} makes a target that is not a finite number")
    names = [folder.name for folder in runs]
    alarms = leave_one_out(run, percentile, margin)
    by_margin = {m: leave_one_out(run, percentile, m) for m in sorted(set(MARGINS_SHOWN) | {margin})}
    provenance_path = s.requirements_provenance_json(output)
    options = records[0].get("options") or {}
    document = {
        "topology_file": Path(str(records[0].get("topology_file"))).name,
        "platform": _platform(records),
        "additional_options": " ".join(f"--{key.replace('_', '-')} {options[key]}" for key in ("ipc", "processes",
                                                                                            "transport", "reliability")
                                       if key in options),
        "comment": f"derived by perfgate determine-topology-targets from {len(runs)} runs: the {percentile:g}th "
                   f"percentile plus {margin:.0%}; leave-one-out false alarms in {provenance_path.name}",
        **target,
    }
    provenance = {
        "target_file": output.name, "derived_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "fastdds_version": versions, "platform": records[0].get("platform"), "options": options,
        "time_s": sorted({r.get("time_s") for r in records if isinstance(r.get("time_s"), (int, float))}),
        "runs": len(runs), "experiments": names, "percentile": percentile, "interpolation": "linear",
        "margin": margin,
        "measured": {f"{section}.{metric}": [float(v) for v in run.values[:, i]]
                     for i, (section, metric) in enumerate(KEYS)},
        "expected_false_alarms": {"method": "leave-one-out: the target from the other runs, the left-out run checked "
                                            "against it (failed when value > target at 3 decimals)",
                                  **alarms_record(alarms, names)},
        "expected_false_alarms_by_margin": [{"margin": m, **alarms_record(a, names)} for m, a in by_margin.items()],
    }
    outputs.require_writable(output, "target file")
    for written, what in ((output, "target file"), (provenance_path, "provenance file")):
        if written.resolve().is_relative_to(results.resolve()):
            raise InputError(f"the {what} would be written among the runs it is derived from ({results})", written)
    outputs.require_writable(provenance_path, "provenance file")
    with outputs.write_errors_as_input_errors():
        files.write_text(output, json.dumps(document, indent=2) + "\n")
        files.write_text(provenance_path, json.dumps(provenance, indent=2) + "\n")
    print(f"{output}: a performance target from the {percentile:g}th percentile of {len(runs)} topology runs"
          + (f", plus {margin:.0%}" if margin else ""))
    for section, metrics in target.items():
        print(f"  {section}: " + ", ".join(f"{metric} {value:g}" for metric, value in metrics.items()))
    print_false_alarms(alarms, by_margin, margin)
    print(f"provenance: {provenance_path}")
    return s.EXIT_OK
