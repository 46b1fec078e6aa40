"""topology.ab: a topology run by two Fast DDS builds against each other, interleaved in rounds.

The latency A/B's design (perfgate.ab.latency) with a whole topology in each arm's place: every round
runs the topology once with the baseline's perfgate-topology and once with the candidate's, one after
the other for the same time, the arm that goes first alternating per round (ab.latency.first_arm), so
whatever state the machine is in hits both. Each arm's round is an ordinary topology experiment folder
(rounds/<NN>/<arm>/, as `perfgate topology` writes it, without plots); the figures of every round go to
rounds.csv and the decision (topology.ab_verdict) to verdict.csv, verdict.json, junit.xml and report.md.

    <ab dir>/metadata.json   kind ab-topology: the topology, arms, rounds, time, failures
    <ab dir>/rounds/<NN>/{baseline,candidate}/
    <ab dir>/rounds.csv, verdict.csv, verdict.json, junit.xml, report.md
"""
from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from .. import claims, clock, files
from .. import schema as s
from ..ab import attempts, verdict as v
from ..escape.workflow import log_text
from ..ab.arms import ArmSpec, parse_arm, prepare_arm
from ..ab.latency import first_arm, require_rounds, round_name
from ..errors import IncompleteError, InputError
from . import ab_verdict
from . import names as n
from .run import EXECUTABLE, TopologyPlan, measure_topology, plan_from_options

# Five tests at family-wise 2 % need 8 rounds to reject at all (ab.verdict.rounds_needed): the quick
# A/B has exactly those (every round must agree); the full one 12, where one round that disagrees (an
# arm that hit a bad machine state) can neither hide a regression nor fake one (11 of 12: p = 0.0032
# < 0.02 / 5).
QUICK_ROUNDS = 8
DEFAULT_ROUNDS = 12


@dataclass(frozen=True)
class TopologyAbPlan:
    name: str  # the topology's name, its 'sub-experiment' in the verdict
    run: TopologyPlan  # each arm's run, but for its output and executable
    output: Path  # the A/B folder
    rounds: int
    arms: tuple[ArmSpec, ArmSpec]
    # tests only: a busy-wait per publish for an arm (a known slow-down), never from the gate's options
    publish_delay_ns: dict[str, int] = field(default_factory=dict)


def plan_topology_ab(run: TopologyPlan, *, name: str, output: Path, baseline: str, candidate: str, quick: bool,
                     rounds: int | None = None) -> TopologyAbPlan:
    """Validated before anything is built or measured (InputError: exit 2)."""
    rounds = (QUICK_ROUNDS if quick else DEFAULT_ROUNDS) if rounds is None else rounds
    require_rounds(rounds)
    return TopologyAbPlan(name, run, Path(output), int(rounds),
                          (parse_arm(s.AB_ARMS[0], baseline), parse_arm(s.AB_ARMS[1], candidate)))


def command_topology_ab(*, topology, output, baseline, candidate, rounds=None, quick=False, time=None, ipc="on",
                        transport="udpv4", threshold=None, alpha=None, label=None) -> int:
    """`perfgate topology-ab`: the gate's topology A/B on its own, every other option perfgate topology's default."""
    threshold, alpha = v.require_parameters(threshold, alpha)
    run = plan_from_options(
        topology=topology, time=time if time is not None else (n.QUICK_TIME_S if quick else n.DEFAULT_TIME_S),
        output=output, ipc=ipc, processes="one", transport=transport, reliability="reliable",
        sampling=n.DEFAULT_SAMPLING_MS, late_percentage=n.DEFAULT_LATE_PERCENTAGE,
        late_absolute=n.DEFAULT_LATE_ABSOLUTE_US, too_late_percentage=n.DEFAULT_TOO_LATE_PERCENTAGE,
        too_late_absolute=n.DEFAULT_TOO_LATE_ABSOLUTE_US, history_depth=10, label=label or Path(output).name)
    plan = plan_topology_ab(run, name=run.topology_file.stem, output=Path(output), baseline=baseline,
                            candidate=candidate, quick=quick, rounds=rounds)
    return measure_topology_ab(plan, threshold=threshold, alpha=alpha)


def _executable(arm) -> Path:
    path = arm.paths.build_dir / EXECUTABLE
    if not path.is_file():
        raise IncompleteError(f"the {arm.name}'s harness build has no {EXECUTABLE}", path)
    return path


