"""The A/B verdict at one glance: sub-experiment x payload, colour = change of the median in %."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.colors import TwoSlopeNorm
from matplotlib.patches import Rectangle

from .common import FAILED_COLOUR, new_figure, save

COLOUR_LIMIT_PERCENT = 10.0  # the colour saturates here; each cell's text gives the exact value


def draw_heatmap(changes: pd.DataFrame, failed_subs: set[str], significant: set[tuple[str, int]],
                 path: Path, title: str, *, x_label: str = "Payload [Bytes]",
                 colour_label: str = "change of the median [%]", higher_is_better: bool = False) -> None:
    """changes: rows sub-experiments (in report order), columns payloads (or throughput tests), values
    % change of the statistic. Red is worse: a rise of a latency, a drop of a throughput. Rows of
    failed sub-experiments get a red frame; cells whose own drill-down bound clears the threshold get
    a dot after their number."""
    subs, payloads = list(changes.index), [p.item() if hasattr(p, "item") else p for p in changes.columns]
    values = changes.to_numpy(float)
    width = max(8.0, 1.0 + 0.75 * len(payloads) + 2.8)
    figure, axes = new_figure(title, size=(width, max(3.0, 1.4 + 0.42 * len(subs))))
    axes.grid(False)
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-COLOUR_LIMIT_PERCENT, vmax=COLOUR_LIMIT_PERCENT)
    image = axes.imshow(np.clip(values, -COLOUR_LIMIT_PERCENT, COLOUR_LIMIT_PERCENT),
                        cmap="RdBu" if higher_is_better else "RdBu_r", norm=norm,
                        aspect="auto")
    for row, sub in enumerate(subs):
        for column, payload in enumerate(payloads):
            value = values[row, column]
            text = "" if np.isnan(value) else f"{value:+.1f}" + ("\u2022" if (sub, payload) in significant else "")
            dark = not np.isnan(value) and abs(value) > 0.6 * COLOUR_LIMIT_PERCENT
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
