"""calibrate.measure: one calibration run, as the measuring command's command line would make it.

Each run is the command's own function called in this process with options parsed by that command's own
parser (commands/<name>.py), so that every default is the command line's: `perfgate run`, `perfgate ab`
(an A/A: the build against itself, the gate's rounds and samples, every round kept; a layout A/B: two layout
variants of the build against each other, alike), `perfgate throughput`
and `perfgate topology`. `argv` is pure; `run_command` calls.
"""
from __future__ import annotations

import argparse
import importlib
import os
from contextlib import contextmanager
from pathlib import Path

from .. import schema as s
from ..ab import latency as ab_latency
from ..cli_types import path_typed
from ..commands import ab, run, throughput, topology
from ..gate import budget
from .plan import Plan, TOPOLOGIES

TOPOLOGIES_DIR = Path(__file__).resolve().parents[3] / "topologies"


def aa_rounds(plan: Plan) -> int:
    """The rounds of the gate's latency A/B over these sub-experiments (gate.run: budget.rounds_for)."""
    level = budget.ab_levels(False)[0]
    default = ab_latency.QUICK_ROUNDS if plan.quick else ab_latency.DEFAULT_ROUNDS
    return budget.rounds_for(2 * len(plan.subexperiments), level, default, one_round_against=not plan.quick)


def _build(plan: Plan) -> list[str]:
    return (["--workspace", plan.workspace] if plan.workspace else
            ["--fastdds-prefix", plan.prefix] if plan.prefix else [])


def argv(plan: Plan, step: str, name: str, folder: Path) -> tuple[object, list[str]]:
    """(the command's module, its arguments) for run `name` of `step` into `folder`."""
    label = ["--label", name.replace("/", "-"), "--output", str(folder)]
    subs = ["--subexperiments", ",".join(plan.subexperiments)]
    if step == "latency":
        return run, label + subs + ["--samples", str(plan.counts.latency_samples)] + _build(plan)
    if step == "aa":
        samples = ab_latency.QUICK_SAMPLES if plan.quick else ab_latency.DEFAULT_SAMPLES
        return ab, (label + subs + ["--baseline", plan.fastdds_spec, "--candidate", plan.fastdds_spec,
                                    "--rounds", str(aa_rounds(plan)), "--samples", str(samples), "--all-rounds",
                                    "--alpha", str(budget.ab_levels(False)[0]), "--no-plots"]
                    + (["--quick"] if plan.quick else []))
    if step == "layout_ab":  # pair k: layout variant 2k-1 against 2k, as the A/As are measured
        pair = int(name.rsplit("-", 1)[1])
        baseline, candidate = plan.layout_variants[2 * pair - 2], plan.layout_variants[2 * pair - 1]
        samples = ab_latency.QUICK_SAMPLES if plan.quick else ab_latency.DEFAULT_SAMPLES
        return ab, (label + subs + ["--baseline", baseline, "--candidate", candidate,
                                    "--rounds", str(aa_rounds(plan)), "--samples", str(samples), "--all-rounds",
                                    "--alpha", str(budget.ab_levels(False)[0]), "--no-plots"]
                    + (["--quick"] if plan.quick else []))
    if step == "throughput":
        return throughput, label + subs + (["--quick"] if plan.quick else []) + _build(plan)
    topology_name = name.split("/")[0]
    assert topology_name in TOPOLOGIES
    return topology, label + ["--topology", str(TOPOLOGIES_DIR / f"{topology_name}.json"),
                              "--time", f"{plan.counts.topology_time_s:g}"]


def parsed_options(command, arguments: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog=f"perfgate {command.NAME}")

    def option(target, name, **kwargs):
        target.add_argument(name, **path_typed(kwargs))
    command.add_arguments(parser, option)
    return vars(parser.parse_args(arguments))


def run_command(command, arguments: list[str]) -> int:
    module_name, function_name = command.HANDLER.split(":")
    handler = getattr(importlib.import_module(module_name), function_name)
    with _without_platform():
        return int(handler(**parsed_options(command, arguments)))


@contextmanager
def _without_platform():
    """No $PERFGATE_PLATFORM while measuring: `perfgate ab` would plan its rounds by that platform's layout
    file, and a new machine's calibration is measured with none of another machine's files."""
    kept = os.environ.pop(s.PLATFORM_ENV, None)
    try:
        yield
    finally:
        if kept is not None:
            os.environ[s.PLATFORM_ENV] = kept
