"""gate.plan: what `perfgate gate` will do, decided and validated before anything is measured.

Everything a maintainer could get wrong (platform, requirements, baseline, store, label, output
folder) is checked here, so a usage error costs seconds, not a run (perfgate.gate.run runs the plan).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pandas as pd

from ..latency import experiments
from .. import files, outputs
from ..store import check as store_check, experiments as results_store
from .. import schema as s
from ..ab.arms import parse_arm
from ..fastdds.layouts import check_layouts
from ..ab.layout_file import LayoutThresholds, layout_json, load as load_layout
from ..store.baseline import require_folder_name, require_platform_name
from ..errors import IncompleteError, InputError
from ..model import Metadata, read_metadata
from ..latency.requested import Requested
from ..latency.gross import GrossMargins, read_gross_margins
from ..latency.resources_requirements import read_resource_requirements
from ..throughput.files import read_throughput_requirements
from ..measure import options as run_options
from ..measure.options import RunOptions
from . import platform_files
from .request import GateRequest
from .topology_step import GateTopology, plan_topologies

QUICK_SAMPLES = 200
DEFAULT_PLATFORM = "local"
# What `--experiments` may name. Latency always runs (the A/B and the requirement checks are its);
# throughput is asked for: its quick run adds about a minute, its full one four to five; resources
# (sampled in every run anyway) are checked against requirements/<platform>_resources.json when asked.
EXPERIMENTS = ("latency", "throughput", "resources", "topology")
DEFAULT_EXPERIMENTS = ("latency",)


@dataclass(frozen=True)
class GatePlan:
    """What the gate will do, decided and validated before anything is measured."""

    output: Path
    platform: str
    requirements: Path
    samples: int
    payloads: list[int]
    subexperiments: list[str]
    label: str
    baseline: Path | None
    baseline_note: str
    store: Path | None
    pin_cpus: str | None = None  # as given to `perfgate run --pin-cpus`, validated
    baseline_build: str | None = None  # the A/B's baseline Fast DDS (perfgate ab --baseline), validated
    layouts: int = 0  # the A/Bs' (perfgate ab --layouts)
    cpu_latency_request: str | None = None  # as given to `perfgate run --cpu-latency`, validated
    warnings: tuple[str, ...] = ()  # printed and shown in the reports; never a failure
    experiments: tuple[str, ...] = DEFAULT_EXPERIMENTS
    throughput_requirements: Path | None = None  # requirements/<platform>_throughput.csv, when it exists
    resources_requirements: Path | None = None  # requirements/<platform>_resources.json, with "resources"
    # requirements/<platform>_layout.json as read, when it exists and an A/B runs
    layout_thresholds: LayoutThresholds | None = field(default=None, compare=False, repr=False)
    # the requirements as read (and validated) once, and run's options as validated once, for the steps
    requirement_table: pd.DataFrame | None = field(default=None, compare=False, repr=False)
    throughput_table: pd.DataFrame | None = field(default=None, compare=False, repr=False)
    run_options: RunOptions | None = None
    topologies: tuple[GateTopology, ...] = ()  # with "topology": each topology's run plan and target
    # with a baseline build: requirements/<platform>_gross.json beside the requirements (latency.gross),
    # None when there is none (then every miss fails, and a warning says so)
    gross_margins: GrossMargins | None = None
    # False when neither --platform nor $PERFGATE_PLATFORM named one (platform is then `local`): the
    # reports say "no platform named" rather than show `local` as if it were a reference platform
    platform_named: bool = True
    platform_note: str | None = None  # with --platform auto: which platform it picked, or that none fits
    # the platform files this gate uses that were derived on other machines, in one line (gate.platform_files)
    platform_mismatch: str | None = None

    @property
    def requested(self) -> Requested:
        """What the run is asked for, as its metadata.json will record it (perfgate.latency.requested)."""
        return Requested(frozenset(self.subexperiments), frozenset(self.payloads))

    @property
    def required(self) -> pd.DataFrame:
        """The requirements table (read here when the plan was made by hand, without one)."""
        return files.read_requirements(self.requirements) if self.requirement_table is None else self.requirement_table


# --- planning (all validation happens here) -------------------------------------------------------
def resolve_platform(platform: str | None, environment: dict) -> str:
    """--platform, else $PERFGATE_PLATFORM (set once on each reference machine), else `local`."""
    return require_platform_name(platform or environment.get(s.PLATFORM_ENV) or DEFAULT_PLATFORM)


def choose_platform(platform: str | None, environment: dict, requirements_dir: Path,
                    this_platform_id: str | None) -> tuple[str, bool, str | None]:
    """(platform, named, note): `resolve_platform`'s, or with `auto` the platform of requirements_dir whose
    files carry this machine's id (gate.platform_files.auto_platform), else `local` as if none was named."""
    if (platform or environment.get(s.PLATFORM_ENV)) != platform_files.AUTO:
        return resolve_platform(platform, environment), bool(platform or environment.get(s.PLATFORM_ENV)), None
    chosen = platform_files.auto_platform(requirements_dir, this_platform_id)
    if chosen is None:
        return DEFAULT_PLATFORM, False, (f"--platform auto: no platform in {requirements_dir} carries this machine's "
                                         f"platform id {this_platform_id}: the gate judges as platform "
                                         f"{DEFAULT_PLATFORM!r} ({s.requirements_csv(requirements_dir, DEFAULT_PLATFORM)})")
    return require_platform_name(chosen), True, (f"--platform auto: {chosen}, whose files in {requirements_dir} carry "
                                                 f"this machine's platform id {this_platform_id}")


