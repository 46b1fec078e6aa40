"""ab.latency: measure two Fast DDS builds against each other, interleaved in rounds, and decide.

In every round both arms (baseline, candidate) run every selected sub-experiment, the same
sub-experiment back to back, so that whatever state the machine is in (another job, a CPU's
placement, thermal state) hits both alike. The arm that goes first alternates per round and per
sub-experiment: an order effect (a warm cache, a freshly freed port) lands on each arm equally
often, within every round. Each arm's round is an ordinary experiment folder
(rounds/<NN>/<arm>/: raw CSVs, summaries, metadata.json), so `perfgate verdict` can decide again
from the stored rounds alone.

The arms (ab/arms.py) are `system`, a colcon install prefix, or a `perfgate build` workspace or
kept install; with --layouts, the rounds rotate through each kept install's layouts.
"""
from __future__ import annotations

import os
import sys
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from .. import __version__, claims, clock, files
from . import attempts, curtail, layout as layout_bounds, layout_file, report as ab_report, round_power
from . import turns as ab_turns, verdict as v
from .arms import Arm, ArmSpec, common_alignment, parse_arm, prepare_arm
from ..fastdds.layouts import check_layouts
from .rounds import read_rounds
from ..measure import cpu_latency, platform_info, scratch
from ..latency import process, run
from .. import schema as s
from ..errors import InputError
from ..escape.workflow import log_text
from ..measure import commands, subexperiment
from ..measure import environment as run_environment
from ..measure import options as run_options
from ..model import (KIND_AB, AbArm, CpuLatency, CpuPinning, Environment, LoadAverage, Metadata, Platform,
                     write_metadata)

# 16 rounds: with 20 tests at a family-wise 2 %, one round in which one arm hit a bad machine state
# can neither hide a regression nor fake one (see ab/verdict.py); fewer rounds lose that.
DEFAULT_ROUNDS = 16
DEFAULT_SAMPLES = 1000  # per payload and round: the median and 90 % settle long before, start-up dominates
# Quick: the round trips are most of a round's time (75 % at 200 samples and a warm-up of 100), so
# fewer of them; a payload's first round trips settle within 3-5 (docs/verdict.md, "The quick A/B"),
# and in turns every turn warms up again by itself, so 10 warm-up round trips per payload suffice.
QUICK_SAMPLES = 100
QUICK_WARMUP = 10
# the fewest rounds with which 20 tests at 2 % can reject at all: every round must agree, so one bad
# round can hide a regression here; for trying things out and the README, not for gating
QUICK_ROUNDS = 10


def parse_delays(text: str | None, subs: tuple[s.SubExperiment, ...]) -> dict[str, int]:
    """--inject-delay-ns: `D` for every sub-experiment, or `name=D,name=D` (the others get none).
    Floors are plain sockets with no Fast DDS echo: `D` leaves them out, naming one is an error."""
    if text is None or str(text).strip() == "":
        return {}
    delays: dict[str, int] = {}
    by_name = {sub.name: sub for sub in subs}
    for item in str(text).split(","):
        name, separator, value = item.strip().rpartition("=")
        if not value.strip().isdigit():
            raise InputError(f"--inject-delay-ns takes whole nanoseconds, D or name=D,...: {item.strip()!r}")
        if not separator:
            delays.update({n: int(value) for n, sub in by_name.items() if not sub.is_floor})
        elif name not in by_name:
            raise InputError(f"--inject-delay-ns names {name!r}, which this A/B does not measure")
        elif by_name[name].is_floor:
            raise InputError(f"--inject-delay-ns: {name} is a plain-socket floor, it has no Fast DDS echo to delay")
        else:
            delays[name] = int(value)
    return {n: d for n, d in delays.items() if d}


@dataclass(frozen=True)
class AbPlan:
    output: Path
    label: str
    rounds: int
    options: run_options.RunOptions  # output and Fast DDS prefix are set per arm and round
    arms: tuple[ArmSpec, ArmSpec]
    echo_delay_ns: dict[str, int]
    turn_samples: int  # 0: the arms' runs one after the other; else both at once, in turns (ab/turns.py)
    layouts: int = 0  # 0: each arm's own build; N: round r runs layout r mod N of both (ab/arms.py)


MAX_ROUNDS = 1000  # each round measures both builds (a minute or more): more is weeks, a typo, not a plan


def require_rounds(rounds: int | None) -> None:
    if rounds is None or not 1 <= rounds <= MAX_ROUNDS:
        raise InputError(f"--rounds must be from 1 to {MAX_ROUNDS} (each round measures both builds), got {rounds}")


