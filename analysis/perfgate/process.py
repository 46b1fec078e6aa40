"""process: raw measurements -> summary (CONTRACT.md section 3), vectorised over all samples.

`summarise` is the pure computation; the functions below it read, write and plot around it.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import schema as s


def summarise(raw: pd.DataFrame) -> pd.DataFrame:
    """One summary row per payload, in the order payloads first appear.

    - percentiles: linear interpolation between closest ranks (position q*(n-1));
    - Stdev: population standard deviation;
    - jitter: |x[i] - x[i-1]| between consecutive samples of one payload, in measured order.
    """
    payloads = raw[s.PAYLOAD].to_numpy()
    latencies = raw[s.LATENCY].to_numpy(dtype=float)
    groups = pd.Series(latencies).groupby(payloads, sort=False)

    jitter = np.abs(groups.diff().to_numpy())  # NaN at each payload's first sample
    jitter_groups = pd.Series(jitter).groupby(payloads, sort=False)

    summary = pd.DataFrame(
        {
            s.BYTES: groups.size().index.astype(np.int64),
            s.SAMPLES: groups.size().to_numpy(),
            s.MAX: groups.max().to_numpy(),
            s.MIN: groups.min().to_numpy(),
            s.MEAN: groups.mean().to_numpy(),
            s.MEDIAN: groups.quantile(s.PERCENTILES[s.MEDIAN]).to_numpy(),
            s.STDEV: groups.std(ddof=0).to_numpy(),
            s.MEAN_JITTER: jitter_groups.mean().to_numpy(),
            s.MAX_JITTER: jitter_groups.max().to_numpy(),
        }
    )
    for column in (s.P90, s.P99, s.P9999):
        summary[column] = groups.quantile(s.PERCENTILES[column]).to_numpy()
    return summary.loc[:, list(s.SUMMARY_COLUMNS)]
