"""history.html at scale (issue 24 item 4): every chart drawn at 5000 runs with bounded data, readable
change-point labels, round Max ticks, distinct payload colours, the platform's name, the events first."""
from __future__ import annotations

import base64
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfgate import files
from perfgate import schema as s
from perfgate.errors import InputError
from perfgate.history import change_points as cp
from perfgate.history import page as hp
from perfgate.model import Platform
from perfgate.plotting.history_plots import PAYLOAD_COLOURS
from perfgate.history import names as event_names

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SUBS = s.DEFAULT_SUBEXPERIMENT_NAMES


def wide_values(runs: int, seed: int = 0, scale: float = 10.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({payload: scale * (1 + i / 4) * rng.lognormal(0, 0.05, runs)
                         for i, payload in enumerate(s.PAYLOADS)})


def changes_at(sub: str, statistic: str, positions: list[int], change: float = 8.0) -> pd.DataFrame:
    return pd.DataFrame({s.EXPERIMENT_TYPE: sub, s.BYTES: list(s.PAYLOADS[:len(positions)]), cp.STATISTIC: statistic,
                         cp.INDEX: positions, cp.CHANGE: change})


def label_spans(chart: dict, runs: int) -> dict[int, list[tuple[float, float]]]:
    """Per row of labels (their yshift), the pixel span each labelled change point takes on a plot of
    hp.PLOT_WIDTH_PX: it ends at its line (xanchor right)."""
    rows: dict[int, list[tuple[float, float]]] = {}
    for note in chart["layout"]["annotations"]:
        if note.get("xanchor") == "right":
            right = note["x"] * hp.PLOT_WIDTH_PX / runs
            rows.setdefault(note.get("yshift", 0), []).append((right - hp.LABEL_CHARACTER_PX * len(note["text"]), right))
    return rows


def test_change_point_labels_never_overlap_however_many_land_close_together():
    # the smear of issue 24: 99 % change points of eleven payloads placed up to 24 runs apart around run 600,
    # some in the other direction (a slow run), and a second step further on
    runs = 1000
    positions = [576, 580, 585, 590, 597, 600, 603, 608, 614, 618, 624]
    changes = pd.concat([changes_at(SUBS[0], s.P99, positions), changes_at(SUBS[0], s.P99, [640, 650], -5.0),
                         changes_at(SUBS[0], s.P99, [700], 3.0)], ignore_index=True)
    chart = hp.chart(SUBS[0], s.P99, wide_values(runs), changes, hp.tick_positions(runs), [f"t{i}" for i in range(runs)])
    spans = label_spans(chart, runs)
    assert spans, "no change point labelled"
    for row in spans.values():
        ordered = sorted(row)
        assert all(left_end <= right_start for (_, left_end), (right_start, _) in zip(ordered, ordered[1:])), ordered
    assert len(spans) <= hp.LABEL_ROWS
    # every change point still has its line, and the lines of one direction a few runs apart are one
    assert len(chart["layout"]["shapes"]) < len(changes)
    # what did not fit is still there: each unlabelled mark carries its label on hover
    assert all(note.get("hovertext") for note in chart["layout"]["annotations"])


def test_the_latency_axis_is_labelled_with_round_plain_numbers():
    # Max over a little more than a decade: plotly's own log ticks read "9 1000 2 3" there
    wide = pd.DataFrame({16: [900.0, 1500.0, 2500.0, 3100.0], 1024: [950.0, 1200.0, 11000.0, 2000.0]})
    chart = hp.chart(SUBS[0], s.MAX, wide, changes_at(SUBS[0], s.MAX, []), [0, 3], ["a", "b", "c", "d"])
    axis = chart["layout"]["yaxis"]
    assert axis["type"] == "log" and axis["tickmode"] == "array"
    assert axis["tickvals"] == [1000, 1500, 2000, 3000, 5000, 7000, 10000]
    assert axis["ticktext"] == ["1000", "1500", "2000", "3000", "5000", "7000", "10000"]
    # a span without two round values still gets plain numbers
    narrow = hp.chart(SUBS[0], s.MEDIAN, pd.DataFrame({16: [10.1, 10.4]}), changes_at(SUBS[0], s.MEDIAN, []), [0, 1],
                      ["a", "b"])["layout"]["yaxis"]
    assert len(narrow["tickvals"]) >= 2 and all(re.fullmatch(r"[0-9.]+", text) for text in narrow["ticktext"])


def relative_luminance(colour: str) -> float:
    channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_payload_colours_are_distinct_and_readable_on_white():
    chart = hp.chart(SUBS[0], s.MEDIAN, wide_values(5), changes_at(SUBS[0], s.MEDIAN, []), [0, 4], list("abcde"))
    colours = [trace["line"]["color"] for trace in chart["data"]]
    assert len(colours) == 11 and len(set(colours)) == 11 and tuple(colours) == PAYLOAD_COLOURS
    # contrast with the white page of at least 3:1 (WCAG's for graphics): no faint light yellow
    assert all((1.05 / (relative_luminance(c) + 0.05)) >= 3 for c in colours), \
        [c for c in colours if 1.05 / (relative_luminance(c) + 0.05) < 3]
    # none is the red or green of the change points
    assert not {c.lower() for c in colours} & {hp.REGRESSION_COLOUR, hp.IMPROVEMENT_COLOUR}


def test_the_title_names_the_platform_and_the_machine_not_its_fingerprint():
    platform = Platform(id="9f2c61d0b7e54a13", cpu_model="Intel(R) Xeon(R) Gold 6248", cores=2, kernel="6.1.0-28")
    title, machine = hp.platform_title(hp.platform_name(Path("requirements/vm-2core-x64.csv")), platform)
    assert title == "perfgate latency history: vm-2core-x64"
    assert machine == "Intel(R) Xeon(R) Gold 6248, 2 cores, kernel 6.1.0-28 (platform id 9f2c61d0b7e54a13)"
    # a requirements file outside requirements/ names no platform: the machine's model does
    title, _ = hp.platform_title(hp.platform_name(Path("/tmp/my-limits.csv")), platform)
    assert title == "perfgate latency history: Intel(R) Xeon(R) Gold 6248"


def events_frame(label: str) -> pd.DataFrame:
    return pd.DataFrame([[SUBS[1], "600", label, "2026-11-30 02:14", "ab" * 20, "cd" * 20, "8.1", "6.9", "16 B, 32 B",
                          "Median, 99%", "1.23456e-09", f"#600 {label}: added -DX={label}", "599", "601", "ef" * 20, "cd" * 20]],
                        columns=list(event_names.EVENT_COLUMNS))


def test_the_events_lead_the_page_each_linking_to_its_chart_and_escaped(tmp_path):
    hostile = '<img src=x onerror=alert(1)>"&'
    path = tmp_path / event_names.EVENTS_CSV
    files.write_text(path, files.format_csv(events_frame(hostile)))
    events = hp.read_events(path)
    page = hp.page("t", "s", pd.DataFrame(columns=list(cp.CHANGE_POINT_COLUMNS)), {}, ["h"], "", events)
    assert page.index("<h2>Events</h2>") < page.index("<h2>Change points</h2>")
    assert f'<td><a href="#{hp.chart_id(SUBS[1], s.MEDIAN)}">{SUBS[1]}</a></td>' in page
    assert hostile not in page and "&lt;img src=x onerror=alert(1)&gt;&quot;&amp;" in page
    assert "<th>Build options changed</th>" in page  # each word escaped, kept on one line
    assert '<td class="words"><span class="word">#600</span> <span class="word">&lt;img</span> <span class="word">src=x</span>' in page
    assert "<td>abababababab" not in page and "<td>ababababab</td>" in page  # commits short, as in the table below
    assert "<td>2026-11-30 02:14</td>" in page  # when the event's run was measured
    assert "<td>1.2e-09</td>" in page and "1.23456e-09" not in page  # p rounded for reading
    # no events.csv: no events section at all
    assert hp.read_events(tmp_path / "absent.csv") is None
    assert "Events" not in hp.page("t", "s", pd.DataFrame(columns=list(cp.CHANGE_POINT_COLUMNS)), {}, ["h"], "", None)


def test_an_events_file_with_other_columns_is_one_error_naming_it(tmp_path):
    path = tmp_path / event_names.EVENTS_CSV
    path.write_text("Experiment type,Index\nx,1\n")
    with pytest.raises(InputError) as raised:
        hp.read_events(path)
    assert raised.value.path == path and "columns" in raised.value.message


def page_of(runs: int, folder: Path) -> tuple[Path, list[dict]]:
    """The page of ten sub-experiments x Median/99%/Max over `runs` runs, with a step's change points."""
    ticks = [f"{i:07x} 2026-01-01" for i in range(runs)]
    changes = changes_at(SUBS[3], s.MEDIAN, [runs * 3 // 4 + d for d in range(-2, 3)])
    charts = {sub: [hp.chart(sub, statistic, wide_values(runs, seed, scale), changes, hp.tick_positions(runs), ticks)
                    for statistic, scale in zip(hp.CHART_STATISTICS, (10.0, 15.0, 200.0))]
              for seed, sub in enumerate(SUBS)}
    page = folder / hp.PAGE_NAME
    files.write_text(page, hp.page("t", "s", pd.DataFrame(columns=list(cp.CHANGE_POINT_COLUMNS)), charts, [f"{t} · run-{i}" for i, t in enumerate(ticks)],
                                   hp.plotly_javascript()))
    return page, [c for cs in charts.values() for c in cs]


def decoded(trace: dict) -> list:
    """An embedded trace's series as the page's script reads it (page_script.py `decoded`)."""
    if "y64" not in trace:
        return trace["y"]
    ints = np.frombuffer(base64.b64decode(trace["y64"]), dtype="<i4")
    return [None if n == hp.MISSING_THOUSANDTHS else int(n) / 1000 for n in ints]


def probed(page: Path, probe: str, mark: str):
    """What the page's `probe` script (placed before </body>) left as JSON in <body data-<mark>>, once
    headless Chromium has drawn the page."""
    page.write_text(page.read_text().replace("</body>", probe))
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000",
                          "--virtual-time-budget=60000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=600).stdout
    return json.loads(html.unescape(re.search(rf'data-{mark}="([^"]*)"', dom).group(1)))


def test_series_are_embedded_as_thousandths_exactly_and_out_of_range_ones_stay_lists():
    values = [1.0, None, 12345.678, 0.001, -3.5, 2_000_000.25]
    [trace] = hp.embedded_traces([{"type": "scatter", "y": values}])
    assert "y" not in trace and decoded(trace) == values
    huge = [1.0, 3e6 * 1000.0]  # e.g. a topology's RSS in bytes: past int32 in thousandths
    assert hp.embedded_traces([{"y": huge}]) == [{"y": huge}]
    # a trace with its own x (the A/B marks) is embedded as it is
    assert hp.embedded_traces([{"x": [3], "y": [0.97]}]) == [{"x": [3], "y": [0.97]}]


@pytest.mark.heavy
def test_every_chart_draws_at_5000_runs_with_bounded_points_and_no_webgl(tmp_path):
    assert CHROMIUM is not None, "chromium not found: install the Debian package chromium (ci/test.sh does)"
    runs = 5000
    page, charts = page_of(runs, tmp_path)
    text = page.read_text()
    embedded = json.loads(re.search(r"const CHARTS = (.*);\n", text).group(1))
    assert len(embedded) == 30
    for chart in embedded:
        measured = [trace for trace in chart["data"] if trace["name"].endswith(" B")]
        # full detail is there for zooming: every run of every payload, once, 3 decimals; SVG, no WebGL
        assert len(measured) == 11 and all(len(decoded(trace)) == runs for trace in measured)
        drawn = next(c for c in charts if c["id"] == chart["id"])
        assert [decoded(trace) for trace in measured] == [trace["y"] for trace in drawn["data"][:11]]
        assert {trace["type"] for trace in chart["data"]} == {"scatter"}
        assert len(json.dumps(chart["data"], separators=(",", ":"))) <= 11 * runs * 9
    assert "scattergl" not in text.replace(hp.plotly_javascript(), "")
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000",
                          "--virtual-time-budget=60000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=600).stdout
    # every chart's container is there, plotted, with its lines and bands drawn from a bounded number of
    # points: per payload and BUCKET_PX (2) pixels of the 1400 px window one point of its median line and
    # two of its band, whatever the number of runs
    containers = re.findall(r'<div class="chart[^"]*" id="(chart-[^"]+)"[^>]*data-points="(\d+)"', dom)
    assert sorted(name for name, _ in containers) == sorted(chart["id"] for chart in charts)
    assert all(0 < int(points) <= 11 * 3 * 1400 // 2 for _, points in containers), containers
    assert len(re.findall(r'class="plot-container plotly"', dom)) == 30
    # three payloads open on each chart (five where a step's change points name two more), each a line and a band
    assert len(re.findall(r'class="js-fill"', dom)) >= 30 * 3
    assert re.search(r'<body[^>]*data-drawn-ms="\d+"', dom)


@pytest.mark.heavy
def test_zooming_in_draws_every_run_shown_from_the_whole_series(tmp_path):
    assert CHROMIUM is not None, "chromium not found: install the Debian package chromium (ci/test.sh does)"
    runs = 5000
    page, charts = page_of(runs, tmp_path)
    # what a reader's zoom does: the x range of the first chart set to runs 1000..1100, then its first line read
    probe = """<script>
const zoomed = document.getElementById(CHARTS[0].id);
window.perfgateChartsDrawn.then(function () { return Plotly.relayout(zoomed, {"xaxis.range": [1000, 1100]}); }).then(function () {
  const line = zoomed.data.find(function (trace) { return trace.name === "16 B"; });
  const band = zoomed.data.find(function (trace) { return trace.fill === "toself" && trace.legendgroup === "16 B"; });
  document.body.dataset.zoomed = JSON.stringify({x: line.x, y: line.y, band: band.x.length});
});
</script>
</body>"""
    zoomed = probed(page, probe, "zoomed")
    full = charts[0]["data"][0]["y"]
    assert zoomed["x"] == list(range(999, 1102))  # every run shown, one beyond each edge
    assert zoomed["y"] == full[999:1102]
    assert zoomed["band"] == 0  # every run drawn: nothing to summarise in a band


def test_a_chart_opens_with_three_payloads_and_those_whose_change_points_it_marks():
    runs = 200
    assert hp.shown_payloads(list(s.PAYLOADS), []) == {16, 512, 16384}
    assert hp.shown_payloads(list(s.PAYLOADS), [1024, 2048]) == {16, 512, 1024, 2048, 16384}
    assert hp.shown_payloads([16, 64], []) == {16, 64}
    chart = hp.chart(SUBS[0], s.MEDIAN, wide_values(runs), changes_at(SUBS[0], s.MEDIAN, [100]),
                     hp.tick_positions(runs), [f"t{i}" for i in range(runs)])
    visible = {trace["name"]: trace["visible"] for trace in chart["data"]}
    assert visible == {f"{p} B": True if p in (16, 512, 16384) else "legendonly" for p in s.PAYLOADS}
    assert all(trace["legendgroup"] == trace["name"] for trace in chart["data"])


@pytest.mark.heavy
def test_at_5000_runs_each_payload_is_its_median_line_inside_its_spread(tmp_path):
    """What a reader sees at 5000 runs (issue 45 item 6): per bucket of runs the run holding the bucket's
    median is a point of the line, and the bucket's lowest and highest values are the band's edges."""
    assert CHROMIUM is not None, "chromium not found: install the Debian package chromium (ci/test.sh does)"
    runs = 5000
    page, charts = page_of(runs, tmp_path)
    probe = """<script>
window.perfgateChartsDrawn.then(function () {
  const chart = document.getElementById(CHARTS[0].id);
  const line = chart.data.find(function (trace) { return trace.name === "16 B"; });
  const band = chart.data.find(function (trace) { return trace.fill === "toself" && trace.legendgroup === "16 B"; });
  const hidden = chart.data.find(function (trace) { return trace.name === "32 B"; });
  document.body.dataset.drawn = JSON.stringify({x: line.x, y: line.y, bandX: band.x, bandY: band.y,
                                                hidden: hidden.visible, hiddenBand: chart.data.find(function (trace) {
                                                  return trace.fill === "toself" && trace.legendgroup === "32 B"; }).visible});
});
</script>
</body>"""
    drawn = probed(page, probe, "drawn")
    full = np.array(charts[0]["data"][0]["y"], dtype=float)
    x, y = np.array(drawn["x"]), np.array(drawn["y"], dtype=float)
    buckets = len(x)
    assert 300 < buckets < 1000 and np.all(np.diff(x) > 0)  # a point per 2 px of the plot, runs in order
    edges = np.floor(np.arange(buckets + 1) * runs / buckets).astype(int)
    half = len(drawn["bandX"]) // 2
    assert half == buckets and drawn["bandX"][:half] == drawn["x"] and drawn["bandX"][half:] == drawn["x"][::-1]
    highs, lows = np.array(drawn["bandY"][:half]), np.array(drawn["bandY"][half:][::-1])
    for b in range(buckets):
        values = full[edges[b]:edges[b + 1]]
        assert edges[b] <= x[b] < edges[b + 1] and y[b] == full[x[b]]
        assert y[b] == np.sort(values)[(len(values) - 1) // 2]  # the bucket's (lower) median
        assert highs[b] == values.max() and lows[b] == values.min()
    # a payload a click away: its line and band both wait in the legend
    assert drawn["hidden"] == "legendonly" and drawn["hiddenBand"] == "legendonly"


@pytest.mark.heavy
def test_the_chart_in_view_draws_first_and_the_page_marks_when_every_chart_is_drawn(tmp_path):
    assert CHROMIUM is not None, "chromium not found: install the Debian package chromium (ci/test.sh does)"
    runs = 1000
    page, charts = page_of(runs, tmp_path)
    # the order the charts are drawn in, and what is drawn when the page says all are
    probe = """<script>
const order = [];
function record(changes) { for (const change of changes) order.push(change.target.id); }
const watcher = new MutationObserver(record);
watcher.observe(document.body, {subtree: true, attributes: true, attributeFilter: ["data-points"]});
document.addEventListener("perfgate-charts-drawn", function (event) {
  record(watcher.takeRecords());  // the last charts' changes, not delivered yet
  document.body.dataset.probe = JSON.stringify({
    order: order, event: event.detail.ms, mark: document.body.dataset.drawnMs, view: document.body.dataset.viewMs,
    drawn: document.querySelectorAll(".chart[data-points] .plot-container").length});
});
</script>
"""
    # before the page's script: it sees every chart drawn
    page.write_text(page.read_text().replace("<script>\nconst HOVER", probe + "<script>\nconst HOVER"))
    # opened at the last sub-experiment's Max chart, as a link of the events table does
    target = charts[-1]["id"]
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000",
                          "--virtual-time-budget=60000", "--dump-dom", f"{page.as_uri()}#{target}"],
                         capture_output=True, text=True, timeout=600).stdout
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, "the page never said that every chart was drawn"
    probe = json.loads(html.unescape(found.group(1)))
    # when it says so, all 30 are drawn, each once, and the mark on <body> agrees with the event
    assert probe["drawn"] == 30 and sorted(probe["order"]) == sorted(chart["id"] for chart in charts)
    assert probe["mark"] == str(probe["event"]) and int(probe["view"]) <= probe["event"]
    # the chart the reader looks at first, before the ones above it; the rest in page order
    assert probe["order"].index(target) < probe["order"].index(charts[0]["id"])
    rest = [name for name in probe["order"] if name != target]
    assert rest[:5] == [chart["id"] for chart in charts if chart["id"] != target][:5] or \
        probe["order"].index(target) == 0


def test_the_page_rounds_each_value_as_python_does_including_half_thousandths():
    # values a hair off a half thousandth, where value * 1000 rounds to the other side in binary
    halves = np.array([1.0005, 2.0015, 0.0005, 1e6 + 0.0005, 8.0045, 123.4565, -1.2345, 0.0, 1e-9])
    values = np.concatenate([halves, np.random.default_rng(3).lognormal(3, 2, 20000), [np.nan]])
    assert hp.rounded_values(values) == [None if np.isnan(v) else round(float(v), 3) for v in values]
