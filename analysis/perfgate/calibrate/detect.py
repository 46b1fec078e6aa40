"""calibrate.detect: what this machine can detect, from the calibration's A/As and its layout file. Pure but
for `read_aa` and `write`.

Per sub-experiment: how many of the A/As failed it (false alarms: an A/A must pass), its layout threshold,
the rounds the gate's A/B plans for it, and the power at +3, +5 and +7 % of those rounds at the gate's level
(gate.budget: the latency A/B's family-wise level, Holm's first step over its tests), computed as
benchmarks/bench_round_power.py does (ab.round_power: each A/A's rounds, centred, one hour's noise; the mean
over the hours and the lowest hour). And the time a per-commit gate's A/B takes here: the A/As' wall time.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from .. import files
from .. import schema as s
from ..ab import layout, round_power
from ..ab import verdict as v
from ..ab.layout_file import LayoutThresholds
from ..errors import InputError
from ..gate import budget
from ..outcome import PASS

EFFECTS = (0.03, 0.05, 0.07)
FAILED = "failed"


def read_aa(folder: Path) -> tuple[str, set[str]]:
    """An A/A's verdict status and the sub-experiments it failed (verdict.csv's failed rows)."""
    record = files.read_json_object(folder / s.VERDICT_JSON, "an A/B verdict")
    if record is None:
        raise InputError(f"the A/A has no {s.VERDICT_JSON}", folder)
    table = pd.read_csv(folder / s.VERDICT_CSV)
    failed = set(table.loc[table["Status"] == FAILED, s.EXPERIMENT_TYPE].astype(str))
    return str(record.get("status")), failed


def detection(aa: dict[str, tuple[str, set[str]]], layout_read: LayoutThresholds, rounds: int,
              seconds: list[float]) -> dict:
    """The calibration summary: per sub-experiment its A/A false alarms and its power (see the module)."""
    level = budget.ab_levels(False)[0]
    subs = list(layout_read.thresholds) or sorted(layout_read.noise)
    tests = len(subs) * len(v.TESTED_STATISTICS)
    planned = layout.planned_rounds(rounds, v.DEFAULT_THRESHOLD, layout_read.thresholds, subs, layout_read.noise,
                                    level)
    per_sub = {}
    for sub in subs:
        bound = v.bound_of(v.DEFAULT_THRESHOLD, layout_read.thresholds, sub)
        power = {}
        for effect in EFFECTS:
            each = round_power.each_hour(layout_read.noise.get(sub, []), bound, planned[sub], tests, level, effect)
            power[f"+{effect:.0%}"] = ({"mean": round(float(np.mean(each)), 3), "lowest_hour": round(min(each), 3)}
                                       if each else None)
        per_sub[sub] = {"aa_false_alarms": sum(sub in failed for _, failed in aa.values()), "aa_runs": len(aa),
                        "threshold": layout_read.thresholds.get(sub), "bound": bound,
                        "planned_rounds": planned[sub], "power": power}
    return {"level": level, "tests": tests, "rounds": rounds,
            "aa": {name: {"status": status, "failed": sorted(failed)} for name, (status, failed) in aa.items()},
            "aa_passed": sum(status == PASS for status, _ in aa.values()),
            "gate_ab_seconds": {"runs": [round(x, 1) for x in seconds],
                                "median": round(float(np.median(seconds)), 1) if seconds else None},
            "subexperiments": per_sub}


def lines(summary: dict) -> list[str]:
    """The summary as the command prints it and the .md lists it, a line per sub-experiment."""
    out = [f"A/As: {summary['aa_passed']} of {len(summary['aa'])} passed (each must); power at the gate's level "
           f"{summary['level']:g} over {summary['tests']} tests, mean over the A/As [lowest]"]
    for sub, row in summary["subexperiments"].items():
        power = "  ".join(f"{effect} {p['mean']:.0%} [{p['lowest_hour']:.0%}]" if p else f"{effect} n/a"
                          for effect, p in row["power"].items())
        out.append(f"{sub}: {row['aa_false_alarms']} of {row['aa_runs']} A/A(s) failed it; bound +{row['bound']:.1%}, "
                   f"{row['planned_rounds']} rounds; {power}")
    seconds = summary["gate_ab_seconds"]["median"]
    out.append("a per-commit gate's A/B takes " + (f"{seconds:.0f} s here (the A/As' median)" if seconds is not None
                                                   else "an unknown time here (no A/A timed)"))
    return out


def markdown(platform: str, summary: dict, fingerprint: dict) -> str:
    head = (f"# What `{platform}` can detect\n\nMachine: platform id `{fingerprint.get('id')}`, "
            f"{fingerprint.get('cpu_model')}. Written by `perfgate calibrate` "
            f"(`{platform}_calibration.json` has every figure).\n\n")
    return head + "\n".join(f"- {line}" for line in lines(summary)) + "\n"


def write(output: Path, platform: str, summary: dict, fingerprint: dict) -> list[Path]:
    paths = [Path(output) / f"{platform}_calibration.json", Path(output) / f"{platform}_calibration.md"]
    files.write_text(paths[0], json.dumps({"platform": platform, "machine": fingerprint, **summary}, indent=2) + "\n")
    files.write_text(paths[1], markdown(platform, summary, fingerprint))
    return paths
