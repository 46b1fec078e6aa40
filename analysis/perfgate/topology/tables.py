"""latency_all, latency_total and events from the harness's per-message records (pure: frames in,
frames out). A record is one message one subscription received: its subscription's number (the
order of Topology.subscriptions()), the sequence number, and the publisher's and the subscriber's
readings of the host's monotonic clock in ns."""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import classify as c
from . import names as n
from .model import Topology

SUBSCRIPTION = "subscription"
SEQUENCE = "sequence"
SENT_NS = "sent_ns"
RECEIVED_NS = "received_ns"
RECORD_COLUMNS = (SUBSCRIPTION, SEQUENCE, SENT_NS, RECEIVED_NS)


def _statistics(latency_us: np.ndarray) -> dict:
    if latency_us.size == 0:
        return {n.MEAN: np.nan, n.SD: np.nan, n.MIN: np.nan, n.MAX: np.nan, n.MEDIAN: np.nan, n.P99: np.nan}
    return {n.MEAN: float(latency_us.mean()), n.SD: float(latency_us.std(ddof=1)) if latency_us.size > 1 else 0.0,
            n.MIN: float(latency_us.min()), n.MAX: float(latency_us.max()),
            n.MEDIAN: float(np.median(latency_us)), n.P99: float(np.quantile(latency_us, 0.99))}


def latency_all(topology: Topology, records: pd.DataFrame, rules: c.Rules, duration_s: float) -> pd.DataFrame:
    """One row per subscription of the topology, in its order, received or not (a subscription that
    received nothing has received 0 and no statistics: the caller treats it as a missing result)."""
    rows = []
    by_subscription = {key: group for key, group in records.groupby(SUBSCRIPTION, sort=False)}
    for subscription in topology.subscriptions():
        group = by_subscription.get(subscription.index, records.iloc[0:0])
        latency_us = ((group[RECEIVED_NS] - group[SENT_NS]) / 1000.0).to_numpy(dtype=float)
        period = subscription.publisher.period_ms
        counts = c.count(latency_us, group[SEQUENCE].to_numpy(), rules.late_us(period), rules.too_late_us(period))
        rows.append({n.NODE: subscription.node, n.TOPIC: subscription.publisher.topic,
                     n.SIZE: subscription.publisher.size_bytes, n.RECEIVED: counts.received, n.LATE: counts.late,
                     n.TOO_LATE: counts.too_late, n.LOST: counts.lost, **_statistics(latency_us),
                     n.FREQUENCY: subscription.publisher.frequency_hz, n.DURATION: duration_s})
    return pd.DataFrame(rows, columns=list(n.LATENCY_ALL_COLUMNS))


def latency_total(table: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """The whole system in one row: late and too late in % of the received messages (as the seed's
    table), lost in % of the messages that should have arrived (received + lost)."""
    received, late, too_late, lost = (int(table[column].sum()) for column in (n.RECEIVED, n.LATE, n.TOO_LATE, n.LOST))
    latency_us = ((records[RECEIVED_NS] - records[SENT_NS]) / 1000.0).to_numpy(dtype=float)
    pooled = _statistics(latency_us)  # over every message: the median and 99 % of the system (the history's)
    return pd.DataFrame([{n.RECEIVED: received, n.MEAN: pooled[n.MEAN], n.LATE: late,
                          n.LATE_PERCENT: c.percent(late, received), n.TOO_LATE: too_late,
                          n.TOO_LATE_PERCENT: c.percent(too_late, received), n.LOST: lost,
                          n.LOST_PERCENT: c.percent(lost, received + lost), n.MEDIAN: pooled[n.MEDIAN],
                          n.P99: pooled[n.P99]}], columns=list(n.LATENCY_TOTAL_WRITTEN))


def events(topology: Topology, records: pd.DataFrame, rules: c.Rules, start_ns: int,
           discovered_ns: list[tuple[str, int]]) -> pd.DataFrame:
    """Discovery completed (per process: its caller names it), then every late, too-late and lost
    message, by time (ms from start_ns, the run's start on the same clock)."""
    rows = [{n.EVENT_TIME: (at - start_ns) / 1e6, n.EVENT_CALLER: n.SYSTEM_CALLER, n.EVENT_CODE: n.CODE_SYSTEM,
             n.EVENT_DESCRIPTION: f"[discovery] {who}: every endpoint matched"} for who, at in discovered_ns]
    by_subscription = {key: group for key, group in records.groupby(SUBSCRIPTION, sort=False)}
    for subscription in topology.subscriptions():
        group = by_subscription.get(subscription.index)
        if group is None:
            continue
        caller = f"{subscription.publisher.topic}->{subscription.node}"
        period = subscription.publisher.period_ms
        late_us, too_late_us = rules.late_us(period), rules.too_late_us(period)
        latency_us = ((group[RECEIVED_NS] - group[SENT_NS]) / 1000.0).to_numpy(dtype=float)
        times_ms = ((group[RECEIVED_NS] - start_ns) / 1e6).to_numpy(dtype=float)
        sequences = group[SEQUENCE].to_numpy()
        kinds = c.classify(latency_us, late_us, too_late_us)
        for at, sequence, latency, kind in zip(times_ms, sequences, latency_us, kinds):
            if kind == c.LATE:
                rows.append(_event(at, caller, n.CODE_LATE, f"msg {sequence} late. {latency:.0f}us > {late_us:.0f}us"))
            elif kind == c.TOO_LATE:
                rows.append(_event(at, caller, n.CODE_TOO_LATE,
                                   f"msg {sequence} too late. {latency:.0f}us > {too_late_us:.0f}us"))
        for at, sequence, skipped in zip(times_ms, sequences, c.lost_before(sequences)):
            if skipped:
                first = sequence - skipped
                what = f"msg {first} lost" if skipped == 1 else f"msgs {first} to {sequence - 1} lost ({skipped})"
                rows.append(_event(at, caller, n.CODE_LOST, what))
    frame = pd.DataFrame(rows, columns=list(n.EVENTS_COLUMNS))
    return frame.sort_values(n.EVENT_TIME, kind="stable").reset_index(drop=True)


def _event(at_ms: float, caller: str, code: int, description: str) -> dict:
    return {n.EVENT_TIME: at_ms, n.EVENT_CALLER: caller, n.EVENT_CODE: code, n.EVENT_DESCRIPTION: description}
