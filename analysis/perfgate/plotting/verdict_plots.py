"""The A/B verdict at one glance: sub-experiment x payload, colour = change of the median in %."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.colors import TwoSlopeNorm
from matplotlib.patches import Rectangle

from .common import FAILED_COLOUR, new_figure, save

COLOUR_LIMIT_PERCENT = 10.0  # the colour saturates here; each cell's text gives the exact value


NEUTRAL_COLOUR = "#e8e8e8"  # a cell whose change its own rounds cannot tell from noise


def draw_heatmap(changes: pd.DataFrame, failed_subs: set[str], significant: set[tuple[str, int]],
                 path: Path, title: str, *, x_label: str = "Payload [Bytes]",
                 colour_label: str = "change of the median [%]", higher_is_better: bool = False,
                 better: set[tuple[str, int]] | None = None, legend: str | None = None) -> None:
    """changes: rows sub-experiments (in report order), columns payloads (or throughput tests), values
    % change of the statistic. Red is worse: a rise of a latency, a drop of a throughput. Rows of
    failed sub-experiments get a red frame; cells whose own drill-down bound clears the threshold get
    a dot after their number. With `better` (the cells whose mirrored test says better), only cells in
    `significant` or `better` are coloured, the others neutral grey: an A/A's few rounds give changes of
    +-20 % that are noise, and a saturated colour under a PASS reads as a finding. `legend`: a line under
    the picture saying what the colours and marks mean."""
    subs, payloads = list(changes.index), [p.item() if hasattr(p, "item") else p for p in changes.columns]
    values = changes.to_numpy(float)
    width = max(8.0, 1.0 + 0.75 * len(payloads) + 2.8)
    figure, axes = new_figure(title, size=(width, max(3.0, 1.4 + 0.42 * len(subs)) + (0.4 if legend else 0)))
    axes.grid(False)
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-COLOUR_LIMIT_PERCENT, vmax=COLOUR_LIMIT_PERCENT)
    shown = np.clip(values, -COLOUR_LIMIT_PERCENT, COLOUR_LIMIT_PERCENT)
    if better is not None:
        decided = np.array([[(sub, p) in significant or (sub, p) in better for p in payloads] for sub in subs],
                           dtype=bool).reshape(values.shape)
        shown = np.ma.masked_where(~decided | np.isnan(values), shown)
        axes.set_facecolor(NEUTRAL_COLOUR)
    if legend:
        figure.supxlabel(legend, fontsize=7, wrap=True)  # placed by the constrained layout, below the axis label
    image = axes.imshow(shown, cmap="RdBu" if higher_is_better else "RdBu_r", norm=norm, aspect="auto")
    for row, sub in enumerate(subs):
        for column, payload in enumerate(payloads):
            value = values[row, column]
            text = "" if np.isnan(value) else f"{value:+.1f}" + ("\u2022" if (sub, payload) in significant else "")
            coloured = better is None or (sub, payload) in significant or (sub, payload) in better
            dark = coloured and not np.isnan(value) and abs(value) > 0.6 * COLOUR_LIMIT_PERCENT
            axes.text(column, row, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")
        if sub in failed_subs:
            axes.add_patch(_row_frame(row, len(payloads)))
    axes.set_xticks(range(len(payloads)), [str(p) for p in payloads])
    axes.set_yticks(range(len(subs)), subs)
    axes.set_xlabel(x_label)
    colour_bar = figure.colorbar(image, ax=axes, fraction=0.04, pad=0.02)
    colour_bar.set_label(colour_label)
    save(figure, path)


def _row_frame(row: int, columns: int):
    return Rectangle((-0.5, row - 0.5), columns, 1, fill=False, edgecolor=FAILED_COLOUR, linewidth=2.5)
