"""Curtailed rounds in the throughput A/B: the rounds read back while measuring (ab.throughput's
throughput_test_values) and a curtailed folder's verdict equal to the full one's."""
from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from conftest import perfgate_in_process
from throughput_inputs import curtail_throughput_ab, write_throughput_ab
from perfgate import schema as s
from perfgate.ab import throughput as ab_throughput
from perfgate.ab import verdict as v

SUBS = ["intraprocess_best_effort", "interprocess_best_effort", "interprocess_reliable"]
ROUNDS = 13


@pytest.mark.heavy  # six verdicts
def test_a_curtailed_throughput_ab_decides_as_the_full_one(tmp_path):
    for seed, drops in enumerate([{SUBS[1]: 0.90}, {}, {SUBS[0]: 0.97, SUBS[2]: 0.80}]):
        full, cut = tmp_path / f"full-{seed}", tmp_path / f"cut-{seed}"
        write_throughput_ab(full, SUBS, ROUNDS, drops, seed)
        shutil.copytree(full, cut)
        values = ab_throughput.throughput_test_values(full, SUBS)  # what perfgate ab-throughput reads back
        assert set(values) == {(sub, s.SUBSCRIPTION_THROUGHPUT) for sub in SUBS}
        used = curtail_throughput_ab(cut, SUBS, ROUNDS)  # the rounds after each one's decision removed
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
