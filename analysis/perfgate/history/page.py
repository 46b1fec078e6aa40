"""One static page of a store's history: the events and change points first, then interactive charts.

`<plots>/history.html` (docs/history.md "The page"): opens offline from an artifact, so plotly's
JavaScript is embedded in the page (from the plotly package, no CDN, nothing of it kept in this
repository). At the top, when the history wrote `events.csv`, one row per event, each linking to its
chart; then the change points; then per sub-experiment one chart per statistic (Median, 99 %, Max),
one line per payload, the x axis commit by commit as in the PNGs (which stay, linked under each
chart, as the fallback); hovering shows the commit, date, label and value; change points are
vertical lines, labelled where the labels fit and with a hover marker each at the bottom; each
commit's A/B verdict against its parent (history_ab) is a marker along the top of the chart.

Scale (issue 24: 5000 runs): the page embeds each series whole, once (3 decimals, as the CSV files),
as base64 of int32 thousandths (`encoded_series`: a string the browser scans, not a number per run
to parse), and the browser draws it decimated per pixel as SVG, never WebGL, the charts in view
first (page_script.py); the x positions and hover texts are built in the browser, shared by every trace.
"""
from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pandas as pd

from . import change_points as cp
from .page_script import SCRIPT
from .. import schema as s
from ..errors import InputError
from ..escape.html import plotly_text, script_json
from ..escape.html import text as html_text
from ..plotting.common import log_ticks
from ..plotting.history_plots import PAYLOAD_COLOURS, payload_colour  # noqa: F401  (the page's are the PNGs')
from . import names as event_names
from ..schema import history_chart_id as chart_id

PAGE_NAME = "history.html"
CHART_STATISTICS = cp.STATISTICS
# A/B outcome -> (plotly marker symbol, colour), as the PNGs draw them (plotting/history_marks.AB_STYLES)
AB_SYMBOLS = {"regression": ("triangle-down", "#d62728"), "improvement": ("triangle-up", "#2ca02c"),
              "incomplete": ("x", "#ff7f0e"), "passed": ("circle-open", "#7f7f7f")}
REGRESSION_COLOUR, IMPROVEMENT_COLOUR = "#d62728", "#2ca02c"
NEARBY_RUNS = 3  # change points of one chart this close, in one direction, are one mark (payloads a run apart)
# Change-point labels sit above the plot in up to LABEL_ROWS rows; a label that would overlap another
# in every row is left out (its line and hover marker stay, and the tables above list it).
LABEL_ROWS = 3
LABEL_ROW_PX = 15
PLOT_WIDTH_PX = 1000  # the narrowest plot area the labels are spaced for (the page is 1400 px wide)
LABEL_CHARACTER_PX = 6.5  # 11 px sans-serif
CHART_HEIGHT_PX = 420
DEFAULT_PAYLOADS = 3  # payload lines a chart opens with, besides those with a change point (shown_payloads)
EVENT_STATISTICS = event_names.EVENT_STATISTICS  # "Statistics": what moved, e.g. "Median, 99%"
TOP_MARGIN_PX = 50
# A series in the page: little-endian int32 thousandths (3 decimals, as the CSV files), this where a run
# lacks the value; page_script.py decodes it. A series out of int32's range stays a JSON list.
MISSING_THOUSANDTHS = np.iinfo(np.int32).min
LARGEST_THOUSANDTHS = np.iinfo(np.int32).max


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


def change_marks(mine: pd.DataFrame) -> list[dict]:
    """One mark per group of change points of one chart at most NEARBY_RUNS apart in one direction
    (the payloads of one step land a run or two apart): position (the group's median, first run
    after the change), change (median, %), count (change points in it), details (per row, for hover)."""
    marks = []
    for rising, side in mine.groupby(mine[cp.CHANGE] > 0):
        side = side.sort_values(cp.INDEX, kind="stable")
        group_of = (side[cp.INDEX].diff() > NEARBY_RUNS).cumsum()
        for _, group in side.groupby(group_of):
            details = [f"{row[s.BYTES]} B {row[cp.CHANGE]:+.1f} % at #{row[cp.INDEX]}" if s.BYTES in group
                       else f"{row[cp.CHANGE]:+.1f} % at #{row[cp.INDEX]}" for _, row in group.iterrows()]
            marks.append({"position": int(round(float(group[cp.INDEX].median()))),
                          "change": float(group[cp.CHANGE].median()), "count": len(group), "details": details})
    return sorted(marks, key=lambda mark: mark["position"])


