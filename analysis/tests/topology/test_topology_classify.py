"""The seed's classification rules on known numbers: thresholds, late / too late / on time at and
around them, lost from skipped sequence numbers, and the tables built from per-message records."""
from __future__ import annotations

import numpy as np
import pandas as pd

from conftest import REPO_ROOT
from perfgate.topology import classify as c
from perfgate.topology import names as n
from perfgate.topology import tables
from perfgate.topology.model import read_topology


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


def test_tables_count_every_subscription_and_the_totals():
    topology = read_topology(REPO_ROOT / "topologies" / "light.json")
    subscriptions = topology.subscriptions()
    first, second = subscriptions[0], subscriptions[1]  # odometry <- wheel_ticks (100 Hz), odometry <- imu
    start = 1_000_000_000
    rows = [(first.index, seq, start + seq * 10_000_000, start + seq * 10_000_000 + latency_us * 1000)
            for seq, latency_us in [(0, 100), (1, 2100), (2, 11000), (4, 50), (5, 60)]]
    rows += [(second.index, seq, start + seq * 10_000_000, start + seq * 10_000_000 + 300_000_000) for seq in range(3)]
    records = pd.DataFrame(rows, columns=list(tables.RECORD_COLUMNS))
    table = tables.latency_all(topology, records, c.Rules(), duration_s=10.0)
    assert len(table) == len(subscriptions) == 16
    row = table.iloc[0]
    assert (row[n.NODE], row[n.TOPIC], row[n.SIZE]) == ("odometry", "wheel_ticks", 16)
    assert (row[n.RECEIVED], row[n.LATE], row[n.TOO_LATE], row[n.LOST]) == (5, 1, 1, 1)
    assert row[n.MIN] == 50 and row[n.MAX] == 11000 and row[n.MEDIAN] == 100 and row[n.FREQUENCY] == 100
    assert table.iloc[1][n.TOO_LATE] == 3 and table.iloc[2][n.RECEIVED] == 0
    total = tables.latency_total(table, records).iloc[0]
    assert (total[n.RECEIVED], total[n.LATE], total[n.TOO_LATE], total[n.LOST]) == (8, 1, 4, 1)
    assert total[n.LATE_PERCENT] == 12.5 and total[n.TOO_LATE_PERCENT] == 50.0 and total[n.LOST_PERCENT] == 100 / 9
    found = tables.events(topology, records, c.Rules(), start, [("all", start + 5_000_000)])
    # by time: discovery at 5 ms, then wheel_ticks' late (12.1 ms), too late (31 ms) and lost (seen at 40.05 ms),
    # then imu's three too late (from 300 ms)
    assert found[n.EVENT_CODE].tolist() == [n.CODE_SYSTEM, n.CODE_LATE, n.CODE_TOO_LATE, n.CODE_LOST,
                                            n.CODE_TOO_LATE, n.CODE_TOO_LATE, n.CODE_TOO_LATE]
    assert found[n.EVENT_CALLER].iloc[1] == "wheel_ticks->odometry"
    assert found[n.EVENT_CALLER].iloc[-1] == "imu->odometry"
    assert found[n.EVENT_DESCRIPTION].iloc[1] == "msg 1 late. 2100us > 2000us"
    assert found[n.EVENT_DESCRIPTION].iloc[3] == "msg 3 lost" and found[n.EVENT_TIME].iloc[0] == 5.0
    assert found[n.EVENT_TIME].iloc[1] == 12.1
