"""bisect.report and bisect.commits' git side: what `perfgate bisect` writes (bisect.json, report.md,
report.html, the chart) from a search's result, with a repository's hostile subjects and authors
escaped; the first-parent range fetched from a real repository."""
from __future__ import annotations

import json
import math

import pytest

from perfgate import schema as s
from perfgate.bisect import commits as history
from perfgate.bisect import report, search
from perfgate.errors import InputError
from perfgate.bisect import names as bisect_names

MEDIAN = search.Test("interprocess_best_effort", "Median")
HOSTILE = "<script>alert(1)</script> | **bold** [x](javascript:alert(1)) ::error::x"


def measured(ratio: float, failed: bool, folder: str = "") -> search.Measured:
    return search.Measured({MEDIAN: ratio}, {MEDIAN: ratio * 0.95}, frozenset({MEDIAN}) if failed else frozenset(),
                           rounds=7, folder=folder, thresholds={MEDIAN: 0.01})


def found_bisection() -> report.Bisection:
    commits = [history.Commit(f"{i:x}" * 40, f"change {i}", "A. Author", f"2026-01-{i + 1:02d}T00:00:00Z")
               for i in range(1, 7)]
    commits[3] = history.Commit(commits[3].sha, HOSTILE, "<b>Mallory</b>", commits[3].date)
    steps = [search.Step(search.CONFIRM, 5, 0, search.REGRESSED, measured(2.0, True, "/o/steps/01"), 30.0),
             search.Step(search.STEP, 2, 0, search.SKIPPED, None, 3.0, "build failed"),
             search.Step(search.STEP, 3, 0, search.BAD, measured(1.98, True), 25.0),
             search.Step(search.STEP, 1, 0, search.GOOD, measured(1.001, False), 25.0),
             search.Step(search.CULPRIT, 3, 2, search.REGRESSED, measured(1.97, True), 25.0)]
    result = search.Result(search.FOUND, "commit 3 regresses against its parent", steps, {MEDIAN: 2.0}, culprit=3,
                           culprit_change=steps[-1].measured, skipped=[2])
    return report.Bisection(result, commits, "https://github.com/eProsima/Fast-DDS.git", 0.01, 0.02, 120.0)


def test_bisect_json_names_the_culprit_its_change_and_every_step(tmp_path):
    bisection = found_bisection()
    report.write(tmp_path, bisection, plots=True)
    written = json.loads((tmp_path / bisect_names.BISECT_JSON).read_text())
    culprit = bisection.commits[3]
    assert (written["status"], written["exit_code"], written["ab_count"], written["ab_budget"]) == \
        ("culprit found", 1, 4, math.ceil(math.log2(5)) + 2)
    assert written["culprit"]["sha"] == culprit.sha and written["culprit"]["subject"] == HOSTILE
    assert written["culprit"]["link"] == f"https://github.com/eProsima/Fast-DDS/commit/{culprit.sha}"
    assert written["culprit"]["against_parent"]["tests"] == [
        {"subexperiment": MEDIAN.subexperiment, "statistic": "Median", "ratio": 1.97, "lower_bound": 1.8715,
         "threshold": 0.01, "failed": True, "layout_sized": False}]
    assert [(step["kind"], step["outcome"]) for step in written["steps"]] == [
        ("confirm", "regressed"), ("step", "skipped (build failed)"), ("step", "bad"), ("step", "good"),
        ("culprit", "regressed")]
    assert [commit["sha"] for commit in written["skipped"]] == [bisection.commits[2].sha]
    assert written["steps"][0]["ab_directory"] == "/o/steps/01" and "ab_directory" not in written["steps"][1]


def test_the_reports_escape_what_the_repository_says(tmp_path):
    report.write(tmp_path, found_bisection(), plots=True)
    page = (tmp_path / s.REPORT_HTML).read_text()
    assert "<script>" not in page and "<b>Mallory</b>" not in page and "&lt;script&gt;" in page
    text = (tmp_path / s.REPORT_MARKDOWN).read_text()
    assert "<script>" not in text and "](javascript:" not in text and "**bold**" not in text
    assert text.startswith("# perfgate bisect: culprit found\n")


def test_the_chart_shows_the_commits_measured_against_good(tmp_path):
    bisection = found_bisection()
    points = report.chart_points(bisection)
    # good's own A/Bs only (the culprit's against its parent is another comparison), the last of each
    assert sorted(points["index"]) == [1, 3, 5]
    assert points.set_index("index").loc[3, "change [%]"] == pytest.approx(98.0)
    report.write(tmp_path, bisection, plots=True)
    chart = tmp_path / s.PLOTS_DIR / bisect_names.BISECT_CHART_PNG
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "data:image/" in (tmp_path / s.REPORT_HTML).read_text()


def test_no_regression_and_undecided_say_so(tmp_path):
    commits = [history.Commit(f"{i:x}" * 40, f"c{i}", "a", "d") for i in range(1, 4)]
    clean = search.Result(search.NOT_REGRESSED, "bad does not regress against good",
                          [search.Step(search.CONFIRM, 2, 0, search.NO_REGRESSION, measured(1.0, False))])
    assert report.headline(report.Bisection(clean, commits, "/srv/git/x", 0.01, 0.02, 1.0)) == \
        f"PASS: {commits[2].short} does not regress against {commits[0].short}"
    stuck = search.Result(search.UNDECIDED, "only commits whose build failed are left", [], candidates=[1, 2])
    lines = report.summary_lines(report.Bisection(stuck, commits, "/srv/git/x", 0.01, 0.02, 1.0))
    assert lines[0] == "INCOMPLETE: cannot decide: only commits whose build failed are left"
    assert lines[-1] == f"the culprit is one of: {commits[1].short}, {commits[2].short}"


@pytest.mark.heavy
def test_the_first_parent_range_is_fetched_from_the_repository(fastdds_history, tmp_path):
    origin, commits = fastdds_history
    found = history.fetch_range(str(origin), commits["A"], commits["M"], tmp_path / "repo")
    # M merges the feature branch into C: its first parents are C, B, A; F1 and F2 are not bisected
    assert [(c.sha, c.subject) for c in found] == [(commits[n], n) for n in ("A", "B", "C", "M")]
    with pytest.raises(InputError, match="is not on the first-parent history of --bad"):
        history.fetch_range(str(origin), commits["F1"], commits["M"], tmp_path / "repo")
    with pytest.raises(InputError, match="are the same commit"):
        history.fetch_range(str(origin), commits["C"], commits["C"], tmp_path / "repo")
