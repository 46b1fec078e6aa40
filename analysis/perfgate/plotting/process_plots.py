"""Plots of `process`: per payload a latency histogram and a time series; the sub-experiment comparison.

Drawing is the slow part of `process` (220 per-payload plots for a full experiment), so the
per-payload plots use fixed margins instead of a layout engine, which would draw every figure twice;
these plots all have the same kind of labels, so one set of margins fits them all.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .. import schema as s
from .common import (DPI, FIGURE_SIZE, FLOOR_STYLES, LATENCY_LABEL, SUBEXPERIMENT_COLOURS, latency_yaxis, new_figure,
                     payload_axis, round_log_ticks, save)

# The histogram's range ends here, so that a few outliers far out (the published Fast DDS data has
# samples at 130 us beside a body at 8 us) cannot squeeze the body into one bar.
BODY_UPPER_QUANTILE = 0.999
MIN_BINS = 20
MAX_BINS = 200
MEDIAN_COLOUR = "#1f77b4"
P99_COLOUR = "#ff7f0e"
BARS_COLOUR = "#4c72b0"
AXES_POSITION = (0.08, 0.1, 0.88, 0.81)  # left, bottom, width, height in figure fractions


def histogram_edges(latencies: np.ndarray) -> np.ndarray:
    """Bin edges over the body of the distribution: from the minimum to the 99.9th percentile.

    Bins are equally wide on a logarithmic scale, which latency noise (multiplicative) suits: a
    narrow main peak at 8 us keeps several bins while a second cluster at 55 us stays in view. The
    number of bins follows the Freedman-Diaconis rule (2 IQR / cbrt(n), on log latencies), bounded to
    20..200. Latencies of zero cannot go on a log scale; then the bins are linear.
    """
    low = float(np.min(latencies))
    high = float(np.quantile(latencies, BODY_UPPER_QUANTILE))
    if high <= low:  # (nearly) constant latencies: one visible bar around the value
        spread = max(abs(low) * 0.01, 0.001)
        return np.linspace(max(low - spread, 0.0), low + spread, MIN_BINS + 1)
    logarithmic = low > 0
    scaled = np.log(latencies) if logarithmic else latencies
    span = np.log(high / low) if logarithmic else high - low
    q25, q75 = np.quantile(scaled, [0.25, 0.75])
    width = 2.0 * (q75 - q25) / np.cbrt(latencies.size)
    bins = MAX_BINS if width <= 0 else int(np.ceil(span / width))
    bins = min(max(bins, MIN_BINS), MAX_BINS)
    return np.geomspace(low, high, bins + 1) if logarithmic else np.linspace(low, high, bins + 1)


def tail_note(latencies: np.ndarray, upper: float) -> str | None:
    """What the clipped histogram leaves out, or None when it shows every sample."""
    beyond = int(np.count_nonzero(latencies > upper))
    if beyond == 0:
        return None
    return f"{beyond} sample{'s' if beyond != 1 else ''} beyond {upper:.3f} us not shown (max {latencies.max():.3f} us)"


class _Canvas:
    """One figure drawn again and again: each plot removes the previous plot's data and keeps the
    axes, ticks and fonts, which is a fifth of the drawing time saved over a new figure.

    The style is common.new_figure's, without its layout engine: any layout engine, even a disabled
    one, makes savefig draw the figure twice.
    """

    def __init__(self) -> None:
        self.figure = Figure(figsize=FIGURE_SIZE, dpi=DPI)
        self.axes = self.figure.add_axes(AXES_POSITION)
        self.axes.grid(True, which="major", alpha=0.3)

    def start(self, title: str) -> Axes:
        axes = self.axes
        for artist in [*axes.lines, *axes.patches, *axes.collections, *axes.texts]:
            artist.remove()
        if axes.get_legend() is not None:
            axes.get_legend().remove()
        axes.set_title(title)
        return axes


def _marker_lines(axes: Axes, median: float, p99: float, vertical: bool) -> None:
    draw = axes.axvline if vertical else axes.axhline
    draw(median, color=MEDIAN_COLOUR, linestyle="--", linewidth=1.2, label=f"median {median:.3f} us")
    draw(p99, color=P99_COLOUR, linestyle="--", linewidth=1.2, label=f"99% {p99:.3f} us")


class PayloadPlotter:
    """Draws the histogram and the time series of payload after payload, reusing two figures."""

    def __init__(self) -> None:
        self._histogram = _Canvas()
        self._series = _Canvas()

    def histogram(self, latencies: np.ndarray, median: float, p99: float, sub: str, payload: int, path: Path) -> Path:
        axes = self._histogram.start(f"{sub}, {payload} B: latency histogram ({latencies.size} samples)")
        edges = histogram_edges(latencies)
        counts, _ = np.histogram(latencies, bins=edges)
        # geometric edges (see histogram_edges) widen from left to right; linear ones do not
        logarithmic = not np.isclose(edges[1] - edges[0], edges[-1] - edges[-2])
        axes.set_xscale("log" if logarithmic else "linear")
        if logarithmic:
            bin_label = f"samples per bin (bins {100 * (edges[1] / edges[0] - 1):.2g}% wide)"
            round_log_ticks(axes.xaxis, edges[0], edges[-1])
        else:
            bin_label = f"samples per bin (bins {edges[1] - edges[0]:.3g} us wide)"
        axes.stairs(counts, edges, fill=True, color=BARS_COLOUR, alpha=0.85, label=bin_label)
        _marker_lines(axes, median, p99, vertical=True)
        handles, labels = axes.get_legend_handles_labels()
        note = tail_note(latencies, edges[-1])
        if note is not None:
            handles.append(Line2D([], [], linestyle="none"))
            labels.append(note)
        axes.legend(handles, labels, loc="upper right", fontsize="small")
        axes.set_xlim(edges[0], edges[-1])
        axes.set_ylim(0, counts.max() * 1.5)  # headroom for the legend
        axes.set_xlabel(LATENCY_LABEL + (" (logarithmic)" if logarithmic else ""))
        axes.set_ylabel("Samples")
        return save(self._histogram.figure, path, fits=True)  # test_plot_rules draws the longest title

    def series(self, latencies: np.ndarray, median: float, p99: float, sub: str, payload: int, path: Path) -> Path:
        axes = self._series.start(f"{sub}, {payload} B: latency of each sample in measured order")
        samples = np.arange(1, latencies.size + 1)
        # small dots: 10000 of them stay readable where a line would be a solid band
        axes.plot(samples, latencies, linestyle="none", marker=".", markersize=1.5, color=BARS_COLOUR, label="sample")
        _marker_lines(axes, median, p99, vertical=False)
        low, high = float(latencies.min()), float(latencies.max())
        axes.set_xlim(0, latencies.size + 1)
        # logarithmic, so that one outlier 100 times the median leaves the body its own height
        logarithmic = low > 0
        axes.set_yscale("log" if logarithmic else "linear")
        if logarithmic:
            axes.set_ylim(low / 1.05, high * 1.05)
            round_log_ticks(axes.yaxis, low / 1.05, high * 1.05)
        else:
            axes.set_ylim(0, high * 1.05 + 0.001)
        axes.set_xlabel("Sample")
        axes.set_ylabel(LATENCY_LABEL + (" (logarithmic)" if logarithmic else ""))
        axes.legend(loc="upper right", fontsize="small", markerscale=6)
        return save(self._series.figure, path, fits=True)


def draw_comparison(summaries: dict[str, pd.DataFrame], magnitude: str, path: Path) -> Path:
    return save(comparison_figure(summaries, magnitude), path)


def comparison_figure(summaries: dict[str, pd.DataFrame], magnitude: str) -> Figure:
    """One magnitude (Min, Median, Max, 99%) against payload, one line per sub-experiment.

    Sub-experiments come in the contract's order; the machine's floors (plain sockets) last, each in
    a colour, line style and marker of its own (common.FLOOR_STYLES): they are the reference the
    others are read against, not some of them.
    """
    figure, axes = new_figure(f"Sub-experiments compared: {magnitude} latency", size=(11, 6))
    markers = "osD^v<>pP*Xh"
    payloads: set[int] = set()
    values = []
    order = {name: rank for rank, name in enumerate(s.KNOWN_SUBEXPERIMENTS)}
    ordered_subs = sorted(summaries, key=lambda sub: (_is_floor(sub), order.get(sub, len(order)), sub))
    for index, sub in enumerate(ordered_subs):
        ordered = summaries[sub].sort_values(s.BYTES)
        payloads.update(int(p) for p in ordered[s.BYTES])
        values.extend(ordered[magnitude])
        if _is_floor(sub):
            style = {"markersize": 4, **FLOOR_STYLES.get(sub, FLOOR_STYLES["floor_udp"]),
                     "label": f"{sub} (machine floor)"}
        else:
            style = {"color": SUBEXPERIMENT_COLOURS[index % len(SUBEXPERIMENT_COLOURS)],
                     "linestyle": "-" if index < len(SUBEXPERIMENT_COLOURS) else "--",
                     "marker": markers[index % len(markers)], "markersize": 4, "label": sub}
        axes.plot(ordered[s.BYTES], ordered[magnitude], linewidth=1.2, **style)
    payload_axis(axes, payloads)
    latency_yaxis(axes, values, label=f"{magnitude} {LATENCY_LABEL.lower()}")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", borderaxespad=0)
    return figure


def _is_floor(sub: str) -> bool:
    known = s.KNOWN_SUBEXPERIMENTS.get(sub)
    return known is not None and known.is_floor
