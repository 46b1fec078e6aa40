"""Synthetic histories for the change-point and history-plot tests: noise like the real runs."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd

from perfgate.history import change_points as cp
from perfgate import files
from perfgate import schema as s

SUBS = s.DEFAULT_SUBEXPERIMENT_NAMES  # the ten
PAYLOADS = s.PAYLOADS  # 16 B to 16 KiB, eleven
BASE = {sub: 10.0 * (1 + i) for i, sub in enumerate(SUBS)}
START = datetime(2026, 1, 1, 2, 0, tzinfo=timezone.utc)


def run_levels(rng: np.random.Generator, runs: int) -> np.ndarray:
    """Per run and sub-experiment, the factor of that run's level, as real nightly runs vary: a
    3 % spread shared by every payload of the run, and one run in twenty in a slow state (10 to
    40 % slower: a busy host, docs/verdict.md "What the noise is")."""
    level = rng.normal(0.0, 0.03, (runs, len(SUBS)))
    slow = rng.random((runs, len(SUBS))) < 0.05
    level[slow] += rng.uniform(0.1, 0.4, int(slow.sum()))
    return np.exp(level)


def synthetic_values(seed: int, runs: int, step_sub: str | None = None, step_at: int = 0,
                     step: float = 1.08) -> pd.DataFrame:
    """`detect`'s input for the ten sub-experiments x eleven payloads x Median/99%/Max; Median of
    `step_sub` multiplied by `step` from run `step_at` on. Each value also has its own 1 % noise."""
    rng = np.random.default_rng(seed)
    levels = run_levels(rng, runs)
    frames = []
    for column, sub in enumerate(SUBS):
        for statistic, factor in zip(cp.STATISTICS, (1.0, 1.5, 20.0)):
            values = BASE[sub] * factor * levels[:, column, None] * rng.lognormal(0, 0.01, (runs, len(PAYLOADS)))
            if statistic == s.MAX:  # Max: a heavy tail of its own, as one stalled round trip makes it
                values *= rng.lognormal(0, 0.5, values.shape)
            if sub == step_sub and statistic == s.MEDIAN:
                values[step_at:] *= step
            frames.append(pd.DataFrame({s.EXPERIMENT_TYPE: sub, s.BYTES: np.tile(PAYLOADS, runs),
                                        cp.STATISTIC: statistic, cp.INDEX: np.repeat(np.arange(runs), len(PAYLOADS)),
                                        cp.VALUE: values.ravel()}))
    return pd.concat(frames, ignore_index=True)


def described(runs: int) -> pd.DataFrame:
    return pd.DataFrame({s.LABEL: [f"nightly-{i:03d}" for i in range(runs)],
                         cp.COMMIT: [f"{i:04x}" + "c" * 36 for i in range(runs)]})


def summary(medians: dict[int, float]) -> pd.DataFrame:
    """A valid summary whose other statistics follow from the median of each payload."""
    median = np.array(list(medians.values()))
    return pd.DataFrame({
        s.BYTES: list(medians), s.SAMPLES: 1000, s.MAX: median * 20, s.MIN: median * 0.8, s.MEAN: median * 1.05,
        s.MEDIAN: median, s.STDEV: median * 0.1, s.MEAN_JITTER: median * 0.05, s.MAX_JITTER: median * 18,
        s.P90: median * 1.2, s.P99: median * 1.5, s.P9999: median * 5,
    }).loc[:, list(s.SUMMARY_COLUMNS)]


def write_store(root, runs: int, step_at: int) -> None:
    rng = np.random.default_rng(11)
    levels = run_levels(rng, runs)
    for index in range(runs):
        summaries = {}
        for column, sub in enumerate(SUBS[:2]):
            median = BASE[sub] * levels[index, column] * (1.08 if sub == SUBS[1] and index >= step_at else 1.0)
            summaries[sub] = summary({p: median * (1 + p / 16384) for p in (16, 1024)})
        folder = root / s.STORE_EXPERIMENTS_DIR / f"run-{index:03d}"
        for sub, table in summaries.items():
            files.write_csv(folder / s.summary_csv_name(sub), table)
        files.write_metadata(folder, {
            "label": f"nightly-{index:03d}", "created_utc": (START + timedelta(days=index)).isoformat(),
            "fastdds": {"version": "3.6.2", "commit": f"{index:02x}" + "a" * 38, "source": "colcon_build"},
            "latency_definition": s.ROUND_TRIP, "platform": {"id": "0123456789abcdef"}})
