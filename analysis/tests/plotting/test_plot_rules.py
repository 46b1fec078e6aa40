"""Plots that do not mislead (issue 14): the two floors drawn unlike each other and unlike every
sub-experiment, one axis rule per plot whatever the day's data, and no label cut off at an edge.

Drawn by the real plotting code from the published Fast DDS summaries (shared fixtures)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex
from PIL import Image

from perfgate.latency import compare
from perfgate import files
from perfgate import schema as s
from perfgate.latency.check import check_summary
from perfgate.plotting import check_plots, common, compare_plots, process_plots
from perfgate.plotting.history_plots import HistoryFigures

FLOORS = ("floor_udp", "floor_tcp")


def scaled(summary: pd.DataFrame, factor: float) -> pd.DataFrame:
    out = summary.copy()
    for column in s.SUMMARY_COLUMNS[2:]:
        out[column] = (out[column] * factor).round(3)
    return out


@pytest.fixture(scope="module")
def published(fastdds_fixtures) -> dict[str, pd.DataFrame]:
    intra = files.read_summary(fastdds_fixtures / "v193" / "summary_intraprocess.csv")
    inter = files.read_summary(fastdds_fixtures / "v193" / "summary_interprocess.csv")
    return {"intra": intra, "inter": inter, "older": files.read_summary(fastdds_fixtures / "v192" / "summary.csv")}


def full_set(published) -> dict[str, pd.DataFrame]:
    """The ten sub-experiments and both floors, as a full run writes them."""
    summaries = {sub: scaled(published["intra" if sub.startswith("intra") else "inter"], 1 + 0.1 * index)
                 for index, sub in enumerate(s.DEFAULT_SUBEXPERIMENT_NAMES)}
    summaries.update({"floor_udp": scaled(published["inter"], 0.35), "floor_tcp": scaled(published["inter"], 0.45)})
    return summaries


def line_style(line) -> tuple[str, str, str]:
    return to_hex(line.get_color()), line.get_linestyle(), str(line.get_marker())


def test_the_two_floors_differ_from_each_other_and_from_every_sub_experiment(published, tmp_path):
    figure = process_plots.comparison_figure(full_set(published), s.MEDIAN)
    lines = {line.get_label(): line for line in figure.axes[0].get_lines()}
    udp, tcp = (line_style(lines[f"{floor} (machine floor)"]) for floor in FLOORS)
    assert udp[0] != tcp[0] and udp[1] != tcp[1] and udp[2] != tcp[2], (udp, tcp)
    others = [line_style(line) for label, line in lines.items() if "machine floor" not in label]
    assert len(others) == 10
    # no sub-experiment shares a floor's colour, nor another sub-experiment's
    assert {udp[0], tcp[0]}.isdisjoint(style[0] for style in others)
    assert len({style[0] for style in others}) == 10
    assert {udp[2], tcp[2]}.isdisjoint(style[2] for style in others)
    path = process_plots.draw_comparison(full_set(published), s.MEDIAN, tmp_path / "comparison_median.png")
    assert Image.open(path).size == (1100, 600)


def check_report(summary: pd.DataFrame, sub: str, factor: float) -> pd.DataFrame:
    requirements = summary[[s.BYTES, *s.CHECKED_MAGNITUDES]].copy()
    for magnitude in s.CHECKED_MAGNITUDES:
        requirements[magnitude] = (requirements[magnitude] * factor).round(3)
    requirements.insert(0, s.EXPERIMENT_TYPE, sub)
    return check_summary(summary, requirements, sub)


def test_every_plot_against_payload_has_a_log_latency_axis_whatever_the_spread(published):
    """Two days' data of one plot, one spanning a factor of 1.1, the other a factor of 100: the
    same axis (docs/analysis-process-check.md "Plots")."""
    inter = published["inter"]
    narrow = inter.copy()
    for column in s.SUMMARY_COLUMNS[2:]:
        narrow[column] = 10.0 + inter[s.BYTES] / inter[s.BYTES].max()  # 10 to 11 us
    for summary in (narrow, published["inter"]):
        figure = check_plots.check_figure(check_report(summary, "interprocess_reliable", 1.05), "interprocess_reliable",
                                          s.MEDIAN)
        assert figure.axes[0].get_yscale() == "log"
        assert figure.axes[0].get_ylabel() == "Median latency [us] (log scale)"
        # a requirement 100 times the measurement: still the same axis
        figure = check_plots.check_figure(check_report(summary, "interprocess_reliable", 100.0),
                                          "interprocess_reliable", s.MAX)
        assert figure.axes[0].get_yscale() == "log"
        table = compare.compare_summaries(summary, summary, 0.05)
        figure = compare_plots.comparison_figure("interprocess_reliable", (s.MIN, s.MEDIAN), table, "a", "b", 0.05)
        assert figure.axes[0].get_yscale() == "log"
    two_close = {"interprocess_best_effort": narrow, "interprocess_reliable": scaled(narrow, 1.01)}
    for summaries in (two_close, full_set(published)):
        assert process_plots.comparison_figure(summaries, s.MEDIAN).axes[0].get_yscale() == "log"


def test_payload_history_is_linear_with_a_near_or_a_far_requirement(tmp_path):
    figures = HistoryFigures([f"2026-10-{day:02d}" for day in range(1, 11)])
    values = pd.Series(np.linspace(50.0, 52.0, 10))
    for requirement in (53.0, 5300.0):
        figures.payload("interprocess_reliable", s.MEDIAN, 1024, values, requirement, values > requirement,
                        tmp_path / f"{requirement}.png")
        axes = figures.payload_axes
        assert axes.get_yscale() == "linear" and axes.get_ylabel() == "Latency [us]"
        low, high = axes.get_ylim()
        assert low < 50.0 and high > requirement
    figures.magnitude("interprocess_reliable", s.MEDIAN, pd.DataFrame({16: values, 32: values * 1.01}),
                      tmp_path / "magnitude.png")
    assert figures.magnitude_axes.get_yscale() == "log"


def border_is_blank(path: Path, width: int = 2) -> bool:
    """No ink on the outermost pixels: nothing drawn was cut off at an edge of the PNG."""
    pixels = np.asarray(Image.open(path).convert("L"))
    edges = [pixels[:width], pixels[-width:], pixels[:, :width], pixels[:, -width:]]
    return all((edge > 250).all() for edge in edges)


@pytest.mark.heavy
def test_no_label_is_cut_off_where_fixed_margins_or_a_long_title_would(tmp_path):
    # tick labels of four lines (date, time, commit, label): more than the history figure's fixed
    # margins were made for (two lines fit them)
    figures = HistoryFigures([f"2026-10-{day:02d}\n12:00\nfastdds {day:07x}0\npr-{day}" for day in range(1, 11)])
    values = pd.Series(np.linspace(50.0, 52.0, 10))
    path = figures.payload("interprocess_reliable", s.MEDIAN, 1024, values, 53.0, values > 53.0, tmp_path / "h.png")
    assert border_is_blank(path)
    assert Image.open(path).size != (1000, 550)  # redrawn to the extent of its labels
    # a title wider than the figure: constrained layout makes room around the axes, not beside it
    figure, axes = common.new_figure("interprocess_best_effort_tcp_security: " + "a very long title " * 8)
    axes.plot([16, 32], [1.0, 2.0])
    assert border_is_blank(common.save(figure, tmp_path / "long_title.png"))
    # the usual plots fit their canvas as drawn
    figures = HistoryFigures([f"2026-10-{day:02d}" for day in range(1, 11)])
    path = figures.payload("interprocess_reliable", s.MEDIAN, 1024, values, 53.0, values > 53.0, tmp_path / "u.png")
    assert Image.open(path).size == (1000, 550) and border_is_blank(path)


def test_per_payload_plots_fit_with_the_longest_sub_experiment_name(fastdds_fixtures, tmp_path):
    """The per-payload plots skip the edge check for speed (common.save(fits=True)): their labels are
    numbers, and the longest title any known sub-experiment makes is drawn here and must fit."""
    raw = files.read_raw(fastdds_fixtures / "v193" / "measurements_interprocess.csv")
    latencies = raw[raw[s.PAYLOAD] == 16384][s.LATENCY].to_numpy(dtype=float)
    longest = max(s.KNOWN_SUBEXPERIMENTS, key=len)
    plotter = process_plots.PayloadPlotter()
    median, p99 = float(np.median(latencies)), float(np.percentile(latencies, 99))
    for path in (plotter.histogram(latencies, median, p99, longest, 16384, tmp_path / "h.png"),
                 plotter.series(latencies, median, p99, longest, 16384, tmp_path / "s.png")):
        assert not common.sticks_out(plotter._histogram.figure if path.name == "h.png" else plotter._series.figure)
        assert Image.open(path).size == (1000, 550) and border_is_blank(path)
