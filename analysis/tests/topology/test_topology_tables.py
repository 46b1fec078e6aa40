"""The tables and events.csv from what the harness writes (per-subscription summaries and histograms,
per-node events files; here made from known messages by the rules of classify.py, as the harness's
topology_stats.cpp makes them), the histogram's quantiles within their stated error, and memory that
does not grow with the number of events."""
from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pandas as pd

from conftest import REPO_ROOT
from perfgate.topology import classify as c
from perfgate.topology import events as ev
from perfgate.topology import histogram as h
from perfgate.topology import names as n
from perfgate.topology import tables
from perfgate.topology.model import read_topology

START_NS = 1_000_000_000


def harness_files(index: int, messages: list[tuple[int, float]], late_us: float, too_late_us: float):
    """A subscription's summary row, histogram rows and events lines, from (sequence, latency us) in arrival
    order and 10 ms apart, as the harness accumulates them."""
    sequences = np.array([m[0] for m in messages])
    latency_us = np.array([m[1] for m in messages], dtype=float)
    counts = c.count(latency_us, sequences, late_us, too_late_us)
    summary = [index, counts.received, counts.late, counts.too_late, counts.lost, latency_us.mean(),
               ((latency_us - latency_us.mean()) ** 2).sum(), latency_us.min(), latency_us.max()]
    bins = np.floor(h.BINS_PER_OCTAVE * np.log2(latency_us * 1000)).astype(int)
    histogram = [[index, b, int((bins == b).sum())] for b in sorted(set(bins))]
    lines = []
    for sequence, latency, kind, skipped in zip(sequences, latency_us, c.classify(latency_us, late_us, too_late_us),
                                                c.lost_before(sequences)):
        received_ns = START_NS + int(sequence) * 10_000_000 + int(latency * 1000)
        if kind != c.ON_TIME:
            lines.append(f"{received_ns},{index},{int(kind)},{sequence},{int(latency * 1000)}")
        if skipped:
            lines.append(f"{received_ns},{index},3,{sequence - skipped},{skipped}")
    return summary, histogram, lines


def light_run(tmp_path):
    topology = read_topology(REPO_ROOT / "topologies" / "light.json")
    first, second = topology.subscriptions()[:2]  # odometry <- wheel_ticks (100 Hz), odometry <- imu (100 Hz)
    rules = c.Rules()
    one = harness_files(first.index, [(0, 100), (1, 2100), (2, 11000), (4, 50), (5, 60)], 2000, 10000)
    two = harness_files(second.index, [(seq, 300_000) for seq in range(3)], 2000, 10000)
    summary = pd.DataFrame([one[0], two[0]], columns=list(tables.SUMMARY_COLUMNS))
    histogram = pd.DataFrame(one[1] + two[1], columns=list(tables.HISTOGRAM_COLUMNS))
    (tmp_path / "events_odometry.csv").write_text("".join(line + "\n" for line in one[2] + two[2]))
    return topology, rules, summary, histogram, [tmp_path / "events_odometry.csv"]


def test_tables_count_every_subscription_and_the_totals(tmp_path):
    topology, _, summary, histogram, _ = light_run(tmp_path)
    dense = tables.histograms(histogram)
    table = tables.latency_all(topology, summary, dense, duration_s=10.0)
    assert len(table) == len(topology.subscriptions()) == 16
    row = table.iloc[0]
    assert (row[n.NODE], row[n.TOPIC], row[n.SIZE]) == ("odometry", "wheel_ticks", 16)
    assert (row[n.RECEIVED], row[n.LATE], row[n.TOO_LATE], row[n.LOST]) == (5, 1, 1, 1)
    assert row[n.MIN] == 50 and row[n.MAX] == 11000 and row[n.FREQUENCY] == 100
    assert row[n.MEAN] == np.mean([100, 2100, 11000, 50, 60])
    assert math.isclose(row[n.SD], np.std([100, 2100, 11000, 50, 60], ddof=1))
    assert abs(row[n.MEDIAN] / 100 - 1) <= h.RELATIVE_ERROR  # exact: 100
    assert table.iloc[1][n.TOO_LATE] == 3 and table.iloc[1][n.MEDIAN] == 300_000  # one bin: min = max
    assert table.iloc[2][n.RECEIVED] == 0 and np.isnan(table.iloc[2][n.MEDIAN])
    total = tables.latency_total(table, dense).iloc[0]
    assert (total[n.RECEIVED], total[n.LATE], total[n.TOO_LATE], total[n.LOST]) == (8, 1, 4, 1)
    assert total[n.LATE_PERCENT] == 12.5 and total[n.TOO_LATE_PERCENT] == 50.0 and total[n.LOST_PERCENT] == 100 / 9
    assert math.isclose(total[n.MEAN], (100 + 2100 + 11000 + 50 + 60 + 3 * 300_000) / 8)
    exact = np.array([100, 2100, 11000, 50, 60] + [300_000] * 3, dtype=float)
    for column, q in ((n.MEDIAN, 0.5), (n.P99, 0.99)):
        assert abs(total[column] / np.quantile(exact, q) - 1) <= h.RELATIVE_ERROR


