"""perfgate determine-topology-targets: a performance target from several topology runs (written
tables: latency_total.csv, resources.csv, events.csv, metadata.json as `perfgate topology` writes them),
the percentile across runs plus a margin, with leave-one-out false alarms in the provenance."""
from __future__ import annotations

import json

import pandas as pd

from conftest import perfgate_in_process
from perfgate.topology import names as n
from perfgate.topology.target import read_target

OPTIONS = {"ipc": "on", "processes": "one", "transport": "udpv4", "reliability": "reliable", "history_depth": 10,
           "late_percentage": 20.0, "late_absolute_us": 5000.0, "too_late_percentage": 100.0,
           "too_late_absolute_us": 50000.0}


def _run(folder, cpu, rss, late_percent, topology="light.json", **options):
    """One topology run: discovery at 300 ms, then two CPU samples while publishing (mean `cpu`), RSS peak `rss`."""
    folder.mkdir(parents=True)
    pd.DataFrame([{n.RECEIVED: 10000, n.MEAN: 250.0, n.LATE: int(late_percent * 100), n.LATE_PERCENT: late_percent,
                   n.TOO_LATE: 0, n.TOO_LATE_PERCENT: 0.0, n.LOST: 0, n.LOST_PERCENT: 0.0}]).to_csv(
        folder / n.LATENCY_TOTAL_CSV, index=False)
    pd.DataFrame({n.EVENT_TIME: [300.0], n.EVENT_CALLER: ["SYSTEM"], n.EVENT_CODE: [0],
                  n.EVENT_DESCRIPTION: ["[discovery] all"]}).to_csv(folder / n.EVENTS_CSV, index=False)
    pd.DataFrame({n.RESOURCE_TIME: [200, 500, 1000], n.PROCESS: ["all"] * 3, n.RESOURCE_CPU: [90.0, cpu - 1, cpu + 1],
                  n.RESOURCE_RSS: [rss - 100, rss, rss - 50]}).to_csv(folder / n.RESOURCES_CSV, index=False)
    metadata = {"kind": "topology", "outcome": "complete", "topology_file": f"/somewhere/{topology}", "time_s": 10,
                "options": {**OPTIONS, **options}, "fastdds_version": "3.1.0", "platform": {"id": "vm-2core-x64"}}
    (folder / "metadata.json").write_text(json.dumps(metadata))
    return folder


def _four_runs(root):
    # late[%]: the last run's 0.5 is above what the other three (0.1 each) give even with the margin
    for index, (cpu, rss, late) in enumerate([(10.0, 50000, 0.1), (11.0, 51000, 0.1), (12.0, 52000, 0.1),
                                              (13.0, 53000, 0.5)]):
        _run(root / f"run{index}", cpu, rss, late)
    return root


def test_targets_are_the_99th_percentile_across_runs_plus_the_margin_with_leave_one_out_figures(tmp_path):
    runs = _four_runs(tmp_path / "runs")
    target = tmp_path / "out" / "vm_topology_light.json"
    result = perfgate_in_process("determine-topology-targets", "--experiments-results", str(runs),
                                 "--output-file", str(target), "--margin", "0.25")
    assert result.returncode == 0, result.stdout + result.stderr
    written = json.loads(target.read_text())
    # cpu: 99th percentile of 10..13 (linear) is 12.97, x 1.25 = 16.2125, written rounded up to 16.213
    assert written["resources"] == {"cpu[%]": 16.213, "rss[KB]": 66213}  # 52970 x 1.25 = 66212.5, up to whole KB
    assert written["latency_total"] == {"late[%]": 0.61, "too_late[%]": 0.0, "lost[%]": 0.0}  # 0.488 x 1.25 = 0.61
    assert written["topology_file"] == "light.json" and written["platform"] == "vm-2core-x64"
    # the file is a target check-topology reads, and the runs it came from meet it
    assert [limit.limit for limit in read_target(target).limits] == [16.213, 66213.0, 0.61, 0.0, 0.0]
    checked = perfgate_in_process("check-topology", "--target", str(target), "--experiment-directory",
                                  str(runs / "run3"), "--no-plots")
    assert checked.returncode == 0, checked.stdout
    provenance = json.loads((tmp_path / "out" / "vm_topology_light_provenance.json").read_text())
    alarms = provenance["expected_false_alarms"]
    # left out, run3's late share 0.5 is above 0.1 x 1.25 from the others; every other run meets the rest
    assert alarms["failed_checks_by_left_out_run"] == {"run0": 0, "run1": 0, "run2": 0, "run3": 1}
    assert alarms["unchanged_runs_failing_gate_fraction"] == 0.25 and alarms["checks_per_run"] == 5
    by_margin = {entry["margin"]: entry["failed_checks_by_left_out_run"] for entry in
                 provenance["expected_false_alarms_by_margin"]}
    # with no margin, each largest run misses the target of the others: run3 on cpu, rss and late
    assert by_margin[0.0]["run3"] == 3 and by_margin[1.0] == {"run0": 0, "run1": 0, "run2": 0, "run3": 1}
    assert provenance["runs"] == 4 and provenance["measured"]["resources.cpu[%]"] == [10.0, 11.0, 12.0, 13.0]
    assert "leave-one-out" in result.stdout and "0.250 of 5 checks fail per unchanged run" in result.stdout


def test_runs_of_different_topologies_or_options_are_refused_with_nothing_written(tmp_path):
    runs = tmp_path / "runs"
    _run(runs / "a", 10.0, 50000, 0.1)
    _run(runs / "b", 11.0, 51000, 0.1, topology="heavy.json")
    target = tmp_path / "target.json"
    result = perfgate_in_process("determine-topology-targets", "--experiments-results", str(runs),
                                 "--output-file", str(target))
    assert result.returncode == 2 and "runs of different topologies (light.json and heavy.json)" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not target.exists()
    (runs / "b" / "metadata.json").unlink()
    _run(runs / "c", 11.0, 51000, 0.1, reliability="best_effort")
    (runs / "b").rename(tmp_path / "b")
    result = perfgate_in_process("determine-topology-targets", "--experiments-results", str(runs),
                                 "--output-file", str(target))
    assert result.returncode == 2 and "option reliability is 'best_effort' here and 'reliable'" in result.stderr
    assert not target.exists()


def test_a_run_without_measurements_is_a_missing_result_not_a_target(tmp_path):
    runs = _four_runs(tmp_path / "runs")
    (runs / "run2" / n.LATENCY_TOTAL_CSV).unlink()
    target = tmp_path / "target.json"
    result = perfgate_in_process("determine-topology-targets", "--experiments-results", str(runs),
                                 "--output-file", str(target))
    assert result.returncode == 3 and "latency_total.csv" in result.stderr and "Traceback" not in result.stderr
    assert not target.exists()
