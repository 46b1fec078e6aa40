"""What every real measurement, summary and requirement obeys, checked as the files are read.

Data that breaks these rules cannot be a measurement: a zero round trip, a payload whose samples
come in two blocks, sample numbers that repeat, a summary whose Min is above its Median. Let through,
it would become a summary, a check or a plot that looks plausible, so the readers (files.py) refuse
it with the file, the line and the rule (exit 2).

Each function takes a frame already checked cell by cell (finite numbers, signs, whole numbers, the
bounds below) and the physical line of each of its rows; it returns nothing or raises InputError.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from . import schema as s
from .errors import InputError

# No latency is above this, and larger finite values overflow later arithmetic (Stdev squares
# deviations summed over 10^5 samples; checks compare whole thousandths as integers).
MAX_LATENCY_US = 1e9
MAX_LATENCY_TEXT = "1e9 us (over 16 minutes)"
# A requirements file (latency or throughput) holds at most this many rows: every sub-experiment
# perfgate can run (226 names, the one-to-many ones included) at the eleven default payloads is
# 2486 rows, the repository's files 110 and 200. More is no file a maintainer wrote: a million rows
# took 9 GB, a million stderr lines and a 1.5 GB JUnit to check.
MAX_REQUIREMENT_ROWS = 10000
# Sample numbers, payload sizes and sample counts are exact as 64-bit floats only up to 2**53.
MAX_WHOLE_NUMBER = 2**53
MAX_WHOLE_NUMBER_TEXT = "2**53"

# Whatever the data, a summary row's percentiles rise with their rank between Min and Max, its Mean
# lies between Min and Max, and its Mean jitter is at most its Max jitter (rounding keeps all three).
SUMMARY_ORDER = (s.MIN, s.MEDIAN, s.P90, s.P99, s.P9999, s.MAX)
SUMMARY_PAIRS = tuple(zip(SUMMARY_ORDER, SUMMARY_ORDER[1:])) + ((s.MIN, s.MEAN), (s.MEAN, s.MAX),
                                                                 (s.MEAN_JITTER, s.MAX_JITTER))
SUMMARY_RULE = "a summary row has Min <= Median <= 90% <= 99% <= 99.99% <= Max, Min <= Mean <= Max and " \
               "Mean jitter <= Max jitter"
# Requirements derived from runs keep the order of the checked magnitudes (a percentile across runs
# of ordered values is ordered); a hand-edited row that breaks it can never be met as meant.
REQUIREMENT_ORDER = (s.MEDIAN, s.P99, s.MAX)
REQUIREMENT_PAIRS = tuple(zip(REQUIREMENT_ORDER, REQUIREMENT_ORDER[1:]))
REQUIREMENT_RULE = "a requirement row has Median <= 99% <= Max"


def _number(value) -> str:
    """A value as read (not rounded to 3 decimals: two values may differ only beyond them)."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def printable(value) -> str:
    """A cell's text for a one-line message: as written, or quoted with escapes when it holds a control
    character (a stray carriage return must not split the error line)."""
    text = str(value)
    return text if text.isprintable() else repr(text)


