"""A performance target (the ros2-performance benchmark's JSON: `resources` with cpu[%] and rss[KB],
`latency_total` with late[%], too_late[%] and lost[%]; other fields such as topology_file, platform,
comments are kept as text) and the comparison of an experiment's figures with it (pure).

Each limit keeps the line it is on in the file, for the JUnit testcase that checks it. The file is
untrusted: a limit that is not a finite non-negative number, or a metric perfgate does not measure,
is an InputError (exit 2) naming the file, the line and the field."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import InputError, one_line
from . import names as n
from .model import read_json_text

MAX_FILE_BYTES = 1 << 16
MAX_INT_BITS = 1000  # below 2**1024, the largest float: a limit float() can hold
SECTIONS = {n.TARGET_RESOURCES: n.TARGET_RESOURCE_KEYS, n.TARGET_LATENCY_TOTAL: n.TARGET_LATENCY_KEYS}


@dataclass(frozen=True)
class Limit:
    section: str
    metric: str
    limit: float
    line: int | None


@dataclass(frozen=True)
class Target:
    path: Path
    limits: tuple[Limit, ...]
    platform: str | None


def _line_of(text: str, section: str, metric: str) -> int | None:
    """The line of `"metric":` after `"section":` (the first of each: json keeps the last of a duplicate key,
    which a duplicate-free target never has)."""
    start = re.search(rf'"{re.escape(section)}"\s*:', text)
    if start is None:
        return None
    found = re.compile(rf'"{re.escape(metric)}"\s*:').search(text, start.end())
    return text.count("\n", 0, found.start()) + 1 if found else None


def read_target(path: Path | str) -> Target:
    path = Path(path)
    text, document = read_json_text(path, "the performance target", MAX_FILE_BYTES)
    if not isinstance(document, dict):
        raise InputError("the performance target must be a JSON object", path)
    limits = []
    for section, known in SECTIONS.items():
        values = document.get(section, {})
        if not isinstance(values, dict):
            raise InputError(f"{section} must be an object", path, _line_of(text, section, ""))
        for metric, value in values.items():
            line = _line_of(text, section, metric)
            if metric not in known:
                raise InputError(f"{section}: {one_line(repr(metric))[:60]} is not measured (known: "
                                 f"{', '.join(known)})", path, line)
            # a JSON integer is a Python int of any size: math.isfinite(10**400) raises OverflowError, and
            # float(value) below must not either, so an int beyond float's range is refused as well
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 \
                    or (isinstance(value, float) and not math.isfinite(value)) \
                    or (isinstance(value, int) and value.bit_length() > MAX_INT_BITS):
                raise InputError(f"{section}: {metric} must be a non-negative number, got "
                                 f"{one_line(repr(value))[:60]}", path, line)
            limits.append(Limit(section, metric, float(value), line))
    if not limits:
        raise InputError(f"the performance target sets no limit ({', '.join(SECTIONS)})", path)
    platform = document.get("platform")
    return Target(path, tuple(limits), platform if isinstance(platform, str) else None)


def publishing_start_ms(events: pd.DataFrame) -> float:
    """When every process had matched (its discovery event, code 0), ms from the run's start: the
    latest, when the processes publish; 0 when no discovery is recorded."""
    discovered = events.loc[events[n.EVENT_CODE] == n.CODE_SYSTEM, n.EVENT_TIME]
    return float(discovered.max()) if len(discovered) else 0.0


def measured_resources(usage: pd.DataFrame, publishing_ms: float = 0.0) -> dict[str, float]:
    """The system's CPU and memory: cpu[%] the sum over its processes of each one's mean (over all cores)
    while publishing (the samples that end after publishing_ms: start-up and discovery, a burst and an
    idle wait, are no steady state), rss[KB] the sum of each one's peak over the whole run."""
    publishing = usage[usage[n.RESOURCE_TIME] > publishing_ms]
    return {n.RESOURCE_CPU: float(publishing.groupby(n.PROCESS)[n.RESOURCE_CPU].mean().sum()),
            n.RESOURCE_RSS: float(usage.groupby(n.PROCESS)[n.RESOURCE_RSS].max().sum())}


@dataclass(frozen=True)
class Outcome:
    limit: Limit
    measured: float

    @property
    def passed(self) -> bool:
        return self.measured <= self.limit.limit


def compare(target: Target, measured: dict[str, dict[str, float]]) -> list[Outcome]:
    """Each limit against the measured figure of its section and metric (at most the limit passes)."""
    return [Outcome(limit, measured[limit.section][limit.metric]) for limit in target.limits]
