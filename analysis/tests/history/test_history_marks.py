"""History plots with commits, change points and baselines (issue 13)."""
from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread

from perfgate.history import change_points as cp
from perfgate import files
from perfgate.history import latency as history
from perfgate import schema as s
from perfgate.plotting.history_marks import BASELINE_COLOURS, MarkedHistoryFigures, commit_tick_labels
from history_synthetic import SUBS, summary, write_store


def test_tick_labels_put_the_short_commit_before_the_date():
    created = [datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2026, 1, 9, tzinfo=timezone.utc), None]
    assert commit_tick_labels(created, ["a", "b", "old-run"], ["0123456789abcdef", None, "fedcba9876"]) == \
        ["0123456 2026-01-01", "2026-01-09", "fedcba9 old-run"]
    # the system's package records no commit: its version says which Fast DDS it was
    assert commit_tick_labels(created, ["a", "b", "old-run"], [None, None, None], ["2.9.1", None, None]) == \
        ["v2.9.1 2026-01-01", "2026-01-09", "old-run"]


def test_change_marks_per_payload_and_merged_per_position():
    changes = pd.DataFrame({s.EXPERIMENT_TYPE: ["a", "a", "a", "b"], s.BYTES: [16, 32, 16, 16],
                            cp.STATISTIC: [s.MEDIAN, s.MEDIAN, s.MAX, s.MEDIAN], cp.INDEX: [40, 41, 40, 7],
                            cp.CHANGE: [8.0, 6.0, -20.0, 3.0]})
    marks = history.change_marks(changes, "a")
    assert marks[(s.MEDIAN, 16)] == [(40, 8.0)] and marks[(s.MAX, 16)] == [(40, -20.0)]
    assert marks[(s.MEDIAN, None)] == [(40, 7.0)]  # a run apart: one step on the plot of all payloads
    far = history.change_marks(changes.assign(**{cp.INDEX: [40, 60, 40, 7]}), "a")
    assert far[(s.MEDIAN, None)] == [(40, 8.0), (60, 6.0)]
    assert (s.MEDIAN, 7) not in marks and history.change_marks(changes, "c") == {}


def test_a_payload_plot_draws_the_change_point_and_the_baseline(tmp_path):
    values = pd.Series(np.r_[np.full(20, 10.0), np.full(10, 11.0)])
    figures = MarkedHistoryFigures([f"{i:07x} 2026-01-{i % 28 + 1:02d}" for i in range(30)])
    path = figures.payload("interprocess_reliable", s.MEDIAN, 16, values, 12.0, values > 12.0, tmp_path / "p.png",
                           [(20, 10.0)], [("vm-2core-x64", 9.0)])
    axes = figures.payload_axes
    vertical = [line for line in axes.get_lines() if list(line.get_xdata()) == [19.5, 19.5]]
    assert len(vertical) == 1
    baseline = [line for line in axes.get_lines() if line.get_color() == BASELINE_COLOURS[0]]
    assert len(baseline) == 1 and list(baseline[0].get_ydata()) == [9.0, 9.0]
    assert axes.get_ylim()[0] < 9.0  # the baseline is below every measurement and still inside the plot
    texts = [text.get_text() for text in axes.get_legend().get_texts()]
    assert "baseline vm-2core-x64 9.000 us" in texts and "change point: regression" in texts
    assert any("+10.0 % from 0000014 2026-01-21" in text.get_text() for text in axes.texts)
    assert imread(path).shape[1] == 1000  # a real PNG, the width of every history plot
    # the next plot starts clean: no mark of the previous one stays
    figures.payload("interprocess_reliable", s.MEDIAN, 32, values, None, values > 1e9, tmp_path / "q.png", [], [])
    assert not [line for line in axes.get_lines() if list(line.get_xdata()) == [19.5, 19.5]]
    assert "change point: regression" not in [text.get_text() for text in axes.get_legend().get_texts()]


