"""The topologies' section of history.html (history.page embeds it after the latency charts): the topology
change points, then one chart per statistic (late share, mean and 99 % latency, CPU, RSS), one line per
topology over the history's runs, each change point a vertical line labelled with its change.

The charts are drawn by the page's own script (page_script: a trace carries its full series as `y`,
one value per run position, null where the run kept no figure). Topology names, labels and commits
come from the store: escaped for HTML (escape.html.text) and for plotly's markup (plotly_text)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import change_points as cp
from ..escape.html import plotly_text
from ..escape.html import text as html_text
from ..plotting.history_plots import payload_colour
from ..topology import names as n
from .topology import CHANGE_POINT_COLUMNS, STATISTICS, TOPOLOGY, TopologyHistory

SECTION_ID = "topologies"
TITLES = {n.LATE_PERCENT: ("late share", "late messages [% of received]"),
          n.MEAN: ("mean latency", "mean latency [us]"), n.P99: ("99 % latency", "99 % latency [us]"),
          n.RESOURCE_CPU: ("CPU while publishing", "CPU [% of all cores]"), n.RESOURCE_RSS: ("RSS", "RSS peak [KB]")}
REGRESSION_COLOUR, IMPROVEMENT_COLOUR = "#d62728", "#2ca02c"
CHART_HEIGHT_PX = 360


def chart_id(statistic: str) -> str:
    return f"chart-topology-{STATISTICS.index(statistic)}"


def _label(row) -> str:
    change = row[cp.CHANGE]
    size = "from 0" if isinstance(change, float) and math.isnan(change) else f"{change:+.1f} %"
    return f"{row[TOPOLOGY]} {size}"


def chart(history: TopologyHistory, statistic: str, runs: int, tick_positions: list[int],
          tick_labels: list[str]) -> dict:
    """Plotly data and layout of one statistic's chart (the page's CHARTS entry)."""
    traces = []
    for index, (topology, rows) in enumerate(history.table.groupby(TOPOLOGY, sort=True)):
        series = rows.set_index(cp.INDEX)[statistic].astype(float).reindex(range(runs))
        values = [None if np.isnan(v) else round(float(v), 3) for v in series.to_numpy()]
        traces.append({"type": "scatter", "mode": "lines+markers", "name": plotly_text(topology), "y": values,
                       "legendgroup": plotly_text(topology),  # its band (page_script) goes with it
                       "line": {"color": payload_colour(0, index), "width": 1.4}, "marker": {"size": 4},
                       "hovertemplate": "%{customdata}<br>%{y:.3f}<extra>" + plotly_text(topology) + "</extra>"})
    mine = history.changes[history.changes[cp.STATISTIC] == statistic]
    shapes, notes = [], []
    for row_number, (_, row) in enumerate(mine.sort_values(cp.INDEX).iterrows()):
        colour = REGRESSION_COLOUR if row[cp.AFTER] > row[cp.BEFORE] else IMPROVEMENT_COLOUR
        x = int(row[cp.INDEX]) - 0.5
        shapes.append({"type": "line", "x0": x, "x1": x, "yref": "paper", "y0": 0, "y1": 1,
                       "line": {"color": colour, "width": 1.5}})
        hover = plotly_text(f"{_label(row)} ({row[cp.BEFORE]:.3f} -> {row[cp.AFTER]:.3f}) from "
                            f"{tick_labels[int(row[cp.INDEX])]}, p {row[cp.P_VALUE]:.2g}")
        notes.append({"x": x, "xanchor": "right", "y": 1.0, "yref": "paper", "yanchor": "bottom",
                      "yshift": (row_number % 3) * 15, "showarrow": False, "font": {"color": colour, "size": 11},
                      "text": plotly_text(_label(row)), "hovertext": hover})
    title, axis = TITLES[statistic]
    layout = {"title": {"text": f"Topologies: {title}", "font": {"size": 14}}, "height": CHART_HEIGHT_PX,
              "margin": {"l": 90, "r": 20, "t": 80, "b": 110}, "hovermode": "closest", "shapes": shapes,
              "annotations": notes, "legend": {"title": {"text": "Topology"}},
              "xaxis": {"tickmode": "array", "tickvals": tick_positions,
                        "ticktext": [plotly_text(tick_labels[p]) for p in tick_positions], "tickangle": -30,
                        "tickfont": {"size": 10}, "range": [-0.5, runs - 0.5],
                        "title": {"text": "Fast DDS commit and run date, commit by commit", "standoff": 10}},
              "yaxis": {"title": {"text": axis}, "rangemode": "tozero"}, "template": "none"}
    return {"id": chart_id(statistic), "statistic": statistic, "data": traces, "layout": layout}


def change_table(changes: pd.DataFrame) -> str:
    if changes.empty:
        return "<p>No topology change point in this history.</p>"
    header = "".join(f"<th>{html_text(column)}</th>" for column in CHANGE_POINT_COLUMNS)
    rows = []
    for _, row in changes.iterrows():
        kind = "regression" if row[cp.AFTER] > row[cp.BEFORE] else "improvement"
        cells = []
        for column in CHANGE_POINT_COLUMNS:
            value = row[column]
            text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else \
                f"{value:.6g}" if column == cp.P_VALUE else f"{value:.3f}" if isinstance(value, float) else str(value)
            cells.append(f"<td>{html_text(text[:10] if column in (cp.COMMIT, cp.PREVIOUS_COMMIT) else text)}</td>")
        rows.append(f'<tr class="{kind}">{"".join(cells)}</tr>')
    return f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def section(history: TopologyHistory | None, runs: int, tick_positions: list[int],
            tick_labels: list[str]) -> tuple[str, list[dict]]:
    """(the section's HTML, its charts for the page's CHARTS); ("", []) when no run kept a topology."""
    if history is None:
        return "", []
    charts = [chart(history, statistic, runs, tick_positions, tick_labels) for statistic in STATISTICS
              if history.table[statistic].notna().any()]
    names = sorted(set(history.table[TOPOLOGY]))
    blocks = "".join(f'<div class="chart" id="{html_text(item["id"])}"></div>' for item in charts)
    html = (f'<h2 id="{SECTION_ID}">Topologies</h2>\n<p>{html_text(", ".join(names))}: late share, mean and 99 % '
            f"latency over every message, CPU while publishing and RSS per stored run (topology_history.csv); "
            f"change points as for latency, every topology series in one family (topology_change_points.csv).</p>\n"
            f"{change_table(history.changes)}\n{blocks}")
    return html, charts
