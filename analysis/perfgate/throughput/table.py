"""throughput.table: what the harness counted per throughput test -> the contract's throughput table
(docs/formats.md section 15): rates, throughput and lost samples. Pure: a frame in, a frame out.

Per test (payload x demand x recovery time): Sent is what the writer took in the test time, Publication
time runs from the test's start to the end of its last burst; Received is what the subscriber got,
Subscription time runs from the test's start to the arrival of its last sample (one machine, one
steady clock). Rates divide counts by those times; throughput counts the payload's bytes only (Mb/s =
bits per microsecond), so it compares across transports and Fast DDS versions whatever the headers.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import schema as s

BITS_PER_BYTE = 8


def _per_second(count: pd.Series, time_us: pd.Series) -> np.ndarray:
    """count / time, 0 where nothing was timed (a test whose one sample arrived at its start)."""
    time = time_us.to_numpy(dtype=float)
    return np.divide(count.to_numpy(dtype=float) * 1e6, time, out=np.zeros_like(time), where=time > 0)


def _megabits_per_second(count: pd.Series, payload: pd.Series, time_us: pd.Series) -> np.ndarray:
    bits = count.to_numpy(dtype=float) * payload.to_numpy(dtype=float) * BITS_PER_BYTE
    time = time_us.to_numpy(dtype=float)
    return np.divide(bits, time, out=np.zeros_like(time), where=time > 0)


def throughput_table(counted: pd.DataFrame) -> pd.DataFrame:
    """The harness's columns (s.THROUGHPUT_HARNESS_COLUMNS) -> s.THROUGHPUT_COLUMNS, same row order."""
    table = pd.DataFrame({
        s.PAYLOAD: counted[s.PAYLOAD].astype(np.int64),
        s.DEMAND: counted[s.DEMAND].astype(np.int64),
        s.RECOVERY_TIME: counted[s.RECOVERY_TIME].astype(np.int64),
        s.SENT: counted[s.SENT].astype(np.int64),
        s.PUBLICATION_TIME: counted[s.PUBLICATION_TIME].astype(float),
        s.PUBLICATION_RATE: _per_second(counted[s.SENT], counted[s.PUBLICATION_TIME]),
        s.PUBLICATION_THROUGHPUT: _megabits_per_second(counted[s.SENT], counted[s.PAYLOAD], counted[s.PUBLICATION_TIME]),
        s.RECEIVED: counted[s.RECEIVED].astype(np.int64),
        s.LOST: (counted[s.SENT] - counted[s.RECEIVED]).astype(np.int64),
        s.SUBSCRIPTION_TIME: counted[s.SUBSCRIPTION_TIME].astype(float),
        s.SUBSCRIPTION_RATE: _per_second(counted[s.RECEIVED], counted[s.SUBSCRIPTION_TIME]),
        s.SUBSCRIPTION_THROUGHPUT: _megabits_per_second(counted[s.RECEIVED], counted[s.PAYLOAD],
                                                        counted[s.SUBSCRIPTION_TIME]),
    })
    return table.reset_index(drop=True)


def keys_of(table: pd.DataFrame) -> list[tuple[int, int, int]]:
    """(payload, demand, recovery time) of every row, in order."""
    return list(zip(table[s.PAYLOAD].astype(int), table[s.DEMAND].astype(int), table[s.RECOVERY_TIME].astype(int)))


def expected_tests(payloads, demands, recovery_times_ms) -> list[tuple[int, int, int]]:
    """The harness's order: payload, then demand, then recovery time."""
    return [(int(p), int(d), int(r)) for p in payloads for d in demands for r in recovery_times_ms]


def best_subscription_throughput(table: pd.DataFrame) -> tuple[int, int, float] | None:
    """(payload, demand, Mb/s) of the row with the highest subscription throughput, for progress lines."""
    if table is None or table.empty or s.SUBSCRIPTION_THROUGHPUT not in table.columns:
        return None
    row = table.loc[table[s.SUBSCRIPTION_THROUGHPUT].idxmax()]
    return int(row[s.PAYLOAD]), int(row[s.DEMAND]), float(row[s.SUBSCRIPTION_THROUGHPUT])
