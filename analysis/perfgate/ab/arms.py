"""ab.arms: the two builds an A/B compares, as given on the command line and ready to run.

An arm is `system` (the system's Fast DDS), a colcon install prefix, or a `perfgate build`
workspace or an install it kept; the harness is built once per arm against that Fast DDS. With
`--layouts N` an arm is the first N layouts its kept install has (fastdds/layouts.py), and round r
runs layout r mod N in both arms.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import schema as s
from ..errors import InputError
from ..fastdds import build, colcon, harness as native_harness, kept
from ..fastdds.harness import HarnessPaths
from ..fastdds.layouts import layout_folders
from ..latency import run
from ..model import FastDDS


@dataclass(frozen=True)
class ArmSpec:
    name: str  # baseline | candidate
    spec: str  # as given: system, a prefix, a workspace
    fastdds_prefix: Path | None
    harness: Path | None  # a workspace's own harness; None: built from native/ for the prefix
    build_record: dict | None = None
    layouts: tuple["ArmSpec", ...] = ()  # --layouts: the install's layouts, in the order the rounds take them

    @property
    def align_functions(self) -> int | None:
        """A `perfgate build` arm's --align-functions (its layouts share it); None for the system's or a prefix."""
        record = self.layouts[0].build_record if self.layouts else self.build_record
        return None if record is None else colcon.function_alignment(record.get("cmake_args"))


@dataclass(frozen=True)
class Arm:
    spec: ArmSpec
    paths: HarnessPaths
    version: str
    fastdds: FastDDS  # the `fastdds` part of metadata.json, as `perfgate run` writes it for this Fast DDS
    echo_delay_ns: dict[str, int] = field(default_factory=dict)
    layouts: tuple["Arm", ...] = ()

    @property
    def name(self) -> str:
        return self.spec.name

    def in_round(self, round_index: int) -> "Arm":
        """What this arm runs in a round: its own build, or with layouts the round's layout."""
        return self.layouts[round_index % len(self.layouts)] if self.layouts else self


def common_alignment(specs) -> tuple[int | None, str | None]:
    """The arms' one --align-functions (None when an arm's is not known or they differ), and a line for
    stderr when two `perfgate build` arms differ: the A/B then measures the flag's own layout move too."""
    alignments = {spec.align_functions for spec in specs}
    if len(alignments) == 1:
        return next(iter(alignments)), None
    if None in alignments:
        return None, None
    return None, (f"the arms were built with --align-functions {' and '.join(map(str, sorted(alignments)))}: the A/B "
                  "measures that alignment's own layout move too")


def recorded_alignments(arms) -> dict[str, int]:
    """Each arm's --align-functions as its metadata's build record says (0: the compiler's own, or no
    `perfgate build` record): what the A/B's reports and verdict.json say of its arms."""
    return {name: colcon.function_alignment(((arm.fastdds.build if arm.fastdds is not None else None) or {})
                                            .get("cmake_args")) for name, arm in (arms or {}).items()}


def fastdds_entry(spec: ArmSpec, version: str) -> FastDDS:
    if spec.build_record is not None:
        return build.fastdds_metadata(spec.build_record)
    prefix = spec.fastdds_prefix
    return FastDDS.record(version=version, commit=run.fastdds_commit(prefix),
                          source=s.FASTDDS_SOURCE_SYSTEM if prefix is None else s.FASTDDS_SOURCE_COLCON,
                          prefix=str(prefix) if prefix is not None else "/usr")


def parse_arm(name: str, spec: str, layouts: int = 0) -> ArmSpec:
    """`system`, a `perfgate build` workspace or an install it kept (WS/installs/<commit> or a name
    linked to one: either has perfgate-build.json, whose harness is used as it is), or a colcon install
    prefix. With `layouts`, a kept install with at least that many layouts (or a workspace whose commit's
    kept install has them)."""
    text = str(spec).strip()
    if text == s.FASTDDS_SYSTEM_SPEC:
        if layouts:
            raise InputError(f"--{name}: --layouts {layouts} needs an install `perfgate build --layouts {layouts}` "
                             "kept, not the system's Fast DDS")
        return ArmSpec(name, text, None, None)
    path = Path(text)
    if not path.is_dir():
        raise InputError(f"--{name}: not 'system' and not a folder (a colcon install prefix or a "
                         f"`perfgate build` workspace)", path)
    if layouts:
        folders = layout_folders(kept.install_of(path), layouts, f"--{name}")
        return ArmSpec(name, text, None, None, None, tuple(parse_arm(name, str(folder)) for folder in folders))
    if (path / s.BUILD_RECORD_FILE).is_file():
        record = build.read_record(path)
        harness, prefix = build.harness_paths(record, path)
        return ArmSpec(name, text, prefix.resolve(), harness.resolve(), record)
    if not any((path / sub).is_dir() for sub in ("lib", "lib64", "share")):
        raise InputError(f"--{name}: neither a `perfgate build` workspace ({s.BUILD_RECORD_FILE}) nor an install "
                         f"prefix (lib/, share/)", path)
    return ArmSpec(name, text, path.resolve(), None)


def prepare_arm(spec: ArmSpec, delays: dict[str, int]) -> Arm:
    """The arm ready to run: its harness (built for a prefix) and its Fast DDS version; with layouts,
    each layout's, the first standing for the arm in the A/B's own metadata."""
    if spec.layouts:
        layouts = tuple(prepare_arm(layout, delays) for layout in spec.layouts)
        first = layouts[0]
        return Arm(spec, first.paths, first.version, first.fastdds, delays, layouts)
    paths = (HarnessPaths(spec.harness, spec.harness.parent / native_harness.FLOOR_EXECUTABLE, spec.harness.parent)
             if spec.harness is not None else native_harness.ensure_harness(fastdds_prefix=spec.fastdds_prefix))
    version = native_harness.fastdds_version(paths)
    return Arm(spec, paths, version, fastdds_entry(spec, version), delays)