def plan_ab(*, output: Path, baseline: str, candidate: str, rounds: int | None = None, samples: int | None = None,
            quick: bool = False, subexperiments: list[str] | None = None, payloads: list[int] | None = None,
            pin_cpus: str | None = None, inject_delay_ns: str | None = None, label: str | None = None,
            warmup: int | None = None, timeout: float | None = None, cpu_latency_request: str | None = None,
            turn_samples: int | None = None, layouts: int | None = None) -> AbPlan:
    """Validate everything before anything is built or measured (InputError: exit 2). Rounds, samples
    and warm-up not given are the quick A/B's with quick, else the full one's."""
    output = Path(output)
    rounds = (QUICK_ROUNDS if quick else DEFAULT_ROUNDS) if rounds is None else rounds
    samples = (QUICK_SAMPLES if quick else DEFAULT_SAMPLES) if samples is None else samples
    if warmup is None and quick:
        warmup = QUICK_WARMUP
    require_rounds(rounds)
    turn_samples = ab_turns.DEFAULT_TURN_SAMPLES if turn_samples is None else turn_samples
    if turn_samples < 0:
        raise InputError(f"--turn-samples must be 0 (whole runs one after the other) or more, got {turn_samples}")
    layouts = check_layouts(layouts)
    arms = (parse_arm(s.AB_ARMS[0], baseline, layouts), parse_arm(s.AB_ARMS[1], candidate, layouts))
    # the ten of the contract by default: the floor measures the machine, which both arms share
    options = run_options.resolve_options(output=output, samples=samples, payloads=payloads,
                                  subexperiments=subexperiments or list(s.DEFAULT_SUBEXPERIMENT_NAMES),
                                  label=label, warmup=warmup, harness=None, fastdds_prefix=None, pin_cpus=pin_cpus,
                                  timeout=timeout, command="ab", cpu_latency_request=(
                                      cpu_latency.AB_DEFAULT if cpu_latency_request is None else cpu_latency_request))
    delays = parse_delays(inject_delay_ns, options.subexperiments)
    return AbPlan(output, options.label, int(rounds), options, arms, delays, int(turn_samples), layouts)


# --- measuring --------------------------------------------------------------------------------------
def first_arm(round_index: int, sub_index: int) -> int:
    """0 (baseline) or 1 (candidate): alternating per round and per sub-experiment."""
    return (round_index + sub_index) % 2


def round_name(round_index: int, rounds: int) -> str:
    return f"{round_index + 1:0{max(2, len(str(rounds)))}d}"


def arm_options(plan: AbPlan, arm: Arm, round_dir: Path) -> run_options.RunOptions:
    return replace(plan.options, output=round_dir / arm.name, label=f"{plan.label}-{round_dir.name}-{arm.name}",
                   fastdds_prefix=arm.spec.fastdds_prefix, harness=arm.paths.latency, echo_delay_ns=arm.echo_delay_ns)


def ab_metadata(plan: AbPlan, arms: list[Arm], platform: Platform, ignored: list[str], run_id: str) -> Metadata:
    return Metadata.record(
        label=plan.label,
        kind=KIND_AB,
        created_utc=clock.utc_now(),
        arms={arm.name: AbArm.record(spec=arm.spec.spec, fastdds=arm.fastdds, harness=str(arm.paths.latency),
                                     injected_echo_delay_ns=arm.echo_delay_ns)
              for arm in arms},
        rounds=plan.rounds,
        order=("both arms at once, taking turns of turn_samples round trips; the arm that takes the first turn "
               "alternates per round and per sub-experiment") if plan.turn_samples else
              "arms alternate per round and per sub-experiment; the same sub-experiment back to back",
        turn_samples=plan.turn_samples,
        layouts=plan.layouts or None,
        samples=plan.options.samples,
        payloads=tuple(plan.options.payloads),
        warmup=plan.options.warmup,
        **measuring_fields(plan.options, platform, ignored, run_id),
    )


def measuring_fields(options: run_options.RunOptions, platform: Platform, ignored: list[str], run_id: str) -> dict:
    """The fields an A/B folder's metadata.json has whatever is measured (latency or throughput), as
    they stand before the first round."""
    return dict(
        requested_subexperiments=tuple(sub.name for sub in options.subexperiments),
        cpu_pinning=CpuPinning.record(**run_options.cpu_pinning_metadata(options.pin_cpus, options.pin_request)),
        cpu_latency=None,  # while measuring: cpu_latency.hold_awake's entry
        platform=platform,
        load_average=LoadAverage.record(before=clock.load_average(), after=None),
        environment=Environment.record(ignored=tuple(sorted(ignored)), set_for_harness=dict(run_environment.CHILD_ENV)),
        perfgate_version=__version__,
        failures=(),
        run_id=run_id,
        finished_utc=None,
        interrupted=False,
    )


