"""ab.layout_file: the layout thresholds' file, requirements/<platform>_layout.json, read back.

`perfgate ab`, `perfgate verdict`, the gate and bisect read it (ab.layout_derivation writes it;
docs/formats.md "Layout thresholds"): every value checked, since it is a file from the repository that
a pull request may change, and every value it prints escaped. It also says when an A/B measures
otherwise than its A/Bs did: another idle policy, number of layouts, function alignment or machine.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import files
from .. import schema as s
from ..errors import InputError
from ..escape.workflow import log_text
from ..measure import cpu_latency
from . import layout

LAYOUT_SUFFIX = "_layout.json"
PLATFORM_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")
# The largest layout file read: parsed, a file takes about 5 times its size in memory. The platform's file
# holds 18 A/Bs' rounds in 0.36 MiB; 16 MiB is room for some 800.
MAX_BYTES = 16 << 20


def layout_json(requirements_dir: Path, platform: str) -> Path:
    """requirements/<platform>_layout.json: the platform's layout thresholds."""
    return Path(requirements_dir) / f"{platform}{LAYOUT_SUFFIX}"


# --- reading (perfgate ab, verdict, gate, bisect) ----------------------------------------------------------
@dataclass(frozen=True)
class LayoutThresholds:
    """A layout thresholds file as read once, every value a reader uses checked: a command plans,
    curtails and decides at what it read, even if the file changes while it measures."""
    path: str
    thresholds: dict[str, float]  # sub-experiment -> fraction
    cpu_latency: str  # the idle policy its A/Bs measured under
    layouts: object  # its A/Bs' --layouts and --align-functions, as the file says: compared, printed escaped
    align_functions: object
    machines: dict[str, str | None]  # platform id of its A/Bs -> their CPU model
    # its A/Bs' rounds, per sub-experiment each A/B's centred (layout.round_noise), to plan rounds by; and the
    # samples per round they all measured (None: not one number, and then the noise is not used)
    noise: dict[str, list] = field(default_factory=dict, compare=False)
    noise_samples: int | None = None

    def noise_for(self, samples: int) -> dict[str, list] | None:
        """The rounds' noise for an A/B of `samples` per round; None when the file's A/Bs measured another
        number (a round of fewer samples is noisier than theirs)."""
        return self.noise if self.noise and self.noise_samples == samples else None


