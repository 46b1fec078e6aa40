"""The seed's rules, pure: a message is too late above min(too-late percentage x period, too-late
absolute), late above min(late percentage x period, late absolute) and not too late, on time otherwise;
lost when a later sequence number arrives first (messages arrive in order or never, the benchmark's
assumption). Numbers in, numbers out; the tables are in tables.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import names as n

ON_TIME, LATE, TOO_LATE = 0, 1, 2


@dataclass(frozen=True)
class Rules:
    """The thresholds' parameters: percentages of the period and absolute limits in microseconds."""
    late_percentage: float = n.DEFAULT_LATE_PERCENTAGE
    late_absolute_us: float = n.DEFAULT_LATE_ABSOLUTE_US
    too_late_percentage: float = n.DEFAULT_TOO_LATE_PERCENTAGE
    too_late_absolute_us: float = n.DEFAULT_TOO_LATE_ABSOLUTE_US

    def late_us(self, period_ms: float) -> float:
        return min(self.late_percentage / 100.0 * period_ms * 1000.0, self.late_absolute_us)

    def too_late_us(self, period_ms: float) -> float:
        return min(self.too_late_percentage / 100.0 * period_ms * 1000.0, self.too_late_absolute_us)

    def problem(self) -> str | None:
        """Why these rules cannot classify (one line), or None."""
        for name, value in (("--late-percentage", self.late_percentage), ("--late-absolute", self.late_absolute_us),
                            ("--too-late-percentage", self.too_late_percentage),
                            ("--too-late-absolute", self.too_late_absolute_us)):
            if not np.isfinite(value) or value <= 0:
                return f"{name} must be a positive number, got {value:g}"
        if self.late_percentage > self.too_late_percentage or self.late_absolute_us > self.too_late_absolute_us:
            return "a late threshold above its too-late threshold: no message could be late"
        return None


def classify(latency_us: np.ndarray, late_us: float, too_late_us: float) -> np.ndarray:
    """ON_TIME, LATE or TOO_LATE per latency; equal to a threshold is still within it (the seed: 'greater than')."""
    latency_us = np.asarray(latency_us, dtype=float)
    return np.where(latency_us > too_late_us, TOO_LATE, np.where(latency_us > late_us, LATE, ON_TIME))


def lost_before(sequences: np.ndarray) -> np.ndarray:
    """Per received message, in arrival order: how many sequence numbers were skipped just before it.

    The first message received starts the count (what was published before the subscription matched was
    never meant for it); a number at or below one already seen (a duplicate, or out of order, which the
    benchmark assumes never happens) skips nothing."""
    sequences = np.asarray(sequences, dtype=np.int64)
    if sequences.size == 0:
        return np.zeros(0, dtype=np.int64)
    highest_before = np.maximum.accumulate(np.concatenate(([sequences[0] - 1], sequences[:-1])))
    return np.maximum(sequences - highest_before - 1, 0)


@dataclass(frozen=True)
class Counts:
    received: int
    late: int
    too_late: int
    lost: int


def count(latency_us: np.ndarray, sequences: np.ndarray, late_us: float, too_late_us: float) -> Counts:
    """The counts of one subscription's messages (in arrival order)."""
    kinds = classify(latency_us, late_us, too_late_us)
    return Counts(int(kinds.size), int(np.sum(kinds == LATE)), int(np.sum(kinds == TOO_LATE)),
                  int(lost_before(sequences).sum()))


def percent(part: int, whole: int) -> float:
    """part of whole in %, 0 when there is no whole (a missing whole is caught before: no messages is an error)."""
    return 100.0 * part / whole if whole else 0.0