def strict_platform(request: GateRequest, environment: dict) -> bool:
    """--strict-platform, or $PERFGATE_STRICT_PLATFORM=1 (a reference runner's setting)."""
    value = environment.get(s.STRICT_PLATFORM_ENV, "")
    if value not in ("", "0", "1"):
        raise InputError(f"${s.STRICT_PLATFORM_ENV} is {value!r}; expected 1 (strict) or 0")
    return request.strict_platform or value == "1"


def missing_requirements_message(platform: str, path: Path) -> str:
    return (f"no requirements for platform {platform!r}; derive them from several runs of a known-good Fast DDS on "
            f"this machine (`perfgate run --output runs/experiments/<n>` a few times, then `perfgate "
            f"determine-requirements --experiments-results runs --output-file {path}`; see docs/gate.md), "
            f"or name a file with --requirements")


def uncovered_requirements(requirements, subexperiments: list[str], payloads: list[int]) -> list[str]:
    """`sub at N B` for every requested sub-experiment and payload the requirements do not cover."""
    covered = set(zip(requirements[s.EXPERIMENT_TYPE], requirements[s.BYTES].astype(int)))
    return [f"{sub} at {payload} B" for sub in subexperiments for payload in payloads if (sub, payload) not in covered]


def _require_nonzero_requirements(requirements, path: Path) -> None:
    """check refuses a requirement of 0.000 us (no percentage over it): found here, before measuring."""
    for magnitude in s.CHECKED_MAGNITUDES:
        zero = files.thousandths(requirements[magnitude]) == 0
        if zero.any():
            row = requirements[zero].iloc[0]
            raise InputError(f"{magnitude} requirement of {row[s.EXPERIMENT_TYPE]} at {row[s.BYTES]} B is 0.000 us; "
                             "a percentage over it is undefined", path, int(row["line"]))


def resolve_experiments(experiments: list[str] | None) -> tuple[str, ...]:
    chosen = tuple(experiments) if experiments else DEFAULT_EXPERIMENTS
    unknown = [e for e in chosen if e not in EXPERIMENTS]
    if unknown:
        raise InputError(f"--experiments: unknown experiment {unknown[0]!r}; known: {', '.join(EXPERIMENTS)}")
    twice = sorted({e for e in chosen if chosen.count(e) > 1})
    if twice:  # like a sub-experiment named twice: most often a variable expanded twice in a script
        raise InputError(f"--experiments names {twice[0]!r} twice")
    if "latency" not in chosen:
        raise InputError("--experiments must include latency (the A/B verdict and the requirement checks are its)")
    return tuple(e for e in EXPERIMENTS if e in chosen)


