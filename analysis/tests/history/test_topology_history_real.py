"""The topology history of a small store made of real topology runs (the system Fast DDS): the gate's
store keeps each run's tables and metadata (topology/<name>/, not its plots or events), and history's
per-run figures are those check-topology measures of the same run."""
from __future__ import annotations

import math

import pandas as pd

from conftest import REPO_ROOT, metadata, perfgate_in_process, write_experiment
from history_synthetic import summary
from perfgate import files
from perfgate import schema as s
from perfgate.gate import run as gate
from perfgate.history import topology as ht
from perfgate.store import experiments as store
from perfgate.store.branch import REGULAR_FILE, Entry, judge
from perfgate.topology import names as n
from perfgate.topology.check import measured_figures

LIGHT = REPO_ROOT / "topologies" / "light.json"
SUB = "intraprocess_best_effort"


def test_real_topology_runs_are_kept_by_the_store_and_followed_by_history(tmp_path, harness_paths):
    runs = []
    for index in range(2):
        output = tmp_path / "gate" / f"out-{index}"
        folder = output / n.GATE_TOPOLOGY_DIR / "light"
        folder.parent.mkdir(parents=True)
        result = perfgate_in_process("topology", "--topology", str(LIGHT), "--time", "2", "--output", str(folder))
        assert result.returncode == 0, result.stderr
        write_experiment(output, {SUB: summary({16: 10.0})},
                         metadata(f"run-{index}", f"2026-10-0{index + 1}T00:00:00Z", commit=f"{index}" * 40))
        kept = gate.store_files(output)
        topology_kept = sorted(name for name in kept if name.startswith(f"{n.GATE_TOPOLOGY_DIR}/"))
        # the tables and metadata; never events.csv, topology.json or the plots the run drew
        assert topology_kept == sorted(f"topology/light/{name}" for name in n.STORED_FILES)
        assert (folder / n.EVENTS_CSV).is_file() and (folder / s.PLOTS_DIR).is_dir()
        stored = store.add_experiment(tmp_path / "store", f"run-{index}", kept)
        # what a results branch may hold of it: every kept file judged good, an events.csv not
        entries = [Entry(REGULAR_FILE, "blob", "0" * 40, path.stat().st_size, f"experiments/run-{index}/{name}")
                   for name, path in store.kept_files(stored).items()]
        assert judge(entries).bad == {} and len(judge(entries).good[f"run-{index}"]) == len(kept)
        extra = Entry(REGULAR_FILE, "blob", "0" * 40, 10, f"experiments/run-{index}/topology/light/events.csv")
        assert "not a file the store keeps" in judge([*entries, extra]).bad[f"run-{index}"]
        runs.append(folder)

    requirements = tmp_path / "requirements.csv"
    files.write_csv(requirements, pd.DataFrame([{s.EXPERIMENT_TYPE: SUB, s.BYTES: 16, s.MEDIAN: 1e6, s.P99: 1e6,
                                                 s.MAX: 1e6}], columns=list(s.REQUIREMENT_COLUMNS)))
    plots = tmp_path / "plots"
    result = perfgate_in_process("history", "--requirements", str(requirements), "--experiments-results",
                                 str(tmp_path / "store"), "--plots-directory", str(plots), "--no-plots")
    assert result.returncode == 0, result.stderr
    assert "history: topology: 1 topology (light) in 2 run(s); 0 change point(s)" in result.stdout
    table = pd.read_csv(plots / ht.HISTORY_CSV)
    assert list(table[ht.TOPOLOGY]) == ["light", "light"] and list(table["Index"]) == [0, 1]
    for (_, row), folder in zip(table.iterrows(), runs):
        figures, _, _ = measured_figures(folder)  # check-topology's own reading of the run
        total = pd.read_csv(folder / n.LATENCY_TOTAL_CSV).iloc[0]
        assert row[n.RECEIVED] == total[n.RECEIVED] > 0
        for column in (n.LATE_PERCENT, n.TOO_LATE_PERCENT, n.LOST_PERCENT, n.MEAN, n.P99):
            assert math.isclose(row[column], total[column], abs_tol=0.001), column
        assert total[n.MEDIAN] <= total[n.P99]
        for metric, value in figures[n.TARGET_RESOURCES].items():
            assert math.isclose(row[metric], value, rel_tol=1e-6, abs_tol=0.001), metric