def test_a_long_history_draws_the_median_of_each_bucket_of_runs_over_every_run(tmp_path):
    """Over 400 runs a plot of every run is a band of noise (issue 45 item 6): the payload plot keeps every run
    as a light dot and draws over them the median of every k runs, at the runs' own positions; the plot of all
    payloads draws only those medians. A +8 % step at run 600 of 1000 is a step of the medians."""
    rng = np.random.default_rng(7)
    count = 1000
    level = np.where(np.arange(count) < 600, 100.0, 108.0)
    values = pd.Series(level * np.exp(rng.normal(0, 0.05, count)))
    figures = MarkedHistoryFigures([f"{i:07x} 2026-01-{i % 28 + 1:02d}" for i in range(count)])
    assert figures.bucket == 4  # 1000 runs / 250 buckets
    figures.payload("interprocess_reliable", s.MEDIAN, 16, values, None, values > 1e9, tmp_path / "p.png", [], [])
    x, y = (np.asarray(a, float) for a in figures.bucket_line.get_data())
    assert len(x) == 250 and x[0] == 1.5 and x[-1] == 997.5  # each bucket at the mean position of its runs
    assert len(figures.measured_line.get_xdata()) == count  # and still every run
    before, after = np.median(y[x < 600]), np.median(y[x > 600])
    assert after / before == pytest.approx(1.08, abs=0.01)
    assert np.std(y[x < 600]) < np.std(values[:600]) / 1.5  # calmer than the runs themselves
    legend = figures.payload_axes.get_legend()
    assert [text.get_text() for text in legend.get_texts()] == ["measured", "no requirement", "above requirement",
                                                              "median of 4"]
    assert legend.legend_handles[3].get_color() == figures.bucket_line.get_color()  # each text beside its own line
    # with a change point its entry follows, its own line beside it
    figures.payload("interprocess_reliable", s.MEDIAN, 16, values, None, values > 1e9, tmp_path / "c.png",
                    [(600, 0.08)], [])
    legend = figures.payload_axes.get_legend()
    assert [text.get_text() for text in legend.get_texts()][3:] == ["median of 4", "change point: regression"]
    assert len(legend.legend_handles) == 5
    table = pd.DataFrame({16: values, 1024: values * 1.2})
    figures.magnitude("interprocess_reliable", s.MEDIAN, table, tmp_path / "m.png")
    lines = [line for line in figures.magnitude_axes.get_lines() if line.get_label() in ("16 B", "1024 B")]
    assert [len(line.get_xdata()) for line in lines] == [250, 250]
    assert "median of every 4 experiments" in figures.magnitude_axes.get_title()
    # a short history is drawn run by run, as before
    short = MarkedHistoryFigures([f"{i:07x} 2026-01-01" for i in range(30)])
    assert short.bucket == 1 and not short.bucket_line.get_visible()


def write_baseline(folder, platform_id: str) -> None:
    files.write_csv(folder / s.summary_csv_name(SUBS[1]), summary({16: 21.0, 1024: 22.0}))
    files.write_metadata(folder, {"label": "promoted", "created_utc": "2025-12-01T00:00:00Z",
                                  "latency_definition": s.ROUND_TRIP, "platform": {"id": platform_id}})


@pytest.mark.heavy
def test_history_draws_every_plot_with_commits_and_baselines(tmp_path, capsys):
    write_store(tmp_path / "store", 30, 20)
    write_baseline(tmp_path / "baselines" / "vm-2core-x64", "0123456789abcdef")
    requirements = tmp_path / "requirements.csv"
    files.write_csv(requirements, pd.DataFrame([{s.EXPERIMENT_TYPE: sub, s.BYTES: 16, s.MEDIAN: 100.0, s.P99: 200.0,
                                                 s.MAX: 900.0} for sub in SUBS[:2]]))
    plots = tmp_path / "plots"
    assert history.command_history(str(requirements), str(tmp_path / "store"), str(plots), no_plots=False,
                                   baseline=[str(tmp_path / "baselines" / "vm-2core-x64")], all_plots=True) == 0
    pngs = sorted(path.relative_to(plots).as_posix() for path in plots.rglob("*.png"))
    assert len(pngs) == 2 * (4 + 2 * 3)
    assert f"{SUBS[1]}/16_bytes_median.png" in pngs
    assert (plots / "change_points.csv").read_text().count(f"{SUBS[1]},") == 6
    assert "20 plots" in capsys.readouterr().out


@pytest.mark.heavy
def test_a_baseline_of_another_platform_is_a_usage_error_naming_both(tmp_path):
    write_store(tmp_path / "store", 8, 4)
    write_baseline(tmp_path / "other", "ffffffffffffffff")
    requirements = tmp_path / "requirements.csv"
    files.write_csv(requirements, pd.DataFrame([{s.EXPERIMENT_TYPE: SUBS[0], s.BYTES: 16, s.MEDIAN: 1.0, s.P99: 2.0,
                                                 s.MAX: 3.0}]))
    result = subprocess.run([sys.executable, "-m", "perfgate.cli", "history", "--requirements", str(requirements),
                             "--experiments-results", str(tmp_path / "store"), "--plots-directory",
                             str(tmp_path / "plots"), "--baseline", str(tmp_path / "other"), "--no-plots"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "platform ids differ" in result.stderr and str(tmp_path / "other") in result.stderr
