"""Untrusted text in GitHub Markdown (issue 23, escape/markdown.py): the gate's step summary
(report.md), the A/B reports and the failed-build report show a label, a version or a message as
written: no link, image, autolink, @mention, HTML, code span or emphasis of its own, and a table
row keeps its cells."""
from __future__ import annotations

import html
import json
import re

import pytest

from perfgate import cli, report
from perfgate import schema as s
from perfgate.escape import markdown
from escape_hostile import BAD_VERSION, FORGED, HOSTILE, hostile_experiment

OWN_TAGS = {"details", "/details", "summary", "/summary"}  # the report's own HTML blocks


def live_markup(text: str) -> list[str]:
    """What GitHub would render as markup of its own in `text`: links and images, autolinks,
    @mentions, HTML tags (but the report's own), code spans, emphasis with * or ~."""
    found = re.findall(r"!?\[[^\]\n]*\][(\[:]", text)
    found += re.findall(r"(?i)(?:https?|ftp|javascript)://\S*|www\.\S+", text)
    found += re.findall(r"(?<![\w@])@[A-Za-z0-9]", text)
    found += [tag for tag in re.findall(r"<(/?[A-Za-z!][^\s>]*)", text) if tag not in OWN_TAGS]
    unbold = text.replace("**", "")  # the report's own bold: a `*` of the text is escaped, so never one of a pair
    found += re.findall(r"`[^`\n]*`", text) + re.findall(r"\*[^*\s][^*\n]*\*|~~[^~\n]+~~", unbold)
    return found


@pytest.mark.parametrize("text", HOSTILE + (BAD_VERSION,))
def test_text_has_no_markup_of_its_own_and_reads_back_as_written(text):
    shown = markdown.text(text)
    assert live_markup(shown) == [] and "\n" not in shown and "\r" not in shown and "|" not in shown
    shown.encode("utf-8")
    if not re.search("[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]", text):  # but the unshowable ones, as written
        read = html.unescape(shown).replace(markdown.ZERO_WIDTH_JOINER, "")
        assert read == re.sub("[\n\r\u2028\x85]", " ", text)


def test_links_mentions_and_autolinks_are_broken_visibly():
    assert markdown.text("[x](javascript:alert(1))") == "[x&#93;(javascript:alert(1))"
    assert markdown.text("![i](https://e.example/p.png)") == "![i&#93;(https&#58;//e.example/p.png)"
    assert markdown.text("[r]: https://e.example [x][r] [^1]: y") == "[r&#93;: https&#58;//e.example [x&#93;[r] [^1&#93;: y"
    assert markdown.text("Max[1024 B]") == "Max[1024 B]"  # a testcase name, no link
    assert markdown.text("@octocat") == "@\u200doctocat"
    assert markdown.text("fixes #12, org/repo#3") == "fixes #\u200d12, org/repo#\u200d3"  # no cross-reference
    assert markdown.text("WWW.evil.example") == "WWW&#46;evil.example"
    assert markdown.text("<!--<script>") == "&lt;!--&lt;script&gt;"


def test_comment_text_is_inert_even_where_it_would_notify():
    shown = markdown.inert_text("[x](http://e.example) ![i](p.png) @team #12 :x: `c` www.e.example\n")
    for live in ("](", "![", "@t", "#1", ":x:", "`", "://", "www.", "\n"):
        assert live not in shown
    assert html.unescape(shown).replace("\u200b", "") == "[x](http://e.example) ![i](p.png) @team #12 :x: `c` www.e.example "


@pytest.mark.parametrize("label", [FORGED + " [x](https://evil.example) ![i](www.evil.example/p.png) @octocat",
                                   "<!--<script>x</script> `a` *b* | c <img src=x onerror=alert(1)>"])
def test_the_gates_report_md_shows_a_hostile_label_and_version_as_text(tmp_path, label):
    experiment, requirements = hostile_experiment(tmp_path, label)
    results = report.load(experiment, requirements, baseline_note=f"baseline {label}",
                          warnings=[f"warning @octocat {label}"], step_errors=[f"error {label}"],
                          fastdds_note=f"Fast DDS {BAD_VERSION}")
    step_summary = tmp_path / "step_summary.md"
    _, markdown_path = report.write_reports(results, step_summary)
    for text in (markdown_path.read_text(encoding="utf-8"), step_summary.read_text(encoding="utf-8")):
        assert live_markup(text) == [], live_markup(text)
        assert "FORGED" in text or "script" in text  # shown, not dropped
        rows = [line for line in text.splitlines() if line.startswith("|")]
        assert rows and len({line.count("|") for line in rows}) == 1  # no cell split


def test_the_ab_report_md_shows_hostile_arms_as_text(tmp_path):
    from ab_inputs import SUBS, write_rounds
    write_rounds(tmp_path, 16, {SUBS[1]: 0.05})
    (tmp_path / s.METADATA_FILE).write_text(json.dumps({
        "kind": "ab", "label": FORGED, "samples": 200,
        "arms": {arm: {"spec": f"[{arm}](https://evil.example) @octocat <b>x</b>",
                       "fastdds": {"version": BAD_VERSION, "commit": "`x`"}} for arm in s.AB_ARMS}}))
    assert cli.main(["verdict", "--ab-directory", str(tmp_path), "--no-plots"]) == s.EXIT_REGRESSION
    text = (tmp_path / s.REPORT_MARKDOWN).read_text(encoding="utf-8")
    assert "evil" in text and live_markup(text) == [], live_markup(text)


def test_a_failed_builds_report_md_shows_a_hostile_version_and_error_as_text(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / s.BUILD_RECORD_FILE).write_text(json.dumps({
        "status": s.BUILD_FAILED, "workspace": str(workspace), "error": "failed [x](https://evil.example) @octocat",
        "log": str(workspace / "build.log"), "log_tail": "", "fastdds": {"version": "<img src=x> @octocat"}}))
    assert cli.main(["gate", "--workspace", str(workspace), "--output", str(tmp_path / "out")]) == s.EXIT_INCOMPLETE
    text = (tmp_path / "out" / s.REPORT_MARKDOWN).read_text(encoding="utf-8")
    outside_code = re.sub(r"(?s)```.*?```|`[^`\n]*`", "", text)  # the log's path and tail are code on purpose
    assert "evil" in text and live_markup(outside_code) == [], live_markup(outside_code)
