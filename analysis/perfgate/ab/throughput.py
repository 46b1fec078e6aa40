"""ab.throughput: two Fast DDS builds against each other on the throughput experiment, interleaved in rounds.

The latency A/B's design (perfgate.ab.latency) with the throughput experiment in each arm's place: in every
round both arms run the same sub-experiment's throughput tests back to back, the arm that goes first
alternating per round and per sub-experiment, so whatever state the machine is in hits both. Each
arm's round is an ordinary throughput folder (rounds/<NN>/<arm>/: throughput_<sub>.csv and
metadata.json), which `perfgate verdict` decides from again (perfgate.ab.throughput_report).

The tests are fewer than a throughput run's by default (the quick run's payloads 16 and 16384, one
saturating demand, 1 s each): the verdict needs many rounds of one build against the other, not a
map of every payload.
"""
from __future__ import annotations

import os
import sys
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

from . import throughput_report as ab_throughput_report
from .. import claims, clock, files
from ..measure import platform_info
from .. import schema as s
from . import curtail, verdict as v
from .arms import Arm, ArmSpec, parse_arm, prepare_arm
from ..fastdds.layouts import check_layouts
from .latency import RoundSteps, measure_rounds, measuring_fields, require_rounds
from ..measure import subexperiment
from ..measure import environment as run_environment
from ..measure import options as run_options
from ..model import AbArm, Metadata, Platform, ThroughputRecord, write_metadata
from ..latency.run import initial_metadata
from ..throughput.run import plan_settings, refuse_without_throughput, throughput_metadata
from .verdict import require_parameters

# 13 rounds: the fewest with which, for the ten sub-experiments at a family-wise 2 %, one round that
# disagrees (one arm hit a bad machine state) can neither hide a regression nor fake one (12 of 13
# rounds give p = 0.0017 < 0.02 / 10); docs/verdict.md, "Throughput".
DEFAULT_ROUNDS = 13
QUICK_ROUNDS = 10  # the fewest that can reject at all for ten tests: every round must agree
QUICK_TIME_S = 0.5
# Saturating tests only: bursts of 1000 with no recovery time, so that the writer is never waiting for
# its pace. A paced test (demand 100 every 5 ms = 20000 samples/s) measures the pace wherever Fast DDS
# keeps up with it, and averaging it into a round's d dilutes a real drop (docs/verdict.md, "Throughput").
DEFAULT_DEMANDS = (1000,)
DEFAULT_RECOVERY_TIMES_MS = (0,)


@dataclass(frozen=True)
class ThroughputAbPlan:
    output: Path
    label: str
    rounds: int
    options: run_options.RunOptions  # output and Fast DDS prefix are set per arm and round
    arms: tuple[ArmSpec, ArmSpec]
    layouts: int = 0  # as the latency A/B's (ab/arms.py)


def plan_ab_throughput(*, output: Path, baseline: str, candidate: str, rounds: int | None = None, quick: bool = False,
                       subexperiments: list[str] | None = None, payloads: list[int] | None = None,
                       demands: list[int] | None = None, recovery_times: list[int] | None = None,
                       time: float | None = None, pin_cpus: str | None = None, label: str | None = None,
                       cpu_latency_request: str | None = None, layouts: int | None = None) -> ThroughputAbPlan:
    """Validate everything before anything is built or measured (InputError: exit 2). Rounds and test
    time not given are the quick A/B's with quick, else the full one's."""
    rounds = (QUICK_ROUNDS if quick else DEFAULT_ROUNDS) if rounds is None else rounds
    if time is None and quick:
        time = QUICK_TIME_S
    require_rounds(rounds)
    names = list(subexperiments) if subexperiments else list(s.DEFAULT_SUBEXPERIMENT_NAMES)
    refuse_without_throughput(names)
    settings = plan_settings(demands or DEFAULT_DEMANDS,
                             DEFAULT_RECOVERY_TIMES_MS if recovery_times is None else recovery_times, time)
    layouts = check_layouts(layouts)
    arms = (parse_arm(s.AB_ARMS[0], baseline, layouts), parse_arm(s.AB_ARMS[1], candidate, layouts))
    options = run_options.resolve_options(output=Path(output), samples=2, payloads=payloads or list(s.QUICK_THROUGHPUT_PAYLOADS),
                                          subexperiments=names, label=label, warmup=0, harness=None,
                                          fastdds_prefix=None, pin_cpus=pin_cpus, timeout=None,
                                          cpu_latency_request=cpu_latency_request, command="ab-throughput")
    options = replace(options, throughput=settings, timeout_s=settings.timeout_s(len(options.payloads)))
    return ThroughputAbPlan(Path(output), options.label, int(rounds), options, arms, layouts)


def ab_metadata(plan: ThroughputAbPlan, arms: list[Arm], platform: Platform, ignored: list[str],
                run_id: str) -> Metadata:
    settings = plan.options.throughput
    return Metadata.record(
        label=plan.label,
        kind=ab_throughput_report.KIND,
        created_utc=clock.utc_now(),
        arms={arm.name: AbArm.record(spec=arm.spec.spec, fastdds=arm.fastdds, harness=str(arm.paths.latency))
              for arm in arms},
        rounds=plan.rounds,
        order="arms alternate per round and per sub-experiment; the same sub-experiment back to back",
        layouts=plan.layouts or None,
        payloads=tuple(plan.options.payloads),
        throughput=ThroughputRecord.record(demands=tuple(settings.demands),
                                           recovery_times_ms=tuple(settings.recovery_times_ms), time_s=settings.time_s),
        **measuring_fields(plan.options, platform, ignored, run_id),
    )


