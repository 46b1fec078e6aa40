"""History plots: one value per experiment, oldest to newest, readable with hundreds of experiments.

The x axis is the experiment's position in the history (evenly spaced, so a burst of runs on one
day stays readable) labelled at no more than MAX_X_TICKS positions with its date and a short label.
Each figure is drawn once per worker and redrawn for every plot: building a Figure costs more than
drawing a few lines, and a history redraw makes hundreds of plots.
"""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

from .. import schema as s
from .common import (DPI, FAILED_COLOUR, FIGURE_SIZE, LATENCY_LABEL, REQUIREMENT_COLOUR, latency_yaxis,
                     linear_latency_yaxis, save)

MAX_X_TICKS = 10
MAGNITUDE_AXES_WIDTH_PX = 790  # 0.79 of the 1000 pixel wide figure
AXIS_LABEL_GAP_PX = (24, 50)  # x label below the axis (one line of tick labels), y label left of it (6 digits)
TICK_LINE_PX = 8 * 1.2 * 100 / 72  # one more line of 8 point tick labels at 100 dpi
TICK_CHARACTER_PX = 5.5  # average width of a character of the 8 point tick labels at 100 dpi
SHORT_LABEL_CHARACTERS = 12
MEASURED_COLOUR = "#1f77b4"
MEASURED_LIGHT_COLOUR = "#9ec5e8"  # every run, behind the bucket medians of a long history
# Beyond this many runs a line per payload fills the plot with run-to-run noise (eleven payloads over 5000
# runs drew solid bands, issue 45): each payload is drawn as the median of consecutive buckets of runs, about
# BUCKETS of them, as the history page draws its lines.
BUCKETED_ABOVE = 400
BUCKETS = 250
# One colour per payload of the contract (16 B .. 16 KiB), the same on the PNGs and the page: neighbouring
# payloads in hues far apart, each dark enough to read as a thin line on white (viridis ended in a light
# yellow that was hard to see), and none the red or green of the change points.
PAYLOAD_COLOURS = ("#1b1b7a", "#1f77b4", "#0f9bb0", "#0b7a53", "#7a9a01", "#b8860b", "#e06c00", "#b03060",
                   "#cc3fa0", "#8e44ad", "#5d4037")


def short_label(label: str, width: int = SHORT_LABEL_CHARACTERS) -> str:
    """Keep both ends of a long label (`fastdds-2.9…run-17`): runs often differ only at the end."""
    if len(label) <= width:
        return label
    head = (width - 1) // 2
    return f"{label[:head]}…{label[-(width - 1 - head):]}"


PAYLOAD_MARKERS = "os^DvP<X>h*"  # eleven: one per payload of the contract
PAYLOAD_LINE_STYLES = ("-", "--", "-.")


def payload_colour(payload: int, index: int = 0) -> str:
    """The payload's colour among the contract's eleven, so 1 KiB looks the same on every plot; a payload
    outside the contract takes its place in the plot's order."""
    return PAYLOAD_COLOURS[s.PAYLOADS.index(payload) if payload in s.PAYLOADS else index % len(PAYLOAD_COLOURS)]


def experiment_tick_labels(created: list[datetime | None], labels: list[str]) -> list[str]:
    """Tick text per experiment: its UTC date (with the time when runs span under two days, to the
    second when under an hour, as repeated runs of one commit do; the day always, since a time alone
    does not say when), or its short label when it has no creation time. One line: tick labels are
    most of a plot's drawing time.
    """
    times = [c for c in created if c is not None]
    span_s = (max(times) - min(times)).total_seconds() if times else 0
    date_format = "%Y-%m-%d" if span_s >= 2 * 86400 else "%m-%d %H:%M" if span_s >= 3600 else "%m-%d %H:%M:%S"
    return [c.strftime(date_format) if c is not None else short_label(label) for c, label in zip(created, labels)]


