"""`perfgate bisect` decides at the layout thresholds, as `perfgate ab` does (docs/verdict.md "Layout-aware
thresholds"): a step's change below its sub-experiment's layout threshold is no failed test (labelled
layout-sized), the file is --layout-thresholds or the platform's requirements/<$PERFGATE_PLATFORM>_layout.json,
read before anything is built, and a malformed one stops the bisect in one line with nothing made."""
from __future__ import annotations

import json
import os

import ab_inputs
import pandas as pd
import pytest

from conftest import perfgate_in_process
from perfgate import schema as s
from perfgate.ab import verdict as v
from perfgate.bisect import commits as history
from perfgate.bisect import driver, report, search
from perfgate.bisect import names as bisect_names
from perfgate.history import names as event_names
from perfgate.report import _e, _md

INTRA, INTER = ab_inputs.SUBS  # intraprocess_best_effort, interprocess_best_effort
THRESHOLD, ALPHA = 0.01, 0.02
SLOWDOWN = 0.02  # the step's candidate: intraprocess 2 % slower, interprocess unchanged
LAYOUT = {INTRA: 0.03, INTER: 0.015}  # intraprocess: code layout alone moves it up to 3 %
INTRA_TESTS = {search.Test(INTRA, statistic) for statistic in v.TESTED_STATISTICS}


def write_layout(path, thresholds: dict) -> str:
    path.write_text(json.dumps({"platform": "vm-test", "thresholds": thresholds}))
    return str(path)


def bisect(tmp_path, *extra, good="a" * 40, bad="b" * 40, url=None, cwd=None):
    return perfgate_in_process("bisect", "--workspace", str(tmp_path / "ws"), "--git-url", str(url or tmp_path),
                               "--good", good, "--bad", bad, "--output", str(tmp_path / "out"),
                               "--subexperiments", INTER, "--payloads", "16", "--quick", "--no-plots", *extra, cwd=cwd)


# --- (a) a step's decision at the layout bounds ----------------------------------------------------------
def test_a_step_below_its_layout_threshold_but_above_the_global_one_is_no_failed_test(tmp_path):
    """Before: driver._measured decided at --threshold alone: both intraprocess tests failed, and a
    step at 80 % of a +2.5 % change was called bad for what one code layout can make."""
    ab_inputs.write_rounds(tmp_path / "ab", 16, {INTRA: SLOWDOWN}, seed=21)
    at_layout = driver._measured(tmp_path / "ab", THRESHOLD, ALPHA, s.EXIT_OK, LAYOUT)
    assert not at_layout.incomplete and at_layout.rounds == 16
    assert at_layout.failed == frozenset()
    assert at_layout.layout_sized == INTRA_TESTS  # the verdict's own label: the global threshold fails them
    assert all(abs(at_layout.ratios[test] - (1 + SLOWDOWN)) < 0.004 for test in INTRA_TESTS)
    assert {test: at_layout.thresholds[test] for test in INTRA_TESTS} == {test: 0.03 for test in INTRA_TESTS}
    assert at_layout.thresholds[search.Test(INTER, s.MEDIAN)] == 0.015
    # the same rounds at the global threshold alone: the 2 % fails, nothing is layout-sized
    alone = driver._measured(tmp_path / "ab", THRESHOLD, ALPHA, s.EXIT_OK)
    assert alone.failed == INTRA_TESTS and alone.layout_sized == frozenset()
    # a confirmed change of +2.5 %: this step is 80 % of it; a layout-sized move is not bad
    change = {test: 1.025 for test in INTRA_TESTS}
    assert search.classify(alone, change)[0] == search.BAD
    outcome, why = search.classify(at_layout, change)
    assert outcome == search.AMBIGUOUS and "verdict passed; layout-sized: " + INTRA in why, why


def test_a_step_above_its_layout_threshold_still_fails(tmp_path):
    ab_inputs.write_rounds(tmp_path / "ab", 16, {INTRA: 0.06}, seed=22)
    measured = driver._measured(tmp_path / "ab", THRESHOLD, ALPHA, s.EXIT_OK, LAYOUT)
    assert measured.failed == INTRA_TESTS and measured.layout_sized == frozenset()
    assert search.classify(measured, {test: 1.06 for test in INTRA_TESTS})[0] == search.BAD


