"""latency.resources_requirements: requirements/<platform>_resources.json (docs/formats.md section 16), a JSON
object in the style of the ROS 2 benchmarks, read and validated; each limit carries the line of the
key that set it, for JUnit's pull-request annotations. The check is resources_table's."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import files
from .. import schema as s
from ..errors import InputError

CPU, RSS = "cpu", "rss"
LOST, LATE = "lost", "late"
RESOURCE_KEYS = {s.RESOURCE_CPU: CPU, s.RESOURCE_RSS: RSS}
LATENCY_KEYS = {"lost[%]": LOST, "late[%]": LATE}
TOP_KEYS = ("platform", "resources", "resources_by_subexperiment", "latency_total", "late_limit_us")


@dataclass(frozen=True)
class Limit:
    value: float
    line: int


@dataclass
class ResourceRequirements:
    path: Path
    platform: str
    resources: dict[str, Limit]  # check (cpu, rss) -> limit
    by_subexperiment: dict[str, dict[str, Limit]]
    latency_total: dict[str, Limit]  # check (lost, late) -> limit
    late_limit_us: dict[str, Limit]

    def resource_limits(self, sub: str) -> dict[str, Limit]:
        return {**self.resources, **self.by_subexperiment.get(sub, {})}


def key_line(text: str, keys: list[str]) -> int:
    """The line of the last of `keys`, each looked for after the one before it; 1 when not found."""
    position = 0
    for key in keys:
        found = text.find(json.dumps(key), position)
        if found < 0:
            return 1
        position = found
    return text.count("\n", 0, position) + 1


def _object(value, keys: list[str], allowed, text: str, path: Path) -> dict:
    where = ".".join(keys)
    if not isinstance(value, dict):
        raise InputError(f"{where!r} is {value!r}; expected an object", path, key_line(text, keys))
    for key in value:
        if key not in allowed:
            known = "not a sub-experiment of perfgate" if len(allowed) > 5 else f"known: {', '.join(allowed)}"
            raise InputError(f"unknown key {key!r} in {where or 'the top level'!r} ({known})", path,
                             key_line(text, keys + [key]))
    return value


def _number(value, keys: list[str], text: str, path: Path, *, zero_allowed: bool) -> Limit:
    where, line = ".".join(keys), key_line(text, keys)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise InputError(f"{where!r} is {value!r}; expected a number", path, line)
    if value < 0 or (value == 0 and not zero_allowed):
        raise InputError(f"{where!r} is {value!r}; expected a number above 0", path, line)
    return Limit(float(value), line)


def _limits(value, keys: list[str], names: dict[str, str], text: str, path: Path, *, zero_allowed: bool) -> dict[str, Limit]:
    return {names[key]: _number(number, keys + [key], text, path, zero_allowed=zero_allowed)
            for key, number in _object(value, keys, tuple(names), text, path).items()}


def read_resource_requirements(path: Path) -> ResourceRequirements:
    """InputError (exit 2), one line naming the file and the key's line, for anything but the schema."""
    path = Path(path)
    data = files.read_json_object(path, "resource requirements")
    if data is None:
        raise InputError("resource requirements file not found", path)
    text = path.read_text(encoding="utf-8")  # for the line of each key (files.read_json_object refused repeats)
    _object(data, [], TOP_KEYS, text, path)
    platform = data.get("platform")
    if not isinstance(platform, str) or not platform:
        raise InputError(f"'platform' is {platform!r}; expected the platform's name", path, key_line(text, ["platform"]))
    by_sub = {}
    for sub, value in _object(data.get("resources_by_subexperiment", {}), ["resources_by_subexperiment"],
                              s.KNOWN_SUBEXPERIMENTS, text, path).items():
        by_sub[sub] = _limits(value, ["resources_by_subexperiment", sub], RESOURCE_KEYS, text, path, zero_allowed=False)
    late_limits = {sub: _number(value, ["late_limit_us", sub], text, path, zero_allowed=False)
                   for sub, value in _object(data.get("late_limit_us", {}), ["late_limit_us"],
                                             s.KNOWN_SUBEXPERIMENTS, text, path).items()}
    latency_total = _limits(data.get("latency_total", {}), ["latency_total"], LATENCY_KEYS, text, path,
                            zero_allowed=True)
    keys = {name: key for key, name in LATENCY_KEYS.items()}
    for name, limit in latency_total.items():
        if limit.value > 100:  # a share above 100 % can never be exceeded: a check that cannot fail
            raise InputError(f"'latency_total.{keys[name]}' is {limit.value:g}; a share of round trips is at most 100",
                             path, limit.line)
    return ResourceRequirements(
        path, platform,
        _limits(data.get("resources", {}), ["resources"], RESOURCE_KEYS, text, path, zero_allowed=False),
        by_sub, latency_total, late_limits)
