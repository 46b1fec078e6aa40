"""calibrate.derive: each file of the platform from the calibration's runs, by the existing determine-* code.

Every step calls the function its determine-* command runs (latency.requirements, latency.determine_gross,
ab.layout_derivation.derive, throughput.requirements, topology.targets), which checks its inputs, writes its
file and provenance atomically and prints its figures; resources and the detection summary are this
package's (calibrate.resources, calibrate.detect). The layout file is derived from A/Bs of the build's
layout variants against each other when it has them (`perfgate build --layouts`); without (the system Fast
DDS, a build without layouts) from the A/As (what the rounds of one build move between A/Bs), and its
"method" says which.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from .. import files
from ..ab import layout_derivation, layout_file
from ..latency import determine_gross, requirements
from ..measure import platform_info
from ..model import as_json
from ..throughput import requirements as throughput_requirements
from ..topology import targets
from . import detect, plan as p, resources, resume
from .measure import aa_rounds

LAYOUT_AB_METHOD = ("from A/Bs of the build's layout variants against each other (perfgate build --layouts: its "
                    "library linked again in other orders), what code layout moves on this machine; ")
AA_METHOD = ("from A/As of one build against itself (no layout variants of the build: these thresholds bound what "
             "the rounds of one build move between A/Bs, not what code layout moves); ")


def step_folder(output: Path, step: str) -> Path:
    return resume.calibration_dir(output) / step


def derive(plan: p.Plan, output: Path, step: str) -> None:
    latency_runs = step_folder(output, "latency")
    aa = sorted(path for path in step_folder(output, "aa").iterdir() if path.is_dir()) \
        if step_folder(output, "aa").is_dir() else []
    requirements_csv = output / f"{plan.platform}.csv"
    if step == "requirements":
        requirements.command_determine_requirements(str(latency_runs), str(requirements_csv),
                                                    p.LATENCY_PERCENTILE, p.LATENCY_MARGIN)
    elif step == "resources":
        runs = sorted(path for path in latency_runs.iterdir() if path.is_dir())
        observed = resources.observe(runs, plan.subexperiments)
        document = resources.derive(observed, plan.platform)
        provenance = {"requirements_file": f"{plan.platform}_resources.json",
                      "derived_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                      "platform": as_json(platform_info.this_machine()), "runs": len(runs),
                      "command": f"perfgate calibrate: perfgate run --samples {plan.counts.latency_samples} "
                                 f"--subexperiments {','.join(plan.subexperiments)}",
                      "experiments": [run.name for run in runs], "method": resources.METHOD, "observed": observed}
        files.write_text(output / f"{plan.platform}_resources.json", json.dumps(document, indent=2) + "\n")
        files.write_text(output / f"{plan.platform}_resources_provenance.json", json.dumps(provenance, indent=2) + "\n")
    elif step == "gross":
        determine_gross.command_determine_gross_margins([str(d) for d in aa], str(requirements_csv),
                                                        str(output / f"{plan.platform}_gross.json"),
                                                        unchanged_candidates=True)
    elif step == "layout":
        pairs = sorted(path for path in step_folder(output, "layout_ab").iterdir() if path.is_dir()) \
            if step_folder(output, "layout_ab").is_dir() else []
        content = layout_derivation.derive(pairs or aa, plan.platform)
        content["method"] = (LAYOUT_AB_METHOD if pairs else AA_METHOD) + content["method"]
        files.write_text(output / f"{plan.platform}_layout.json",
                         json.dumps(content, indent=2, allow_nan=False, default=_json_value) + "\n")
        print(f"perfgate calibrate: {plan.platform}_layout.json: thresholds from "
              + (f"{len(pairs)} A/B(s) of the build's layout variants" if pairs else
                 f"{len(aa)} A/A(s) (no layout variants of the build were measured: build it with "
                 "`perfgate build --layouts 8` for thresholds of what layout moves)"))
    elif step == "throughput_requirements":
        throughput_requirements.command_determine_throughput_requirements(
            experiments_results=str(step_folder(output, "throughput")),
            output_file=str(output / f"{plan.platform}_throughput.csv"), margin=p.THROUGHPUT_MARGIN)
    elif step == "topology_targets":
        for name in p.TOPOLOGIES:
            targets.command_determine_topology_targets(str(step_folder(output, "topology") / name),
                                                       str(output / f"{plan.platform}_topology_{name}.json"),
                                                       p.TOPOLOGY_PERCENTILE, p.TOPOLOGY_MARGIN)
    elif step == "detection":
        read = layout_file.load(output / f"{plan.platform}_layout.json")
        seconds = [x for x in (resume.seconds_taken(output, "aa", d.name) for d in aa) if x is not None]
        summary = detect.detection({d.name: detect.read_aa(d) for d in aa}, read, aa_rounds(plan), seconds)
        detect.write(output, plan.platform, summary, as_json(platform_info.this_machine()))
        for line in detect.lines(summary):
            print(f"perfgate calibrate: {line}")


def _json_value(value):
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON: {type(value)}")
