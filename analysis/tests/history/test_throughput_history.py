"""The throughput history: every stored run's throughput tables, commit by commit, the change points
with the throughput's direction (a drop is the regression), and the plots."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from perfgate import files
from perfgate import schema as s
from perfgate.history import throughput as th
from perfgate.throughput.table import throughput_table
from conftest import metadata, scaled, write_experiment

SUB = "interprocess_reliable"
NAME = s.throughput_name(SUB)
RUNS = 30
DROP_AT = 17


def throughput_run(rng: np.random.Generator, dropped: bool) -> pd.DataFrame:
    """A real-shaped table: payloads x demands 100 and 1000, 1 s tests; with `dropped`, the 16384 B x
    1000 test gets a quarter fewer samples through."""
    rows = []
    for payload in (16, 1024, 16384):
        for demand in (100, 1000):
            level = 0.75 if dropped and (payload, demand) == (16384, 1000) else 1.0
            rate = level * 15000 * (1 - 0.3 * (payload == 16384)) * rng.normal(1, 0.01)
            received = int(rate)
            rows.append((payload, demand, 5, received, 1_000_000.0, received, 1_000_000.0))
    return throughput_table(pd.DataFrame(rows, columns=list(s.THROUGHPUT_HARNESS_COLUMNS)))


@pytest.mark.heavy
def test_a_drop_is_found_at_its_commit_and_listed_as_a_regression(tmp_path, real_summary):
    rng = np.random.default_rng(3)
    root = tmp_path / "store" / s.STORE_EXPERIMENTS_DIR
    for index in range(RUNS):
        folder = root / f"run-{index:02d}"
        meta = metadata(f"run-{index:02d}", f"2026-{10 + index // 28}-{index % 28 + 1:02d}T12:00:00Z")
        meta["fastdds"]["commit"] = f"{index:02d}" + "ab" * 19
        write_experiment(folder, {"intraprocess_best_effort": scaled(real_summary, 1.0)}, meta)
        # the reliable 16384 B x 1000 test loses a quarter of its throughput from run DROP_AT on
        table = throughput_run(rng, dropped=index >= DROP_AT)
        files.write_csv(folder / s.throughput_csv_name(SUB), table)
    requirements = tmp_path / "req.csv"
    rows = [{s.EXPERIMENT_TYPE: "intraprocess_best_effort", s.BYTES: int(b), s.MEDIAN: 1e6, s.P99: 1e6, s.MAX: 1e6}
            for b in real_summary[s.BYTES]]
    files.write_csv(requirements, pd.DataFrame(rows, columns=list(s.REQUIREMENT_COLUMNS)))
    plots = tmp_path / "plots"
    completed = subprocess.run([sys.executable, "-m", "perfgate.cli", "history", "--requirements", str(requirements),
                                "--experiments-results", str(tmp_path / "store"), "--plots-directory", str(plots)],
                               capture_output=True, text=True)
    assert completed.returncode == s.EXIT_OK, completed.stderr
    changes = pd.read_csv(plots / th.CHANGE_POINTS_CSV)
    assert len(changes) == 1, changes
    found = changes.iloc[0]
    assert (found[s.EXPERIMENT_TYPE], found[s.BYTES], found["Statistic"]) == (
        NAME, 16384, "Subscription throughput x1000 5 ms")
    assert found["Index"] == DROP_AT and found["Fast DDS commit"].startswith(f"{DROP_AT:02d}")
    assert -27 < found["Change [%]"] < -23
    assert f"REGRESSION: {NAME} Subscription throughput x1000 5 ms at 16384 B -2" in completed.stdout
    assert "history: throughput: 1 change point(s), 1 regression(s) (drops)" in completed.stdout
    # one event, events.csv's columns: the sub-experiment as a whole dropped (one of its six tests by a quarter)
    events = pd.read_csv(plots / th.EVENTS_CSV, dtype={"Payloads": str})
    assert len(events) == 1, events
    event = events.iloc[0]
    assert (event[s.EXPERIMENT_TYPE], event["Index"], event["Payloads"], event["Statistics"]) == (
        NAME, DROP_AT, "16384", "Subscription throughput x1000 5 ms")
    assert -6 < event["Change [%]"] < -3
    assert "history: throughput: 1 event(s), 1 regression(s) (drops)" in completed.stdout
    assert f"  REGRESSION: {NAME} -" in completed.stdout
    for demand in (100, 1000):
        assert (plots / NAME / f"throughput_x{demand}_5ms.png").stat().st_size > 10000


def test_an_improvement_is_not_a_regression():
    values = pd.DataFrame({s.EXPERIMENT_TYPE: NAME, s.BYTES: 16, "Statistic": th.series_name(100, 5),
                           "Index": range(RUNS), "Value": [10.0 + 0.01 * (i % 3) for i in range(RUNS // 2)] +
                           [14.0 + 0.01 * (i % 3) for i in range(RUNS // 2)]})
    described = pd.DataFrame({s.LABEL: [f"r{i}" for i in range(RUNS)], "Fast DDS commit": [None] * RUNS})
    changes = th.throughput_change_points(values, described)
    assert len(changes) == 1 and changes.iloc[0]["Change [%]"] > 0
    assert th.change_point_lines(changes)[0].startswith("  improvement: ")
