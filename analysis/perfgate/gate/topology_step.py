"""gate.topology_step: the gate's topology experiment (`--experiments latency,topology`), in the shape of
run.run_throughput: planned before measuring (every topology file and target read, so a bad one is
exit 2 in seconds), then each topology run into <output>/topology/<name>/, checked against the
platform's target requirements/<platform>_topology_<name>.json where it exists (measured and
reported, not checked, where it does not), its JUnit testcases joined to the gate's junit.xml, and
one headline whose status counts in the gate's verdict and exit code. With a baseline build, each
topology also runs as an A/B (topology.ab) into <output>/topology/<name>/ab/: its verdict said first
in the headline, its testcases (one per statistic) joined to junit.xml.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path

from .. import files, junit_writer, outcome
from .. import schema as s
from ..errors import InputError
from ..fastdds.harness import ensure_harness
from ..junit_writer import TestCase
from ..report.ab_view import STATUS_WORDS
from ..store.baseline import require_folder_name
from ..topology import names as tn
from ..topology import ab as topology_ab
from ..topology.check import SUITE, command_check_topology
from ..topology.run import EXECUTABLE, TopologyPlan, measure_topology, plan_from_options
from ..topology.target import Target, read_target


@dataclass(frozen=True)
class GateTopology:
    """One topology the gate runs: its name (the file's stem), the run's plan, its target (None: none)."""

    name: str
    plan: TopologyPlan
    target: Target | None


def plan_topologies(names: list[str] | None, time_s: float | None, *, experiments: tuple[str, ...], quick: bool,
                    platform: str, output: Path, label: str, topologies_dir: Path = Path(tn.TOPOLOGIES_DIR),
                    requirements_dir: Path = Path(s.REQUIREMENTS_DIR), ipc: str | None = None, transport: str | None = None) -> tuple[GateTopology, ...]:
    """The topologies to run, read and validated (InputError, exit 2, before anything is measured)."""
    if "topology" not in experiments:
        if names is not None or time_s is not None:
            raise InputError("--topologies and --topology-time are for a gate that runs topologies "
                             "(--experiments latency,topology)")
        if ipc is not None or transport is not None:
            raise InputError("--topology-ipc and --topology-transport are for a gate that runs topologies "
                             "(--experiments latency,topology)")
        return ()
    found = sorted(path.stem for path in topologies_dir.glob("*.json")) if topologies_dir.is_dir() else []
    if not found:
        raise InputError(f"--experiments topology: no topology file ({tn.TOPOLOGIES_DIR}/<name>.json) in the "
                         f"working folder", topologies_dir)
    chosen = list(names) if names else found
    for name in chosen:
        if name not in found:
            raise InputError(f"--topologies: no {tn.TOPOLOGIES_DIR}/{name}.json (found: {', '.join(found)})")
        require_folder_name(name, "topology name")  # it names the topology's folder in the output
    if len(set(chosen)) != len(chosen):
        raise InputError("--topologies names a topology twice")
    seconds = time_s if time_s is not None else (tn.QUICK_TIME_S if quick else tn.DEFAULT_TIME_S)
    planned = []
    for name in chosen:
        plan = _topology_plan(
            topology=str(topologies_dir / f"{name}.json"), time=seconds,
            output=str(output / tn.GATE_TOPOLOGY_DIR / name), ipc=ipc or "on", processes="one",
            transport=transport or "udpv4",
            reliability="reliable", sampling=tn.DEFAULT_SAMPLING_MS, late_percentage=tn.DEFAULT_LATE_PERCENTAGE,
            late_absolute=tn.DEFAULT_LATE_ABSOLUTE_US, too_late_percentage=tn.DEFAULT_TOO_LATE_PERCENTAGE,
            too_late_absolute=tn.DEFAULT_TOO_LATE_ABSOLUTE_US, history_depth=10, label=f"{label}-topology-{name}")
        target_path = tn.platform_target_json(requirements_dir, platform, name)
        target = read_target(target_path) if target_path.exists() or target_path.is_symlink() else None
        planned.append(GateTopology(name, plan, target))
    return tuple(planned)


def _topology_plan(**options) -> TopologyPlan:
    """`perfgate topology`'s own plan and checks; its --time is the gate's --topology-time."""
    try:
        return plan_from_options(**options)
    except InputError as error:
        if error.message.startswith("--time "):
            raise InputError("--topology-time " + error.message[len("--time "):]) from None
        raise


def describe(topologies: tuple[GateTopology, ...]) -> str:
    """For the gate's opening line: what runs and what is checked."""
    return ", ".join(f"{t.name} ({t.plan.time_s:g} s, " + (f"checked against {t.target.path}" if t.target
                                                              else "no target for this platform: measured, not checked")
                     + ")" for t in topologies)


def _executable(run_options) -> Path:
    """perfgate-topology of the harness the gate measures latency with (built against the same Fast DDS)."""
    if run_options.harness is not None:
        return Path(run_options.harness).parent / EXECUTABLE
    return ensure_harness(fastdds_prefix=run_options.fastdds_prefix).build_dir / EXECUTABLE


def unmeasured_suite(topology: GateTopology) -> ET.Element:
    """A topology with a target that gave no figures: each limit an error, never a pass."""
    cases = []
    for limit in topology.target.limits:
        case = TestCase(f"{limit.section}.{limit.metric}", classname=SUITE, file=str(topology.target.path),
                        line=limit.line)
        case.add_error_info(f"topology {topology.name}: not measured", "the topology run gave no figures to check",
                            "NotMeasured")
        cases.append(case)
    return junit_writer.suite(f"{SUITE}.{topology.name}", cases)


def join_junit(gate_junit: Path, suites: list[ET.Element]) -> None:
    """The topology suites after the gate's own, in one document with the totals recomputed."""
    if not suites:
        return
    existing = ET.parse(gate_junit).getroot() if gate_junit.is_file() else None
    own = list(existing) if existing is not None else []
    name = existing.get("name") if existing is not None else "perfgate gate"
    gate_junit.write_text(junit_writer.document(name, [*own, *suites]), encoding="utf-8")


def _checked_suites(junit: Path, name: str) -> tuple[list[ET.Element], int, int]:
    """check-topology's suites, renamed topology.<name>; (suites, testcases, failed testcases)."""
    suites = list(ET.parse(junit).getroot())
    for suite in suites:
        suite.set("name", f"{SUITE}.{name}")
    cases = [case for suite in suites for case in suite.iter("testcase")]
    return suites, len(cases), sum(1 for case in cases if case.find("failure") is not None)


def run_topology_ab(plan, steps, topology: GateTopology, quick: bool, candidate: str) -> tuple[str, str, list]:
    """The topology's A/B against the baseline build in <its folder>/ab/: (status, what it said, its suites)."""
    ab_dir = topology.plan.output / s.AB_DIR
    steps.call(f"topology {topology.name} A/B", f"the topology A/B against the baseline build could not decide "
                                                f"(see {tn.GATE_TOPOLOGY_DIR}/{topology.name}/{s.AB_DIR}/)",
               lambda: topology_ab.measure_topology_ab(topology_ab.plan_topology_ab(
                   replace(topology.plan, label=f"{topology.plan.label}-ab"), name=topology.name, output=ab_dir,
                   baseline=plan.baseline_build, candidate=candidate, quick=quick)))
    record = files.read_json_object(ab_dir / s.VERDICT_JSON, "topology A/B verdict") \
        if (ab_dir / s.VERDICT_JSON).is_file() else None
    junit = ab_dir / s.JUNIT_FILE
    suites = list(ET.parse(junit).getroot()) if junit.is_file() else []
    if not record or "headline" not in record:
        return outcome.INCOMPLETE, f"{topology.name}: no A/B verdict", suites
    status, _, said = str(record["headline"]).partition(": ")
    return status, said, suites


def run_topologies(plan, steps, topologies: tuple[GateTopology, ...], quick: bool = False,
                   candidate: str | None = None) -> str | None:
    """Each topology run and checked, and with a baseline build its A/B; the headline (worst status
    first, the A/Bs' answers before the checks), or None when none was asked for."""
    if not topologies:
        return None
    statuses, said, suites, ab_said = [], [], [], []
    for topology in topologies:
        folder = topology.plan.output
        step = f"topology {topology.name}"
        code = steps.call(step, f"the topology run did not finish or a subscription received nothing (see "
                                f"{tn.GATE_TOPOLOGY_DIR}/{topology.name}/metadata.json)",
                          lambda t=topology: measure_topology(replace(t.plan, harness=_executable(plan.run_options))))
        measured = (folder / tn.LATENCY_TOTAL_CSV).is_file() and (folder / tn.RESOURCES_CSV).is_file()
        if topology.target is None:
            statuses.append(outcome.MEASURED if code == s.EXIT_OK else outcome.INCOMPLETE)
            said.append(f"{topology.name} " + ("measured, no target for this platform (not checked)" if code == s.EXIT_OK
                                               else "did not finish"))
            continue
        if not measured:
            statuses.append(outcome.INCOMPLETE)
            said.append(f"{topology.name} not measured, its {len(topology.target.limits)} target checks not made")
            suites.append(unmeasured_suite(topology))
            continue
        junit = folder / s.JUNIT_FILE
        checked = steps.call(f"{step} check", "the topology's figures could not be checked",
                             lambda t=topology, f=folder, j=junit: command_check_topology(
                                 target=str(t.target.path), experiment_directory=str(f), junit=str(j),
                                 no_plots=steps.interrupted))
        if not junit.is_file():
            statuses.append(outcome.INCOMPLETE)
            said.append(f"{topology.name}: its target could not be checked")
            suites.append(unmeasured_suite(topology))
            continue
        found, total, failed = _checked_suites(junit, topology.name)
        suites.extend(found)
        worst = outcome.most_severe(code, checked)
        statuses.append(outcome.INCOMPLETE if worst == s.EXIT_INCOMPLETE else
                        outcome.REGRESSION if failed else outcome.PASS)
        said.append(f"{topology.name} {failed} of {total} target checks missed" if failed
                    else f"{topology.name} all {total} target checks met")
    # the A/Bs after every topology's own run (which needs its folder empty), their answers said first
    for topology in topologies if plan.baseline_build is not None else ():
        if steps.interrupted:
            break
        ab_status, ab_text, ab_suites = run_topology_ab(plan, steps, topology, quick,
                                                        candidate or s.FASTDDS_SYSTEM_SPEC)
        statuses.append(ab_status)
        ab_said.append(f"{STATUS_WORDS.get(ab_status, ab_status)}: {ab_text}")
        suites.extend(ab_suites)
    join_junit(plan.output / s.JUNIT_FILE, suites)
    status = next((word for word in (outcome.INCOMPLETE, outcome.REGRESSION, outcome.PASS) if word in statuses),
                  outcome.MEASURED)
    answers = (["A/B against the baseline build " + "; ".join(ab_said)] if ab_said else []) + said
    return f"{status}: " + "; ".join(answers)
