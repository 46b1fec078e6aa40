"""Shared plot style and atomic saving. Matplotlib runs headless (Agg) everywhere."""
from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")

from matplotlib.axes import Axes  # noqa: E402  (the backend must be chosen first)
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import (AutoLocator, FixedLocator, FormatStrFormatter, NullLocator,  # noqa: E402
                               ScalarFormatter)

from ..files import atomic_path  # noqa: E402

FIGURE_SIZE = (10, 5.5)
DPI = 100
FAILED_COLOUR = "#d62728"
PASSED_COLOUR = "#2ca02c"
REQUIREMENT_COLOUR = "#555555"
LATENCY_LABEL = "Latency [us]"
PAYLOAD_LABEL = "Payload [Bytes]"
# The machine's floor (plain sockets, never checked) is the reference the sub-experiments are read
# against: black and grey, in line styles and markers none of them uses, one per transport.
FLOOR_STYLES = {
    "floor_udp": {"color": "black", "linestyle": ":", "marker": "x", "markersize": 6},
    "floor_tcp": {"color": "#8c8c8c", "linestyle": "-.", "marker": "+", "markersize": 8},
}
# tab10 without its grey (the floors' colour), and a dark indigo for the tenth sub-experiment
SUBEXPERIMENT_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
                         "#17becf", "#393b79")


def new_figure(title: str, size: tuple[float, float] = FIGURE_SIZE) -> tuple[Figure, Axes]:
    # A bare Figure (not pyplot) so that nothing is kept in pyplot's global registry between plots.
    figure = Figure(figsize=size, dpi=DPI, layout="constrained")
    axes = figure.add_subplot()
    axes.set_title(title)
    axes.grid(True, which="major", alpha=0.3)
    return figure, axes


def payload_axis(axes, payloads) -> None:
    """Log2 payload axis with a tick at each measured payload, labelled in bytes."""
    axes.set_xscale("log", base=2)
    ticks = sorted(set(int(p) for p in payloads))
    axes.xaxis.set_major_locator(FixedLocator(ticks))
    axes.xaxis.set_minor_locator(NullLocator())
    axes.set_xticklabels([str(t) for t in ticks], rotation=0)
    axes.set_xlabel(PAYLOAD_LABEL)


def log_ticks(low: float, high: float, max_ticks: int = 12) -> list[float]:
    """Round tick values for a logarithmic axis from low to high: the densest of 1-2-5 style series
    that stays within max_ticks labels, so a range of less than a decade still gets several labels."""
    series = ((1,), (1, 2, 5), (1, 1.5, 2, 3, 5, 7), (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9))
    chosen: list[float] = []
    for mantissas in series:
        ticks = [m * 10.0 ** e for e in range(int(np.floor(np.log10(low))), int(np.ceil(np.log10(high))) + 1)
                 for m in mantissas]
        ticks = [t for t in ticks if low <= t <= high]
        if len(ticks) > max_ticks:
            break
        chosen = ticks
    return chosen


def round_log_ticks(axis, low: float, high: float) -> None:
    """Plain-number labels at round values; matplotlib's own ticks label little but powers of ten."""
    ticks = log_ticks(low, high)
    if len(ticks) >= 2:  # else matplotlib's own log ticks, which always find something
        axis.set_major_locator(FixedLocator(ticks))
        axis.set_major_formatter(FormatStrFormatter("%g"))
        axis.set_minor_locator(NullLocator())


def latency_yaxis(axes, values, label: str = LATENCY_LABEL, headroom: float = 1.3) -> None:
    """The latency axis of every plot against payload, and of the magnitude history: logarithmic,
    always (docs/analysis-process-check.md "Plots"). A rule of the plot, never of the day's data, so
    that one plot reads the same from one report to the next; log, because 16 B beside 16 KiB,
    intra-process beside TCP with security, Max with its outliers and a requirement far above its
    measurement span decades that a linear axis would flatten onto zero.
    headroom: how far above the largest value the axis ends (a factor), for labels drawn there."""
    finite = np.asarray(values, dtype=float).ravel()
    finite = finite[np.isfinite(finite) & (finite > 0)]
    if finite.size == 0:  # nothing to draw (no latency is ever zero): an empty plot keeps matplotlib's axis
        axes.set_ylabel(label)
        return
    low, high = finite.min() / 1.3, finite.max() * headroom
    axes.set_ylim(low, high)  # first: a reused axes may still show limits down to zero, which log refuses
    axes.set_yscale("log")
    round_log_ticks(axes.yaxis, low, high)
    axes.set_ylabel(f"{label} (log scale)")


def linear_latency_yaxis(axes, values, label: str = LATENCY_LABEL, top_room: float = 3.0) -> None:
    """The latency axis of the per-payload history: linear, always, from just below the smallest to
    above the largest value (a step of a few per cent shows as a step); top_room: the space kept
    above the data for the verdict and the legend, in paddings of 6 % of the data's range."""
    finite = np.asarray(values, dtype=float).ravel()
    finite = finite[np.isfinite(finite)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    pad = 0.06 * (high - low) if high > low else 0.05 * max(abs(high), 1.0)
    axes.set_yscale("linear")
    axes.set_ylim(low - pad, high + top_room * pad)
    axes.yaxis.set_major_locator(AutoLocator())
    axes.yaxis.set_major_formatter(ScalarFormatter())
    axes.set_ylabel(label)


def save(figure: Figure, path: Path, *, fits: bool = False) -> Path:
    """Write the PNG atomically (temporary file, then rename), never with a label cut off.

    zlib level 1: drawing hundreds of plots per experiment is dominated by PNG compression at the
    default level, and the files are only some 10 % larger.
    fits: the caller's labels are known to fit (the per-payload plots: numbers, and a title whose
    longest form a test draws), so the check below, a fifth of their drawing time, is skipped.
    """
    with atomic_path(Path(path)) as temporary:
        figure.savefig(temporary, format="png", pil_kwargs={"compress_level": 1})
        if not fits and sticks_out(figure):
            figure.savefig(temporary, format="png", pil_kwargs={"compress_level": 1}, bbox_inches="tight",
                           pad_inches=0.05)
    return Path(path)


def sticks_out(figure: Figure) -> bool:
    """Whether any text or legend of a drawn figure reaches past its edges: a long title (constrained
    layout makes room around the axes, not beside a title wider than the figure), or a label longer
    than the fixed margins of the history plots (kept for speed) were made for, such as dates with
    commits. Some 15 % of a plot's drawing time; a label cut off is worse."""
    canvas = figure.canvas if isinstance(figure.canvas, FigureCanvasAgg) else FigureCanvasAgg(figure)
    extent = figure.get_tightbbox(canvas.get_renderer())
    width, height = figure.get_size_inches()
    return extent.x0 < 0 or extent.y0 < 0 or extent.x1 > width or extent.y1 > height