def open_round(plan: AbPlan, arms: list[Arm], round_dir: Path, platform: Platform,
               run_id: str) -> dict[str, tuple[run_options.RunOptions, Metadata]]:
    """Per arm: the run options and the metadata of its experiment folder in this round."""
    opened = {}
    for arm in arms:
        options = arm_options(plan, arm, round_dir)
        options.output.mkdir(parents=True, exist_ok=True)
        meta = run.initial_metadata(options, arm.paths, arm.version, platform, [], run_id)
        opened[arm.name] = (options, replace(meta, fastdds=arm.fastdds, injected_echo_delay_ns=arm.echo_delay_ns))
    return opened


def measure_pair(plan: AbPlan, sub: s.SubExperiment, ordered: tuple[Arm, Arm],
                 opened: dict[str, tuple[run_options.RunOptions, Metadata]], environment: dict[str, str],
                 workdir: Path) -> list[subexperiment.SubexperimentResult]:
    """One sub-experiment of one round for both arms, `ordered[0]` first: in turns, or one run after the other."""
    arms = [(opened[arm.name][0], arm.paths) for arm in ordered]
    if plan.turn_samples and not sub.is_floor:
        return list(ab_turns.measure_in_turns(sub, arms[0], arms[1], environment, workdir, plan.turn_samples))
    return [subexperiment.run_subexperiment(sub, options, paths, environment, workdir) for options, paths in arms]


def write_latency_frame(folder: Path, sub: s.SubExperiment, frame) -> None:
    files.write_csv(folder / s.raw_csv_name(sub.name), frame)
    files.write_csv(folder / s.summary_csv_name(sub.name), process.summarise(frame))


def latency_test_values(ab_dir: Path, subs: list[str]) -> curtail.Tests:
    """The latency tests' d per round so far, as the verdict will compute them (ab.curtail)."""
    rounds = read_rounds(ab_dir)
    means, _ = v.usable_round_means(v.log_ratios(rounds.table))
    return curtail.test_values(means, rounds.round_names, subs, v.TESTED_STATISTICS)


@dataclass(frozen=True)
class RoundSteps:
    """What differs between the latency A/B and the throughput A/B (perfgate.ab.throughput) inside the
    same rounds: how a round's arm folders open, how one sub-experiment is measured for both arms, what
    is written of a measured frame, and how the tests' d per round are read back to curtail."""

    program: str
    open_round: Callable  # (plan, arms, round_dir, platform, run_id) -> {arm: (options, Metadata)}
    measure_pair: Callable  # (plan, sub, ordered arms, opened, environment, workdir) -> [result, result]
    write_frame: Callable  # (arm's round folder, sub, frame) -> None
    test_values: Callable  # (A/B folder, sub-experiment names) -> curtail.Tests


LATENCY_ROUNDS = RoundSteps("ab", open_round, measure_pair, write_latency_frame, latency_test_values)