def load(path: str | Path) -> LayoutThresholds:
    """The layout file at `path`, checked; InputError naming the file."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such layout thresholds file", path)
    data = files.read_json_object(path, "a layout thresholds file", MAX_BYTES) or {}
    try:
        thresholds = layout.parse_thresholds(data)
    except ValueError as error:
        raise InputError(str(error), path) from None
    mode = data.get("cpu_latency", cpu_latency.LATENCY_SYSTEM)  # a file from before it: the system's policy
    if mode not in cpu_latency.CHOICES:
        raise InputError(f"'cpu_latency' is not one of {', '.join(cpu_latency.CHOICES)}", path)
    try:
        noise, noise_samples = _noise(data)
    except ValueError as error:
        raise InputError(str(error), path) from None
    return LayoutThresholds(str(path), thresholds, mode, data.get("layouts", 0), data.get("align_functions", 0),
                            _machines(data), noise, noise_samples)


def _records(data: dict) -> list:
    provenance = data.get("provenance")
    records = provenance.get("ab_directories") if isinstance(provenance, dict) else None
    return records if isinstance(records, list) else []


def _noise(data: dict) -> tuple[dict[str, list], int | None]:
    """The rounds' noise of the file's A/Bs that kept their rounds' d, and the samples per round they all
    measured; ValueError for a malformed list of moves."""
    moves, samples = [], set()
    for index, record in enumerate(_records(data)):
        if isinstance(record, dict) and "moves" in record:
            moves.append(layout.parse_moves(record["moves"], f"A/B {index + 1} of its provenance"))
            value = record.get("samples")
            samples.add(value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None)
    return layout.round_noise(moves), (samples.pop() if len(samples) == 1 else None)


def _machines(data: dict) -> dict[str, str | None]:
    machines = {}
    for record in _records(data):
        platform = record.get("platform") if isinstance(record, dict) else None
        if isinstance(platform, dict) and isinstance(platform.get("id"), str):
            machines[platform["id"]] = platform.get("cpu_model") if isinstance(platform.get("cpu_model"), str) else None
    return machines


def read_layout(path: str | Path) -> dict[str, float]:
    """The thresholds of a layout file (sub-experiment -> fraction); InputError naming the file."""
    return load(path).thresholds


def mode_warning(file: LayoutThresholds | None, requested: str, layouts: int = 0,
                 align_functions: int | None = None) -> str | None:
    """A line for stderr when an A/B measures under another idle policy, over another number of code
    layouts, or builds of another function alignment (None: not known, not compared) than its layout
    thresholds' A/Bs did (a file without `layouts` or `align_functions` was derived from single builds of
    the compiler's own alignment). A layout move is a share of a round trip, so it is another size when
    wake-ups are in the round trip, or code lands otherwise."""
    if file is None:
        return None
    if file.cpu_latency != requested:
        return (f"the layout thresholds in {log_text(file.path)} were measured with --cpu-latency {file.cpu_latency}, "
                f"this A/B measures with {requested}: layout moves may be another size")
    if file.layouts != layouts:
        return (f"the layout thresholds in {log_text(file.path)} were measured with --layouts "
                f"{log_text(str(file.layouts))}, this A/B measures with --layouts {layouts}: layout moves may be "
                "another size")
    if align_functions is not None and file.align_functions != align_functions:
        return (f"the layout thresholds in {log_text(file.path)} were measured on builds with --align-functions "
                f"{log_text(str(file.align_functions))}, this A/B's builds have --align-functions {align_functions}: "
                "layout moves may be another size")
    return None


def platform_warning(file: LayoutThresholds | None, this_platform_id: str | None) -> str | None:
    """A line for stderr when the file's layout A/Bs were measured on other machines (platform ids) than
    this one: how far layout moves a round trip is a property of the CPU (a platform name can cover VMs
    on AMD and on Intel hosts). The thresholds are still applied, as requirements of another platform id
    are (gate.plan.requirements_platform_warning). The ids and CPU models come from the file: escaped."""
    if file is None or not this_platform_id or not file.machines or this_platform_id in file.machines:
        return None
    measured_on = ", ".join(f"{log_text(i)} ({log_text(model)})" if model else log_text(i)
                            for i, model in file.machines.items())
    return (f"the layout thresholds in {log_text(file.path)} were measured on platform id {measured_on}, this "
            f"machine is {log_text(this_platform_id)}: layout moves may be another size here")


def resolve(given: str | Path | None, environment: dict | None = None,
            requirements_dir: Path = Path(s.REQUIREMENTS_DIR)) -> LayoutThresholds | None:
    """The layout file for a verdict, read: --layout-thresholds FILE, else the platform's
    requirements/<$PERFGATE_PLATFORM>_layout.json when it exists, else None."""
    if given is not None:
        return load(given)
    platform = (os.environ if environment is None else environment).get(s.PLATFORM_ENV)
    if not platform or not PLATFORM_NAME.fullmatch(platform):
        return None
    path = layout_json(requirements_dir, platform)
    return load(path) if path.exists() else None


def resolve_layout(given: str | Path | None, environment: dict | None = None,
                   requirements_dir: Path = Path(s.REQUIREMENTS_DIR)) -> tuple[dict[str, float], str | None]:
    """(thresholds, their file) of `resolve`; ({}, None) without a file."""
    file = resolve(given, environment, requirements_dir)
    return (file.thresholds, file.path) if file is not None else ({}, None)