def throughput_requirements(given: Path | None, platform: str,
                            requirements_dir: Path = Path(s.REQUIREMENTS_DIR)) -> tuple[Path | None, pd.DataFrame | None]:
    """--throughput-requirements, else the platform's requirements/<platform>_throughput.csv (wherever
    --requirements points: a copy of the latency file elsewhere does not hide the platform's), and its
    table, read here so that a bad file costs seconds; None when the platform has none (throughput is
    then measured, not checked). A file named on the command line must exist."""
    path = given if given is not None else requirements_dir / f"{platform}_throughput.csv"
    if given is None and not path.exists() and not path.is_symlink():  # a folder or a broken link: the reader refuses
        return None, None
    if not path.exists() and not path.is_symlink():
        raise InputError("throughput requirements file not found", path)
    return path, read_throughput_requirements(path)


def resources_requirements_path(platform: str, requirements_dir: Path = Path(s.REQUIREMENTS_DIR)) -> Path:
    """requirements/<platform>_resources.json (wherever --requirements points), read here so that a bad
    or missing file costs seconds."""
    path = s.resources_requirements_json(requirements_dir, platform)
    if not path.is_file():
        raise InputError(f"--experiments resources: no resource requirements for platform {platform!r} "
                         "(docs/formats.md section 16 says how to write them)", path)
    read_resource_requirements(path)
    return path


def gross_margins(requirements_path: Path) -> tuple[GrossMargins | None, str | None]:
    """With a baseline build the checks fail only on a gross miss: the margins beside the requirements
    (read here, so that a bad file costs seconds), or None and a warning when there are none."""
    path = s.gross_margins_json(requirements_path)
    if not path.exists() and not path.is_symlink():
        return None, (f"no gross margins ({path}): with the baseline build every miss of a requirement fails the "
                      "gate; derive them with `perfgate determine-gross-margins` (docs/verdict.md)")
    return read_gross_margins(path), None


def default_label(output: Path, now: datetime) -> str:
    return f"{output.name}-{now.strftime('%Y%m%dT%H%M%SZ')}"


def _resolve_baseline(baseline: str | None, platform: str, this_platform_id: str | None) -> tuple[Path | None, str]:
    path = Path(baseline) if baseline else Path(s.BASELINES_DIR) / platform
    if not path.is_dir():
        if baseline:
            raise InputError("baseline folder not found", path)
        return None, (f"no baseline for platform {platform!r} ({path}); store one with "
                      f"`perfgate promote-baseline --experiment DIR --platform {platform}`")
    metadata = read_metadata(path) or Metadata()
    if not files.summary_files(path, required=False):
        raise InputError(f"baseline has no summaries ({s.summary_csv_name('<sub>')})", path)
    definition = metadata.latency_definition or s.ROUND_TRIP
    if definition != s.ROUND_TRIP:  # the gate's harness measures the round trip
        raise InputError(f"baseline records latency definition {definition!r}, the gate measures {s.ROUND_TRIP!r}; "
                         f"such data is never compared", path)
    baseline_id = metadata.platform_id
    if this_platform_id and baseline_id and baseline_id != this_platform_id and not baseline:
        # the platform's stored baseline, on another machine of that name (a newcomer's laptop):
        # not compared, and said so, rather than refusing the whole gate
        return None, (f"baseline {path} was measured on platform id {baseline_id}, this machine is "
                      f"{this_platform_id}: not compared")
    if this_platform_id and baseline_id and baseline_id != this_platform_id:
        raise InputError(f"baseline was measured on platform id {baseline_id}, this machine is {this_platform_id}; "
                         f"such data is never compared (promote a baseline measured here)", path)
    label = metadata.label if metadata.label is not None else path.name
    return path, f"compared with {path} ({label})"


def _validate_store(store: Path, label: str, this_platform_id: str | None) -> list[str]:
    """The store's damaged experiments, as warnings: history skips them, and so does the gate."""
    outputs.require_writable(store, "results store", folder=True)  # a file or /proc: refused before measuring
    experiments_dir = store / s.STORE_EXPERIMENTS_DIR
    displaced = results_store.label_taken(store, label)  # one added here: refused; a pulled one: set aside
    damaged: list[store_check.Damage] = []
    if experiments_dir.is_dir() and any(not p.name.startswith(".") for p in experiments_dir.iterdir()):
        stored, damaged = store_check.undamaged_experiments(store)
        experiments.require_comparable(stored)
        other = next((e for e in stored if e.platform_id and this_platform_id and e.platform_id != this_platform_id),
                     None)
        if other is not None:
            raise InputError(f"the results store holds platform id {other.platform_id} ({other.path}), this machine is "
                             f"{this_platform_id}; histories of different platforms are never mixed", store)
    return [f"the results store's {d.line()} (perfgate store check lists them)" for d in damaged] \
        + ([displaced] if displaced else [])