def bucket_size(count: int) -> int:
    """Runs per bucket: 1 (every run drawn) up to BUCKETED_ABOVE runs, else about count / BUCKETS."""
    return 1 if count <= BUCKETED_ABOVE else -(-count // BUCKETS)


def bucket_medians(values: pd.DataFrame | pd.Series, size: int) -> pd.DataFrame | pd.Series:
    """The median of every `size` consecutive runs (NaN ignored), indexed by the buckets' mean position: the
    x of the runs they stand for, so change points and A/B marks stay where they were."""
    if size <= 1:
        return values
    groups = np.asarray(values.index) // size
    medians = values.groupby(groups).median()
    medians.index = pd.Index(pd.Series(np.asarray(values.index, float)).groupby(groups).mean().to_numpy())
    return medians


def _fixed_figure():
    """A figure with no layout engine at all, its axes placed by hand. new_figure's constrained layout
    switched off with set_layout_engine("none") leaves a placeholder engine, and savefig then lays the
    whole figure out once more before drawing it: a fifth of every history plot's time (issue 24)."""
    figure = Figure(figsize=FIGURE_SIZE, dpi=DPI)
    axes = figure.add_subplot()
    axes.grid(True, which="major", alpha=0.3)
    return figure, axes


class HistoryFigures:
    """Draws the magnitude and payload history plots of one results store, reusing two figures.

    Speed matters here (a store redraw makes hundreds of plots): the figures keep fixed margins
    instead of a layout engine, and the payload figure keeps its artists and only updates them.
    """

    def __init__(self, tick_labels: list[str]):
        self.tick_labels = tick_labels
        self.many = len(tick_labels) > 40  # with hundreds of experiments markers would hide the line
        self.bucket = bucket_size(len(tick_labels))
        self.magnitude_figure, self.magnitude_axes = _fixed_figure()
        self.magnitude_axes.set_position([0.08, 0.12, 0.79, 0.8])  # right: room for the payload legend
        self.payload_figure, self.payload_axes = _fixed_figure()
        self.payload_axes.set_position([0.08, 0.12, 0.88, 0.8])  # right: room for the last date
        self._payload_artists()

    def _experiment_axis(self, axes) -> None:
        """Ticks at no more than MAX_X_TICKS experiments, always the oldest and the newest."""
        count = len(self.tick_labels)
        # as many labels as fit the narrower (magnitude) plot with a gap of four characters between them
        longest = max(len(label) for label in self.tick_labels)
        fitting = int(MAGNITUDE_AXES_WIDTH_PX // ((longest + 4) * TICK_CHARACTER_PX))
        positions = sorted(set(np.linspace(0, count - 1, max(2, min(count, MAX_X_TICKS, fitting))).round().astype(int)
                               .tolist()))
        # the newest label ends at its tick (below): the tick before it needs room for one and a half labels
        label_px = (longest + 4) * TICK_CHARACTER_PX
        if len(positions) > 2 and (positions[-1] - positions[-2]) * MAGNITUDE_AXES_WIDTH_PX / count < 1.5 * label_px:
            positions.pop(-2)
        axes.xaxis.set_major_locator(FixedLocator(positions))
        axes.xaxis.set_minor_locator(NullLocator())
        axes.xaxis.set_major_formatter(FixedFormatter([self.tick_labels[p] for p in positions]))
        axes.tick_params(axis="x", labelsize=8)
        # the newest run's label ends at its tick: centred, a commit and date reached past the figure's right
        # edge, and save() then drew every plot a second time to fit it (half of a redraw's time, issue 24)
        ticks = axes.xaxis.get_major_ticks(len(positions))
        if len(ticks) > 1:
            ticks[-1].label1.set_horizontalalignment("right")
        margin = 0.5 if count < 20 else 0.01 * count
        axes.set_xlim(-margin, count - 1 + margin)
        axes.set_xlabel(f"Experiment, oldest to newest ({count} in the history)")
        # the axis labels at fixed distances from the plot: placed from the tick labels' extents, matplotlib
        # measured every tick label of every plot again (with the title's placement, a quarter of the drawing)
        figure_px = axes.figure.get_size_inches() * axes.figure.dpi
        width_px, height_px = axes.get_position().width * figure_px[0], axes.get_position().height * figure_px[1]
        # tick labels of several lines (date, time, commit, label) push it down by as many lines
        lines = max(self.tick_labels[p].count("\n") + 1 for p in positions)
        axes.xaxis.set_label_coords(0.5, -(AXIS_LABEL_GAP_PX[0] + (lines - 1) * TICK_LINE_PX) / height_px)
        axes.yaxis.set_label_coords(-AXIS_LABEL_GAP_PX[1] / width_px, 0.5)

    def magnitude(self, sub: str, magnitude: str, values: pd.DataFrame, path: Path) -> Path:
        """`values`: one row per experiment position, one column per payload (NaN where missing)."""
        axes = self.magnitude_axes
        axes.clear()
        per = f", median of every {self.bucket} experiments" if self.bucket > 1 else ""
        axes.set_title(f"{sub}: {magnitude} latency per experiment{per}", y=1.0)  # y: not from the ticks' extents
        axes.grid(True, which="major", alpha=0.3)
        values = bucket_medians(values, self.bucket)
        positions = values.index.to_numpy()
        # a marker and a line style of their own also tell the payloads apart (printed in grey, colour-blind)
        for index, payload in enumerate(values.columns):
            colour = payload_colour(payload, index)
            axes.plot(positions, values[payload].to_numpy(dtype=float), color=colour, linewidth=1.0,
                      linestyle=PAYLOAD_LINE_STYLES[index % len(PAYLOAD_LINE_STYLES)],
                      marker=None if self.many else PAYLOAD_MARKERS[index % len(PAYLOAD_MARKERS)], markersize=4,
                      label=f"{payload} B")
        latency_yaxis(axes, values.to_numpy())
        self._experiment_axis(axes)
        # largest payload first: in the legend as in the plot, it is usually the top line
        handles, labels = axes.get_legend_handles_labels()
        axes.legend(handles[::-1], labels[::-1], title="Payload", fontsize=8, title_fontsize=8, loc="upper left",
                    bbox_to_anchor=(1.01, 1.0), frameon=False)
        self._decorate(axes)
        return save(self.magnitude_figure, path)

    def _decorate(self, axes) -> None:
        """Called just before a plot is saved: a subclass adds its marks (history_marks)."""

    def _payload_artists(self) -> None:
        axes = self.payload_axes
        bucketed = self.bucket > 1
        (self.measured_line,) = axes.plot([], [], color=MEASURED_LIGHT_COLOUR if bucketed else MEASURED_COLOUR,
                                          linewidth=0 if bucketed else 1.0, marker="." if self.many else "o",
                                          markersize=2 if bucketed else 3 if self.many else 4, label="measured")
        self.requirement_line = axes.axhline(0, color=REQUIREMENT_COLOUR, linestyle="--", linewidth=1.2,
                                             label="requirement")
        (self.above_points,) = axes.plot([], [], linestyle="none", marker="o", markersize=6, markerfacecolor="none",
                                         markeredgecolor=FAILED_COLOUR, markeredgewidth=1.5, label="above requirement")
        # a long history: every run as a light dot, and over them the median of every `bucket` runs (after the
        # requirement: the legend's second text stays the requirement's)
        (self.bucket_line,) = axes.plot([], [], color=MEASURED_COLOUR, linewidth=1.5, visible=bucketed,
                                        label=f"median of {self.bucket}" if bucketed else "_nolegend_")
        self.verdict = axes.text(0.01, 0.98, "", transform=axes.transAxes, va="top", ha="left", fontsize=9,
                                 bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"})
        axes.set_ylabel(LATENCY_LABEL)
        self._experiment_axis(axes)
        # one row, like the verdict beside it: both fit in the headroom kept above the data
        self.legend = axes.legend(fontsize=8, loc="upper right", ncol=4 if bucketed else 3, borderaxespad=0.3)

    def payload(self, sub: str, magnitude: str, payload: int, values: pd.Series, requirement: float | None,
                above: pd.Series, path: Path) -> Path:
        """`values` per experiment position; `above` marks values over the requirement."""
        axes = self.payload_axes
        axes.set_title(f"{sub}: {magnitude} latency at {payload} B per experiment", y=1.0)
        positions = values.index.to_numpy()
        measured = values.to_numpy(dtype=float)
        over = above.to_numpy(dtype=bool)
        self.measured_line.set_data(positions, measured)
        if self.bucket > 1:
            medians = bucket_medians(values.astype(float), self.bucket)
            self.bucket_line.set_data(medians.index.to_numpy(), medians.to_numpy(dtype=float))
        self.above_points.set_data(positions[over], measured[over])
        shown = measured[np.isfinite(measured)]
        if requirement is not None:
            self.requirement_line.set_ydata([requirement, requirement])
            self.requirement_line.set_visible(True)
            self.legend.get_texts()[1].set_text(f"requirement {requirement:.3f} us")
            shown = np.append(shown, requirement)
            self.verdict.set_text(f"{int(over.sum())} of {shown.size - 1} experiments above the requirement")
        else:
            self.requirement_line.set_visible(False)
            self.legend.get_texts()[1].set_text("no requirement")
            self.verdict.set_text("no requirement for this payload")
        # linear, always: one payload over time, where a step of a few per cent is what to see
        linear_latency_yaxis(axes, shown, top_room=3.0)
        self._decorate(axes)
        return save(self.payload_figure, path)
