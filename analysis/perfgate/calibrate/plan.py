"""calibrate.plan: what a calibration measures and derives, and how much of it. Pure.

The settings are the ones the platform files of `vm-2core-x64` were derived with (requirements/README.md), so
that a new machine's files mean what that platform's mean: 20 latency runs of 200 samples per payload,
`--percentile 100 --margin 10`; A/As of the build against itself as the gate's A/B measures (its rounds and
samples, every round kept); 3 throughput runs, `--margin 4`; 5 runs of 60 s of each topology, `--percentile 99
--margin 1`. `--quick` keeps the methods and cuts the counts to the fewest that derive anything (2 or 3 runs,
one quick A/A): a smoke calibration of minutes, whose files are looser guesses of the machine.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .. import schema as s
from ..errors import InputError

# the steps, in the order they run; each derived one names the measured steps it reads
# layout_ab: A/Bs of the build's layout variants against each other (perfgate build --layouts), measured
# when the build has at least two
MEASURED_STEPS = ("latency", "aa", "layout_ab", "throughput", "topology")
DERIVED_STEPS = {"requirements": ("latency",), "resources": ("latency",), "gross": ("latency", "aa"),
                 "layout": ("aa", "layout_ab"), "throughput_requirements": ("throughput",),
                 "topology_targets": ("topology",), "detection": ("aa",)}
STEP_CHOICES = ("latency", "resources", "aa", "gross", "layout", "throughput", "topology")
# a --steps name -> the derived steps it asks for
ASKED = {"latency": ("requirements",), "resources": ("resources",), "aa": ("detection",), "gross": ("gross",),
         "layout": ("layout", "detection"), "throughput": ("throughput_requirements",),
         "topology": ("topology_targets",)}
# derived steps that need another derived file first (gross margins are over the requirements)
DERIVED_NEEDS = {"gross": ("requirements",), "detection": ("layout",)}

LATENCY_PERCENTILE, LATENCY_MARGIN = 100.0, 10.0
THROUGHPUT_MARGIN = 4.0
TOPOLOGY_PERCENTILE, TOPOLOGY_MARGIN = 99.0, 1.0
TOPOLOGIES = ("light", "heavy")


@dataclass(frozen=True)
class Counts:
    latency_runs: int
    latency_samples: int
    aa_runs: int
    throughput_runs: int
    topology_runs: int
    topology_time_s: float
    layout_pairs: int = 0  # A/Bs of two layout variants each (layouts 1 v 2, 3 v 4, ...)


FULL = Counts(latency_runs=20, latency_samples=200, aa_runs=4, throughput_runs=3, topology_runs=5,
              topology_time_s=60.0, layout_pairs=4)
QUICK = Counts(latency_runs=3, latency_samples=200, aa_runs=1, throughput_runs=2, topology_runs=2,
               topology_time_s=10.0, layout_pairs=1)


@dataclass(frozen=True)
class Plan:
    platform: str
    quick: bool
    fastdds_spec: str  # "system", a colcon install prefix or a `perfgate build` workspace (perfgate ab's SPEC)
    prefix: str | None
    workspace: str | None
    subexperiments: tuple[str, ...]
    measured: tuple[str, ...]  # MEASURED_STEPS this calibration needs, in their order
    derived: tuple[str, ...]  # DERIVED_STEPS it writes, in their order
    counts: Counts
    layout_variants: tuple[str, ...] = ()  # the build's layout variants (install folders), layout_ab's arms

    def arguments(self) -> dict:
        """What must be the same for a later call to go on with this one's measurements."""
        return {"platform": self.platform, "quick": self.quick, "fastdds": self.fastdds_spec,
                "subexperiments": list(self.subexperiments), "steps": list(self.derived),
                "layout_pairs": self.counts.layout_pairs}


def derived_steps(steps: list[str] | None) -> tuple[str, ...]:
    """The derived steps --steps asks for (all without it), with the derived files they need first."""
    asked = set(DERIVED_STEPS) if not steps else {d for step in steps for d in ASKED[step]}
    for step in list(asked):
        asked |= set(DERIVED_NEEDS.get(step, ()))
    return tuple(step for step in DERIVED_STEPS if step in asked)


def make_plan(*, platform: str, quick: bool, fastdds: str | None, workspace: str | None,
              subexperiments: list[str] | None, steps: list[str] | None,
              layout_variants: tuple[str, ...] = ()) -> Plan:
    """layout_variants: the known-good build's layout variants (perfgate build --layouts), in seed order; with
    two or more, the layout thresholds come from A/Bs of them against each other (what layout moves here),
    else from the A/As."""
    if fastdds is not None and workspace is not None:
        raise InputError("--fastdds and --workspace both name the build to calibrate with: give one")
    unknown = [step for step in steps or [] if step not in STEP_CHOICES]
    if unknown:
        raise InputError(f"unknown step {unknown[0]!r} in --steps (one of {', '.join(STEP_CHOICES)})")
    subs = tuple(subexperiments) if subexperiments else tuple(s.DEFAULT_SUBEXPERIMENT_NAMES)
    wrong = [sub for sub in subs if sub not in s.DEFAULT_SUBEXPERIMENT_NAMES]
    if wrong:
        raise InputError(f"--subexperiments: {wrong[0]!r} is not one of the ten sub-experiments a gate checks")
    derived = derived_steps(steps)
    counts = QUICK if quick else FULL
    counts = dataclasses.replace(counts, layout_pairs=min(counts.layout_pairs, len(layout_variants) // 2))
    measured = tuple(step for step in MEASURED_STEPS if any(step in DERIVED_STEPS[d] for d in derived)
                     and (step != "layout_ab" or counts.layout_pairs))
    spec = workspace if workspace is not None else fastdds if fastdds is not None else "system"
    return Plan(platform=platform, quick=quick, fastdds_spec=spec, prefix=fastdds, workspace=workspace,
                subexperiments=subs, measured=measured, derived=derived, counts=counts,
                layout_variants=tuple(layout_variants) if counts.layout_pairs else ())


def unit_names(step: str, counts: Counts) -> list[str]:
    """The folders a measured step makes under .calibration/<step>/, one per run."""
    if step == "latency":
        return [f"run-{i:02d}" for i in range(1, counts.latency_runs + 1)]
    if step == "aa":
        return [f"aa-{i:02d}" for i in range(1, counts.aa_runs + 1)]
    if step == "layout_ab":
        return [f"pair-{i:02d}" for i in range(1, counts.layout_pairs + 1)]
    if step == "throughput":
        return [f"run-{i:02d}" for i in range(1, counts.throughput_runs + 1)]
    # topology: the runs alternate between the topologies, as vm-2core-x64's were measured
    return [f"{name}/run-{i:02d}" for i in range(1, counts.topology_runs + 1) for name in TOPOLOGIES]


def output_files(platform: str, step: str) -> list[str]:
    """The files of DIR a derived step writes (its provenance beside it); the step is done when all exist."""
    return {"requirements": [f"{platform}.csv", f"{platform}_provenance.json"],
            "resources": [f"{platform}_resources.json", f"{platform}_resources_provenance.json"],
            "gross": [f"{platform}_gross.json"],
            "layout": [f"{platform}_layout.json"],
            "throughput_requirements": [f"{platform}_throughput.csv", f"{platform}_throughput_provenance.json"],
            "topology_targets": [f"{platform}_topology_{n}{suffix}.json" for n in TOPOLOGIES
                                 for suffix in ("", "_provenance")],
            "detection": [f"{platform}_calibration.json", f"{platform}_calibration.md"]}[step]