def resolve_store(store: str | None, history: bool | None, environment: dict) -> Path | None:
    """The results store to add the run to: none with --no-history, else --store, else $PERFGATE_STORE
    (set once on a runner); --history insists on one."""
    if history is False:
        return None
    chosen = store if store is not None else environment.get(s.STORE_ENV) or None
    if store is not None and not store.strip():
        raise InputError("--store is empty; give a path, or --no-history")
    if chosen is None and history:
        raise InputError(f"--history: no results store; give --store or set ${s.STORE_ENV}")
    return Path(chosen) if chosen is not None else None


def requirements_platform_warning(requirements: Path, provenance: dict | None, this_platform_id: str | None) -> str | None:
    """Requirements derived on another platform id may not fit this machine: say so (the limits are
    still applied: a developer's laptop checks against the reference machine's on purpose)."""
    platform = (provenance or {}).get("platform")
    derived_on = platform.get("id") if isinstance(platform, dict) else None
    if not derived_on or not this_platform_id or derived_on == this_platform_id:
        return None
    return (f"{requirements} was derived on platform id {derived_on}, this machine is {this_platform_id}: "
            "its limits may not fit this machine")


def platform_layout_thresholds(platform: str, requirements_dir: Path = Path(s.REQUIREMENTS_DIR)
                               ) -> LayoutThresholds | None:
    """requirements/<platform>_layout.json when the platform has one (ab.layout_file), read here once, so
    that a bad file costs seconds and the A/B decides at what was read; the A/B tests each sub-experiment
    at max(its threshold there, the global one)."""
    path = layout_json(requirements_dir, platform)
    return load_layout(path) if path.exists() else None


