"""latency_all and latency_total from the harness's per-subscription summaries (pure: frames in, frames
out). The harness accumulates each subscription message by message in a fixed size
(native/src/topology_stats.hpp): counts by the rules of classify.py, mean and sum of squared deviations,
min, max, and a histogram (histogram.py) from which the median and the 99 % are read within
histogram.RELATIVE_ERROR; nothing per message is kept, so memory does not grow with the run's length.
The events are streamed by events.py."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import classify as c
from . import histogram as h
from . import names as n
from .model import Topology

# the harness's files (topology_main.cpp's write_outputs)
SUBSCRIPTION = "subscription"
SUMMARY_COLUMNS = (SUBSCRIPTION, "received", "late", "too_late", "lost", "mean_us", "m2_us2", "min_us", "max_us")
HISTOGRAM_COLUMNS = (SUBSCRIPTION, "bin", "count")
_NO_STATISTICS = {n.MEAN: np.nan, n.SD: np.nan, n.MIN: np.nan, n.MAX: np.nan, n.MEDIAN: np.nan, n.P99: np.nan}


def _statistics(row, dense: np.ndarray) -> dict:
    received = int(row["received"])
    if received == 0:
        return dict(_NO_STATISTICS)
    low, high = float(row["min_us"]), float(row["max_us"])
    return {n.MEAN: float(row["mean_us"]),
            n.SD: math.sqrt(max(float(row["m2_us2"]), 0.0) / (received - 1)) if received > 1 else 0.0,
            n.MIN: low, n.MAX: high, n.MEDIAN: h.quantile(dense, 0.5, low, high),
            n.P99: h.quantile(dense, 0.99, low, high)}


def histograms(histogram: pd.DataFrame) -> dict[int, np.ndarray]:
    """Per subscription number, its dense histogram (a fixed size each)."""
    return {int(key): h.counts_of(group["bin"].to_numpy(), group["count"].to_numpy())
            for key, group in histogram.groupby(SUBSCRIPTION, sort=False)}


def latency_all(topology: Topology, summary: pd.DataFrame, dense: dict[int, np.ndarray],
                duration_s: float) -> pd.DataFrame:
    """One row per subscription of the topology, in its order, received or not (a subscription that
    received nothing has received 0 and no statistics: the caller treats it as a missing result)."""
    rows = []
    by_subscription = {int(row[SUBSCRIPTION]): row for _, row in summary.iterrows()}
    empty = dict.fromkeys(SUMMARY_COLUMNS, 0)
    for subscription in topology.subscriptions():
        row = by_subscription.get(subscription.index, empty)
        rows.append({n.NODE: subscription.node, n.TOPIC: subscription.publisher.topic,
                     n.SIZE: subscription.publisher.size_bytes, n.RECEIVED: int(row["received"]),
                     n.LATE: int(row["late"]), n.TOO_LATE: int(row["too_late"]), n.LOST: int(row["lost"]),
                     **_statistics(row, dense.get(subscription.index, np.zeros(h.BINS, dtype=np.int64))),
                     n.FREQUENCY: subscription.publisher.frequency_hz, n.DURATION: duration_s})
    return pd.DataFrame(rows, columns=list(n.LATENCY_ALL_COLUMNS))


def latency_total(table: pd.DataFrame, dense: dict[int, np.ndarray]) -> pd.DataFrame:
    """The whole system in one row: late and too late in % of the received messages (as the seed's
    table), lost in % of the messages that should have arrived (received + lost); mean, median and
    99 % over every message (the median and 99 % of the summed histograms: the history's)."""
    received, late, too_late, lost = (int(table[column].sum()) for column in (n.RECEIVED, n.LATE, n.TOO_LATE, n.LOST))
    counted = table[table[n.RECEIVED] > 0]
    if received:
        pooled = sum(dense.values(), np.zeros(h.BINS, dtype=np.int64))
        low, high = float(counted[n.MIN].min()), float(counted[n.MAX].max())
        mean = float((counted[n.MEAN] * counted[n.RECEIVED]).sum() / received)
        median, p99 = h.quantile(pooled, 0.5, low, high), h.quantile(pooled, 0.99, low, high)
    else:
        mean = median = p99 = np.nan
    return pd.DataFrame([{n.RECEIVED: received, n.MEAN: mean, n.LATE: late,
                          n.LATE_PERCENT: c.percent(late, received), n.TOO_LATE: too_late,
                          n.TOO_LATE_PERCENT: c.percent(too_late, received), n.LOST: lost,
                          n.LOST_PERCENT: c.percent(lost, received + lost), n.MEDIAN: median,
                          n.P99: p99}], columns=list(n.LATENCY_TOTAL_WRITTEN))
