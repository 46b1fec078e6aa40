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
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import schema as s
from ..errors import InputError
from . import names as event_names

SHA = re.compile(r"[0-9a-f]{7,40}")
SHORT = 12  # hex digits of each commit in a bisect's folder name
BUILD_CHANGE_CHARACTERS = 300  # of an event's build options change, as the bisect's line repeats it


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


def _row_problem(row: pd.Series) -> str | None:
    for column in (event_names.EVENT_PREVIOUS_COMMIT, event_names.EVENT_COMMIT):
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


def regressions(events: pd.DataFrame, path: Path) -> list[Planned]:
    """The regressions of `events` (history.page.read_events: every cell text) with both commits, one
    per commit range, largest change first; InputError naming `path` and the row for a bad cell."""
    ranges: dict[tuple[str, str], list[pd.Series]] = {}
    for position, (_, row) in enumerate(events.iterrows()):
        problem = _row_problem(row)
        if problem is not None:
            raise InputError(f"event on line {position + 2}: {problem}", path)
        pair = commit_pair(row[event_names.EVENT_PREVIOUS_COMMIT], row[event_names.EVENT_COMMIT])
        if pair is not None and float(row[event_names.EVENT_CHANGE]) > 0:
            ranges.setdefault(pair, []).append(row)
    planned = []
    for (good, bad), rows in ranges.items():
        subs = tuple(dict.fromkeys(row[s.EXPERIMENT_TYPE] for row in rows))
        moved = [row[event_names.EVENT_PAYLOADS].split() for row in rows]
        # one event of the range that names no payload moved in the whole series: every payload
        payloads = () if any(not parts for parts in moved) else tuple(sorted({int(p) for parts in moved for p in parts}))
        build_change = next((cell for cell in (row[event_names.EVENT_BUILD_CHANGE] for row in rows)
                             if isinstance(cell, str) and cell), "")
        planned.append(Planned(good, bad, subs, payloads, max(float(row[event_names.EVENT_CHANGE]) for row in rows),
                               build_change[:BUILD_CHANGE_CHARACTERS]))
    return sorted(planned, key=lambda event: -event.change)


def waiting(planned: list[Planned], done: set[str]) -> list[Planned]:
    """The events not bisected before (no folder in `done`), largest first. Which of them count
    against --max needs the commit graph (a range of one commit is not bisected): the driver's."""
    return [event for event in planned if event.folder not in done]