def plan_gate(request: GateRequest, *, environment: dict, this_platform_id: str | None, now: datetime,
              harness: Path | None = None, prefix: str | Path | None = None,
              this_cpu_model: str | None = None) -> GatePlan:
    """The plan for `request`, measuring the Fast DDS installed at `prefix` (None: the system's) with
    `harness`; $PERFGATE_PIN_CPUS from `environment` when --pin-cpus was left out."""
    output, quick, samples, payloads = request.output, request.quick, request.samples, request.payloads
    subexperiments, platform, requirements = request.subexperiments, request.platform, request.requirements
    baseline, store, label, history = request.baseline, request.store, request.label, request.history
    baseline_build, cpu_latency_request, experiments = request.baseline_build, request.cpu_latency_request, request.experiments
    throughput_requirements_file = request.throughput_requirements
    pin_cpus = request.pin_cpus or environment.get(s.PIN_CPUS_ENV) or None
    requirements_dir = Path(request.requirements_directory or s.REQUIREMENTS_DIR)
    if request.requirements_directory is not None and not requirements_dir.is_dir():
        raise InputError("--requirements-directory: no such folder", requirements_dir)
    strict = strict_platform(request, environment)
    platform_name, named, platform_note = choose_platform(platform, environment, requirements_dir, this_platform_id)
    chosen_experiments = resolve_experiments(experiments)
    requirements_path = (Path(requirements) if requirements
                         else s.requirements_csv(requirements_dir, platform_name))
    if not requirements and not requirements_path.exists():
        raise InputError(missing_requirements_message(platform_name, requirements_path), requirements_path)
    requirement_table = files.read_requirements(requirements_path)
    used = [requirements_path]  # the platform files this gate judges by, whose machines are compared with this one
    output_path = Path(output)
    chosen_label = label or default_label(output_path, now)
    require_folder_name(chosen_label, "label")  # it names the experiment's folder in the store
    # run's own validation (output folder, sub-experiment names, samples, prefix), before measuring
    options = run_options.resolve_options(output=output_path,
                                          samples=samples or (QUICK_SAMPLES if quick else s.DEFAULT_SAMPLES),
                                          payloads=payloads, subexperiments=subexperiments, label=chosen_label,
                                          warmup=None, harness=harness, fastdds_prefix=prefix, pin_cpus=pin_cpus,
                                          timeout=None, cpu_latency_request=cpu_latency_request)
    gated = [sub.name for sub in options.subexperiments if not sub.is_floor]
    if not gated:  # a floor is measured for reference, never checked: a gate of floors alone checks nothing
        raise InputError("--subexperiments names only the machine's floor, which is never checked; add a "
                         "sub-experiment the requirements list")
    uncovered = uncovered_requirements(requirement_table, gated, list(options.payloads))
    if uncovered:
        shown = ", ".join(uncovered[:5]) + (f" and {len(uncovered) - 5} more" if len(uncovered) > 5 else "")
        raise InputError(f"the requirements do not cover {shown}", requirements_path)
    _require_nonzero_requirements(requirement_table, requirements_path)
    layouts = check_layouts(request.layouts)
    if layouts and baseline_build is None:
        raise InputError("--layouts is for the A/B of a gate with --baseline-build")
    if baseline_build is not None:  # the A/B decides; a stored baseline would be a second, weaker verdict
        if baseline is not None:
            raise InputError("--baseline-build and --baseline are two ways to compare: give one")
        parse_arm(s.AB_ARMS[0], baseline_build, layouts)
        baseline_path, baseline_note = None, f"decided by an A/B against the baseline build {baseline_build}"
        margins, margins_warning = gross_margins(requirements_path)
        used += [s.gross_margins_json(requirements_path)] if margins is not None else []
    else:
        baseline_path, baseline_note = _resolve_baseline(baseline, platform_name, this_platform_id)
        margins, margins_warning = None, None
    if throughput_requirements_file is not None and "throughput" not in chosen_experiments:
        raise InputError("--throughput-requirements is for a gate that measures throughput "
                         "(--experiments latency,throughput)")
    throughput_path, throughput_table = (throughput_requirements(
        Path(throughput_requirements_file) if throughput_requirements_file is not None else None, platform_name,
        requirements_dir) if "throughput" in chosen_experiments else (None, None))
    topologies = plan_topologies(request.topologies, request.topology_time, experiments=chosen_experiments,
                                 quick=quick, platform=platform_name, output=output_path, label=chosen_label,
                                 requirements_dir=requirements_dir, ipc=request.topology_ipc,
                                 transport=request.topology_transport)
    resources_path = (resources_requirements_path(platform_name, requirements_dir)
                      if "resources" in chosen_experiments else None)
    layout_thresholds = (platform_layout_thresholds(platform_name, requirements_dir) if baseline_build is not None
                         else None)
    used += [p for p in (throughput_path, resources_path) if p is not None]
    used += [Path(layout_thresholds.path)] if layout_thresholds is not None else []
    used += [Path(t.target.path) for t in topologies if t.target is not None]
    mismatch = platform_files.mismatch([platform_files.DerivedOn(p, platform_files.file_machines(p)) for p in used],
                                       this_platform_id, this_cpu_model)
    if strict and mismatch:  # before measuring: a strict runner never spends a measurement on another's thresholds
        raise IncompleteError(f"--strict-platform: {mismatch}; never a pass (derive this machine's files, "
                              "docs/gate.md)")
    store_path = resolve_store(store, history, environment)
    store_warnings = _validate_store(store_path, chosen_label, this_platform_id) if store_path is not None else []
    return GatePlan(
        output=output_path,
        platform=platform_name,
        platform_named=named,
        platform_note=platform_note,
        platform_mismatch=mismatch,
        requirements=requirements_path,
        samples=options.samples,
        payloads=list(options.payloads),
        subexperiments=[sub.name for sub in options.subexperiments],
        label=chosen_label,
        baseline=baseline_path,
        baseline_note=baseline_note,
        store=store_path,
        pin_cpus=pin_cpus,
        baseline_build=baseline_build,
        layouts=layouts,
        cpu_latency_request=cpu_latency_request,
        experiments=chosen_experiments,
        throughput_requirements=throughput_path,
        throughput_table=throughput_table,
        resources_requirements=resources_path,
        layout_thresholds=layout_thresholds,
        requirement_table=requirement_table,
        run_options=options,
        topologies=topologies,
        gross_margins=margins,
        warnings=tuple(w for w in [margins_warning, requirements_platform_warning(
            requirements_path, files.read_json_object(s.requirements_provenance_json(requirements_path),
                                                      "requirements provenance"), this_platform_id)] if w)
        + tuple(store_warnings),
    )