def test_the_reports_say_which_layout_thresholds_applied_and_label_a_layout_sized_test(tmp_path):
    ab_inputs.write_rounds(tmp_path / "ab", 16, {INTRA: SLOWDOWN}, seed=21)
    step = driver._measured(tmp_path / "ab", THRESHOLD, ALPHA, s.EXIT_OK, LAYOUT)
    commits = [history.Commit(f"{i:x}" * 40, f"change {i}", "A. Author", "2026-01-01T00:00:00Z") for i in range(1, 3)]
    result = search.Result(search.NOT_REGRESSED, "bad does not regress against good",
                           [search.Step(search.CONFIRM, 1, 0, search.NO_REGRESSION, step, 30.0)])
    bisection = report.Bisection(result, commits, "/srv/git/Fast-DDS", THRESHOLD, ALPHA, 30.0, LAYOUT, "mine.json")
    report.write(tmp_path / "out", bisection, plots=False)
    line = f"layout thresholds from mine.json: {INTRA} +3.0%, {INTER} +1.5% (docs/verdict.md)"
    assert line in report.summary_lines(bisection)
    written = json.loads((tmp_path / "out" / bisect_names.BISECT_JSON).read_text())
    assert written["layout_thresholds"] == {"file": "mine.json", "thresholds": LAYOUT}
    tests = {(t["subexperiment"], t["statistic"]): t for t in written["steps"][0]["tests"]}
    assert [(t["failed"], t["layout_sized"], t["threshold"]) for key, t in tests.items() if key[0] == INTRA] == \
        [(False, True, 0.03)] * 2
    cell = next(row for row in report.step_rows(bisection)["change"])
    assert cell.startswith(f"{INTRA} Median +") and f"% (layout-sized); {INTRA} 90% +" in cell, cell
    assert f"{INTER} Median" in cell and cell.count("layout-sized") == 2 and "failed" not in cell, cell
    for name, escaped in ((s.REPORT_MARKDOWN, _md), (s.REPORT_HTML, _e)):
        text = (tmp_path / "out" / name).read_text()
        assert escaped(line) in text and escaped(cell) in text, name


# --- (b) a malformed file: exit 2 before anything is built ------------------------------------------------
@pytest.mark.parametrize("content, problem", [
    ("{not json", "malformed JSON"),
    (json.dumps({"platform": "vm-test", "thresholds": {INTER: -0.5}}), "the threshold of interprocess_best_effort is not a fraction"),
])
def test_a_malformed_layout_file_stops_the_bisect_in_one_line_with_nothing_made(tmp_path, content, problem):
    """Before: --layout-thresholds was no option of bisect (argparse's usage, two lines)."""
    given = tmp_path / "layout.json"
    given.write_text(content)
    done = bisect(tmp_path, "--layout-thresholds", str(given))
    assert done.returncode == s.EXIT_USAGE, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(given) in lines[0] and problem in lines[0], done.stderr
    assert lines[0].startswith("perfgate bisect: error: ") and done.stdout == ""
    assert not (tmp_path / "out").exists() and not (tmp_path / "ws").exists()


def test_a_malformed_platform_layout_file_stops_the_bisect_before_any_fetch_or_build(tmp_path, monkeypatch):
    """Before: the platform's file was not read, and the bisect went on to fetch (and build)."""
    (tmp_path / s.REQUIREMENTS_DIR).mkdir()
    (tmp_path / s.REQUIREMENTS_DIR / "vm-test_layout.json").write_text("[1, 2]")
    monkeypatch.setenv(s.PLATFORM_ENV, "vm-test")
    done = bisect(tmp_path, cwd=tmp_path)
    assert done.returncode == s.EXIT_USAGE, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and os.path.join(s.REQUIREMENTS_DIR, "vm-test_layout.json") in lines[0], done.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "ws").exists()


