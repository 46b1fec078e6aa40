"""The topology experiment's plots: latency per subscription (median, mean, min to 99 %, the late
threshold and the share of late and too-late messages), and CPU and RSS over time with the
performance target's limits drawn when there is one."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..topology import names as n
from .common import DPI, FAILED_COLOUR, REQUIREMENT_COLOUR, SUBEXPERIMENT_COLOURS, save

LATE_COLOUR = "#ff7f0e"


def _literal(title: str) -> str:
    """A title holding a file name as written: a `$` would start matplotlib's mathtext (and a bad formula
    stops the drawing)."""
    return title.replace("$", r"\$")


def latency_figure(table: pd.DataFrame, late_us: list[float], title: str) -> Figure:
    """One row per subscription (topic -> node): a line from min to 99 %, the median (dot) and the mean (x),
    the late threshold (orange bar), and at the right the share of late and too-late messages."""
    rows = len(table)
    figure = Figure(figsize=(10, 1.6 + 0.28 * rows), dpi=DPI, layout="constrained")
    axes = figure.add_subplot()
    axes.set_title(_literal(title))
    positions = np.arange(rows)[::-1]
    labels = [f"{row[n.TOPIC]} -> {row[n.NODE]} ({row[n.SIZE]} B, {row[n.FREQUENCY]:g} Hz)"
              for _, row in table.iterrows()]
    axes.hlines(positions, table[n.MIN], table[n.P99], color=SUBEXPERIMENT_COLOURS[0], linewidth=2,
                label="min to 99 %")
    axes.plot(table[n.MEDIAN], positions, "o", color=SUBEXPERIMENT_COLOURS[0], markersize=5, label="median")
    axes.plot(table[n.MEAN], positions, "x", color="black", markersize=6, label="mean")
    axes.plot(late_us, positions, "|", color=LATE_COLOUR, markersize=14, markeredgewidth=2, label="late threshold")
    axes.set_xscale("log")
    axes.set_yticks(positions, labels, fontsize="small")
    axes.set_ylim(-0.7, rows - 0.3)
    axes.set_xlabel("One-way latency [us] (log)")
    axes.grid(True, axis="x", which="both", alpha=0.3)
    for position, (_, row) in zip(positions, table.iterrows()):
        received = max(int(row[n.RECEIVED]), 1)
        late, too_late = int(row[n.LATE]), int(row[n.TOO_LATE])
        text = f"late {100 * late / received:.2f} %"
        text += f", too late {100 * too_late / received:.2f} %" if too_late else ""
        if row[n.LOST]:
            text += f", lost {int(row[n.LOST])}"
        axes.annotate(text, (1.01, position), xycoords=("axes fraction", "data"), va="center", fontsize="small",
                      color=FAILED_COLOUR if too_late or row[n.LOST] else (LATE_COLOUR if late else "black"))
    axes.legend(loc="lower left", bbox_to_anchor=(0.0, 1.04), ncols=4, fontsize="small", frameon=False)
    return figure


def resources_figure(usage: pd.DataFrame, title: str, cpu_limit: float | None = None,
                     rss_limit_kb: float | None = None, publishing_ms: float | None = None) -> Figure:
    """CPU over all cores and RSS per process against seconds from the start, and their sum over the
    processes (what the target limits), with the target's limits as dashed lines and the start of
    publishing (every endpoint matched) as a dotted one: the CPU the target limits is the mean after it."""
    figure = Figure(figsize=(10, 5.5), dpi=DPI, layout="constrained")
    cpu_axes, rss_axes = figure.subplots(2, 1, sharex=True)
    figure.suptitle(_literal(title))
    several = usage[n.PROCESS].nunique() > 1
    for number, (process, rows) in enumerate(usage.groupby(n.PROCESS, sort=False)):
        colour = SUBEXPERIMENT_COLOURS[number % len(SUBEXPERIMENT_COLOURS)]
        seconds = rows[n.RESOURCE_TIME] / 1000.0
        style = {"color": colour, "linewidth": 0.8 if several else 1.4, "alpha": 0.6 if several else 1.0}
        cpu_axes.plot(seconds, rows[n.RESOURCE_CPU], label=None if several else str(process), **style)
        rss_axes.plot(seconds, rows[n.RESOURCE_RSS] / 1024.0, **style)
    if several:  # the system: the processes' readings of one sampling instant added up
        # the sampler reads every process in one pass: the readings of one pass are one sampling period apart
        # from the next pass's, and within a pass less than a millisecond apart
        interval = usage.groupby(n.PROCESS)[n.RESOURCE_TIME].diff().median()
        tick = (usage[n.RESOURCE_TIME] / interval).round()
        summed = usage.groupby(tick).agg({n.RESOURCE_TIME: "max", n.RESOURCE_CPU: "sum", n.RESOURCE_RSS: "sum"})
        cpu_axes.plot(summed[n.RESOURCE_TIME] / 1000.0, summed[n.RESOURCE_CPU], color="black", linewidth=1.6,
                      label=f"all {usage[n.PROCESS].nunique()} processes")
        rss_axes.plot(summed[n.RESOURCE_TIME] / 1000.0, summed[n.RESOURCE_RSS] / 1024.0, color="black", linewidth=1.6)
    rss_limit_mib = None if rss_limit_kb is None else rss_limit_kb / 1024.0
    for axes, limit, unit in ((cpu_axes, cpu_limit, "%"), (rss_axes, rss_limit_mib, "MiB")):
        if limit is not None:
            axes.axhline(limit, color=REQUIREMENT_COLOUR, linestyle="--", label=f"target {limit:.1f} {unit}")
        if publishing_ms is not None:
            axes.axvline(publishing_ms / 1000.0, color=LATE_COLOUR, linestyle=":",
                         label="publishing starts" if axes is cpu_axes else None)
        axes.set_ylim(bottom=0)
        axes.grid(True, which="major", alpha=0.3)
        if axes.get_legend_handles_labels()[0]:
            axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    cpu_axes.set_ylabel("CPU [%] (100 = all cores)")
    rss_axes.set_ylabel("RSS [MiB]")
    rss_axes.set_xlabel("Time from the first process's start [s]")
    return figure


def draw_latency(table: pd.DataFrame, late_us: list[float], title: str, path: Path) -> Path:
    return save(latency_figure(table, late_us, title), path)


def draw_resources(usage: pd.DataFrame, title: str, path: Path, cpu_limit: float | None = None,
                   rss_limit_kb: float | None = None, publishing_ms: float | None = None) -> Path:
    return save(resources_figure(usage, title, cpu_limit, rss_limit_kb, publishing_ms), path)
