"""Throughput folders derived from harness rows, as `perfgate throughput` writes them, and throughput
A/B folders of known drops, as `perfgate ab-throughput` leaves them."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from perfgate import files
from perfgate import schema as s
from perfgate.ab import curtail
from perfgate.ab import throughput as ab_throughput
from perfgate.ab import throughput_report as tr
from perfgate.ab import verdict as v
from perfgate.throughput.files import read_harness_throughput
from perfgate.throughput.table import throughput_table

HARNESS_HEADER = ",".join(s.THROUGHPUT_HARNESS_COLUMNS) + "\n"


def write_experiment(folder: Path, sub: str, harness_rows: str) -> pd.DataFrame:
    """A throughput folder with one sub-experiment's table, derived from harness rows as a run does."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "counts.csv").write_text(HARNESS_HEADER + harness_rows)
    table = throughput_table(read_harness_throughput(folder / "counts.csv"))
    (folder / "counts.csv").unlink()
    files.write_csv(folder / s.throughput_csv_name(sub), table)
    return table


def throughput_ab_table(factor: float, rng: np.random.Generator) -> pd.DataFrame:
    """One arm's throughput table of a round: two payloads, `factor` times the baseline's rate, 2 % noise."""
    rows = []
    for payload in (16, 16384):
        time_us = 1e6 / (factor * rng.lognormal(0.0, 0.02))
        rows.append({s.PAYLOAD: payload, s.DEMAND: 1000, s.RECOVERY_TIME: 0, s.SENT: 50_000,
                     s.PUBLICATION_TIME: round(time_us * 0.9, 3), s.RECEIVED: 50_000, s.SUBSCRIPTION_TIME: round(time_us, 3)})
    return throughput_table(pd.DataFrame(rows))


def write_throughput_ab(folder: Path, subs: list[str], rounds: int, candidate_factor: dict[str, float], seed: int) -> None:
    """A throughput A/B's rounds and metadata.json; the candidate's rate `candidate_factor` times the baseline's."""
    rng = np.random.default_rng(seed)
    for r in range(rounds):
        for arm in s.AB_ARMS:
            arm_dir = folder / s.AB_ROUNDS_DIR / f"{r + 1:02d}" / arm
            arm_dir.mkdir(parents=True)
            for sub in subs:
                factor = candidate_factor.get(sub, 1.0) if arm == "candidate" else 1.0
                files.write_csv(arm_dir / s.throughput_csv_name(sub), throughput_ab_table(factor, rng))
    files.write_metadata(folder, {"kind": tr.KIND, "requested_subexperiments": subs, "rounds": rounds,
                                  "payloads": [16, 16384],
                                  "throughput": {"demands": [1000], "recovery_times_ms": [0], "time_s": 1.0}})


def curtail_throughput_ab(folder: Path, subs: list[str], rounds: int) -> dict[str, int]:
    """The throughput A/B as a curtailed `perfgate ab-throughput` would have left it: each sub-experiment's
    tables of the rounds after its tests were decided removed, curtailed.json written; the rounds each used."""
    used = curtail.replay(ab_throughput.throughput_test_values(folder, subs), subs, rounds,
                          math.log1p(v.DEFAULT_THRESHOLD), v.DEFAULT_ALPHA)
    for r in range(rounds):
        for sub in subs:
            if r >= used[sub]:
                for arm in s.AB_ARMS:
                    (folder / s.AB_ROUNDS_DIR / f"{r + 1:02d}" / arm / s.throughput_csv_name(sub)).unlink()
    curtail.write_record(folder, rounds, {sub: n for sub, n in used.items() if n < rounds},
                         v.DEFAULT_THRESHOLD, v.DEFAULT_ALPHA)
    return used