def label_rows(positions: list[int], texts: list[str], runs: int) -> list[int | None]:
    """The row (0 = just above the plot) of each label, in position order: the lowest row where it
    does not overlap the labels already placed (a label ends at its line, as on the PNGs), None when
    no row of LABEL_ROWS has room."""
    px_per_run = PLOT_WIDTH_PX / max(runs, 1)
    placed: list[list[tuple[float, float]]] = [[] for _ in range(LABEL_ROWS)]
    rows: list[int | None] = []
    for position, text in zip(positions, texts):
        right = (position - 0.5) * px_per_run
        left = right - LABEL_CHARACTER_PX * len(text) - 4
        row = next((r for r in range(LABEL_ROWS) if all(right < a or left > b for a, b in placed[r])), None)
        if row is not None:
            placed[row].append((left, right))
        rows.append(row)
    return rows


def rounded_values(values: np.ndarray) -> list:
    """The values as Python's round(v, 3) gives them, None for NaN: numpy's rounding (value * 1000 to
    the nearest integer, / 1000) for speed, Python's for the values within a hair of a half thousandth,
    where the product's own rounding could tip it (330 series of 5000 runs took seconds one by one)."""
    scaled = values * 1000
    rounded = np.rint(scaled) / 1000
    near_half = np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6
    listed = [None if v != v else v for v in rounded.tolist()]
    for position in np.flatnonzero(near_half & np.isfinite(values)).tolist():
        listed[position] = round(float(values[position]), 3)
    return listed


def latency_ticks(values: np.ndarray) -> dict:
    """Tick values and plain-number labels for the log latency axis: round 1-2-5 values over the data
    (plotly's own log ticks label a span of under a decade with bare digits, `9 1000 2 3`), or four
    evenly spread ones rounded to 3 digits when the span holds fewer than two round values."""
    finite = values[np.isfinite(values) & (values > 0)]
    if finite.size == 0:
        return {}
    low, high = float(finite.min()), float(finite.max())
    ticks = log_ticks(low, high, max_ticks=8)  # at most 8 labels on a 260 px high plot
    if len(ticks) < 2:
        ticks = sorted({float(f"{v:.3g}") for v in np.geomspace(low, high if high > low else low * 1.01, 4)})
    return {"tickmode": "array", "tickvals": ticks, "ticktext": [f"{v:g}" for v in ticks]}


