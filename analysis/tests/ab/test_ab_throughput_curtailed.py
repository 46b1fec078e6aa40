"""Curtailed rounds in the throughput A/B: the rounds read back while measuring (ab.throughput's
throughput_test_values) and a curtailed folder's verdict equal to the full one's."""
from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest

from conftest import perfgate_in_process
from perfgate import files
from perfgate import schema as s
from perfgate.ab import curtail
from perfgate.ab import throughput as ab_throughput
from perfgate.ab import throughput_report as tr
from perfgate.ab import verdict as v
from perfgate.throughput.table import throughput_table

SUBS = ["intraprocess_best_effort", "interprocess_best_effort", "interprocess_reliable"]
ROUNDS = 13


def table_for(factor: float, rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for payload in (16, 16384):
        time_us = 1e6 / (factor * rng.lognormal(0.0, 0.02))
        rows.append({s.PAYLOAD: payload, s.DEMAND: 1000, s.RECOVERY_TIME: 0, s.SENT: 50_000,
                     s.PUBLICATION_TIME: round(time_us * 0.9, 3), s.RECEIVED: 50_000, s.SUBSCRIPTION_TIME: round(time_us, 3)})
    return throughput_table(pd.DataFrame(rows))


def write_ab(folder, candidate_factor: dict[str, float], seed: int) -> None:
    rng = np.random.default_rng(seed)
    for r in range(ROUNDS):
        for arm in s.AB_ARMS:
            arm_dir = folder / s.AB_ROUNDS_DIR / f"{r + 1:02d}" / arm
            arm_dir.mkdir(parents=True)
            for sub in SUBS:
                factor = candidate_factor.get(sub, 1.0) if arm == "candidate" else 1.0
                files.write_csv(arm_dir / s.throughput_csv_name(sub), table_for(factor, rng))
    files.write_metadata(folder, {"kind": tr.KIND, "requested_subexperiments": SUBS, "rounds": ROUNDS,
                                  "payloads": [16, 16384],
                                  "throughput": {"demands": [1000], "recovery_times_ms": [0], "time_s": 1.0}})


@pytest.mark.heavy  # six verdicts
def test_a_curtailed_throughput_ab_decides_as_the_full_one(tmp_path):
    for seed, drops in enumerate([{SUBS[1]: 0.90}, {}, {SUBS[0]: 0.97, SUBS[2]: 0.80}]):
        full, cut = tmp_path / f"full-{seed}", tmp_path / f"cut-{seed}"
        write_ab(full, drops, seed)
        shutil.copytree(full, cut)
        values = ab_throughput.throughput_test_values(full, SUBS)  # what perfgate ab-throughput reads back
        assert set(values) == {(sub, s.SUBSCRIPTION_THROUGHPUT) for sub in SUBS}
        used = curtail.replay(values, SUBS, ROUNDS, math.log1p(v.DEFAULT_THRESHOLD), v.DEFAULT_ALPHA)
        for r in range(ROUNDS):
            for sub in SUBS:
                if r >= used[sub]:
                    for arm in s.AB_ARMS:
                        (cut / s.AB_ROUNDS_DIR / f"{r + 1:02d}" / arm / s.throughput_csv_name(sub)).unlink()
        curtail.write_record(cut, ROUNDS, {sub: n for sub, n in used.items() if n < ROUNDS},
                             v.DEFAULT_THRESHOLD, v.DEFAULT_ALPHA)
        codes = [perfgate_in_process("verdict", "--ab-directory", str(d), "--no-plots").returncode for d in (full, cut)]
        assert codes[0] == codes[1] == (s.EXIT_REGRESSION if drops else s.EXIT_OK)
        tables = [pd.read_csv(d / s.VERDICT_CSV) for d in (full, cut)]
        assert tables[0][s.STATUS].tolist() == tables[1][s.STATUS].tolist()
        assert tables[1][v.ROUNDS].tolist() == [used[sub] for sub in tables[1][s.EXPERIMENT_TYPE]]
        record = json.loads((cut / s.VERDICT_JSON).read_text())
        assert record["planned_rounds"] == ROUNDS and record["undecided"] == []
        assert min(used.values()) < ROUNDS  # rounds were saved
        if record["stopped"]:
            assert f" of {ROUNDS} |" in (cut / s.REPORT_MARKDOWN).read_text()
