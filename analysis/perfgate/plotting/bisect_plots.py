"""The change along a bisection's commits: each tested commit's change against good, per failed test."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .common import FAILED_COLOUR, SUBEXPERIMENT_COLOURS, new_figure, save

TEST, INDEX, CHANGE, LOWER = "test", "index", "change [%]", "lower [%]"  # the columns of `points`


def draw_bisect_chart(points: pd.DataFrame, labels: list[str], skipped: list[int], culprit: int | None,
                      path: Path, title: str) -> Path:
    """points: one row per tested commit (INDEX into labels) and test, the change of the Median against
    good in % (CHANGE) and its lower bound (LOWER). Skipped commits are grey crosses on the zero line,
    the culprit a red line between it and its parent. Points only: nothing is known between them."""
    figure, axes = new_figure(title, size=(max(8.0, 2.0 + 0.6 * len(labels)), 5.0))
    axes.axhline(0.0, color="#555555", linewidth=1)
    axes.plot([0], [0.0], linestyle="none", marker="s", markersize=8, color="#555555", label="good (every A/B's baseline)")
    for number, (test, rows) in enumerate(points.groupby(TEST, sort=False)):
        rows = rows.sort_values(INDEX)
        colour = SUBEXPERIMENT_COLOURS[number % len(SUBEXPERIMENT_COLOURS)]
        below = (rows[CHANGE] - rows[LOWER]).clip(lower=0)
        axes.errorbar(rows[INDEX], rows[CHANGE], yerr=[below, below * 0], color=colour, marker="o", linestyle="none",
                      capsize=3, label=f"{test} (bar: lower bound)")
    if skipped:
        axes.plot(skipped, [0.0] * len(skipped), linestyle="none", marker="x", markersize=9, color="#8c8c8c",
                  label="build failed (skipped)")
    if culprit is not None:
        axes.axvline(culprit - 0.5, color=FAILED_COLOUR, linestyle="--", linewidth=1.5,
                     label=f"culprit {labels[culprit]}")
    axes.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=8)
    axes.set_xlim(-0.5, len(labels) - 0.5)
    axes.set_xlabel("first-parent commits, good (left) to bad (right)")
    axes.set_ylabel("change against good [%]")
    axes.legend(loc="upper left", fontsize=8)
    return save(figure, path)
