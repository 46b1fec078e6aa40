"""Shared plot style and atomic saving. Matplotlib runs headless (Agg) everywhere."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402

from ..files import atomic_path  # noqa: E402

FIGURE_SIZE = (10, 5.5)
DPI = 100
FAILED_COLOUR = "#d62728"
PASSED_COLOUR = "#2ca02c"
REQUIREMENT_COLOUR = "#555555"
LATENCY_LABEL = "Latency [us]"
PAYLOAD_LABEL = "Payload [Bytes]"


def new_figure(title: str, size: tuple[float, float] = FIGURE_SIZE) -> tuple[Figure, "plt.Axes"]:
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


def save(figure: Figure, path: Path) -> Path:
    """Write the PNG atomically (temporary file, then rename).

    zlib level 1: drawing hundreds of plots per experiment is dominated by PNG compression at the
    default level, and the files are only some 10 % larger.
    """
    with atomic_path(Path(path)) as temporary:
        figure.savefig(temporary, format="png", pil_kwargs={"compress_level": 1})
    return Path(path)
