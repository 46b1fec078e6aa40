"""Compare plots: two magnitudes of a reference and a result against payload, failed points marked."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from .. import schema as s
from .common import FAILED_COLOUR, latency_yaxis, new_figure, payload_axis, save
from .history_plots import short_label

MAGNITUDE_COLOURS = ("#1f77b4", "#ff7f0e")  # first and second magnitude of a pair


def draw_comparison(sub: str, magnitudes: tuple[str, str], comparison: pd.DataFrame, reference_label: str,
                    result_label: str, fail_threshold: float, path: Path) -> Path:
    return save(comparison_figure(sub, magnitudes, comparison, reference_label, result_label, fail_threshold), path)


def comparison_figure(sub: str, magnitudes: tuple[str, str], comparison: pd.DataFrame, reference_label: str,
                      result_label: str, fail_threshold: float) -> Figure:
    """`comparison` is compare.compare_summaries' table of one sub-experiment."""
    figure, axes = new_figure(f"{sub}: {' and '.join(magnitudes)}, result against reference "
                              f"(fails above reference +{fail_threshold * 100:g}%)")
    any_failed = False
    for colour, magnitude in zip(MAGNITUDE_COLOURS, magnitudes):
        rows = comparison[comparison[s.CHECK] == magnitude].sort_values(s.BYTES)
        payloads = rows[s.BYTES].to_numpy()
        axes.plot(payloads, rows[s.REFERENCE], color=colour, linestyle="--", marker="o", markerfacecolor="white",
                  markersize=5, label=f"{magnitude}, reference ({short_label(reference_label, 24)})")
        axes.plot(payloads, rows[s.RESULT], color=colour, linestyle="-", marker="o", markersize=4,
                  label=f"{magnitude}, result ({short_label(result_label, 24)})")
        failed = (rows[s.STATUS] == s.FAILED).to_numpy()
        if failed.any():
            any_failed = True
            axes.plot(payloads[failed], rows[s.RESULT].to_numpy()[failed], linestyle="none", marker="X",
                      markersize=11, color=FAILED_COLOUR, zorder=5)
    if any_failed:
        axes.plot([], [], linestyle="none", marker="X", markersize=9, color=FAILED_COLOUR, label="failed")
    payload_axis(axes, comparison[s.BYTES].unique())
    shown = comparison[comparison[s.CHECK].isin(magnitudes)]
    latency_yaxis(axes, shown[[s.REFERENCE, s.RESULT]].to_numpy())
    figure.legend(loc="outside lower center", ncol=3, fontsize=8, frameon=False)  # below the axes, never over a point
    return figure