# --- (c) the default: the platform's file -----------------------------------------------------------------
def test_the_platform_layout_file_is_the_default_and_said_in_every_report(fastdds_history, tmp_path, monkeypatch):
    """A real bisect over commits that are no Fast DDS source (it ends at good's build, exit 3): the
    platform's file is found from $PERFGATE_PLATFORM and said on the console and in bisect.json."""
    origin, commits = fastdds_history
    (tmp_path / s.REQUIREMENTS_DIR).mkdir()
    write_layout(tmp_path / s.REQUIREMENTS_DIR / "vm-test_layout.json", {INTER: 0.04, INTRA: 0.02})
    monkeypatch.setenv(s.PLATFORM_ENV, "vm-test")
    done = bisect(tmp_path, good=commits["A"], bad=commits["C"], url=origin, cwd=tmp_path)
    assert done.returncode == s.EXIT_INCOMPLETE, done.stderr
    source = os.path.join(s.REQUIREMENTS_DIR, "vm-test_layout.json")
    line = f"perfgate bisect: layout thresholds from {source}: {INTER} +4.0% (docs/verdict.md)"
    assert done.stdout.splitlines().count(line) == 2, done.stdout  # before the search, and in its summary
    written = json.loads((tmp_path / "out" / bisect_names.BISECT_JSON).read_text())
    assert written["layout_thresholds"] == {"file": source, "thresholds": {INTER: 0.04}}  # the requested ones
    assert f"layout thresholds from {source}: {INTER} +4.0%" in (tmp_path / "out" / s.REPORT_MARKDOWN).read_text()


def test_a_platform_without_a_layout_file_decides_at_the_threshold_alone(fastdds_history, tmp_path, monkeypatch):
    origin, commits = fastdds_history
    monkeypatch.setenv(s.PLATFORM_ENV, "vm-without-file")
    done = bisect(tmp_path, good=commits["A"], bad=commits["C"], url=origin, cwd=tmp_path)
    assert done.returncode == s.EXIT_INCOMPLETE, done.stderr
    assert "layout thresholds" not in done.stdout
    assert json.loads((tmp_path / "out" / bisect_names.BISECT_JSON).read_text())["layout_thresholds"] is None


def test_bisect_events_stops_at_a_malformed_platform_layout_file_before_any_bisect(fastdds_history, tmp_path,
                                                                                monkeypatch):
    """Before: each event's bisect failed on the file and was recorded as tried (failed.txt), never
    bisected again once the file was fixed."""
    origin, commits = fastdds_history
    events = tmp_path / "events.csv"
    row = {s.EXPERIMENT_TYPE: INTER, event_names.EVENT_INDEX: "3", s.LABEL: "nightly",
           event_names.EVENT_COMMIT: commits["C"], event_names.EVENT_PREVIOUS_COMMIT: commits["A"],
           event_names.EVENT_CHANGE: "5.0", event_names.EVENT_LOWER_BOUND: "1.0", event_names.EVENT_PAYLOADS: "16",
           event_names.EVENT_STATISTICS: "Median", event_names.EVENT_P_VALUE: "0.001", event_names.EVENT_FIRST_RUN: "3",
           event_names.EVENT_LAST_RUN: "3", event_names.EVENT_GOOD_COMMIT: commits["A"],
           event_names.EVENT_BAD_COMMIT: commits["C"]}
    pd.DataFrame([row], columns=list(event_names.EVENT_COLUMNS)).to_csv(events, index=False)
    (tmp_path / s.REQUIREMENTS_DIR).mkdir()
    (tmp_path / s.REQUIREMENTS_DIR / "vm-test_layout.json").write_text('{"thresholds": {"nope": 0.01}}')
    monkeypatch.setenv(s.PLATFORM_ENV, "vm-test")
    done = perfgate_in_process("bisect-events", "--events", str(events), "--workspace", str(tmp_path / "ws"),
                               "--git-url", str(origin), "--output", str(tmp_path / "bisect"), "--max", "1",
                               "--time-budget", "3600", "--quick", "--no-plots", cwd=tmp_path)
    assert done.returncode == s.EXIT_USAGE, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and os.path.join(s.REQUIREMENTS_DIR, "vm-test_layout.json") in lines[0], done.stderr
    assert not (tmp_path / "bisect").exists() and not (tmp_path / "ws").exists()
