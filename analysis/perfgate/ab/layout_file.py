"""ab.layout_file: the layout thresholds' file, requirements/<platform>_layout.json, read back.

`perfgate ab`, `perfgate verdict`, the gate and bisect read it (ab.layout_derivation writes it;
docs/formats.md "Layout thresholds"): every value checked, since it is a file from the repository that
a pull request may change, and every value it prints escaped. It also says when an A/B measures
otherwise than its A/Bs did: another idle policy, number of layouts, function alignment or machine.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from .. import files
from .. import schema as s
from ..errors import InputError
from ..escape.workflow import log_text
from ..measure import cpu_latency
from . import layout

LAYOUT_SUFFIX = "_layout.json"
PLATFORM_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")


def layout_json(requirements_dir: Path, platform: str) -> Path:
    """requirements/<platform>_layout.json: the platform's layout thresholds."""
    return Path(requirements_dir) / f"{platform}{LAYOUT_SUFFIX}"


# --- reading (perfgate ab, verdict, gate) ----------------------------------------------------------------
def read_layout(path: Path) -> dict[str, float]:
    """The thresholds of a layout file (sub-experiment -> fraction); InputError naming the file."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such layout thresholds file", path)
    data = files.read_json_object(path, "a layout thresholds file")
    try:
        return layout.parse_thresholds(data)
    except ValueError as error:
        raise InputError(str(error), path) from None


def layout_cpu_latency(path: Path) -> str:
    """The idle policy the file's layout A/Bs measured under (its `cpu_latency`): a layout move is a share
    of a round trip, so it is another size when wake-ups are in the round trip. A file without the entry
    was derived before it existed, from A/Bs under the system's policy."""
    return _cpu_latency_in(files.read_json_object(Path(path), "a layout thresholds file") or {}, path)


def _cpu_latency_in(data: dict, path: Path) -> str:
    mode = data.get("cpu_latency", cpu_latency.LATENCY_SYSTEM)
    if mode not in cpu_latency.CHOICES:
        raise InputError(f"'cpu_latency' is not one of {', '.join(cpu_latency.CHOICES)}", path)
    return mode


def mode_warning(path: str | Path | None, requested: str, layouts: int = 0,
                 align_functions: int | None = None) -> str | None:
    """A line for stderr when an A/B measures under another idle policy, over another number of code
    layouts, or builds of another function alignment (None: not known, not compared) than its layout
    thresholds' A/Bs did (a file without `layouts` or `align_functions` was derived from single builds of
    the compiler's own alignment)."""
    if path is None:
        return None
    data = files.read_json_object(Path(path), "a layout thresholds file") or {}
    measured = _cpu_latency_in(data, Path(path))
    if measured != requested:
        return (f"the layout thresholds in {log_text(path)} were measured with --cpu-latency {measured}, this A/B "
                f"measures with {requested}: layout moves may be another size")
    derived = data.get("layouts", 0)
    if derived != layouts:
        return (f"the layout thresholds in {log_text(path)} were measured with --layouts {log_text(str(derived))}, this "
                f"A/B measures with --layouts {layouts}: layout moves may be another size")
    derived = data.get("align_functions", 0)
    if align_functions is not None and derived != align_functions:
        return (f"the layout thresholds in {log_text(path)} were measured on builds with --align-functions "
                f"{log_text(str(derived))}, this A/B's builds have --align-functions {align_functions}: layout moves "
                f"may be another size")
    return None


def platform_warning(path: str | Path | None, this_platform_id: str | None) -> str | None:
    """A line for stderr when the file's layout A/Bs were measured on other machines (platform ids) than
    this one: how far layout moves a round trip is a property of the CPU (a platform name can cover VMs
    on AMD and on Intel hosts). The thresholds are still applied, as requirements of another platform id
    are (gate.plan.requirements_platform_warning). The ids and CPU models come from the file: escaped."""
    if path is None or not this_platform_id:
        return None
    data = files.read_json_object(Path(path), "a layout thresholds file") or {}
    records = (data.get("provenance") or {}).get("ab_directories") if isinstance(data.get("provenance"), dict) else None
    machines = {}
    for record in records if isinstance(records, list) else []:
        platform = record.get("platform") if isinstance(record, dict) else None
        if isinstance(platform, dict) and isinstance(platform.get("id"), str):
            machines[platform["id"]] = platform.get("cpu_model") if isinstance(platform.get("cpu_model"), str) else None
    if not machines or this_platform_id in machines:
        return None
    measured_on = ", ".join(f"{log_text(i)} ({log_text(model)})" if model else log_text(i) for i, model in machines.items())
    return (f"the layout thresholds in {log_text(path)} were measured on platform id {measured_on}, this machine is "
            f"{log_text(this_platform_id)}: layout moves may be another size here")


def resolve_layout(given: str | Path | None, environment: dict | None = None,
                   requirements_dir: Path = Path(s.REQUIREMENTS_DIR)) -> tuple[dict[str, float], str | None]:
    """(thresholds, their file) for a verdict: --layout-thresholds FILE, else the platform's
    requirements/<$PERFGATE_PLATFORM>_layout.json when it exists, else none ({}, None)."""
    if given is not None:
        return read_layout(Path(given)), str(given)
    platform = (os.environ if environment is None else environment).get(s.PLATFORM_ENV)
    if not platform or not PLATFORM_NAME.fullmatch(platform):
        return {}, None
    path = layout_json(requirements_dir, platform)
    return (read_layout(path), str(path)) if path.exists() else ({}, None)
