"""One static page of a store's history: the change points first, then interactive charts.

`<plots>/history.html` (docs/history.md "The page"): opens offline from an artifact, so plotly's
JavaScript is embedded in the page (from the plotly package, no CDN, nothing of it kept in this
repository). Per sub-experiment one chart per statistic (Median, 99 %, Max), one line per payload,
the x axis commit by commit as in the PNGs (which stay, linked under each chart, as the fallback);
hovering shows the commit, date, label and value; change points are vertical lines; each commit's
A/B verdict against its parent (history_ab) is a marker along the top of the chart, in the legend
by outcome, hovering shows the ratios.

Size matters with 1000 experiments (target: under 10 MB): the x positions and the hover texts are
written once and shared by every trace in the browser, and values carry 3 decimals as the CSV
files do, so the page is plotly (4.8 MB) plus about 8 bytes per value.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import change_points as cp
from .. import schema as s
from ..escape.html import plotly_text, script_json
from ..escape.html import text as html_text

PAGE_NAME = "history.html"
CHART_STATISTICS = cp.STATISTICS
# A/B outcome -> (plotly marker symbol, colour), as the PNGs draw them (plotting/history_marks.AB_STYLES)
AB_SYMBOLS = {"regression": ("triangle-down", "#d62728"), "improvement": ("triangle-up", "#2ca02c"),
              "incomplete": ("x", "#ff7f0e"), "passed": ("circle-open", "#7f7f7f")}
PAYLOAD_COLOURS = ("#440154", "#482878", "#3e4a89", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58",
                   "#b5de2b", "#fde725", "#e0a800")  # viridis, dark = small payload, as the PNGs


def chart_id(sub: str, statistic: str) -> str:
    return f"chart-{sub}-{s.CHECK_SLUGS[statistic]}"


def ab_traces(ab: list[tuple[int, str, str]]) -> list[dict]:
    """One marker trace per A/B outcome on a second y axis fixed to [0, 1]: the top of the chart."""
    traces = []
    for outcome, (symbol, colour) in AB_SYMBOLS.items():
        picked = [(position, text) for position, kind, text in ab if kind == outcome]
        if picked:
            traces.append({"type": "scatter", "mode": "markers", "name": f"A/B {outcome} ({len(picked)})",
                           "x": [position for position, _ in picked], "y": [0.97] * len(picked), "yaxis": "y2",
                           "text": [text for _, text in picked], "legendgroup": "ab",
                           "marker": {"symbol": symbol, "color": colour, "size": 10, "line": {"color": colour, "width": 1.5}},
                           "hovertemplate": "%{text}<extra></extra>"})
    return traces


def chart(sub: str, statistic: str, wide: pd.DataFrame, changes: pd.DataFrame, tick_positions: list[int],
          tick_labels: list[str], ab: list[tuple[int, str, str]] = ()) -> dict:
    """Plotly data and layout of one chart; `wide`: experiments x payloads (NaN where missing); `ab`:
    (position, outcome, text) of history_ab.marks."""
    traces = []
    for payload in wide.columns:
        # the colour of the payload among the contract's eleven, so 1 KiB looks the same on every chart
        colour = PAYLOAD_COLOURS[s.PAYLOADS.index(payload) if payload in s.PAYLOADS else 0]
        values = [None if np.isnan(v) else round(float(v), 3) for v in wide[payload].to_numpy(dtype=float)]
        traces.append({"type": "scattergl" if len(values) > 2000 else "scatter", "mode": "lines", "name": f"{payload} B",
                       "y": values, "line": {"color": colour, "width": 1.2},
                       "hovertemplate": "%{customdata}<br>%{y:.3f} us<extra>" + f"{payload} B</extra>"})
    shapes, notes = [], []
    mine = changes[(changes[s.EXPERIMENT_TYPE] == sub) & (changes[cp.STATISTIC] == statistic)]
    for position, group in mine.groupby(cp.INDEX):
        change = float(group[cp.CHANGE].median())
        colour = "#d62728" if change > 0 else "#2ca02c"
        shapes.append({"type": "line", "x0": position - 0.5, "x1": position - 0.5, "yref": "paper", "y0": 0, "y1": 1,
                       "line": {"color": colour, "width": 1.5}})
        notes.append({"x": position - 0.5, "y": 1.0, "yref": "paper", "yanchor": "bottom", "showarrow": False,
                      "font": {"color": colour, "size": 11},
                      "text": f"{change:+.1f} % ({len(group)} payload{'s' if len(group) > 1 else ''})"})
    layout = {"title": {"text": f"{plotly_text(sub)}: {statistic} latency", "font": {"size": 14}}, "height": 420,
              "margin": {"l": 90, "r": 20, "t": 50, "b": 110}, "hovermode": "closest", "shapes": shapes,
              "annotations": notes, "legend": {"title": {"text": "Payload"}, "traceorder": "reversed"},
              "xaxis": {"tickmode": "array", "tickvals": tick_positions,
                        "ticktext": [plotly_text(tick_labels[p]) for p in tick_positions], "tickangle": -30,
                        "tickfont": {"size": 10},
                        "title": {"text": "Fast DDS commit and run date, commit by commit", "standoff": 10}},
              "yaxis": {"type": "log", "title": {"text": "Latency [us]"}}, "template": "none"}
    if ab:
        traces += ab_traces(list(ab))
        layout["yaxis2"] = {"overlaying": "y", "range": [0, 1], "visible": False, "fixedrange": True}
    return {"id": chart_id(sub, statistic), "statistic": statistic, "data": traces, "layout": layout}


def change_table(changes: pd.DataFrame) -> str:
    if changes.empty:
        return "<p>No change point in this history.</p>"
    header = "".join(f"<th>{html_text(column)}</th>" for column in cp.CHANGE_POINT_COLUMNS)
    rows = []
    for row in changes.itertuples(index=False):
        values = dict(zip(cp.CHANGE_POINT_COLUMNS, row))
        kind = "regression" if values[cp.CHANGE] > 0 else "improvement"
        cells = []
        for column in cp.CHANGE_POINT_COLUMNS:
            value = values[column]
            text = f"{value:.6g}" if column == cp.P_VALUE else f"{value:.3f}" if isinstance(value, float) \
                else "" if value is None else str(value)
            if column in (cp.COMMIT, cp.PREVIOUS_COMMIT):
                text = text[:10]  # short enough to keep the table on the screen; change_points.csv has it whole
            cells.append(f"<td>{html_text(text)}</td>")
        rows.append(f'<tr class="{kind}">{"".join(cells)}</tr>')
    return f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def page(title: str, summary: str, changes: pd.DataFrame, charts_by_sub: dict[str, list[dict]],
         hover: list[str], plotly_js: str) -> str:
    """The whole page as text. `hover`: one text per experiment position, shared by every trace."""
    sections = []
    for sub, charts in charts_by_sub.items():
        blocks = []
        for item in charts:
            png = f"{sub}/history_{s.PLOTTED_MAGNITUDES[item['statistic']]}.png"
            blocks.append(f'<div class="chart" id="{html_text(item["id"])}"></div>'
                          f'<p class="fallback"><a href="{html_text(png)}">PNG</a></p>')
        sections.append(f"<h2 id=\"{html_text(sub)}\">{html_text(sub)}</h2>{''.join(blocks)}")
    # labels, versions and sub-experiment names are inside: JSON that cannot end the <script> (escape.html)
    data = script_json([{"id": c["id"], "data": c["data"], "layout": c["layout"]}
                        for charts in charts_by_sub.values() for c in charts], separators=(",", ":"))
    positions = script_json(list(range(len(hover))))
    labels = script_json(hover, separators=(",", ":"))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html_text(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; color: #222; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
td, th {{ border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }}
tr.regression td {{ background: #fde8e8; }} tr.improvement td {{ background: #e8f6e8; }}
.chart {{ width: 100%; min-height: 420px; }} .fallback {{ font-size: 0.8em; margin: 0 0 1em 0; }}
</style>
<script>{plotly_js}</script>
</head><body>
<h1>{html_text(title)}</h1>
<p>{html_text(summary)}</p>
<h2>Change points</h2>
{change_table(changes)}
{''.join(sections)}
<script>
const POSITIONS = {positions};
const HOVER = {labels};
const CHARTS = {data};
for (const item of CHARTS) {{
  // the measured lines share one x and hover text; the A/B markers carry their own positions
  for (const trace of item.data) {{ if (!trace.x) {{ trace.x = POSITIONS; trace.customdata = HOVER; }} }}
  Plotly.newPlot(item.id, item.data, item.layout, {{responsive: true, displaylogo: false}});
}}
</script>
</body></html>
"""


def plotly_javascript() -> str:
    """plotly.js as the plotly package ships it (imported only when a page is written)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def tick_positions(count: int, most: int = 10) -> list[int]:
    """Up to `most` labelled positions, evenly spread, always the oldest and the newest."""
    return sorted(set(np.linspace(0, count - 1, max(1, min(count, most))).round().astype(int).tolist()))
