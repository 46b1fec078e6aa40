"""report.columns: cell texts and the table columns shared by the Markdown summary and the HTML page,
so that both (and the A/B report) write a number, a percentage and a check's name alike."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from .. import files
from .. import schema as s
from ..latency.check_terms import format_percent, testcase_name
from ..model import IDLE_AWAKE, CpuLatency, CpuPinning, FastDDS, LoadAverage, Metadata, Platform
from .tables import BASELINE, CHANGE, PAYLOADS, REASON, SUB
from .words import latency_words, source_words

def number_text(value) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)) or pd.isna(value):
        return "-"
    return files.format_float(float(value))


def percent_text(value) -> str:
    """As `check` and the JUnit file write a percentage (`+5.12%`), so that every output reads alike."""
    if value is None or pd.isna(value) or not math.isfinite(float(value)):
        return "-"
    return format_percent(float(value))


def metadata_items(metadata: Metadata | None, platform_name: str | None = None) -> list[tuple[str, str]]:
    """(name, value) pairs of what identifies the run, in reading order; absent values are left out.
    platform_name: the platform the gate was given (--platform, $PERFGATE_PLATFORM), None when none was."""
    if not metadata:
        named = [("platform", platform_text(platform_name, None))] if platform_name else []
        return named + [("metadata", "none (metadata.json missing)")]
    fastdds, platform, harness = metadata.fastdds or FastDDS(), metadata.platform or Platform(), metadata.harness
    version = fastdds.version or "unknown version"
    details = [f"commit {fastdds.commit}" if fastdds.commit else "", source_words(fastdds.source)]
    details = [d for d in details if d]
    items = [
        ("Fast DDS", version + (f" ({', '.join(details)})" if details else "")),
        ("platform", platform_text(platform_name, platform)),
        ("samples", str(metadata.samples) if metadata.samples is not None else
         "the A/B's candidate rounds, pooled" if "pooled_from_ab" in metadata.extra else "unknown"),
        ("label", metadata.label or ""),
        ("latency", latency_words(metadata.latency_definition) if metadata.samples is not None else ""),
        ("harness", (harness.name or "") if harness else ""),
        ("created", metadata.created_utc or ""),
        ("pinning", _pinning_text(metadata.cpu_pinning)),
        ("idle CPUs", idle_text(metadata.cpu_latency)),
        ("load", _load_text(metadata.load_average, metadata.extra.get("pooled_from_ab"))),
    ]
    return [(name, value) for name, value in items if value]


def platform_text(name: str | None, platform: Platform | None) -> str:
    """'vm-2core-x64 (machine 1be1a6597d2e960e, AMD EPYC)': the platform by the name its requirements
    go by first, the machine's fingerprint id (which says nothing to a reader alone) after it;
    'no platform named (machine ...)' when the gate was given none."""
    platform = platform or Platform()
    machine = [f"machine {platform.id}" if platform.id else "machine id not recorded", platform.cpu_model or ""]
    return f"{name or 'no platform named'} ({', '.join(part for part in machine if part)})"


def _pinning_text(pinning: CpuPinning | None) -> str:
    """Where publisher and subscriber ran: the largest noise source when they were not pinned."""
    if pinning is None:
        return ""
    if not pinning.pinned:
        return "not pinned"
    return f"publisher CPU {pinning.publisher_cpu}, subscriber CPU {pinning.subscriber_cpu}"


def idle_text(latency: CpuLatency | None) -> str:
    """The idle policy a measurement ran under (perfgate.measure.cpu_latency); "" when not recorded."""
    if latency is None or latency.requested is None:
        return ""
    if latency.mode() == IDLE_AWAKE:
        return f"kept awake ({latency.held_us} us wake-up latency held)"
    return "the system's policy" + (" (awake was asked for, not held)" if latency.requested == IDLE_AWAKE else "")


def _load_text(load: LoadAverage | None, pooled: dict | None = None) -> str:
    """The 1-minute load average before and after: other work on the machine while it measured. For the
    A/B's pooled candidate: at the A/B's start and end, and the range its rounds recorded."""
    if load is None:
        return ""
    spread = pooled.get("rounds_load") if isinstance(pooled, dict) else None
    if isinstance(spread, list) and len(spread) == 2 and all(isinstance(x, (int, float)) for x in spread):
        return (f"{_one_minute(load.before)} at the A/B's start, {_one_minute(load.after)} at its end, "
                f"{spread[0]:.2f} to {spread[1]:.2f} in its rounds (1-minute average)")
    return f"{_one_minute(load.before)} before, {_one_minute(load.after)} after (1-minute average)"


def _one_minute(values) -> str:
    return f"{values[0]:.2f}" if values and isinstance(values[0], (int, float)) else "?"



@dataclass(frozen=True)
class Column:
    header: str
    cell: Callable[[pd.Series], str]
    text: bool = False  # left-aligned in the HTML
    wrap: bool = False  # a sentence: wraps in the HTML (every other cell stays on one line)


def check_columns(*, with_sub: bool, with_baseline: bool, with_status: bool = True) -> list[Column]:
    """A check table's columns; the baseline's only when one was compared."""
    columns = [Column(SUB, lambda r: str(r[SUB]), text=True)] if with_sub else []
    columns += [
        Column("Check", lambda r: testcase_name(r[s.CHECK], r[s.BYTES]), text=not with_sub),
        Column("Measured [us]", lambda r: number_text(r[s.EXPERIMENT])),
        Column("Requirement [us]", lambda r: number_text(r[s.REQUIREMENT])),
        Column("Over requirement", lambda r: percent_text(r[s.PERCENT_OVER])),
    ]
    if with_baseline:
        columns += [Column("Baseline [us]", lambda r: number_text(r[BASELINE])),
                    Column(CHANGE, lambda r: percent_text(r[CHANGE]))]
    if with_status:
        columns.append(Column("Status", lambda r: str(r[s.STATUS]), text=True))
    return columns


BASELINE_FAILURE_COLUMNS = [
    Column(SUB, lambda r: str(r[s.EXPERIMENT_TYPE]), text=True),
    Column("Check", lambda r: testcase_name(r[s.CHECK], r[s.BYTES]), text=True),
    Column("Baseline [us]", lambda r: number_text(r[s.REFERENCE])),
    Column("Measured [us]", lambda r: number_text(r[s.RESULT])),
    Column("Limit [us]", lambda r: number_text(r[s.LIMIT])),
    Column("Over baseline", lambda r: percent_text(r[s.PERCENT_OVER_REFERENCE])),
]
BASELINE_CHANGE_COLUMNS = [
    Column("Check", lambda r: testcase_name(r[s.CHECK], r[s.BYTES]), text=True),
    Column("Baseline [us]", lambda r: number_text(r[s.REFERENCE])),
    Column("Measured [us]", lambda r: number_text(r[s.RESULT])),
    Column(CHANGE, lambda r: percent_text(r[CHANGE])),
]
MISSING_COLUMNS = [
    Column(SUB, lambda r: str(r[SUB]), text=True),
    Column(PAYLOADS, lambda r: str(r[PAYLOADS]), text=True),
    Column(REASON, lambda r: str(r[REASON]), text=True),
]

