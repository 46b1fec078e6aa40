"""The harness's latency histogram (native/src/topology_stats.hpp, the same bins): 64 log-spaced bins
per factor of 2 of the latency in ns, bin b from 2^(b/64) to 2^((b+1)/64) ns, counted message by message
in a fixed size. A quantile read from it (each order statistic taken as its bin's geometric middle,
then numpy's linear interpolation between the two neighbours, kept within the exact min and max) is
within RELATIVE_ERROR of the exact one. Pure: counts in, numbers out."""
from __future__ import annotations

import math

import numpy as np

BINS_PER_OCTAVE = 64
OCTAVES = 42  # 2^42 ns: 73 minutes, beyond the longest run
BINS = BINS_PER_OCTAVE * OCTAVES
RELATIVE_ERROR = 2 ** (1 / (2 * BINS_PER_OCTAVE)) - 1  # 0.54 %: half a bin's width, on a log scale
_MIDDLES_US = np.exp2((np.arange(BINS) + 0.5) / BINS_PER_OCTAVE) / 1000.0


def counts_of(bins: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The dense histogram of sparse (bin, count) pairs; a bin outside the histogram is a ValueError."""
    bins = np.asarray(bins, dtype=np.int64)
    if bins.size and (bins.min() < 0 or bins.max() >= BINS):
        raise ValueError(f"a histogram bin outside 0 to {BINS - 1}")
    dense = np.zeros(BINS, dtype=np.int64)
    np.add.at(dense, bins, np.asarray(counts, dtype=np.int64))
    return dense


def quantile(dense: np.ndarray, q: float, low_us: float, high_us: float) -> float:
    """The q-quantile in us of the latencies counted in `dense` (NaN when there are none)."""
    cumulative = np.cumsum(dense)
    total = int(cumulative[-1]) if cumulative.size else 0
    if total == 0:
        return math.nan
    position = q * (total - 1)  # numpy's "linear": between the order statistics below and above
    below, above = math.floor(position), math.ceil(position)
    value_below, value_above = (_MIDDLES_US[np.searchsorted(cumulative, rank + 1)] for rank in (below, above))
    value = value_below + (position - below) * (value_above - value_below)
    return float(min(max(value, low_us), high_us))
