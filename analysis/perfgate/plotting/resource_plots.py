"""The resources plot of a sub-experiment: each harness process's CPU and resident memory over time."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from .. import schema as s
from .common import DPI, FIGURE_SIZE, SUBEXPERIMENT_COLOURS, save

# one colour and marker per role, the same in both panels and in every sub-experiment's plot
ROLE_STYLES = {
    "publisher": {"color": SUBEXPERIMENT_COLOURS[0], "marker": "o"},
    "subscriber": {"color": SUBEXPERIMENT_COLOURS[1], "marker": "s"},
    "both": {"color": SUBEXPERIMENT_COLOURS[2], "marker": "D"},
    "client": {"color": SUBEXPERIMENT_COLOURS[4], "marker": "o"},
    "server": {"color": SUBEXPERIMENT_COLOURS[5], "marker": "s"},
}
OTHER_STYLE = {"color": SUBEXPERIMENT_COLOURS[9], "marker": "x"}


def draw_resources(frame: pd.DataFrame, sub: str, path: Path) -> Path:
    return save(resources_figure(frame, sub), path)


def resources_figure(frame: pd.DataFrame, sub: str) -> Figure:
    """CPU (100 % = one CPU) above, resident memory in MiB below, against seconds from the start;
    the legend gives each role's peak and mean, the figures the check reads."""
    figure = Figure(figsize=FIGURE_SIZE, dpi=DPI, layout="constrained")
    cpu_axes, rss_axes = figure.subplots(2, 1, sharex=True)
    figure.suptitle(f"{sub}: resources of the harness processes")
    for role, rows in frame.groupby(s.RESOURCE_ROLE, sort=False):
        style = {**ROLE_STYLES.get(str(role), OTHER_STYLE), "markersize": 3, "linewidth": 1.2}
        seconds = rows[s.RESOURCE_TIME] / 1000.0
        cpu, rss = rows[s.RESOURCE_CPU], rows[s.RESOURCE_RSS] / 1024.0
        cpu_axes.plot(seconds, cpu, label=f"{role}: peak {cpu.max():.1f} %, mean {cpu.mean():.1f} %", **style)
        rss_axes.plot(seconds, rss, label=f"{role}: peak {rss.max():.1f} MiB, mean {rss.mean():.1f} MiB", **style)
    # from zero: a process's share of a CPU and its memory read as amounts, not as changes
    cpu_axes.set_ylim(0, max(100.0, float(frame[s.RESOURCE_CPU].max()) * 1.1) if len(frame) else 100.0)
    rss_axes.set_ylim(0, float(frame[s.RESOURCE_RSS].max()) / 1024.0 * 1.15 if len(frame) else 1.0)
    cpu_axes.set_ylabel("CPU [%] (100 = one CPU)")
    rss_axes.set_ylabel("RSS [MiB]")
    rss_axes.set_xlabel("Time from the first process's start [s]")
    for axes in (cpu_axes, rss_axes):
        axes.grid(True, which="major", alpha=0.3)
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    return figure
