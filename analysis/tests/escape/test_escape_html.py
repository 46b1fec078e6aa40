"""Untrusted text in HTML (issue 23, escape/html.py): history.html (published to GitHub Pages), the
gate's report.html and the A/B report show a hostile label, version or sub-experiment as text: it
opens no element, ends no <script>, and every chart of the history page still draws."""
from __future__ import annotations

import html.parser
import json
import re
import subprocess

import pytest

from perfgate import cli, report
from perfgate.history import page as hp
from perfgate import schema as s
from perfgate.escape import html as escape_html
from conftest import CHROMIUM
from escape_hostile import BAD_VERSION, FORGED, HOSTILE, hostile_experiment, write_hostile_store

SCRIPT_BREAKERS = ("</script>", "<!--<script>", "</SCRIPT >", "<!-- </script> -->", "<script>", "]]>")


@pytest.mark.parametrize("text", HOSTILE + SCRIPT_BREAKERS + ("a\u2028b\u2029c",))
def test_script_json_has_nothing_the_html_tokenizer_reads_and_the_same_value_to_javascript(text):
    value = {"label": text, "list": [text, 1.5, None]}
    encoded = escape_html.script_json(value, separators=(",", ":"))
    assert not re.search("[<>&\u2028\u2029]", encoded) and encoded.isascii()
    assert json.loads(encoded) == value


def test_text_and_plotly_text_are_shown_literally():
    assert escape_html.text('<img src=x onerror="a">&\'') == "&lt;img src=x onerror=&quot;a&quot;&gt;&amp;&#x27;"
    assert escape_html.plotly_text("a<br>b<a href='javascript:x'>") == "a&lt;br&gt;b&lt;a href='javascript:x'&gt;"
    assert escape_html.text("a\udc80") == "a\ufffd"  # writable as UTF-8


class Elements(html.parser.HTMLParser):
    """The start tags of a page, outside script contents (which the parser keeps as text)."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attributes):
        self.tags.append((tag, dict(attributes)))


def elements(page: str) -> list[tuple[str, dict]]:
    parser = Elements()
    parser.feed(page)
    parser.close()
    return parser.tags


def no_element_from_text(page: str) -> None:
    tags = elements(page)
    assert not [tag for tag, attributes in tags if tag == "img" and attributes.get("src") == "x"]
    assert not [attributes for _, attributes in tags if "onerror" in attributes]
    assert "<!--<script>" not in page and "</script><script>document" not in page


def test_the_gates_report_html_shows_hostile_text_as_text(tmp_path):
    label = "<!--<script>x</script> <img src=x onerror=alert(1)> " + FORGED
    experiment, requirements = hostile_experiment(tmp_path, label)
    results = report.load(experiment, requirements, baseline_note=label, warnings=[label], step_errors=[label],
                          fastdds_note=BAD_VERSION)
    html_path, _ = report.write_reports(results)
    page = html_path.read_text(encoding="utf-8")
    no_element_from_text(page)
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and [tag for tag, _ in elements(page)].count("script") == 0


def test_the_ab_report_html_shows_hostile_arms_as_text(tmp_path):
    from ab_inputs import SUBS, write_rounds
    write_rounds(tmp_path, 16, {SUBS[1]: 0.05})
    (tmp_path / s.METADATA_FILE).write_text(json.dumps({
        "kind": "ab", "label": FORGED, "samples": 200,
        "arms": {arm: {"spec": f"<img src=x onerror=alert(1)> {arm} \udc80", "fastdds": {"version": "</script><!--<script>"}}
                 for arm in s.AB_ARMS}}))
    assert cli.main(["verdict", "--ab-directory", str(tmp_path), "--no-plots"]) == s.EXIT_REGRESSION
    no_element_from_text((tmp_path / s.REPORT_HTML).read_text(encoding="utf-8"))


@pytest.mark.heavy
def test_the_history_page_draws_every_chart_with_hostile_labels_and_versions(tmp_path):
    # A real browser, as test_history_page: every label of the store is hostile, one of them
    # `<!--<script>`, which left 0 of 6 charts drawn when the JSON escaped only `</`
    assert CHROMIUM is not None, "chromium not found: install the Debian package chromium (ci/test.sh does)"
    requirements = write_hostile_store(tmp_path)
    assert cli.main(["history", "--requirements", str(requirements), "--experiments-results", str(tmp_path / "store"),
                     "--plots-directory", str(tmp_path / "plots")]) == s.EXIT_OK
    page = tmp_path / "plots" / hp.PAGE_NAME
    text = page.read_text(encoding="utf-8")
    rest = text.replace(hp.plotly_javascript(), "")
    no_element_from_text(rest)
    assert [tag for tag, _ in elements(rest)].count("script") == 2  # plotly and the charts: no third
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert len(re.findall(r'class="plot-container plotly"', dom)) == 6
    assert len(re.findall(r'class="scatterlayer', dom)) == 6
    assert len(re.findall(r'class="js-line"', dom)) >= 6 * 2
    assert "owned" not in re.search(r"<title>(.*?)</title>", dom).group(1)  # no script of a label ran
    assert "onerror" not in "".join(re.findall(r"<img[^>]*>", dom))
    # the hover texts and ticks show the label as text (plotly reads its markup from them otherwise)
    assert "&lt;img src=x onerror=alert(1)&gt;" in rest.replace("\\u003c", "<").replace("\\u003e", ">") \
        .replace("\\u0026", "&")