def measure_rounds(plan, arms: list[Arm], metadata: Metadata, environment: dict[str, str], platform: Platform,
                   steps: RoundSteps = LATENCY_ROUNDS, curtailing: curtail.Curtailing | None = None,
                   planned: dict[str, int] | None = None) -> list[str]:
    """Every round, every sub-experiment not yet decided (all of them without `curtailing`) and within its
    `planned` rounds (default: plan.rounds for all), both arms back to back, the arm that goes first
    alternating per round and sub-experiment; a pair an arm did not finish is measured again (ab.attempts).
    Returns what did not finish in any attempt: the sub-experiments given up."""
    failures, retried = list(metadata.failures or ()), list(metadata.retried or ())
    given_up: set[str] = set()  # every attempt of one round failed (ab.attempts)
    subs = plan.options.subexperiments
    planned = planned or {sub.name: plan.rounds for sub in subs}
    total = curtail.most_planned(planned)
    measured = {sub.name: 0 for sub in subs}
    stopped: dict[str, int] = {}
    try:
        with run.terminate_as_interrupt(), cpu_latency.hold_awake(plan.options.cpu_latency) as awake, \
                scratch.scratch_folder(steps.program, metadata.run_id) as workdir:
            metadata = replace(metadata, cpu_latency=CpuLatency.record(**awake))
            cpu_latency.warn(f"perfgate {steps.program}", awake)
            for r in range(total):
                round_dir = plan.output / s.AB_ROUNDS_DIR / round_name(r, total)
                round_arms = [arm.in_round(r) for arm in arms]
                opened = {name: (options, replace(arm_meta, cpu_latency=metadata.cpu_latency)) for name, (options, arm_meta)
                          in steps.open_round(plan, round_arms, round_dir, platform, metadata.run_id).items()}
                for i, sub in enumerate(subs):
                    if sub.name in stopped or sub.name in given_up or r >= planned[sub.name]:
                        continue
                    measured[sub.name] = r + 1
                    first = first_arm(r, i)
                    ordered = (round_arms[first], round_arms[1 - first])
                    where = f"round {round_dir.name} {sub.name}"
                    attempted = attempts.measure_attempts(
                        lambda: steps.measure_pair(plan, sub, ordered, opened, environment, Path(workdir)),
                        [arm.name for arm in ordered], on_retry=lambda n, what: print(
                            f"perfgate {steps.program}: {where}: {log_text(what)}; measuring both arms again "
                            f"(attempt {n} of {attempts.ROUND_ATTEMPTS})", file=sys.stderr, flush=True))
                    for arm, result in zip(ordered, attempted.results):
                        options, arm_meta = opened[arm.name]
                        if result.measured.frame is not None:
                            steps.write_frame(options.output, sub, result.measured.frame)
                        arm_meta = arm_meta.with_outcome(sub.name, result.metadata_entry())
                        opened[arm.name] = (options, arm_meta)
                        write_metadata(options.output, arm_meta)
                    if attempted.finished:
                        retried += [f"{where}: {line}; measured again" for line in attempted.failed_attempts]
                    else:  # the sub-experiment's own failure now: the others go on, it is what stays undecided
                        given_up.add(sub.name)
                        failures.append(f"{where}: {attempted.failed_attempts[-1]}")
                        print(f"perfgate {steps.program}: error: {where}: every one of {attempts.ROUND_ATTEMPTS} "
                              f"attempts failed ({log_text(attempted.failed_attempts[-1])}); "
                              f"{commands.describe(sub)} is measured in no later round", file=sys.stderr, flush=True)
                for options, arm_meta in opened.values():
                    write_metadata(options.output, arm_meta.finish(clock.utc_now(), clock.load_average()))
                metadata = replace(metadata, failures=tuple(failures), retried=tuple(retried))
                write_metadata(plan.output, metadata)
                print(f"[round {r + 1}/{total}] {sum(n == r + 1 for n in measured.values())} sub-experiment(s) "
                      f"x 2 arms (load {clock.load_average()[0]:.2f})", flush=True)
                if curtailing is not None and curtailing.after_round(plan.output, planned, steps.test_values,
                                                                      measured, stopped, steps.program):
                    break
                if all(name in stopped or name in given_up for name in measured):
                    break  # what is left was given up: no round could measure anything
    except KeyboardInterrupt:
        metadata = replace(metadata, interrupted=True)
        raise
    finally:
        write_metadata(plan.output, metadata.finish(clock.utc_now(), clock.load_average(), failures=tuple(failures),
                                                    retried=tuple(retried)))
    return failures


# --- the command --------------------------------------------------------------------------------------
def command_ab(*, output, baseline, candidate, rounds=None, samples=None, quick=False, subexperiments=None,
               payloads=None, pin_cpus=None, inject_delay_ns=None, threshold=None, alpha=None, no_plots=False,
               label=None, warmup=None, timeout=None, cpu_latency_request=None, turn_samples=None,
               all_rounds=False, layout_thresholds=None, layouts=None) -> int:
    plan = plan_ab(output=Path(output), baseline=baseline, candidate=candidate, rounds=rounds, samples=samples,
                   quick=quick, subexperiments=subexperiments, payloads=payloads, pin_cpus=pin_cpus,
                   inject_delay_ns=inject_delay_ns, label=label, warmup=warmup, timeout=timeout,
                   cpu_latency_request=cpu_latency_request, turn_samples=turn_samples, layouts=layouts)
    ab_report.require_parameters(threshold, alpha)
    # --layout-thresholds, else the platform's requirements/<$PERFGATE_PLATFORM>_layout.json: read before measuring
    return measure_ab(plan, threshold=threshold, alpha=alpha, draw=not no_plots, curtailed=not all_rounds,
                      layout_read=layout_file.resolve(layout_thresholds))


