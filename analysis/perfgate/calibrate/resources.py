"""calibrate.resources: requirements/<platform>_resources.json from the latency runs, with its provenance.

No determine-* command derives this file; `vm-2core-x64_resources.json` was derived by hand, and this is its
method as a function (requirements/README.md, the provenance's "method"):
- cpu[%]: 1.6 x the largest mean of any role of the inter-process sub-experiments in any run, one limit for
  all; the intra-process ones (both sides in one process) 1.6 x their largest mean, at most 100 %;
- rss[KB]: the largest peak of any role in any run x 1.3, rounded up to 1000 KB, per sub-experiment;
- late_limit_us: 2 x the largest 99th percentile of the sub-experiment's round trips (all payloads) in any
  run, rounded up to 500 us; late[%] 1 (at most 1 % of a run is above its own 99th percentile, and the
  limit is twice the largest of those); lost[%] 0.5.
`derive` is pure over `observed` (per sub-experiment, per run); `observe` reads the runs.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .. import files
from .. import schema as s
from ..errors import InputError
from ..latency import resources_table
from ..model import read_metadata

CPU_FACTOR, RSS_FACTOR, LATE_FACTOR = 1.6, 1.3, 2.0
RSS_STEP_KB, LATE_STEP_US = 1000, 500
LOST_PERCENT, LATE_PERCENT = 0.5, 1.0
METHOD = {
    "cpu[%]": f"{CPU_FACTOR:g} x the largest mean of any role of the inter-process sub-experiments in any run, "
              f"one limit for all; the intra-process ones (one process) {CPU_FACTOR:g} x their own largest mean, "
              "at most 100",
    "rss[KB]": f"the largest peak of any role in any run x {RSS_FACTOR:g}, rounded up to {RSS_STEP_KB} KB, per "
               "sub-experiment; the general limit the largest of those",
    "late_limit_us": f"{LATE_FACTOR:g} x the largest 99th percentile of the sub-experiment's round trips (all "
                     f"payloads) in any run, rounded up to {LATE_STEP_US} us",
    "late[%]": f"{LATE_PERCENT:g} %: at most 1 % of a run's round trips are above its own 99th percentile, and the "
               "limit is twice the largest of those",
    "lost[%]": f"{LOST_PERCENT:g} %: room for a best-effort sub-experiment on a loaded machine",
}


def _up(value: float, step: float) -> float:
    return float(math.ceil(value / step) * step)


def derive(observed: dict[str, dict], platform: str) -> dict:
    """The resources file from {sub: {"cpu_mean_percent": {role: [per run]}, "rss_peak_kb": {role: [...]},
    "p99_us": [per run]}}."""
    intra = {sub for sub in observed if sub.startswith("intraprocess")}
    inter_cpu = [v for sub, o in observed.items() if sub not in intra for vs in o["cpu_mean_percent"].values()
                 for v in vs]
    document = {"platform": platform, "resources": {}, "resources_by_subexperiment": {},
                "latency_total": {"lost[%]": LOST_PERCENT, "late[%]": LATE_PERCENT}, "late_limit_us": {}}
    rss = {}
    for sub, o in observed.items():
        peaks = [v for vs in o["rss_peak_kb"].values() for v in vs]
        limits = {}
        if peaks:
            rss[sub] = int(_up(max(peaks) * RSS_FACTOR, RSS_STEP_KB))
            limits[s.RESOURCE_RSS] = rss[sub]
        means = [v for vs in o["cpu_mean_percent"].values() for v in vs]
        if sub in intra and means:
            limits[s.RESOURCE_CPU] = round(min(100.0, max(means) * CPU_FACTOR), 1)
        if limits:
            document["resources_by_subexperiment"][sub] = limits
        if o["p99_us"]:
            document["late_limit_us"][sub] = int(_up(max(o["p99_us"]) * LATE_FACTOR, LATE_STEP_US))
    if inter_cpu:
        document["resources"][s.RESOURCE_CPU] = round(min(100.0 * len(observed), max(inter_cpu) * CPU_FACTOR), 1)
    if rss:
        document["resources"][s.RESOURCE_RSS] = max(rss.values())
    if not document["resources"]:
        document.pop("resources")
    return document


def observe(runs: list[Path], subs: tuple[str, ...]) -> dict[str, dict]:
    """Per sub-experiment, each run's mean CPU and peak RSS per role and its round trips' 99th percentile."""
    observed = {sub: {"cpu_mean_percent": {}, "rss_peak_kb": {}, "p99_us": [], "lost_samples": []} for sub in subs}
    for run in runs:
        found = resources_table.resources_files(run)
        raw = files.raw_files(run)
        metadata = read_metadata(run)
        for sub in subs:
            if sub not in raw:
                raise InputError(f"the run has no round trips of {sub}", run)
            if sub in found:
                for role in resources_table.role_summaries(resources_table.read_resources(found[sub])):
                    observed[sub]["cpu_mean_percent"].setdefault(role.role, []).append(round(role.cpu_mean, 3))
                    observed[sub]["rss_peak_kb"].setdefault(role.role, []).append(role.rss_peak)
            latency = files.read_raw(raw[sub])[s.LATENCY].to_numpy(dtype=float)
            observed[sub]["p99_us"].append(round(float(np.percentile(latency, 99)), 3))
            outcome = (metadata.subexperiments or {}).get(sub) if metadata is not None else None
            lost = outcome.lost_samples if outcome is not None and outcome.lost_samples else {}
            observed[sub]["lost_samples"].append(sum(int(n) for n in lost.values()))
    return observed
