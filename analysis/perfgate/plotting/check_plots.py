"""Plots of `check`: per sub-experiment and checked magnitude, measured against required, by payload."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from .. import schema as s
from ..latency.check_terms import format_percent
from .common import (FAILED_COLOUR, LATENCY_LABEL, PASSED_COLOUR, REQUIREMENT_COLOUR, latency_yaxis, new_figure,
                     payload_axis, save)


def draw_check(report: pd.DataFrame, sub: str, magnitude: str, path: Path) -> Path:
    return save(check_figure(report, sub, magnitude), path)


def check_figure(report: pd.DataFrame, sub: str, magnitude: str) -> Figure:
    """Requirement as a dashed grey line, the measurement as a line whose failed points are red and
    labelled with their percentage over the requirement."""
    rows = report[report[s.CHECK] == magnitude].sort_values(s.BYTES)
    failed = rows[rows[s.STATUS] == s.FAILED]
    verdict = f"{len(failed)} of {len(rows)} failed" if len(failed) else f"all {len(rows)} passed"
    figure, axes = new_figure(f"{sub}: {magnitude} against requirement ({verdict})")
    axes.plot(rows[s.BYTES], rows[s.REQUIREMENT], color=REQUIREMENT_COLOUR, linestyle="--", marker="_",
              markersize=12, label="requirement")
    axes.plot(rows[s.BYTES], rows[s.EXPERIMENT], color=PASSED_COLOUR, marker="o", markersize=5, label="measured")
    if len(failed):
        axes.plot(failed[s.BYTES], failed[s.EXPERIMENT], color=FAILED_COLOUR, linestyle="none", marker="o",
                  markersize=9, label="failed: above requirement")
        for payload, value, percent in zip(failed[s.BYTES], failed[s.EXPERIMENT], failed[s.PERCENT_OVER]):
            axes.annotate(format_percent(percent), (payload, value), textcoords="offset points", xytext=(0, 8),
                          ha="center", color=FAILED_COLOUR, fontsize="small")
    payload_axis(axes, rows[s.BYTES])
    # a measurement far below its requirement gets a log axis rather than a flat line at zero
    # (margins: room for the percentage labels above failed points, on either kind of axis)
    latency_yaxis(axes, rows[[s.REQUIREMENT, s.EXPERIMENT]].to_numpy(), label=f"{magnitude} {LATENCY_LABEL.lower()}",
                  headroom=2.0)
    axes.margins(y=0.12)
    # below the axes, never over a point: a failed point can be anywhere, the first payload included
    figure.legend(loc="outside lower center", ncol=3, fontsize="small", frameon=False)
    return figure
