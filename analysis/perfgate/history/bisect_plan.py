"""Which events of a history `perfgate bisect-events` bisects (pure: the events table in, a plan out).

events.csv comes from a results store (untrusted): every commit must be 7 to 40 hex digits, every
change a number, every sub-experiment one a run writes, every payload a whole number; anything else
is refused with one line naming the file and the row. Only regressions are bisected (latency higher
after), the largest first; the events of one commit range (several sub-experiments that moved
together) are one bisect of all of them. An event beside a change of the runs' build options is
bisected too: both ends are built alike, so the bisect's first A/B tells whether its commits regressed
or the step was the build's. An event is bisected once: its folder
(<output>/<good 12>-<bad 12>/, see `folder_name`) is the record; one that exists is done.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd

from .. import schema as s
from ..errors import InputError
from . import names as event_names

SHA = re.compile(r"[0-9a-f]{7,40}")
SHORT = 12  # hex digits of each commit in a bisect's folder name
BUILD_CHANGE_CHARACTERS = 300  # of an event's build options change, as the bisect's line repeats it
MAX_RANGES = 10000  # regression ranges of one events.csv: a history has hundreds; more is no history's


@dataclass(frozen=True)
class Planned:
    good: str  # the event's Previous commit
    bad: str  # the event's Fast DDS commit
    subexperiments: tuple[str, ...]
    payloads: tuple[int, ...]  # what moved (empty: every payload)
    change: float  # the largest Change [%] of its events
    build_change: str = ""  # where the runs' build options changed beside it (events.csv), if they did

    @property
    def folder(self) -> str:
        return folder_name(self.good, self.bad)


def folder_name(good: str, bad: str) -> str:
    """The bisect folder of a commit range: only hex digits and one '-', so safe in a path and a link."""
    return f"{good[:SHORT]}-{bad[:SHORT]}"


def commit_pair(previous: str, commit: str) -> tuple[str, str] | None:
    """(good, bad) lowercased when both cells are commits; None when either is empty (a run without one)."""
    previous, commit = previous.strip().lower(), commit.strip().lower()
    if not previous or not commit:
        return None
    if SHA.fullmatch(previous) and SHA.fullmatch(commit):
        return previous, commit
    return None


def event_pair(row) -> tuple[str, str] | None:
    """The commit range an event vouches for (Good commit, Bad commit: history.events), as commit_pair says
    it; an events.csv row of text cells."""
    return commit_pair(str(row[event_names.EVENT_GOOD_COMMIT]), str(row[event_names.EVENT_BAD_COMMIT]))


def _row_problem(row: pd.Series) -> str | None:
    for column in (event_names.EVENT_PREVIOUS_COMMIT, event_names.EVENT_COMMIT, event_names.EVENT_GOOD_COMMIT,
                   event_names.EVENT_BAD_COMMIT):
        text = row[column].strip()
        if text and not SHA.fullmatch(text.lower()):
            return f"{column} {text[:60]!r} is not a commit (7 to 40 hex digits)"
    try:
        change = float(row[event_names.EVENT_CHANGE])
    except ValueError:
        change = math.nan
    if not math.isfinite(change):
        return f"{event_names.EVENT_CHANGE} {row[event_names.EVENT_CHANGE][:60]!r} is not a number"
    try:
        s.resolve_subexperiment(row[s.EXPERIMENT_TYPE])
    except ValueError as error:
        return str(error)[:200]
    if not all(part.isascii() and part.isdigit() and 0 < int(part) <= 65536
               for part in row[event_names.EVENT_PAYLOADS].split()):
        return f"{event_names.EVENT_PAYLOADS} {row[event_names.EVENT_PAYLOADS][:60]!r} are not payloads in bytes"
    return None


def regressions(events: pd.DataFrame | Iterable[Mapping[str, str]], path: Path) -> list[Planned]:
    """The regressions of `events` (history.page.read_events: every cell text; or its rows one by one,
    as bisect-events streams them) with both commits, one per commit range, largest change first;
    InputError naming `path` and the row for a bad cell, or for more than MAX_RANGES ranges. A row is
    folded into its range's summary and dropped (keeping every row cost 2.8 GB for a 152 MB file)."""
    rows = (row for _, row in events.iterrows()) if isinstance(events, pd.DataFrame) else events
    ranges: dict[tuple[str, str], _Range] = {}
    for position, row in enumerate(rows):
        problem = _row_problem(row)
        if problem is not None:
            raise InputError(f"event on line {position + 2}: {problem}", path)
        pair = event_pair(row)
        if pair is not None and float(row[event_names.EVENT_CHANGE]) > 0:
            if pair not in ranges and len(ranges) == MAX_RANGES:
                raise InputError(f"event on line {position + 2}: more than {MAX_RANGES} regression ranges, "
                                 "more than a history's events", path)
            ranges.setdefault(pair, _Range()).add(row)
    planned = [Planned(good, bad, tuple(summary.subs), () if summary.every_payload else tuple(sorted(summary.payloads)),
                       summary.change, summary.build_change[:BUILD_CHANGE_CHARACTERS])
               for (good, bad), summary in ranges.items()]
    return sorted(planned, key=lambda event: -event.change)


@dataclass
class _Range:
    """What `regressions` keeps of one commit range's rows: bounded (ten sub-experiments, payloads up to
    65536, one build change cut to BUILD_CHANGE_CHARACTERS) however many rows name it."""
    subs: dict[str, None] = field(default_factory=dict)  # in the order first seen
    payloads: set[int] = field(default_factory=set)
    every_payload: bool = False  # one event of the range that names no payload moved in the whole series
    change: float = -math.inf
    build_change: str = ""

    def add(self, row: Mapping[str, str]) -> None:
        self.subs.setdefault(row[s.EXPERIMENT_TYPE], None)
        parts = row[event_names.EVENT_PAYLOADS].split()
        self.every_payload |= not parts
        self.payloads.update(int(part) for part in parts)
        self.change = max(self.change, float(row[event_names.EVENT_CHANGE]))
        cell = row[event_names.EVENT_BUILD_CHANGE]
        if not self.build_change and isinstance(cell, str) and cell:
            self.build_change = cell[:BUILD_CHANGE_CHARACTERS]


def waiting(planned: list[Planned], done: set[str]) -> list[Planned]:
    """The events not bisected before (no folder in `done`), largest first. Which of them count
    against --max needs the commit graph (a range of one commit is not bisected): the driver's."""
    return [event for event in planned if event.folder not in done]
