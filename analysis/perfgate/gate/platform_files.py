"""gate.platform_files: on which machines a platform's files in requirements/ were derived.

Every threshold the gate uses is a property of one machine: requirements/<platform>.csv, _gross.json,
_layout.json, _throughput.csv, _resources.json and _topology_<name>.json. Each records the fingerprints
(platform id and CPU model, measure.platform_info) of the machines its derivation measured on, in its
provenance (docs/formats.md "Which machines a platform's files were derived on"); `derived_on` reads
them, per file, and `mismatch` says in one line which files a gate uses were derived on other machines.
`auto_platform` picks the platform whose files carry this machine's id (`perfgate gate --platform auto`).

The files come from the repository, which a pull request may change: every value read is checked for
its type and bounded here, and escaped by whoever prints it. Pure but for reading the files.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import files
from .. import schema as s
from ..errors import InputError

# the suffixes of a platform's files beside <platform>.csv, and the provenance each keeps its machines in
GROSS, LAYOUT, THROUGHPUT, RESOURCES = "_gross.json", "_layout.json", "_throughput.csv", "_resources.json"
TOPOLOGY = "_topology_"
MAX_VALUE = 100  # characters of an id or a CPU model kept from a file (a fingerprint's are under 60)
AUTO = "auto"  # --platform auto


@dataclass(frozen=True)
class DerivedOn:
    """One platform file and the machines its derivation measured on: platform id -> CPU model (None: not
    recorded); empty when its provenance records no machine (a file from before fingerprints, or by hand)."""
    path: Path
    machines: dict[str, str | None]


def _bounded(value) -> str | None:
    return value[:MAX_VALUE] if isinstance(value, str) and value else None


def fingerprints(record) -> dict[str, str | None]:
    """The machines a provenance record names: its `platform`, each of its `platforms`, each `platform` of
    its `sources` (gross margins) and of its `provenance.ab_directories` (layout thresholds)."""
    if not isinstance(record, dict):
        return {}
    found = [record.get("platform")]
    found += record.get("platforms") if isinstance(record.get("platforms"), list) else []
    nested = record.get("provenance")
    for entries in (record.get("sources"), nested.get("ab_directories") if isinstance(nested, dict) else None):
        found += [entry.get("platform") for entry in entries if isinstance(entry, dict)] \
            if isinstance(entries, list) else []
    machines: dict[str, str | None] = {}
    for platform in found:
        identity = _bounded(platform.get("id")) if isinstance(platform, dict) else None
        if identity is not None:
            machines.setdefault(identity, _bounded(platform.get("cpu_model")))
    return machines


def provenance_of(path: Path) -> Path:
    """Where a platform file keeps its machines: the JSON files their own `provenance` (gross margins,
    layout thresholds), the others `<stem>_provenance.json` beside them."""
    return path if path.name.endswith((GROSS, LAYOUT)) else s.requirements_provenance_json(path)


def file_machines(path: Path) -> dict[str, str | None]:
    """The machines one platform file was derived on (see DerivedOn); InputError for a malformed provenance."""
    provenance = provenance_of(Path(path))
    return fingerprints(files.read_json_object(provenance, "provenance")) if provenance.is_file() else {}


def platform_paths(requirements_dir: Path, platform: str) -> list[Path]:
    """The platform's files that exist in `requirements_dir`, the latency requirements first."""
    directory = Path(requirements_dir)
    named = [s.requirements_csv(directory, platform)] + [directory / f"{platform}{suffix}"
                                                         for suffix in (GROSS, LAYOUT, THROUGHPUT, RESOURCES)]
    topologies = sorted(p for p in directory.glob(f"{platform}{TOPOLOGY}*.json")
                        if not p.name.endswith("_provenance.json"))
    return [p for p in named + topologies if p.is_file()]


def derived_on(requirements_dir: Path, platform: str) -> list[DerivedOn]:
    """Which machines this platform's file set was derived on, per file (those that exist)."""
    return [DerivedOn(path, file_machines(path)) for path in platform_paths(requirements_dir, platform)]


def platforms_in(requirements_dir: Path) -> list[str]:
    """The platforms of a requirements folder: every `<platform>.csv` but a throughput requirements file."""
    directory = Path(requirements_dir)
    if not directory.is_dir():
        raise InputError("no such requirements folder", directory)
    return sorted(p.stem for p in directory.glob("*.csv") if not p.name.endswith(THROUGHPUT) and p.is_file())


def auto_platform(requirements_dir: Path, this_platform_id: str | None) -> str | None:
    """The platform of `requirements_dir` whose files carry this machine's id: the one whose every file
    that records its machines names this machine alone (a calibration of this machine) when there is
    one, else the one with any such file; None when none has; InputError when several tie (which one a
    gate judges by is not a guess)."""
    if not this_platform_id:
        return None
    carrying, complete = [], []
    for platform in platforms_in(requirements_dir):
        recorded = [d.machines for d in derived_on(requirements_dir, platform) if d.machines]
        if any(this_platform_id in machines for machines in recorded):
            carrying.append(platform)
            if all(set(machines) == {this_platform_id} for machines in recorded):
                complete.append(platform)
    chosen = complete or carrying
    if len(chosen) > 1:
        raise InputError(f"--platform auto: the files of {len(chosen)} platforms carry this machine's platform id "
                         f"{this_platform_id} ({', '.join(chosen)}); name one with --platform", requirements_dir)
    return chosen[0] if chosen else None


def machine_text(identity: str, cpu_model: str | None) -> str:
    return f"{identity} ({cpu_model})" if cpu_model else identity


def mismatch(used: list[DerivedOn], this_platform_id: str | None, this_cpu_model: str | None = None) -> str | None:
    """One line naming the files (of those a gate uses) derived on other machines than this one, and the
    machines; None when every file that records its machines names this one (or this id is unknown). A file
    that records none is not counted: nothing says where it was derived."""
    if not this_platform_id:
        return None
    other = [d for d in used if d.machines and this_platform_id not in d.machines]
    if not other:
        return None
    named = "; ".join(f"{d.path} on " + ", ".join(machine_text(i, m) for i, m in d.machines.items()) for d in other)
    return (f"thresholds derived on another machine: {named}; this machine is "
            f"{machine_text(this_platform_id, this_cpu_model)}")
