"""Shared plot style and atomic saving. Matplotlib runs headless (Agg) everywhere."""
from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")

from matplotlib.axes import Axes  # noqa: E402  (the backend must be chosen first)
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FixedLocator, FormatStrFormatter, NullLocator  # noqa: E402

from ..files import atomic_path  # noqa: E402

FIGURE_SIZE = (10, 5.5)
DPI = 100
FAILED_COLOUR = "#d62728"
PASSED_COLOUR = "#2ca02c"
REQUIREMENT_COLOUR = "#555555"
LATENCY_LABEL = "Latency [us]"
PAYLOAD_LABEL = "Payload [Bytes]"
LOG_SCALE_SPREAD = 20  # latencies spanning more than this factor get a log axis


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
    """Linear latency axis, or a log one when the values span more than LOG_SCALE_SPREAD (Max with
    its outliers, 16 B next to 16 KiB, intra-process next to TCP with security, a measurement far
    below its requirement): on a linear axis the small ones would be flattened onto zero.
    headroom: how far above the largest value a log axis ends (a factor), for labels drawn there."""
    finite = np.asarray(values, dtype=float).ravel()
    finite = finite[np.isfinite(finite) & (finite > 0)]
    if finite.size == 0 or finite.max() <= LOG_SCALE_SPREAD * finite.min():
        axes.set_yscale("linear")
        axes.set_ylabel(label)
        return
    low, high = finite.min() / 1.3, finite.max() * headroom
    axes.set_ylim(low, high)  # first: a reused axes may still show limits down to zero, which log refuses
    axes.set_yscale("log")
    round_log_ticks(axes.yaxis, low, high)
    axes.set_ylabel(f"{label} (log scale)")


def save(figure: Figure, path: Path) -> Path:
    """Write the PNG atomically (temporary file, then rename).

    zlib level 1: drawing hundreds of plots per experiment is dominated by PNG compression at the
    default level, and the files are only some 10 % larger.
    """
    with atomic_path(Path(path)) as temporary:
        figure.savefig(temporary, format="png", pil_kwargs={"compress_level": 1})
    return Path(path)
