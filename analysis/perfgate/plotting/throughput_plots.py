"""Throughput plots: a sub-experiment's subscription throughput against payload, one line per demand
(and recovery time), its requirement minimums beside it; failed requirements in red."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from .. import schema as s
from .common import (FAILED_COLOUR, SUBEXPERIMENT_COLOURS, new_figure, payload_axis,
                     round_log_ticks, save)

THROUGHPUT_LABEL = "Subscription throughput [Mb/s]"
REQUIREMENT_MARKER = "_"  # a bar at the minimum


def throughput_axis(axes, values: np.ndarray) -> None:
    """Subscription throughput, logarithmic (16 B beside 16 KiB spans three decades), round labels."""
    finite = values[np.isfinite(values) & (values > 0)]
    if finite.size:
        low, high = finite.min() / 1.5, finite.max() * 1.5
        axes.set_ylim(low, high)
        axes.set_yscale("log")
        round_log_ticks(axes.yaxis, low, high)
    axes.set_ylabel(f"{THROUGHPUT_LABEL} (log scale)")


def throughput_figure(name: str, table: pd.DataFrame, checks: pd.DataFrame | None) -> Figure:
    """checks: the throughput check rows of this sub-experiment (Check == Throughput), or None."""
    figure, axes = new_figure(f"{name}: throughput received")
    groups = list(table.groupby([s.DEMAND, s.RECOVERY_TIME], sort=True))
    several_recoveries = table[s.RECOVERY_TIME].nunique() > 1
    values = [table[s.SUBSCRIPTION_THROUGHPUT].to_numpy(float)]
    for index, ((demand, recovery), rows) in enumerate(groups):
        colour = SUBEXPERIMENT_COLOURS[index % len(SUBEXPERIMENT_COLOURS)]
        label = f"{demand} samples/burst" + (f", {recovery} ms recovery" if several_recoveries else "")
        rows = rows.sort_values(s.PAYLOAD)
        axes.plot(rows[s.PAYLOAD], rows[s.SUBSCRIPTION_THROUGHPUT], marker="o", color=colour, label=label)
        lost = rows[rows[s.LOST] > 0]
        if not lost.empty:  # where samples were lost, say how many
            for _, row in lost.iterrows():
                axes.annotate(f"{100 * row[s.LOST] / row[s.SENT]:.0f}% lost", (row[s.PAYLOAD], row[s.SUBSCRIPTION_THROUGHPUT]),
                              textcoords="offset points", xytext=(4, -12), fontsize=8, color=colour)
        if checks is not None and not checks.empty:
            mine = checks[(checks["Demand"] == demand) & (checks["Recovery time"] == recovery)]
            if not mine.empty:
                values.append(mine[s.REQUIREMENT].to_numpy(float))
                axes.scatter(mine[s.BYTES], mine[s.REQUIREMENT], marker=REQUIREMENT_MARKER, s=400, linewidths=2.5,
                             color=colour, zorder=3)
                failed = mine[mine[s.STATUS] == s.FAILED]
                axes.scatter(failed[s.BYTES], failed[s.EXPERIMENT], marker="x", s=120, linewidths=2.5,
                             color=FAILED_COLOUR, zorder=4)
    if checks is not None and not checks.empty:
        axes.scatter([], [], marker=REQUIREMENT_MARKER, s=200, linewidths=2.5, color="black",
                     label="requirement (minimum), in its demand's colour")
        axes.scatter([], [], marker="x", s=80, linewidths=2.5, color=FAILED_COLOUR, label="below its requirement")
    payload_axis(axes, table[s.PAYLOAD])
    throughput_axis(axes, np.concatenate(values))
    axes.legend(loc="upper left", fontsize=9)
    return figure


def draw_throughput(name: str, table: pd.DataFrame, checks: pd.DataFrame | None, path: Path) -> Path:
    return save(throughput_figure(name, table, checks), path)


# --- history -------------------------------------------------------------------------------------------------
PAYLOAD_COLOURS = "viridis"  # eleven payloads, small to large: one ordered colour scale


def throughput_history_figure(title: str, series: pd.DataFrame, changes: pd.DataFrame, ticks: list[str]) -> Figure:
    """series: Bytes, Index (position in commit order), Value (Mb/s) of one sub-experiment and test kind;
    changes: its change points (Index, Bytes, Change [%]), drawn where the level moved."""
    figure, axes = new_figure(title, size=(12, 6))
    payloads = sorted(series[s.BYTES].unique())
    colours = colormaps[PAYLOAD_COLOURS].resampled(max(len(payloads), 2))
    for number, payload in enumerate(payloads):
        rows = series[series[s.BYTES] == payload].sort_values("Index")
        axes.plot(rows["Index"], rows["Value"], marker="o", markersize=3, color=colours(number), label=f"{payload} B")
    for _, change in changes.iterrows():
        colour = FAILED_COLOUR if change["Change [%]"] < 0 else "#2ca02c"
        axes.axvline(change["Index"] - 0.5, color=colour, linestyle="--", linewidth=1.2)
        axes.annotate(f"{int(change[s.BYTES])} B {change['Change [%]']:+.0f}%", (change["Index"] - 0.5, 1.0),
                      xycoords=("data", "axes fraction"), rotation=90, va="top", ha="right", fontsize=8, color=colour)
    throughput_axis(axes, series["Value"].to_numpy(float))
    positions = sorted(series["Index"].unique())
    step = max(1, len(positions) // 12)  # at most about a dozen labels, never overlapping
    shown = positions[::step]
    axes.set_xticks(shown)
    axes.set_xticklabels([ticks[int(i)] for i in shown], rotation=30, ha="right", fontsize=8)
    axes.set_xlabel("Fast DDS commit, in the order measured (change points: dashed, red a drop)")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="payload")
    return figure


def draw_throughput_history(title: str, series: pd.DataFrame, changes: pd.DataFrame, ticks: list[str],
                            path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return save(throughput_history_figure(title, series, changes, ticks), path)