@claims.claims_output  # two A/Bs into one folder: one measures, the other is exit 2
def measure_topology_ab(plan: TopologyAbPlan, *, threshold: float | None = None, alpha: float | None = None) -> int:
    """Every round measured, then decided; the verdict's exit code (3 when a round's arm failed and the
    rounds left cannot decide, or when any arm failed: a missing result is never a pass)."""
    threshold, alpha = v.require_parameters(threshold, alpha)
    arms = [prepare_arm(plan.arms[0], {}), prepare_arm(plan.arms[1], {})]
    executables = {arm.name: _executable(arm) for arm in arms}
    plan.output.mkdir(parents=True, exist_ok=True)
    metadata = {"kind": ab_verdict.KIND, "label": plan.run.label, "topology": plan.name,
                "topology_file": str(plan.run.topology_file), "rounds": plan.rounds, "time_s": plan.run.time_s,
                "order": "arms alternate per round, one after the other",
                "arms": {arm.name: {"spec": arm.spec.spec, "fastdds_version": arm.version,
                                    "harness": str(executables[arm.name]),
                                    "publish_delay_ns": plan.publish_delay_ns.get(arm.name, 0)} for arm in arms},
                "created_utc": clock.utc_now(), "load_before": clock.load_average(), "failures": []}
    print(f"perfgate topology-ab: {plan.name}: {plan.rounds} rounds x 2 arms of {plan.run.time_s:g} s; baseline "
          f"{arms[0].spec.spec} (Fast DDS {arms[0].version}), candidate {arms[1].spec.spec} (Fast DDS "
          f"{arms[1].version})", flush=True)
    rows, metadata["retried"] = [], []
    for index in range(plan.rounds):
        round_dir = plan.output / s.AB_ROUNDS_DIR / round_name(index, plan.rounds)
        first = first_arm(index, 0)
        ordered = (arms[first], arms[1 - first])
        # an arm that did not finish is measured again with the other, in a fresh round folder (ab.attempts)
        attempted = attempts.measure_attempts(
            lambda: measure_round(plan, round_dir, ordered, executables), [arm.name for arm in ordered],
            on_retry=lambda n, what: print(f"perfgate topology-ab: round {round_dir.name}: {log_text(what)}; measuring "
                                           f"both arms again (attempt {n} of {attempts.ROUND_ATTEMPTS})",
                                           file=sys.stderr, flush=True))
        if not attempted.finished:  # the topology itself keeps failing: what was measured is decided, incomplete
            metadata["failures"] += [{"round": round_dir.name, "arm": arm.name, "error": result.error}
                                     for arm, result in zip(ordered, attempted.results) if result.error is not None]
            print(f"perfgate topology-ab: round {round_dir.name}: every one of {attempts.ROUND_ATTEMPTS} attempts "
                  f"failed ({log_text(attempted.failed_attempts[-1])}); no later round is measured", file=sys.stderr)
            break
        metadata["retried"] += [f"round {round_dir.name}: {line}; measured again" for line in attempted.failed_attempts]
        for arm in ordered:
            figures = ab_verdict.arm_figures(round_dir / arm.name)
            if figures is not None:
                rows.append({v.ROUND: round_dir.name, v.ARM: arm.name, **figures})
    metadata["load_after"] = clock.load_average()
    files.write_text(plan.output / s.METADATA_FILE, json.dumps(metadata, indent=2) + "\n")
    rounds = pd.DataFrame(rows, columns=[v.ROUND, v.ARM, *ab_verdict.ROUND_STATISTICS])
    files.write_csv(plan.output / ab_verdict.ROUNDS_CSV, rounds)
    code = decide_folder(plan.output, threshold=threshold, alpha=alpha)
    if metadata["failures"]:
        print(f"perfgate topology-ab: {len(metadata['failures'])} arm run(s) did not finish (see metadata.json "
              "'failures')", file=sys.stderr)
        # a regression proven on the rounds measured stands (perfgate.outcome); the verdict says both
        return code if code in (s.EXIT_USAGE, s.EXIT_REGRESSION) else s.EXIT_INCOMPLETE
    return code


@dataclass(frozen=True)
class ArmRun:
    """One arm's topology run in one attempt of a round, as ab.attempts reads it."""
    outcome: str
    error: str | None = None


def measure_round(plan: TopologyAbPlan, round_dir: Path, ordered, executables: dict[str, Path]) -> list[ArmRun]:
    """Both arms' runs of one round, `ordered[0]` first, into a fresh round folder."""
    if round_dir.exists():
        shutil.rmtree(round_dir)  # a failed attempt's folders: a run writes into an empty folder only
    results = []
    for arm in ordered:
        folder = round_dir / arm.name
        folder.mkdir(parents=True)
        run = replace(plan.run, output=folder, harness=executables[arm.name], plots=False,
                      label=f"{plan.run.label}-{round_dir.name}-{arm.name}",
                      publish_delay_ns=plan.publish_delay_ns.get(arm.name, 0))
        try:
            measure_topology(run)
            results.append(ArmRun(s.OUTCOME_OK))
        except IncompleteError as error:
            results.append(ArmRun(s.OUTCOME_INCOMPLETE, error.message))
    return results


def decide_folder(ab_dir: Path, *, threshold: float, alpha: float) -> int:
    """The verdict of a topology A/B folder from its rounds.csv and metadata.json, its files written."""
    metadata = files.read_json_object(ab_dir / s.METADATA_FILE, "topology A/B metadata") or {}
    name = str(metadata.get("topology") or ab_dir.parent.name)
    path = ab_dir / ab_verdict.ROUNDS_CSV
    if not path.is_file():
        raise InputError(f"not a topology A/B folder: no {ab_verdict.ROUNDS_CSV}", ab_dir)
    rounds = ab_verdict.read_rounds_csv(path)
    round_names = sorted(set(rounds[v.ROUND].astype(str)))
    decision = ab_verdict.decide(rounds, name, threshold, alpha)
    record = ab_verdict.verdict_json(decision, name, round_names, metadata)
    files.write_csv(ab_dir / s.VERDICT_CSV, ab_verdict.csv_table(decision))
    files.write_text(ab_dir / s.VERDICT_JSON, json.dumps(record, indent=2) + "\n")
    files.write_text(ab_dir / s.JUNIT_FILE, ab_verdict.junit_xml(decision, name, len(round_names),
                                                                 len(metadata.get("failures") or [])))
    files.write_text(ab_dir / s.REPORT_MARKDOWN, ab_verdict.markdown(decision, name, round_names))
    from ..escape.workflow import log_text
    for _, row in decision.table.iterrows():
        if row[s.STATUS] == s.FAILED:
            print(f"perfgate topology-ab: REGRESSION: {log_text(name)} "
                  f"{log_text(ab_verdict.summary(row, decision.threshold))}")
    print(f"perfgate topology-ab: {log_text(record['headline'])}")
    return int(record["exit_code"])