@claims.claims_output  # two commands started at once into one --output: one measures, one is exit 2
def measure_ab(plan: AbPlan, *, threshold: float | None = None, alpha: float | None = None, draw: bool = True,
               curtailed: bool = True, layout_read: layout_file.LayoutThresholds | None = None) -> int:
    """The A/B of a validated plan (plan_ab): interleaved rounds, each sub-experiment until its tests are
    decided (all rounds unless `curtailed`), then the verdict (ab_report), every test at max(threshold,
    its sub-experiment's threshold in the layout file `layout_read`); None: at the threshold alone. The
    file is read once, before: rounds are planned, curtailed and decided at the same thresholds."""
    layout = layout_read.thresholds if layout_read is not None else {}
    environment, ignored = run_environment.scrub_environment(os.environ)
    run_id = uuid.uuid4().hex
    environment[run_environment.RUN_ID_ENV] = run_id
    arms = [prepare_arm(plan.arms[0], {}), prepare_arm(plan.arms[1], plan.echo_delay_ns)]
    platform = platform_info.this_machine()
    alignment, mixed_alignments = common_alignment(plan.arms)
    notes = [*(platform.warnings or ()), mixed_alignments,
             layout_file.mode_warning(layout_read, plan.options.cpu_latency, plan.layouts, alignment),
             layout_file.platform_warning(layout_read, platform.id)]
    for warning in filter(None, notes):
        print(f"perfgate ab: warning: {warning}", file=sys.stderr)
    for name in ignored:
        print(f"perfgate ab: warning: ignoring {name} (Fast DDS configuration from the environment)", file=sys.stderr)
    pin = plan.options.pin_cpus
    print(f"perfgate ab: {plan.rounds} rounds x {len(plan.options.subexperiments)} sub-experiment(s) x "
          f"{len(plan.options.payloads)} payload(s), {plan.options.samples} samples; baseline {arms[0].spec.spec} "
          f"(Fast DDS {arms[0].version}), candidate {arms[1].spec.spec} (Fast DDS {arms[1].version}); "
          + (f"pinned publisher CPU {pin[0]}, subscriber CPU {pin[1]}" if pin else "not pinned")
          + (f"; in turns of {plan.turn_samples} round trips" if plan.turn_samples else "; arms one after the other")
          + (f"; rounds rotating through {plan.layouts} layouts" if plan.layouts else "")
          + (f"; injected echo delay {plan.echo_delay_ns} ns" if plan.echo_delay_ns else ""), flush=True)
    bound, level = v.require_parameters(threshold, alpha)  # the verdict's, which curtailing must share
    subs = [x.name for x in plan.options.subexperiments]
    noise = layout_read.noise_for(plan.options.samples) if layout_read is not None else None
    if layout_read is not None and layout_read.noise and noise is None:
        print(f"perfgate ab: the layout file's A/Bs measured another number of samples per round than "
              f"{plan.options.samples}: rounds are planned by the bounds alone", flush=True)
    more = layout_bounds.more_rounds(plan.rounds, bound, layout, subs, noise, level)
    planned = layout_bounds.rounds_with_more(plan.rounds, more, subs)
    for sub, why in more.items():
        print(f"perfgate ab: {planned[sub]} rounds for {sub}: {why}", flush=True)
    if noise:  # what this machine can see, before measuring (a file of another machine's rounds is warned above)
        caught = layout_bounds.smallest_caught(planned, bound, layout, noise, level)
        print(f"perfgate ab: {layout_bounds.smallest_caught_text(caught, planned)}", flush=True)
    else:
        print(f"perfgate ab: the smallest slow-down caught with {round_power.TARGET_POWER:.0%} power is unknown: no "
              "layout file with rounds of "
              f"{plan.options.samples} samples for this platform (perfgate calibrate derives one)", flush=True)
    most = curtail.most_planned(planned)
    if plan.layouts and most > plan.layouts:  # one layout pair gives one move, again
        print(f"perfgate ab: warning: up to {most} rounds through {plan.layouts} layouts: the "
              f"rounds after the first {plan.layouts} measure their layouts again, which tells less than new ones "
              "(perfgate build --layouts as many as the rounds)", file=sys.stderr)
    plan.output.mkdir(parents=True, exist_ok=True)
    metadata = ab_metadata(plan, arms, platform, ignored, run_id)
    write_metadata(plan.output, metadata)
    failures = measure_rounds(plan, arms, metadata, environment, platform,
                              curtailing=curtail.Curtailing(bound, level, layout=layout) if curtailed else None,
                              planned=planned)
    code = ab_report.decide_latency(plan.output, threshold, alpha, layout_read, draw=draw, program="ab")
    if failures:
        print(f"perfgate ab: {len(failures)} sub-experiment run(s) did not finish (see metadata.json 'failures')",
              file=sys.stderr)
        # a regression proven on the others stands (perfgate.outcome): the verdict already says both
        return code if code in (s.EXIT_USAGE, s.EXIT_REGRESSION) else s.EXIT_INCOMPLETE
    return code