def open_round(plan: ThroughputAbPlan, arms: list[Arm], round_dir: Path, platform: Platform,
               run_id: str) -> dict[str, tuple[run_options.RunOptions, Metadata]]:
    """Per arm: the run options and the metadata of its throughput folder in this round."""
    opened = {}
    for arm in arms:
        options = replace(plan.options, output=round_dir / arm.name, label=f"{plan.label}-{round_dir.name}-{arm.name}",
                          fastdds_prefix=arm.spec.fastdds_prefix, harness=arm.paths.latency)
        options.output.mkdir(parents=True, exist_ok=True)
        meta = throughput_metadata(initial_metadata(options, arm.paths, arm.version, platform, [], run_id),
                                   options.throughput)
        opened[arm.name] = (options, replace(meta, fastdds=arm.fastdds))
    return opened


def measure_pair(plan: ThroughputAbPlan, sub: s.SubExperiment, ordered: tuple[Arm, Arm],
                 opened: dict[str, tuple[run_options.RunOptions, Metadata]], environment: dict[str, str],
                 workdir: Path) -> list[subexperiment.SubexperimentResult]:
    """One sub-experiment's tests for both arms, `ordered[0]` first, one run after the other."""
    return [subexperiment.run_subexperiment(sub, opened[arm.name][0], arm.paths, environment, workdir)
            for arm in ordered]


def write_frame(folder: Path, sub: s.SubExperiment, frame) -> None:
    files.write_csv(folder / s.throughput_csv_name(sub.name), frame)


def throughput_test_values(ab_dir: Path, subs: list[str]) -> curtail.Tests:
    """The throughput tests' d per round so far, as the verdict will compute them (ab.curtail)."""
    rounds = ab_throughput_report.read_rounds(ab_dir)
    ratios = v.log_ratios(rounds.table, ab_throughput_report.STATISTICS, unit=ab_throughput_report.TEST,
                          higher_is_better=True)
    means, _ = v.usable_round_means(ratios, ab_throughput_report.TEST)
    return curtail.test_values(means, rounds.round_names, subs, ab_throughput_report.STATISTICS)


THROUGHPUT_ROUNDS = RoundSteps("ab-throughput", open_round, measure_pair, write_frame, throughput_test_values)


def command_ab_throughput(*, output, baseline, candidate, rounds=None, quick=False, subexperiments=None, payloads=None,
                          demands=None, recovery_times=None, time=None, pin_cpus=None, threshold=None, alpha=None,
                          no_plots=False, label=None, cpu_latency_request=None, all_rounds=False, layouts=None) -> int:
    plan = plan_ab_throughput(output=Path(output), baseline=baseline, candidate=candidate, rounds=rounds, quick=quick,
                              subexperiments=subexperiments, payloads=payloads, demands=demands,
                              recovery_times=recovery_times, time=time, pin_cpus=pin_cpus, label=label,
                              cpu_latency_request=cpu_latency_request, layouts=layouts)
    require_parameters(threshold, alpha)
    return measure_ab_throughput(plan, threshold=threshold, alpha=alpha, draw=not no_plots, curtailed=not all_rounds)


@claims.claims_output  # two commands started at once into one --output: one measures, one is exit 2
def measure_ab_throughput(plan: ThroughputAbPlan, *, threshold: float | None = None, alpha: float | None = None,
                          draw: bool = True, curtailed: bool = True) -> int:
    """The throughput A/B of a validated plan (plan_ab_throughput): interleaved rounds, each sub-experiment
    until its test is decided (all rounds unless `curtailed`), then the verdict."""
    environment, ignored = run_environment.scrub_environment(os.environ)
    run_id = uuid.uuid4().hex
    environment[run_environment.RUN_ID_ENV] = run_id
    arms = [prepare_arm(plan.arms[0], {}), prepare_arm(plan.arms[1], {})]
    platform = platform_info.this_machine()
    for warning in platform.warnings or ():
        print(f"perfgate ab-throughput: warning: {warning}", file=sys.stderr)
    settings, pin = plan.options.throughput, plan.options.pin_cpus
    tests = len(plan.options.payloads) * len(settings.demands) * len(settings.recovery_times_ms)
    print(f"perfgate ab-throughput: {plan.rounds} rounds x {len(plan.options.subexperiments)} sub-experiment(s) x "
          f"{tests} test(s) of {settings.time_s:g} s; baseline {arms[0].spec.spec} (Fast DDS {arms[0].version}), "
          f"candidate {arms[1].spec.spec} (Fast DDS {arms[1].version}); "
          + (f"pinned publisher CPU {pin[0]}, subscriber CPU {pin[1]}" if pin else "not pinned"), flush=True)
    plan.output.mkdir(parents=True, exist_ok=True)
    metadata = ab_metadata(plan, arms, platform, ignored, run_id)
    write_metadata(plan.output, metadata)
    failures = measure_rounds(plan, arms, metadata, environment, platform, THROUGHPUT_ROUNDS,
                              curtail.Curtailing(*require_parameters(threshold, alpha)) if curtailed else None)
    code = ab_throughput_report.command_verdict(ab_directory=str(plan.output), threshold=threshold, alpha=alpha,
                                                no_plots=not draw, program="ab-throughput")
    if failures:
        print(f"perfgate ab-throughput: {len(failures)} sub-experiment run(s) did not finish (see metadata.json "
              "'failures')", file=sys.stderr)
        # a regression proven on the others stands (perfgate.outcome): the verdict already says both
        return code if code in (s.EXIT_USAGE, s.EXIT_REGRESSION) else s.EXIT_INCOMPLETE
    return code
