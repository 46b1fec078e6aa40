"""Synthetic experiments for the analysis benchmarks: realistic shapes, no Fast DDS needed.

Latencies are lognormal around a base that grows with the transport's cost and the payload, with a
few outliers per payload (scheduler hiccups, retransmissions), like the published Fast DDS data.
A results store gets summaries and metadata only (what the history reads), with a slow drift, day
to day noise and one regression step, so that the history plots have something to show.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from perfgate import files
from perfgate import schema as s

PLATFORM = {"id": "synthetic-x86_64-8c", "cpu_model": "Synthetic CPU @ 3.0GHz", "cores": 8,
            "kernel": "6.1.0-synthetic", "governor": "performance", "hostname": "bench"}
BASE_TIME = datetime(2024, 1, 1, 2, 0, tzinfo=timezone.utc)


def base_latency(sub: s.SubExperiment, payload: int) -> float:
    """Median round trip in microseconds of a sub-experiment at a payload (made up, plausible)."""
    transport = {"intraprocess": 8.0, "udpv4": 60.0, "tcpv4": 85.0, "shm": 25.0, "udp": 30.0, "tcp": 40.0}
    base = transport[sub.transport] * (1.15 if sub.reliability == "reliable" else 1.0)
    base *= 1.4 if sub.security else 1.0
    per_kib = 0.4 if sub.transport == "intraprocess" else 4.0
    return base + per_kib * payload / 1024


def raw_latencies(rng: np.random.Generator, median: float, samples: int) -> np.ndarray:
    latencies = median * rng.lognormal(mean=0.0, sigma=0.12, size=samples)
    outliers = rng.random(samples) < 0.002
    latencies[outliers] *= rng.uniform(3.0, 30.0, size=int(outliers.sum()))
    return latencies


def metadata(label: str, created: datetime, commit: str, samples: int, subs: list[str]) -> dict:
    return {
        "label": label,
        "created_utc": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "fastdds": {"version": "2.9.1", "commit": commit, "source": s.FASTDDS_SOURCE_SYSTEM, "prefix": "/usr"},
        "harness": {"name": "synthetic", "version": "1", "warmup": 0},
        "latency_definition": s.ROUND_TRIP,
        "samples": samples,
        "payloads": list(s.PAYLOADS),
        "subexperiments": {sub: {"outcome": s.OUTCOME_OK, "error": None} for sub in subs},
        "platform": dict(PLATFORM),
    }


def write_raw_experiment(folder: Path, samples: int = s.DEFAULT_SAMPLES, seed: int = 0,
                         subs: tuple[str, ...] = s.DEFAULT_SUBEXPERIMENT_NAMES) -> Path:
    """One experiment folder with a raw measurements CSV per sub-experiment and its metadata."""
    rng = np.random.default_rng(seed)
    folder = Path(folder)
    for sub in subs:
        latencies = np.concatenate([raw_latencies(rng, base_latency(s.KNOWN_SUBEXPERIMENTS[sub], p), samples)
                                    for p in s.PAYLOADS])
        raw = pd.DataFrame({s.SAMPLE: np.arange(1, latencies.size + 1),
                            s.PAYLOAD: np.repeat(s.PAYLOADS, samples), s.LATENCY: latencies})
        files.write_text(folder / s.raw_csv_name(sub), raw.to_csv(index=False, float_format="%.4f"))
    files.write_metadata(folder, metadata(folder.name, BASE_TIME, "0" * 40, samples, list(subs)))
    return folder


def summary_rows(rng: np.random.Generator, sub: s.SubExperiment, level: float, samples: int) -> pd.DataFrame:
    """A plausible summary: percentiles in order, Max with the occasional outlier."""
    medians = np.array([base_latency(sub, p) for p in s.PAYLOADS]) * level * rng.lognormal(0, 0.02, len(s.PAYLOADS))
    p90 = medians * rng.uniform(1.12, 1.2, medians.size)
    p99 = medians * rng.uniform(1.3, 1.7, medians.size)
    p9999 = p99 * rng.uniform(2.0, 6.0, medians.size)
    maxima = p9999 * np.exp(np.abs(rng.normal(0.3, 0.5, medians.size)))  # never below the 99.99 %
    return pd.DataFrame({
        s.BYTES: list(s.PAYLOADS), s.SAMPLES: samples, s.MAX: maxima, s.MIN: medians * 0.82,
        s.MEAN: medians * 1.05, s.MEDIAN: medians, s.STDEV: medians * 0.2, s.MEAN_JITTER: medians * 0.08,
        s.MAX_JITTER: maxima * 0.95, s.P90: p90, s.P99: p99, s.P9999: p9999,
    }).loc[:, list(s.SUMMARY_COLUMNS)]


def write_store(store: Path, experiments: int = 200, seed: int = 0, samples: int = s.DEFAULT_SAMPLES,
                subs: tuple[str, ...] = s.DEFAULT_SUBEXPERIMENT_NAMES) -> Path:
    """`<store>/experiments/<label>/` with summaries and metadata of `experiments` nightly runs."""
    rng = np.random.default_rng(seed)
    regression_at = int(experiments * 0.75)
    for index in range(experiments):
        commit = f"{rng.integers(0, 2**63):016x}{index:024x}"
        label = f"nightly-{commit[:8]}"
        folder = Path(store) / s.STORE_EXPERIMENTS_DIR / label
        drift = 1.0 + 0.0005 * index + (0.12 if index >= regression_at else 0.0)
        for sub in subs:
            files.write_csv(folder / s.summary_csv_name(sub),
                            summary_rows(rng, s.KNOWN_SUBEXPERIMENTS[sub], drift, samples))
        files.write_metadata(folder, metadata(label, BASE_TIME + timedelta(days=index), commit, samples, list(subs)))
    return Path(store)


def requirements_for(subs: tuple[str, ...] = s.DEFAULT_SUBEXPERIMENT_NAMES, margin: float = 1.18) -> pd.DataFrame:
    """Requirements a little above the synthetic store's early runs (the regression crosses some)."""
    rows = []
    for sub in subs:
        for payload in s.PAYLOADS:
            median = base_latency(s.KNOWN_SUBEXPERIMENTS[sub], payload) * margin
            rows.append({s.EXPERIMENT_TYPE: sub, s.BYTES: payload, s.MEDIAN: median, s.P99: median * 1.8,
                         s.MAX: median * 60})
    return pd.DataFrame(rows).loc[:, list(s.REQUIREMENT_COLUMNS)]