def shown_payloads(payloads: list, moved: list) -> set:
    """The payloads a chart shows when the page opens: the smallest, the middle and the largest, and
    every one with a change point on the chart; the others are a click on their legend entry away
    (eleven lines and bands of 5000 runs on top of each other are no chart, issue 45 item 6)."""
    if len(payloads) <= DEFAULT_PAYLOADS:
        return set(payloads)
    ordered = sorted(payloads)
    return {ordered[0], ordered[len(ordered) // 2], ordered[-1]} | (set(moved) & set(payloads))


def chart(sub: str, statistic: str, wide: pd.DataFrame, changes: pd.DataFrame, tick_positions: list[int],
          tick_labels: list[str], ab: list[tuple[int, str, str]] = ()) -> dict:
    """Plotly data and layout of one chart; `wide`: experiments x payloads (NaN where missing), each
    payload's line whole (the browser decimates it); `ab`: (position, outcome, text) of history_ab.marks."""
    traces = []
    mine = changes[(changes[s.EXPERIMENT_TYPE] == sub) & (changes[cp.STATISTIC] == statistic)]
    shown = shown_payloads(list(wide.columns), mine[s.BYTES].tolist() if s.BYTES in mine else [])
    for index, payload in enumerate(wide.columns):
        values = rounded_values(wide[payload].to_numpy(dtype=float))
        # SVG ("scatter"), never WebGL: a browser keeps only a few WebGL contexts and the page has 30 charts
        traces.append({"type": "scatter", "mode": "lines", "name": f"{payload} B", "y": values,
                       "legendgroup": f"{payload} B", "visible": True if payload in shown else "legendonly",
                       "line": {"color": payload_colour(payload, index), "width": 1.2},
                       "hovertemplate": "%{customdata}<br>%{y:.3f} us<extra>" + f"{payload} B</extra>"})
    runs = len(wide)
    marks = change_marks(mine)
    texts = [f"{m['change']:+.1f} % ({m['count']} payload{'s' if m['count'] > 1 else ''})" for m in marks]
    rows = label_rows([m["position"] for m in marks], texts, runs)
    shapes, notes, unlabelled = [], [], []
    for mark, text, row in zip(marks, texts, rows):
        colour = REGRESSION_COLOUR if mark["change"] > 0 else IMPROVEMENT_COLOUR
        shapes.append({"type": "line", "x0": mark["position"] - 0.5, "x1": mark["position"] - 0.5, "yref": "paper",
                       "y0": 0, "y1": 1, "line": {"color": colour, "width": 1.5}})
        hover = plotly_text(f"{text} from {tick_labels[mark['position']]}: {', '.join(mark['details'])}")
        if row is not None:
            notes.append({"x": mark["position"] - 0.5, "xanchor": "right", "y": 1.0, "yref": "paper",
                          "yanchor": "bottom", "yshift": row * LABEL_ROW_PX, "showarrow": False,
                          "font": {"color": colour, "size": 11}, "text": text, "hovertext": hover})
        else:  # no room for its label: a small mark at the foot of its line, its label on hover
            unlabelled.append({"x": mark["position"] - 0.5, "y": 0.0, "yref": "paper", "yanchor": "bottom",
                               "showarrow": False, "font": {"color": colour, "size": 10}, "text": "\u25c6",
                               "hovertext": hover})
    notes += unlabelled
    used_rows = max((row + 1 for row in rows if row is not None), default=1)
    layout = {"title": {"text": f"{plotly_text(sub)}: {statistic} latency", "font": {"size": 14}},
              "height": CHART_HEIGHT_PX + (used_rows - 1) * LABEL_ROW_PX,
              "margin": {"l": 90, "r": 20, "t": TOP_MARGIN_PX + (used_rows - 1) * LABEL_ROW_PX, "b": 110},
              "hovermode": "closest", "shapes": shapes, "annotations": notes,
              "legend": {"title": {"text": "Payload<br><sub>click to show or hide</sub>"}, "traceorder": "reversed"},
              "xaxis": {"tickmode": "array", "tickvals": tick_positions,
                        "ticktext": [plotly_text(tick_labels[p]) for p in tick_positions], "tickangle": -30,
                        "tickfont": {"size": 10},
                        "title": {"text": "Fast DDS commit and run date, commit by commit", "standoff": 10}},
              "yaxis": {"type": "log", "title": {"text": "Latency [us]"},
                        **latency_ticks(wide.to_numpy(dtype=float).ravel())},
              "template": "none"}
    if ab:
        traces += ab_traces(list(ab))
    if ab:
        layout["yaxis2"] = {"overlaying": "y", "range": [0, 1], "visible": False, "fixedrange": True}
    return {"id": chart_id(sub, statistic), "statistic": statistic, "data": traces, "layout": layout}


def encoded_series(values: list) -> str | None:
    """A measured trace's `y` (numbers, None where a run lacks the value) as base64 of little-endian
    int32 thousandths, MISSING_THOUSANDTHS for None: the browser's value n / 1000 is the number
    rounded to 3 decimals; None when a value is out of that range (the trace keeps its JSON list)."""
    array = np.array(values, dtype=float)  # None -> NaN
    thousandths = np.rint(array * 1000)
    present = np.isfinite(thousandths)
    if not np.all(present | np.isnan(array)) or np.any(np.abs(thousandths[present]) >= LARGEST_THOUSANDTHS):
        return None
    return base64.b64encode(np.where(present, thousandths, MISSING_THOUSANDTHS).astype("<i4").tobytes()).decode("ascii")


def embedded_traces(traces: list[dict]) -> list[dict]:
    """The traces as the page embeds them: a measured trace (a `y`, no `x`) carries `y64` instead of
    its `y` (encoded_series) when it fits."""
    embedded = []
    for trace in traces:
        encoded = encoded_series(trace["y"]) if "x" not in trace and isinstance(trace.get("y"), list) else None
        embedded.append(trace if encoded is None else
                        {**{key: value for key, value in trace.items() if key != "y"}, "y64": encoded})
    return embedded


def _cell(column: str, value) -> str:
    if column == cp.P_VALUE:  # rounded for reading (the CSV files keep 6 digits); events.csv's cells are text
        number = pd.to_numeric(value, errors="coerce")
        value = event_names.p_text(float(number)) if not pd.isna(number) else value
    text = f"{value:.3f}" if isinstance(value, float) else "" if value is None else str(value)
    if column in (cp.COMMIT, cp.PREVIOUS_COMMIT, event_names.EVENT_GOOD_COMMIT, event_names.EVENT_BAD_COMMIT):
        text = text[:10]  # short enough to keep the table on the screen; the CSV files have it whole
    return html_text(text)


def change_table(changes: pd.DataFrame) -> str:
    if changes.empty:
        return "<p>No change point in this history.</p>"
    header = "".join(f"<th>{html_text(column)}</th>" for column in cp.CHANGE_POINT_COLUMNS)
    rows = []
    for row in changes.itertuples(index=False):
        values = dict(zip(cp.CHANGE_POINT_COLUMNS, row))
        kind = "regression" if values[cp.CHANGE] > 0 else "improvement"
        cells = "".join(f"<td>{_cell(column, values[column])}</td>" for column in cp.CHANGE_POINT_COLUMNS)
        rows.append(f'<tr class="{kind}">{cells}</tr>')
    return f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _words(value) -> str:
    """Text of several words (CMake arguments), each kept on one line: a browser breaks after '-'."""
    return " ".join(f'<span class="word">{html_text(word)}</span>' for word in (value if isinstance(value, str) else "").split())


def read_events(path: Path) -> pd.DataFrame | None:
    """`events.csv` of the history (event_names.EVENT_COLUMNS), every cell as text; None when absent."""
    if not path.is_file():
        return None
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (ValueError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read the history's events: {error}", path) from None
    if tuple(table.columns) != event_names.EVENT_COLUMNS:
        raise InputError(f"the history's events have the columns {', '.join(map(str, table.columns))}, not "
                         f"{', '.join(event_names.EVENT_COLUMNS)}", path)
    return table


def event_chart(sub: str, statistics: str) -> str:
    """The id of the chart an event links to: its sub-experiment's chart of the first statistic its
    Statistics cell names, else the sub-experiment's heading."""
    named = sorted((statistics.find(statistic), statistic) for statistic in CHART_STATISTICS if statistic in statistics)
    return chart_id(sub, named[0][1]) if named else sub


def events_table(events: pd.DataFrame | None, bisects: dict | None = None, change_points: int = 0) -> str:
    """The events first (when the history wrote events.csv): one row each, linked to its chart; the
    cells come from stored metadata, so each is escaped as element text. `bisects` (row position ->
    history.bisect_links.BisectLink): when any event was bisected, a last column links its report."""
    bisects = bisects or {}
    if events is None:
        return ""
    if events.empty:  # the change points below are marked on the charts: say why none is an event
        return "<h2>Events</h2>\n<p>No event in this history" + (
            f": none of the {change_points} change point(s) below moved its sub-experiment's level in the runs "
            "around it (docs/history.md \"Events\")" if change_points else "") + ".</p>\n"
    # the build options' column only when some event sits beside a change of them
    columns = [column for column in event_names.EVENT_COLUMNS if column != event_names.EVENT_BUILD_CHANGE
               or events[column].fillna("").astype(str).str.len().gt(0).any()]
    header = "".join(f"<th>{html_text(column)}</th>" for column in columns)
    header += "<th>Bisect</th>" if bisects else ""
    rows = []
    for position, (_, event) in enumerate(events.iterrows()):
        change = pd.to_numeric(event[cp.CHANGE], errors="coerce")
        kind = "regression" if change > 0 else "improvement" if change < 0 else "event"
        target = event_chart(event[s.EXPERIMENT_TYPE], event[EVENT_STATISTICS])
        cells = [f'<td><a href="#{html_text(target)}">{html_text(event[s.EXPERIMENT_TYPE])}</a></td>']
        cells += [f'<td class="words">{_words(event[column])}</td>' if column == event_names.EVENT_BUILD_CHANGE
                  else f"<td>{_cell(column, event[column])}</td>" for column in columns[1:]]
        if bisects:
            link = bisects.get(position)
            cells.append(f'<td class="bisect"><a href="{html_text(link.href)}">{html_text(link.text)}</a></td>'
                         if link else "<td></td>")
        rows.append(f'<tr class="{kind}">{"".join(cells)}</tr>')
    return (f"<h2>Events</h2>\n<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>\n")


def platform_name(requirements: Path | None) -> str | None:
    """The platform a history is of, by the convention `requirements/<platform>.csv` (the gate's
    --platform and $PERFGATE_PLATFORM choose that file); None for a requirements file elsewhere."""
    if requirements is None or requirements.parent.name != s.REQUIREMENTS_DIR:
        return None
    return requirements.stem


def platform_title(name: str | None, platform) -> tuple[str, str]:
    """(title, machine line): the platform by its name, and the newest run's machine (CPU model,
    cores, kernel) with its fingerprint id last, for reference (the id alone says nothing to a reader)."""
    if platform is None:
        return (f"perfgate latency history: {name}" if name else "perfgate latency history"), ""
    parts = [part for part in (platform.cpu_model, f"{platform.cores} cores" if platform.cores else None,
                               f"kernel {platform.kernel}" if platform.kernel else None) if part]
    machine = ", ".join(parts) + (f" (platform id {platform.id})" if platform.id else "")
    title = f"perfgate latency history: {name or platform.cpu_model or 'unnamed platform'}"
    return title, machine


def page(title: str, summary: str, changes: pd.DataFrame, charts_by_sub: dict[str, list[dict]],
         hover: list[str], plotly_js: str, events: pd.DataFrame | None = None, machine: str = "",
         bisects: dict | None = None, topology: tuple[str, list[dict]] = ("", [])) -> str:
    """The whole page as text. `hover`: one text per experiment position, shared by every trace;
    `topology`: the topologies' section and charts after the latency's (history.topology_page)."""
    sections = []
    for sub, charts in charts_by_sub.items():
        blocks = []
        for item in charts:
            png = f"{sub}/history_{s.PLOTTED_MAGNITUDES[item['statistic']]}.png"
            blocks.append(f'<div class="chart" id="{html_text(item["id"])}"></div>'
                          f'<p class="fallback"><a href="{html_text(png)}">PNG</a></p>')
        sections.append(f"<h2 id=\"{html_text(sub)}\">{html_text(sub)}</h2>{''.join(blocks)}")
    # labels, versions and sub-experiment names are inside: JSON that cannot end the <script> (escape.html)
    sections.append(topology[0])
    data = script_json([{"id": c["id"], "data": embedded_traces(c["data"]), "layout": c["layout"]}
                        for charts in [*charts_by_sub.values(), topology[1]] for c in charts], separators=(",", ":"))
    labels = script_json(hover, separators=(",", ":"))
    machine_line = f'<p class="machine">{html_text(machine)}</p>\n' if machine else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html_text(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; color: #222; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
td, th {{ border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }}
td.words {{ text-align: left; }} span.word {{ white-space: nowrap; }}
tr.regression td {{ background: #fde8e8; }} tr.improvement td {{ background: #e8f6e8; }}
.chart {{ width: 100%; min-height: {CHART_HEIGHT_PX}px; }} .fallback {{ font-size: 0.8em; margin: 0 0 1em 0; }}
.machine {{ color: #555; margin-top: -0.5em; }}
</style>
<script>{plotly_js}</script>
</head><body>
<h1>{html_text(title)}</h1>
{machine_line}<p>{html_text(summary)}</p>
{events_table(events, bisects, len(changes))}<h2>Change points</h2>
{change_table(changes)}
{''.join(sections)}
<script>
const HOVER = {labels};
const CHARTS = {data};
{SCRIPT}
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
