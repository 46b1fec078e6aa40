"""latency.requested: what a run was asked to measure, as its metadata.json records it, and the one rule for
requirement rows outside it (docs/formats.md section 6), shared by `check`, `junit`, the gate's
reports and `check-throughput`.

A run records the sub-experiments and payloads it was asked for (`requested_subexperiments`,
`payloads`: the defaults, or what --subexperiments and --payloads narrowed them to). A requirement
row for a sub-experiment or payload outside them is "not asked for": listed, not checked, no JUnit
testcase, never missing data. A row the run asked for and has no measurements for stays missing
data (exit 3), and a row that has measurements is checked whatever the metadata says, so that a
measured result never goes unseen. A folder that does not record what it asked for (older tooling)
asked for every row.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import schema as s
from ..errors import InputError
from ..model import Metadata


@dataclass(frozen=True)
class Requested:
    """The sub-experiments and payloads a run asked for; None: not recorded, so every one."""

    subexperiments: frozenset[str] | None
    payloads: frozenset[int] | None

    def asks_for(self, sub: str, payload: int) -> bool:
        return ((self.subexperiments is None or sub in self.subexperiments)
                and (self.payloads is None or int(payload) in self.payloads))


EVERYTHING = Requested(None, None)


def require_list(key: str, value, kind: type, path: Path | None) -> tuple:
    """A metadata list whose items must all be of `kind`: read loosely, a bad field could make every
    requirement row "not asked for", which would pass a run that measured nothing (exit 2 instead)."""
    if not isinstance(value, tuple) or not all(isinstance(v, kind) and not isinstance(v, bool) for v in value):
        raise InputError(f"{key!r} is {(list(value) if isinstance(value, tuple) else value)!r}; expected a list of "
                         f"{'sub-experiment names' if kind is str else 'whole numbers'}", path)
    return value


def requested_of(metadata: Metadata | None, path: Path | None = None) -> Requested:
    """What the run of this metadata (read from `path`) asked for; EVERYTHING without metadata."""
    if metadata is None:
        return EVERYTHING
    subs = payloads = None
    if metadata.requested_subexperiments is not None:
        subs = require_list("requested_subexperiments", metadata.requested_subexperiments, str, path)
        unknown = [sub for sub in subs if sub not in s.KNOWN_SUBEXPERIMENTS]
        if unknown:
            raise InputError(f"'requested_subexperiments' names {unknown[0]!r}, which is no sub-experiment", path)
    if metadata.payloads is not None:
        payloads = require_list("payloads", metadata.payloads, int, path)
    return Requested(None if subs is None else frozenset(subs), None if payloads is None else frozenset(payloads))


def not_asked_summary(rows: list[tuple[str, int]]) -> str:
    """`intraprocess_reliable, interprocess_reliable (16 to 16384 B, 11 payloads); interprocess_best_effort
    (32 B)`: the rows not asked for on one console line, the sub-experiments with the same payloads together."""
    by_sub: dict[str, list[int]] = {}
    for sub, payload in rows:
        by_sub.setdefault(sub, []).append(int(payload))
    by_payloads: dict[tuple[int, ...], list[str]] = {}
    for sub, payloads in by_sub.items():
        by_payloads.setdefault(tuple(payloads), []).append(sub)
    items = []
    for payloads, subs in by_payloads.items():
        shown = (f"{payloads[0]} B" if len(payloads) == 1
                 else f"{min(payloads)} to {max(payloads)} B, {len(payloads)} payloads")
        items.append(f"{', '.join(subs)} ({shown})")
    return "; ".join(items)
