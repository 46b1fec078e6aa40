"""The seed's classification rules on known numbers: thresholds, late / too late / on time at and
around them, lost from skipped sequence numbers (the tables: test_topology_tables.py)."""
from __future__ import annotations

import numpy as np

from perfgate.topology import classify as c


def test_thresholds_are_the_smaller_of_the_share_of_the_period_and_the_absolute_limit():
    rules = c.Rules()
    assert rules.late_us(10) == 2000 and rules.too_late_us(10) == 10000  # 100 Hz: the share of the period
    assert rules.late_us(100) == 5000 and rules.too_late_us(100) == 50000  # 10 Hz: the absolute limits
    custom = c.Rules(late_percentage=50, late_absolute_us=1e9, too_late_percentage=80, too_late_absolute_us=1e9)
    assert custom.late_us(10) == 5000 and custom.too_late_us(10) == 8000
    assert c.Rules(late_percentage=0).problem() and c.Rules(late_absolute_us=60000).problem()
    assert c.Rules().problem() is None


def test_a_latency_is_late_above_the_late_threshold_and_too_late_above_the_other():
    kinds = c.classify(np.array([0, 2000, 2000.5, 10000, 10000.5, 1e6]), 2000, 10000)
    assert kinds.tolist() == [c.ON_TIME, c.ON_TIME, c.LATE, c.LATE, c.TOO_LATE, c.TOO_LATE]


def test_skipped_sequence_numbers_are_lost_counted_from_the_first_received():
    assert c.lost_before(np.array([5, 6, 7])).tolist() == [0, 0, 0]
    assert c.lost_before(np.array([5, 7, 8, 12])).tolist() == [0, 1, 0, 3]
    assert c.lost_before(np.array([3, 4, 4, 2, 6])).tolist() == [0, 0, 0, 0, 1]  # duplicate, older: nothing skipped
    counts = c.count(np.array([100, 2500, 12000, 100]), np.array([0, 1, 3, 4]), 2000, 10000)
    assert counts == c.Counts(received=4, late=1, too_late=1, lost=1)
