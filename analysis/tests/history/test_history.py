"""history: values per experiment, requirement marks, plot files, usage errors through the CLI."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfgate import cli
from perfgate.history import latency as history
from perfgate.throughput import check as throughput_check
from perfgate.latency import experiments as ex
from perfgate import files
from perfgate import schema as s
from conftest import PLATFORM_A, metadata, scaled, tiny_summary, write_experiment

SUBS = ("intraprocess_best_effort", "interprocess_reliable")


@pytest.fixture()
def store(tmp_path, real_summary) -> Path:
    """Four runs built from the real Fast DDS summary, slower and slower; names sort against time."""
    root = tmp_path / "store" / s.STORE_EXPERIMENTS_DIR
    for index, name in enumerate(["d_run", "c_run", "b_run", "a_run"]):
        write_experiment(root / name, {sub: scaled(real_summary, 1 + 0.1 * index) for sub in SUBS},
                         metadata(f"run-{index}", f"2024-05-0{index + 1}T12:00:00Z"))
    return tmp_path / "store"


@pytest.fixture()
def requirements_csv(tmp_path, real_summary) -> Path:
    """Requirements at 1.15 x the first run: runs 0 and 1 pass, runs 2 and 3 are above."""
    rows = [{s.EXPERIMENT_TYPE: sub, s.BYTES: int(row[s.BYTES]), s.MEDIAN: row[s.MEDIAN] * 1.15,
             s.P99: row[s.P99] * 1.15, s.MAX: row[s.MAX] * 1.15}
            for sub in SUBS for _, row in real_summary.iterrows()]
    path = tmp_path / "requirements.csv"
    files.write_csv(path, pd.DataFrame(rows).loc[:, list(s.REQUIREMENT_COLUMNS)])
    return path


def test_magnitude_history_is_experiments_by_payloads_with_gaps(tmp_path):
    root = tmp_path / "store"
    write_experiment(root / "a", {"interprocess_reliable": tiny_summary({16: (10, 20, 30), 32: (11, 21, 31)})},
                     metadata("a", "2024-01-01T00:00:00Z"))
    write_experiment(root / "b", {"interprocess_reliable": tiny_summary({32: (13, 23, 33)})},
                     metadata("b", "2024-01-02T00:00:00Z"))
    write_experiment(root / "c", {"intraprocess_reliable": tiny_summary({16: (1, 2, 3)})},
                     metadata("c", "2024-01-03T00:00:00Z"))
    experiments = ex.load_store(root)
    table = ex.summary_table(experiments, "interprocess_reliable")
    wide = history.magnitude_history(table, s.P99, len(experiments))
    assert list(wide.columns) == [16, 32]
    assert wide[16].tolist()[:1] == [20.0] and np.isnan(wide[16].tolist()[1:]).all()
    assert wide[32].tolist()[:2] == [21.0, 23.0] and np.isnan(wide[32].iloc[2])


def test_above_requirement_uses_the_contracts_rule_at_three_decimals():
    values = pd.Series([9.999, 10.0, 10.0004, 10.001, np.nan])
    # 10.0004 is written as 10.000: equal to the requirement, so not above it
    assert history.above_requirement(values, 10.0).tolist() == [False, False, False, True, False]
    assert history.above_requirement(values, None).tolist() == [False] * 5


def test_requirement_lookup_and_newest_verdicts(store, requirements_csv, real_summary):
    requirements = files.read_requirements(requirements_csv)
    lookup = history.requirement_lookup(requirements, "interprocess_reliable")
    assert lookup[(16, s.MEDIAN)] == pytest.approx(round(real_summary[s.MEDIAN].iloc[0] * 1.15, 3))
    experiments = ex.load_store(store)
    table = ex.summary_table(experiments, "interprocess_reliable")
    # the newest run is 1.3 x the first: every check is above 1.15 x
    assert history.newest_verdicts(table, lookup, 3) == (33, 33)
    assert history.newest_verdicts(table, lookup, 0) == (0, 33)


@pytest.mark.heavy
def test_history_draws_every_plot_of_the_contract_layout(store, requirements_csv, tmp_path, capsys):
    plots = tmp_path / "history_plots"
    code = cli.main(["history", "--requirements", str(requirements_csv), "--experiments-results", str(store),
                     "--plots-directory", str(plots), "--all-plots"])
    assert code == s.EXIT_OK
    for sub in SUBS:
        expected = {s.history_magnitude_png(plots, sub, m) for m in s.PLOTTED_MAGNITUDES}
        expected |= {s.history_payload_png(plots, sub, p, m) for p in s.PAYLOADS for m in s.CHECKED_MAGNITUDES}
        assert len(expected) == 4 + 33
        drawn = set((plots / sub).iterdir())
        assert drawn == expected
        for path in expected:
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    output = capsys.readouterr().out
    assert "history: 4 experiments (run-0 .. run-3), 2 sub-experiments; 74 plots" in output
    assert "newest (run-3) interprocess_reliable: 33 of 33 checks above the requirement" in output


def test_history_without_plots_draws_nothing_and_accepts_underscore_options(store, requirements_csv, tmp_path):
    plots = tmp_path / "history_plots"
    code = cli.main(["history", "--requirements", str(requirements_csv), "--experiments_results",
                     str(store / s.STORE_EXPERIMENTS_DIR), "--plots_directory", str(plots), "--no_plots"])
    assert code == s.EXIT_OK
    # no plot; the events, the change points and the Otava export are written all the same (issues 13, 24)
    assert not list(plots.rglob("*.png"))
    assert sorted(p.name for p in plots.iterdir()) == ["change_points.csv", "events.csv", "events.md", "otava"]


def damage_summary(folder: Path) -> Path:
    bad = folder / s.summary_csv_name("interprocess_reliable")
    bad.write_text(bad.read_text().replace("\n32,", "\n32x,", 1))
    return bad


def damage_metadata(folder: Path) -> Path:
    (folder / s.METADATA_FILE).write_text('{"label": "b", ')
    return folder / s.METADATA_FILE


def damage_verdict(folder: Path) -> Path:
    (folder / s.AB_DIR).mkdir()
    (folder / s.AB_DIR / s.VERDICT_JSON).write_text("{}")
    return folder / s.AB_DIR / s.VERDICT_JSON


def damage_throughput(folder: Path) -> Path:
    (folder / s.throughput_csv_name("intraprocess_best_effort")).write_text("Payload [Bytes]\n16\n")
    return folder / s.throughput_csv_name("intraprocess_best_effort")


@pytest.mark.parametrize("damage, problem", [
    (damage_summary, ":3: 'Bytes' is not a finite number: '32x'"),
    (damage_metadata, ":1: malformed JSON"),
    (damage_verdict, ": the A/B verdict has verdict.json but no verdict.csv"),
    (damage_throughput, ":1: missing column(s)"),
])
def test_history_reports_a_damaged_experiment_and_skips_it(store, requirements_csv, tmp_path, capsys, damage, problem):
    # one bad folder among the nightly runs (a copy cut short, a hand edit) must not stop every later history
    folder = store / s.STORE_EXPERIMENTS_DIR / "b_run"
    bad = damage(folder)
    plots = tmp_path / "history_plots"
    arguments = ["history", "--requirements", str(requirements_csv), "--experiments-results", str(store),
                 "--plots-directory", str(plots), "--no-plots"]
    assert cli.main(arguments) == s.EXIT_OK
    captured = capsys.readouterr()
    [warning] = [line for line in captured.err.splitlines() if "warning" in line]
    assert warning.startswith(f"perfgate history: warning: {bad}{problem}") and warning.endswith(
        "; experiment b_run skipped")
    assert "Traceback" not in captured.err
    assert "history: 1 damaged experiment(s) skipped: b_run" in captured.out
    assert "history: 3 experiments, 2 sub-experiments; plots skipped" in captured.out
    assert "run-2" not in (plots / "otava" / "interprocess_reliable.csv").read_text()  # b_run is run-2
    assert "run-3" in (plots / "otava" / "interprocess_reliable.csv").read_text()


def test_check_throughputs_report_in_a_stored_run_is_no_damage(store, requirements_csv, tmp_path, capsys):
    # throughput_checks.csv is named like a throughput table but is check-throughput's report, which a
    # gate's stored run keeps: read as a table it made every stored run "damaged"
    for folder in (store / s.STORE_EXPERIMENTS_DIR).iterdir():
        (folder / throughput_check.THROUGHPUT_CHECKS_FILE).write_text(
            "Experiment type,Check,Bytes,Demand,Recovery time,Requirement,Experiment,Status\n")
    arguments = ["history", "--requirements", str(requirements_csv), "--experiments-results", str(store),
                 "--plots-directory", str(tmp_path / "plots"), "--no-plots"]
    assert cli.main(arguments) == s.EXIT_OK
    captured = capsys.readouterr()
    assert "damaged" not in captured.out + captured.err
    assert "history: 4 experiments, 2 sub-experiments; plots skipped" in captured.out


def test_a_repaired_summary_is_read_again_and_every_experiment_damaged_is_an_error(store, requirements_csv,
                                                                                     tmp_path, capsys):
    bad = damage_summary(store / s.STORE_EXPERIMENTS_DIR / "b_run")
    arguments = ["history", "--requirements", str(requirements_csv), "--experiments-results", str(store),
                 "--plots-directory", str(tmp_path / "plots"), "--no-plots"]
    assert cli.main(arguments) == s.EXIT_OK
    assert "1 damaged experiment(s) skipped: b_run" in capsys.readouterr().out
    bad.write_text(bad.read_text().replace("\n32x,", "\n32,", 1))  # repaired: the index never learnt it
    assert cli.main(arguments) == s.EXIT_OK
    captured = capsys.readouterr()
    assert "history: 4 experiments" in captured.out and "damaged" not in captured.out + captured.err
    for name in ("a_run", "b_run", "c_run", "d_run"):
        damage_summary(store / s.STORE_EXPERIMENTS_DIR / name)
    assert cli.main(arguments) == s.EXIT_USAGE
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"perfgate history: error: {store / s.STORE_EXPERIMENTS_DIR}: every experiment of the "
                            "results store is damaged, e.g. ") and "\n" not in error


def test_history_refuses_mixed_platforms(store, requirements_csv, tmp_path, capsys, real_summary):
    write_experiment(store / s.STORE_EXPERIMENTS_DIR / "other", {SUBS[0]: real_summary},
                     metadata("other", "2024-06-01T00:00:00Z", platform=dict(PLATFORM_A, id="platform-b")))
    code = cli.main(["history", "--requirements", str(requirements_csv), "--experiments-results", str(store),
                     "--plots-directory", str(tmp_path / "plots")])
    assert code == s.EXIT_USAGE
    error = capsys.readouterr().err
    assert "platform ids differ" in error and "d_run" in error and "other" in error


def test_console_script_reports_a_stray_file_on_one_line(store, requirements_csv, tmp_path):
    stray = store / s.STORE_EXPERIMENTS_DIR / "summary.csv"
    stray.write_text("Bytes\n16\n")
    perfgate = Path(sys.executable).parent / "perfgate"
    finished = subprocess.run([str(perfgate), "history", "--requirements", str(requirements_csv),
                               "--experiments-results", str(store), "--plots-directory", str(tmp_path / "plots")],
                              capture_output=True, text=True, timeout=120)
    assert finished.returncode == s.EXIT_USAGE
    assert finished.stderr.splitlines() == [
        f"perfgate history: error: {stray}: stray file among the experiment folders (each run is a folder)"]
    assert "Traceback" not in finished.stderr and not (tmp_path / "plots").exists()


def test_tick_labels_say_as_much_of_the_time_as_tells_the_runs_apart():
    from datetime import datetime, timedelta

    from perfgate.plotting.history_plots import experiment_tick_labels

    start = datetime(2026, 11, 21, 3, 52, 10)
    seconds_apart = [start, start + timedelta(seconds=40), None]
    assert experiment_tick_labels(seconds_apart, ["a", "b", "legacy-run"]) == ["11-21 03:52:10", "11-21 03:52:50",
                                                                            "legacy-run"]
    hours_apart = [start, start + timedelta(hours=5)]
    assert experiment_tick_labels(hours_apart, ["a", "b"]) == ["11-21 03:52", "11-21 08:52"]
    days_apart = [start, start + timedelta(days=3)]
    assert experiment_tick_labels(days_apart, ["a", "b"]) == ["2026-11-21", "2026-11-24"]
