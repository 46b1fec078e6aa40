"""The interactive history page: the change points first, charts that render offline (issue 13)."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from perfgate.history import change_points as cp
from perfgate import files
from perfgate.history import latency as history
from perfgate.history import page as hp
from perfgate import schema as s
from conftest import CHROMIUM, REPO_ROOT
from history_synthetic import SUBS, write_store



def test_a_chart_has_a_line_per_payload_with_three_decimals_and_its_change_points():
    wide = pd.DataFrame({16: [1.00049, 2.0, np.nan], 1024: [3.0, 4.0, 5.0]})
    changes = pd.DataFrame({s.EXPERIMENT_TYPE: ["a", "a", "b"], cp.STATISTIC: [s.MEDIAN, s.MEDIAN, s.MEDIAN],
                            cp.INDEX: [2, 2, 1], cp.CHANGE: [8.0, 6.0, -3.0]})
    chart = hp.chart("a", s.MEDIAN, wide, changes, [0, 2], ["t0", "t1", "t2"])
    assert chart["id"] == "chart-a-median"
    assert [trace["y"] for trace in chart["data"]] == [[1.0, 2.0, None], [3.0, 4.0, 5.0]]
    assert [trace["line"]["color"] for trace in chart["data"]] == [hp.PAYLOAD_COLOURS[0], hp.PAYLOAD_COLOURS[6]]
    assert [shape["x0"] for shape in chart["layout"]["shapes"]] == [1.5]
    assert chart["layout"]["annotations"][0]["text"] == "+7.0 % (2 payloads)"
    assert chart["layout"]["xaxis"]["ticktext"] == ["t0", "t2"]
    assert hp.tick_positions(1000) == [0, 111, 222, 333, 444, 555, 666, 777, 888, 999]
    assert hp.tick_positions(3) == [0, 1, 2] and hp.tick_positions(1) == [0]


def write_history(tmp_path):
    write_store(tmp_path / "store", 30, 20)
    requirements = tmp_path / "requirements.csv"
    files.write_csv(requirements, pd.DataFrame([{s.EXPERIMENT_TYPE: sub, s.BYTES: 16, s.MEDIAN: 100.0, s.P99: 200.0,
                                                 s.MAX: 900.0} for sub in SUBS[:2]]))
    plots = tmp_path / "plots"
    assert history.command_history(str(requirements), str(tmp_path / "store"), str(plots), no_plots=False) == 0
    return plots / hp.PAGE_NAME


@pytest.mark.heavy
def test_the_page_embeds_plotly_and_puts_the_change_points_first(tmp_path):
    page = write_history(tmp_path).read_text()
    # opens offline: plotly.js is inside, and nothing else of the page names a resource to load
    plotly_js = hp.plotly_javascript()
    assert page.count(plotly_js) == 1 and len(plotly_js) > 1_000_000
    rest = page.replace(plotly_js, "")
    assert "<script src" not in rest and "http" not in rest and "<link" not in rest
    assert page.index("<h2>Change points</h2>") < page.index(f'<h2 id="{SUBS[0]}">')
    rows = re.findall(r'<tr class="(\w+)"><td>([^<]*)</td><td>(\d+)</td><td>([^<]*)</td><td>(\d+)</td>', page)
    assert len(rows) == 6 and {row[0] for row in rows} == {"regression"}
    assert {(row[1], row[4]) for row in rows} == {(SUBS[1], "20")}
    assert len(re.findall(r'<div class="chart" id="chart-', page)) == 6
    assert f'<a href="{SUBS[1]}/history_99.png">PNG</a>' in page


@pytest.mark.heavy
def test_the_charts_render_in_a_headless_browser(tmp_path):
    # A real browser, installed by ci/test.sh (ci/debian-test-packages.txt): never skipped.
    assert CHROMIUM is not None, "chromium not found: install the Debian package chromium (ci/test.sh does)"
    page = write_history(tmp_path)
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    # plotly replaces each empty chart div by its plot: an SVG per chart with the lines drawn in it
    assert len(re.findall(r'class="plot-container plotly"', dom)) == 6
    assert len(re.findall(r'class="scatterlayer', dom)) == 6
    assert len(re.findall(r'class="js-line"', dom)) >= 6 * 2  # two payloads per chart
    # the change point drawn, with its note, on the three charts of the sub-experiment that moved
    assert len(re.findall(r"<g class=\"annotation\"", dom)) == 3
    assert "6 change point(s)" in dom


def test_the_nightly_index_links_each_platforms_page_and_change_points_first(tmp_path):
    site = tmp_path / "site"
    for platform, with_page in (("reference-x64", True), ("reference-arm64", False)):
        sub = site / f"perfgate-history-{platform}" / "intraprocess_reliable"
        sub.mkdir(parents=True)
        (sub / "history_median.png").write_bytes(bytes.fromhex("89504e470d0a1a0a"))
        if with_page:
            (sub.parent / hp.PAGE_NAME).write_text("<html></html>")
            (sub.parent / "change_points.csv").write_text(",".join(cp.CHANGE_POINT_COLUMNS) + "\n")
    result = subprocess.run([sys.executable, REPO_ROOT / ".github" / "scripts" / "history_page.py", site],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    index = (site / "index.html").read_text()
    links = re.findall(r'<p><a href="([^"]+)">', index)
    assert links == ["perfgate-history-reference-x64/history.html", "perfgate-history-reference-x64/change_points.csv"]
    assert index.index("history.html") < index.index('<img src="perfgate-history-reference-x64/')
