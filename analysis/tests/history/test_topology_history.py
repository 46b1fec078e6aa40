"""The topology history: each stored run's topology tables (topology/<name>/ in the stored experiment),
commit by commit, change points found by the latency history's method (a planted step found at its run,
a late share rising from 0 too), the CSV files and the page's section; the stored tables read as
untrusted (a bad cell makes the experiment damaged, one line naming the file)."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from conftest import metadata, perfgate_in_process, write_experiment
from history_synthetic import summary
from perfgate import files, model
from perfgate import schema as s
from perfgate.history import topology as ht
from perfgate.history.topology_tables import stored_topologies
from perfgate.store import check as store_check
from perfgate.topology import names as n
from perfgate.topology.metadata import TopologyMetadata, write_topology_metadata

SUB = "intraprocess_best_effort"
RUNS = 30
STEP_AT = 20  # light: mean and 99 % latency x 1.3 from here
LATE_FROM = 15  # heavy: no late message before, about 2 % after


def write_topology_run(folder, rng, *, mean_us: float, late_percent: float, cpu: float = 6.0, rss: float = 40000.0,
                       label: str = "run") -> None:
    """A topology run's kept files, consistent as `perfgate topology` writes them: two subscriptions,
    totals their sums, CPU samples after publishing started (300 ms), metadata typed."""
    folder.mkdir(parents=True)
    received = [1000, 500]
    late = [round(r * late_percent / 100) for r in received]
    rows = [{n.NODE: node, n.TOPIC: topic, n.SIZE: 8, n.RECEIVED: r, n.LATE: lt, n.TOO_LATE: 0, n.LOST: 0,
             n.MEAN: mean_us, n.SD: 10.0, n.MIN: 50.0, n.MAX: mean_us * 5, n.FREQUENCY: 100.0, n.DURATION: 10.0,
             n.MEDIAN: mean_us * 0.9, n.P99: mean_us * 3} for (node, topic), r, lt in
            zip([("a", "x"), ("b", "y")], received, late)]
    files.write_csv(folder / n.LATENCY_ALL_CSV, pd.DataFrame(rows, columns=list(n.LATENCY_ALL_COLUMNS)))
    total = {n.RECEIVED: sum(received), n.MEAN: mean_us, n.LATE: sum(late),
             n.LATE_PERCENT: 100 * sum(late) / sum(received), n.TOO_LATE: 0, n.TOO_LATE_PERCENT: 0.0, n.LOST: 0,
             n.LOST_PERCENT: 0.0, n.MEDIAN: mean_us * 0.9, n.P99: mean_us * 3 * rng.lognormal(0, 0.02)}
    files.write_csv(folder / n.LATENCY_TOTAL_CSV, pd.DataFrame([total], columns=list(n.LATENCY_TOTAL_WRITTEN)))
    times = [200.0, 700.0, 1200.0, 1700.0]
    files.write_csv(folder / n.RESOURCES_CSV, pd.DataFrame({
        n.RESOURCE_TIME: times, n.PROCESS: n.ALL_NODES_PROCESS, n.RESOURCE_CPU: [50.0] + [cpu] * 3,
        n.RESOURCE_ARENA: 900.0, n.RESOURCE_IN_USE: 800.0, n.RESOURCE_MMAP: 0.0, n.RESOURCE_RSS: rss,
        n.RESOURCE_VSZ: rss * 4}))
    write_topology_metadata(folder, TopologyMetadata.record(
        kind=model.KIND_TOPOLOGY, label=label, outcome=s.OUTCOME_OK, error=None, nodes=2, subscriptions=2,
        time_s=10.0, publishing_start_ms=300.0))


def synthetic_store(root) -> None:
    rng = np.random.default_rng(26)
    experiments = root / s.STORE_EXPERIMENTS_DIR
    for index in range(RUNS):
        label = f"nightly-{index:03d}"
        folder = experiments / label
        meta = metadata(label, f"2026-10-{index // 24 + 1:02d}T{index % 24:02d}:00:00Z", commit=f"{index:02d}" + "ab" * 19)
        write_experiment(folder, {SUB: summary({16: 10.0 * rng.lognormal(0, 0.02)})}, meta)
        light = 300.0 * rng.lognormal(0, 0.03) * (1.3 if index >= STEP_AT else 1.0)
        write_topology_run(folder / n.GATE_TOPOLOGY_DIR / "light", rng, mean_us=light,
                           late_percent=1.0 + rng.normal(0, 0.1), cpu=6.0 * rng.lognormal(0, 0.03),
                           rss=40000 * rng.lognormal(0, 0.01))
        write_topology_run(folder / n.GATE_TOPOLOGY_DIR / "heavy", rng, mean_us=800.0 * rng.lognormal(0, 0.03),
                           late_percent=(2.0 + rng.normal(0, 0.2)) if index >= LATE_FROM else 0.0,
                           cpu=30.0 * rng.lognormal(0, 0.03), rss=90000 * rng.lognormal(0, 0.01))


def requirements_file(tmp_path):
    path = tmp_path / "requirements.csv"
    files.write_csv(path, pd.DataFrame([{s.EXPERIMENT_TYPE: SUB, s.BYTES: 16, s.MEDIAN: 1e6, s.P99: 1e6, s.MAX: 1e6}],
                                       columns=list(s.REQUIREMENT_COLUMNS)))
    return path


def history(tmp_path, *options):
    return perfgate_in_process("history", "--requirements", str(requirements_file(tmp_path)), "--experiments-results",
                               str(tmp_path / "store"), "--plots-directory", str(tmp_path / "plots"), *options)


def test_a_planted_step_and_a_late_share_rising_from_zero_are_found_at_their_runs(tmp_path):
    synthetic_store(tmp_path / "store")
    result = history(tmp_path, "--no-plots")
    assert result.returncode == 0, result.stderr
    changes = pd.read_csv(tmp_path / "plots" / ht.CHANGE_POINTS_CSV, keep_default_na=False)
    found = {(row[ht.TOPOLOGY], row["Statistic"], int(row["Index"])) for _, row in changes.iterrows()}
    assert found == {("light", n.MEAN, STEP_AT), ("light", n.P99, STEP_AT), ("heavy", n.LATE_PERCENT, LATE_FROM)}
    mean = changes[changes["Statistic"] == n.MEAN].iloc[0]
    assert 25 < float(mean["Change [%]"]) < 35 and mean["Fast DDS commit"].startswith(f"{STEP_AT:02d}")
    late = changes[changes["Statistic"] == n.LATE_PERCENT].iloc[0]
    # a share from 0: no ratio, the medians before and after say it
    assert late["Change [%]"] == "" and float(late["Before"]) == 0.0 and 1.5 < float(late["After"]) < 2.5
    assert float(late["p-value"]) <= 0.01
    table = pd.read_csv(tmp_path / "plots" / ht.HISTORY_CSV)
    assert list(table.columns) == list(ht.HISTORY_COLUMNS) and len(table) == 2 * RUNS
    light = table[table[ht.TOPOLOGY] == "light"].set_index("Index")
    assert math.isclose(light.at[0, n.RESOURCE_CPU], 6.0, rel_tol=0.1)  # the samples while publishing only
    assert "history: topology: 2 topologies (heavy, light) in 30 run(s); 3 change point(s), 3 regression(s)" \
        in result.stdout
    assert "REGRESSION: topology heavy late[%] from 0 (0.000 -> " in result.stdout


def test_a_flat_topology_history_has_no_change_point():
    rng = np.random.default_rng(7)
    table = pd.DataFrame({ht.TOPOLOGY: "light", "Index": range(RUNS), s.LABEL: "r", "Fast DDS commit": None,
                          n.RECEIVED: 1500.0, n.LATE_PERCENT: rng.choice([0.0, 0.067, 0.133], RUNS),
                          n.TOO_LATE_PERCENT: 0.0, n.LOST_PERCENT: 0.0, n.MEAN: 300 * rng.lognormal(0, 0.05, RUNS),
                          n.P99: 900 * rng.lognormal(0, 0.1, RUNS), n.RESOURCE_CPU: 6 * rng.lognormal(0, 0.05, RUNS),
                          n.RESOURCE_RSS: 40000 * rng.lognormal(0, 0.01, RUNS)})
    described = pd.DataFrame({s.LABEL: [f"r{i}" for i in range(RUNS)], "Fast DDS commit": [None] * RUNS})
    assert ht.topology_change_points(table, described).empty


@pytest.mark.heavy
def test_the_page_has_a_topology_section_with_one_chart_per_statistic(tmp_path):
    synthetic_store(tmp_path / "store")
    result = history(tmp_path)
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "plots" / "history.html").read_text()
    assert '<h2 id="topologies">Topologies</h2>' in page
    for index in range(len(ht.STATISTICS)):
        assert f'<div class="chart" id="chart-topology-{index}"></div>' in page
    assert page.count("Topologies: ") == len(ht.STATISTICS)  # each chart's title, in the charts' data


@pytest.mark.parametrize("damage, named", [
    (lambda f: f.joinpath(n.LATENCY_TOTAL_CSV).write_text(
        f.joinpath(n.LATENCY_TOTAL_CSV).read_text().replace("\n1500,", "\n-1500,", 1)), "'received[#]' is negative"),
    (lambda f: f.joinpath(n.RESOURCES_CSV).write_text(
        f.joinpath(n.RESOURCES_CSV).read_text().replace(",all,", ",<b>x</b>,", 1)), "not a node's name"),
    (lambda f: f.joinpath(n.LATENCY_ALL_CSV).unlink(), "latency_all.csv is missing"),
    (lambda f: f.joinpath(s.METADATA_FILE).write_text(json.dumps({"kind": "topology", "nodes": "2"})),
     "'nodes' is '2'"),
    (lambda f: f.joinpath(n.LATENCY_TOTAL_CSV).write_text(
        f.joinpath(n.LATENCY_TOTAL_CSV).read_text().replace(",0.000,0,0.000,", ",0.000,0,5.000,", 1)),
     "its counts give"),
])
def test_a_damaged_topology_table_skips_its_experiment_with_one_line_naming_the_file(tmp_path, damage, named):
    rng = np.random.default_rng(1)
    experiments = tmp_path / "store" / s.STORE_EXPERIMENTS_DIR
    for index in range(3):
        folder = experiments / f"run-{index}"
        write_experiment(folder, {SUB: summary({16: 10.0})}, metadata(f"run-{index}", f"2026-10-0{index + 1}T00:00:00Z"))
        write_topology_run(folder / n.GATE_TOPOLOGY_DIR / "light", rng, mean_us=300.0, late_percent=0.0)
    damage(experiments / "run-1" / n.GATE_TOPOLOGY_DIR / "light")
    result = history(tmp_path, "--no-plots")
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and named in warnings[0] and "experiment run-1 skipped" in warnings[0], result.stderr
    assert "run-1/topology/light/" in warnings[0] and "Traceback" not in result.stderr
    assert len(pd.read_csv(tmp_path / "plots" / ht.HISTORY_CSV)) == 2
    # push and pull judge an experiment as history does: never uploaded, never landed
    assert named in store_check.experiment_damage(experiments / "run-1").problem
    assert store_check.experiment_damage(experiments / "run-0") is None


def test_a_run_without_figures_is_a_gap_and_said_not_a_pass(tmp_path):
    rng = np.random.default_rng(2)
    folder = tmp_path / "exp"
    write_topology_run(folder / n.GATE_TOPOLOGY_DIR / "light", rng, mean_us=300.0, late_percent=0.0)
    for name in (n.LATENCY_TOTAL_CSV, n.LATENCY_ALL_CSV, n.RESOURCES_CSV):
        (folder / n.GATE_TOPOLOGY_DIR / "light" / name).unlink()
    [run] = stored_topologies(folder)
    assert run.name == "light" and all(math.isnan(value) for value in run.figures.values())