class RawRows:
    """The rules that span rows of raw measurements, checked chunk by chunk as the file is read (each
    chunk a frame already checked cell by cell, with the physical line of each row):

    - the samples of one payload are one block of consecutive rows (the harness measures payloads one
      after the other); a payload that starts again after another payload's block is refused;
    - sample numbers increase within a payload: a repeated or decreasing one is a duplicated or
      shuffled row, which would change jitter and the time series;
    - (`finish`, at the end of the file) every payload has at least two samples.
    """

    def __init__(self, path: Path):
        self.path = path
        self.counts: dict[int, int] = {}  # payload -> samples, in order of first appearance
        self.first_lines: dict[int, int] = {}  # payload -> line of its first row
        self.block_ends: dict[int, int] = {}  # payload -> line of its block's last row, once it has ended
        self.last: tuple[int, int, int] | None = None  # payload, sample and line of the last row so far

    def check(self, raw: pd.DataFrame, lines: np.ndarray) -> None:
        payloads = raw[s.PAYLOAD].to_numpy()
        samples = raw[s.SAMPLE].to_numpy()
        if self.last is not None:  # the row before this chunk, so that its first row is judged like any other
            payloads = np.r_[self.last[0], payloads]
            samples = np.r_[self.last[1], samples]
            lines = np.r_[self.last[2], lines]
        first = 0 if self.last is None else 1
        new_block = np.r_[self.last is None, payloads[1:] != payloads[:-1]]
        for start in np.flatnonzero(new_block):
            payload = int(payloads[start])
            if start > 0:
                self.block_ends[int(payloads[start - 1])] = int(lines[start - 1])
            if payload in self.counts:
                raise InputError(f"payload {payload} B starts again after payload {int(payloads[start - 1])} B (its "
                                 f"first block ends at line {self.block_ends[payload]}); the samples of a payload "
                                 "are one block", self.path, int(lines[start]))
            self.counts[payload] = 0
            self.first_lines[payload] = int(lines[start])
        broken = (payloads[1:] == payloads[:-1]) & (samples[1:] <= samples[:-1])
        if broken.any():
            row = int(np.flatnonzero(broken)[0]) + 1
            kind = "repeats" if samples[row] == samples[row - 1] else "is below"
            raise InputError(f"sample number {samples[row]} of payload {payloads[row]} B {kind} the one before it "
                             f"(line {lines[row - 1]}); sample numbers increase within a payload", self.path,
                             int(lines[row]))
        chunk_payloads, sizes = _run_lengths(payloads[first:])
        for payload, size in zip(chunk_payloads, sizes):
            self.counts[int(payload)] += int(size)
        self.last = (int(payloads[-1]), int(samples[-1]), int(lines[-1]))

    def finish(self) -> None:
        lonely = next((payload for payload, count in self.counts.items() if count < 2), None)
        if lonely is not None:
            raise InputError(f"payload {lonely} B has {self.counts[lonely]} sample; at least 2 are needed", self.path,
                             self.first_lines[lonely])


def _run_lengths(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The value and length of each run of equal consecutive values."""
    if values.size == 0:
        return values, values
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    return values[starts], np.diff(np.r_[starts, values.size])


def _first_broken(frame: pd.DataFrame, pairs) -> tuple[int, str, str] | None:
    """(row, lower, upper) of the first row, and in it the first pair, with frame[lower] > frame[upper]."""
    broken = np.column_stack([frame[lower].to_numpy(dtype=float) > frame[upper].to_numpy(dtype=float)
                              for lower, upper in pairs])
    rows = np.flatnonzero(broken.any(axis=1))
    if rows.size == 0:
        return None
    row = int(rows[0])
    lower, upper = pairs[int(np.flatnonzero(broken[row])[0])]
    return row, lower, upper


def consistent_summary(summary: pd.DataFrame, path: Path, lines: Sequence[int]) -> None:
    found = _first_broken(summary, SUMMARY_PAIRS)
    if found is not None:
        row, lower, upper = found
        values = summary.iloc[row]
        raise InputError(f"{lower} {_number(values[lower])} is above {upper} {_number(values[upper])} at "
                         f"{int(values[s.BYTES])} B; {SUMMARY_RULE}", path, lines[row])


def consistent_requirements(requirements: pd.DataFrame, path: Path, lines: Sequence[int]) -> None:
    found = _first_broken(requirements, REQUIREMENT_PAIRS)
    if found is not None:
        row, lower, upper = found
        values = requirements.iloc[row]
        where = f"{printable(values[s.EXPERIMENT_TYPE])} at {int(values[s.BYTES])} B"
        raise InputError(f"{lower} requirement {_number(values[lower])} us is above the {upper} requirement "
                         f"{_number(values[upper])} us ({where}); {REQUIREMENT_RULE}", path, lines[row])