def test_events_are_merged_by_time_and_described(tmp_path):
    topology, rules, _, _, files = light_run(tmp_path)
    ev.write_events(tmp_path / "events.csv", topology, rules, START_NS, [("all", START_NS + 5_000_000)], files)
    found = pd.read_csv(tmp_path / "events.csv")
    assert list(found.columns) == list(n.EVENTS_COLUMNS)
    # by time: discovery at 5 ms, then wheel_ticks' late (12.1 ms), too late (31 ms) and lost (seen at 40.05 ms),
    # then imu's three too late (from 300 ms)
    assert found[n.EVENT_CODE].tolist() == [n.CODE_SYSTEM, n.CODE_LATE, n.CODE_TOO_LATE, n.CODE_LOST,
                                            n.CODE_TOO_LATE, n.CODE_TOO_LATE, n.CODE_TOO_LATE]
    assert found[n.EVENT_CALLER].iloc[1] == "wheel_ticks->odometry"
    assert found[n.EVENT_CALLER].iloc[-1] == "imu->odometry"
    assert found[n.EVENT_DESCRIPTION].iloc[1] == "msg 1 late. 2100us > 2000us"
    assert found[n.EVENT_DESCRIPTION].iloc[3] == "msg 3 lost" and found[n.EVENT_TIME].iloc[0] == 5.0
    assert found[n.EVENT_TIME].iloc[1] == 12.1
    assert ev.discovery_frame([("all", START_NS + 5_000_000)], START_NS)[n.EVENT_TIME].tolist() == [5.0]


def test_quantiles_from_the_histogram_are_within_the_stated_error():
    rng = np.random.default_rng(7)
    for latency_ns in (rng.lognormal(11, 1.5, 20001).astype(np.int64) + 1, rng.integers(1000, 1010, 1000),
                       np.array([5_000, 5_000, 9_000_000_000])):
        bins = np.floor(h.BINS_PER_OCTAVE * np.log2(latency_ns)).astype(np.int64)
        dense = h.counts_of(bins, np.ones_like(bins))
        latency_us = latency_ns / 1000.0
        for q in (0.0, 0.5, 0.99, 1.0):
            estimate = h.quantile(dense, q, latency_us.min(), latency_us.max())
            assert abs(estimate / np.quantile(latency_us, q) - 1) <= h.RELATIVE_ERROR, (q, latency_ns[:3])
    assert math.isnan(h.quantile(np.zeros(h.BINS, dtype=np.int64), 0.5, 0, 1))


def _peak_bytes_writing_events(tmp_path, count: int) -> int:
    topology = read_topology(REPO_ROOT / "topologies" / "light.json")
    harness = tmp_path / f"events_{count}.csv"
    with harness.open("w") as handle:
        for sequence in range(count):  # every message of subscription 0 late
            handle.write(f"{START_NS + sequence * 10_000_000},0,1,{sequence},2500000\n")
    tracemalloc.start()
    try:
        ev.write_events(tmp_path / f"out_{count}.csv", topology, c.Rules(), START_NS, [("all", START_NS)], [harness])
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_writing_events_takes_memory_independent_of_their_number(tmp_path):
    small, large = (_peak_bytes_writing_events(tmp_path, count) for count in (5_000, 50_000))
    assert sum(1 for _ in (tmp_path / "out_50000.csv").open()) == 50_000 + 2  # header, discovery, every event
    # ten times the events: the same peak, give or take the interpreter's own bookkeeping (a structure
    # holding them would take ten times as much)
    assert large < small * 1.5, (small, large)
