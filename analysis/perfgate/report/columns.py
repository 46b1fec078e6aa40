"""report.columns: cell texts and the table columns shared by the Markdown summary and the HTML page,
so that both (and the A/B report) write a number, a percentage and a check's name alike."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from .. import files
from .. import schema as s
from ..check import format_percent, testcase_name
from .tables import BASELINE, CHANGE, PAYLOADS, REASON, SUB

def number_text(value) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)) or pd.isna(value):
        return "-"
    return files.format_float(float(value))


def percent_text(value) -> str:
    """As `check` and the JUnit file write a percentage (`+5.12%`), so that every output reads alike."""
    if value is None or pd.isna(value) or not math.isfinite(float(value)):
        return "-"
    return format_percent(float(value))


def metadata_items(metadata: dict | None) -> list[tuple[str, str]]:
    """(name, value) pairs of what identifies the run, in reading order; absent values are left out."""
    if not metadata:
        return [("metadata", "none (metadata.json missing)")]
    fastdds, platform, harness = (metadata.get(key) if isinstance(metadata.get(key), dict) else {}
                                  for key in (s.META_FASTDDS, s.META_PLATFORM, s.META_HARNESS))
    version = str(fastdds.get("version") or "unknown version")
    details = [f"commit {fastdds['commit']}" if fastdds.get("commit") else "", str(fastdds.get("source") or "")]
    details = [d for d in details if d]
    items = [
        ("Fast DDS", version + (f" ({', '.join(details)})" if details else "")),
        ("platform", str(platform.get(s.META_PLATFORM_ID) or "unknown")
         + (f" ({platform['cpu_model']})" if platform.get("cpu_model") else "")),
        ("samples", str(metadata.get(s.META_SAMPLES, "unknown"))),
        ("label", str(metadata.get(s.META_LABEL, ""))),
        ("latency", str(metadata.get(s.META_LATENCY_DEFINITION, ""))),
        ("harness", str(harness.get("name") or "")),
        ("created", str(metadata.get(s.META_CREATED, ""))),
        ("pinning", _pinning_text(metadata.get("cpu_pinning"))),
        ("load", _load_text(metadata.get("load_average"))),
    ]
    return [(name, value) for name, value in items if value]


def _pinning_text(pinning) -> str:
    """Where publisher and subscriber ran: the largest noise source when they were not pinned."""
    if not isinstance(pinning, dict):
        return ""
    if not pinning.get("pinned"):
        return "not pinned"
    return f"publisher CPU {pinning.get('publisher_cpu')}, subscriber CPU {pinning.get('subscriber_cpu')}"


def _load_text(load) -> str:
    """The 1-minute load average before and after: other work on the machine while it measured."""
    if not isinstance(load, dict):
        return ""
    return f"{_one_minute(load.get('before'))} before, {_one_minute(load.get('after'))} after (1-minute average)"


def _one_minute(values) -> str:
    return f"{values[0]:.2f}" if isinstance(values, list) and values and isinstance(values[0], (int, float)) else "?"



@dataclass(frozen=True)
class Column:
    header: str
    cell: Callable[[pd.Series], str]
    text: bool = False  # left-aligned in the HTML


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

