"""issue 25: which events `perfgate bisect-events` bisects (history.bisect_plan, pure), and the link
from the history's events (page and events.md) to each bisect's report, read from bisect.json."""
from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from conftest import perfgate_in_process
from perfgate import schema as s
from perfgate.bisect import report as bisect_report
from perfgate.bisect import search
from perfgate.bisect.commits import Commit
from perfgate.errors import InputError
from perfgate.history import bisect_links, bisect_plan
from perfgate.history import files as hf
from perfgate.history import page as hp
from perfgate.history import names as event_names

SUBS = s.DEFAULT_SUBEXPERIMENT_NAMES
GOOD, BAD, OTHER = "a" * 40, "b" * 40, "c" * 40


def event(sub=SUBS[0], previous=GOOD, commit=BAD, change="5.0", payloads="16 1024") -> dict:
    return {s.EXPERIMENT_TYPE: sub, event_names.EVENT_INDEX: "12", s.LABEL: "nightly-012", event_names.EVENT_COMMIT: commit,
            event_names.EVENT_PREVIOUS_COMMIT: previous, event_names.EVENT_CHANGE: change,
            event_names.EVENT_LOWER_BOUND: "2.0", event_names.EVENT_PAYLOADS: payloads,
            event_names.EVENT_STATISTICS: "Median", event_names.EVENT_P_VALUE: "0.001", event_names.EVENT_FIRST_RUN: "12",
            event_names.EVENT_LAST_RUN: "12", event_names.EVENT_GOOD_COMMIT: previous, event_names.EVENT_BAD_COMMIT: commit}


def table(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=list(event_names.EVENT_COLUMNS), dtype=str)


# --- the planner ------------------------------------------------------------------------------------
def test_regressions_only_largest_first_one_bisect_per_range_with_its_subexperiments_and_payloads():
    events = table(event(SUBS[0], GOOD, BAD, "3.0", "16"), event(SUBS[1], GOOD, BAD, "8.0", "1024 64"),
                   event(SUBS[2], BAD, OTHER, "12.5", ""), event(SUBS[3], GOOD, OTHER, "-20.0", "16"),
                   event(SUBS[4], "", OTHER, "30.0", "16"))  # no previous commit: nothing to bisect from
    planned = bisect_plan.regressions(events, Path("events.csv"))
    assert [(p.good, p.bad) for p in planned] == [(BAD, OTHER), (GOOD, BAD)]
    assert planned[0].subexperiments == (SUBS[2],) and planned[0].payloads == () and planned[0].change == 12.5
    assert planned[1].subexperiments == (SUBS[0], SUBS[1]) and planned[1].payloads == (16, 64, 1024)
    assert planned[1].folder == f"{GOOD[:12]}-{BAD[:12]}"


def test_what_was_bisected_before_is_not_again():
    events = table(*(event(SUBS[0], f"{i:x}" * 40, f"{i + 1:x}" * 40, str(10.0 - i)) for i in range(5)))
    planned = bisect_plan.regressions(events, Path("events.csv"))
    assert bisect_plan.waiting(planned, {planned[0].folder, planned[2].folder}) == [planned[1], planned[3], planned[4]]


@pytest.mark.parametrize("column, value, message", [
    (event_names.EVENT_COMMIT, "$(touch x)", "is not a commit"),
    (event_names.EVENT_PREVIOUS_COMMIT, "abc12", "is not a commit"),
    (event_names.EVENT_PREVIOUS_COMMIT, "-" + "a" * 39, "is not a commit"),
    (event_names.EVENT_GOOD_COMMIT, "--upload-pack=x", "is not a commit"),  # what bisect-events fetches
    (event_names.EVENT_BAD_COMMIT, "HEAD~1", "is not a commit"),
    (event_names.EVENT_CHANGE, "much", "is not a number"),
    (event_names.EVENT_CHANGE, "inf", "is not a number"),
    (s.EXPERIMENT_TYPE, "no_such_sub", "unknown sub-experiment"),
    (event_names.EVENT_PAYLOADS, "16 -3", "are not payloads"),
])
def test_a_bad_cell_is_refused_naming_the_file_and_the_line(column, value, message):
    events = table(event(), {**event(SUBS[1]), column: value})
    with pytest.raises(InputError) as raised:
        bisect_plan.regressions(events, Path("store/events.csv"))
    assert "events.csv" in str(raised.value) and "line 3" in str(raised.value) and message in str(raised.value)


# --- the link -----------------------------------------------------------------------------------------
def write_bisect(plots: Path, good: str, bad: str, status: str, culprit: int | None) -> Path:
    """bisect.json as `perfgate bisect` writes it (bisect.report), for commits good, x, bad."""
    commits = [Commit(good, "good", "a", "2026-01-01"), Commit("d" * 40, "x", "a", "2026-01-02"),
               Commit(bad, "bad <b>", "a", "2026-01-03")]
    result = search.Result(status, "", culprit=culprit)
    folder = plots / event_names.BISECTS_DIR / bisect_plan.folder_name(good, bad)
    folder.mkdir(parents=True)
    text = json.dumps(bisect_report.bisect_json(bisect_report.Bisection(result, commits, "/srv/fastdds", 0.01, 0.02, 1.0)))
    (folder / "bisect.json").write_text(text, encoding="utf-8")
    return folder / "bisect.json"


class Links(HTMLParser):
    """(href, text) of every link in the events table's Bisect cells."""

    def __init__(self):
        super().__init__()
        self.links, self.href, self.cell = [], None, False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "td" and attributes.get("class") == "bisect":
            self.cell = True
        if tag == "a" and self.cell:
            self.href = attributes["href"]

    def handle_data(self, data):
        if self.href is not None:
            self.links.append((self.href, data))
            self.href, self.cell = None, False


def test_the_events_table_and_events_md_link_the_bisect_and_name_the_culprit(tmp_path):
    write_bisect(tmp_path, GOOD, BAD, search.FOUND, 1)
    write_bisect(tmp_path, BAD, OTHER, search.UNDECIDED, None)
    events = table(event(SUBS[0], GOOD, BAD), event(SUBS[1], BAD, OTHER), event(SUBS[2], GOOD, OTHER))
    bisects = bisect_links.links(tmp_path, events)
    parser = Links()
    page = hp.events_table(events, bisects)
    parser.feed(page)
    assert "Build options changed" not in page  # no event beside a change of build options: no such column
    assert parser.links == [(f"bisect/{GOOD[:12]}-{BAD[:12]}/report.html", "culprit dddddddddd"),
                            (f"bisect/{BAD[:12]}-{OTHER[:12]}/report.html", search.UNDECIDED)]
    numeric = events.assign(**{event_names.EVENT_CHANGE: 5.0, event_names.EVENT_LOWER_BOUND: 2.0,
                               event_names.EVENT_P_VALUE: 0.001})
    lines = hf.events_markdown(numeric, 0.01, bisects).splitlines()[2:]
    assert lines[0].endswith(f"; bisect: [culprit dddddddddd](bisect/{GOOD[:12]}-{BAD[:12]}/report.md)")
    assert lines[1].endswith(f"; bisect: [{search.UNDECIDED}](bisect/{BAD[:12]}-{OTHER[:12]}/report.md)")
    assert "bisect" not in lines[2]


def test_no_bisect_no_column():
    assert "Bisect" not in hp.events_table(table(event()), {})


@pytest.mark.parametrize("content, message", [
    ("{not json", "cannot read"),
    ('["culprit found"]', "no known status"),
    ('{"status": "<script>"}', "no known status"),
    ('{"status": "culprit found", "culprit": {"sha": "../../x"}}', "is not 40 hex digits"),
])
def test_a_bad_bisect_json_is_refused_naming_the_file(tmp_path, content, message):
    path = write_bisect(tmp_path, GOOD, BAD, search.FOUND, 1)
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as raised:
        bisect_links.links(tmp_path, table(event()))
    assert str(path) in str(raised.value) and message in str(raised.value)


# --- the command's bad input: exit 2, one line, nothing written ----------------------------------------
def test_bisect_events_refuses_a_bad_events_csv_with_one_line_and_exit_2(tmp_path):
    events = tmp_path / "events.csv"
    table(event(), event(SUBS[1], commit="`rm -rf ~`")).to_csv(events, index=False)
    output = tmp_path / "bisects"
    done = perfgate_in_process("bisect-events", "--events", str(events), "--workspace", str(tmp_path / "ws"),
                               "--git-url", str(tmp_path), "--output", str(output), "--max", "2", "--time-budget", "60")
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "events.csv" in done.stderr and "line 3" in done.stderr
    assert not output.exists() and not (tmp_path / "ws").exists()


# --- perfgate history with a store whose event was bisected ----------------------------------------
@pytest.mark.heavy
def test_the_history_links_the_bisect_of_its_event_and_refuses_a_bad_bisect_json(tmp_path):
    from history_synthetic import write_store

    write_store(tmp_path / "store", 30, 20)  # SUBS[1] 8 % slower from run 20 on: one regression event
    requirements = tmp_path / "requirements.csv"
    pd.DataFrame([{s.EXPERIMENT_TYPE: sub, s.BYTES: 16, s.MEDIAN: 100.0, s.P99: 200.0, s.MAX: 900.0}
                  for sub in SUBS[:2]]).to_csv(requirements, index=False)
    plots = tmp_path / "plots"
    arguments = ("history", "--requirements", str(requirements), "--experiments-results", str(tmp_path / "store"),
                 "--plots-directory", str(plots))
    assert perfgate_in_process(*arguments).returncode == 0
    events = hp.read_events(plots / event_names.EVENTS_CSV)
    [row] = events[events[s.EXPERIMENT_TYPE] == SUBS[1]].to_dict("records")
    good, bad = row[event_names.EVENT_GOOD_COMMIT], row[event_names.EVENT_BAD_COMMIT]  # the range it vouches for
    result = write_bisect(plots, good, bad, search.FOUND, 1)
    done = perfgate_in_process(*arguments)
    assert done.returncode == 0, done.stderr
    parser = Links()
    parser.feed((plots / hp.PAGE_NAME).read_text(encoding="utf-8"))
    folder = bisect_plan.folder_name(good, bad)
    assert parser.links == [(f"bisect/{folder}/report.html", "culprit dddddddddd")]
    summary = (plots / hf.EVENTS_MD).read_text(encoding="utf-8")
    assert f"; bisect: [culprit dddddddddd](bisect/{folder}/report.md)" in summary

    result.write_text('{"status": "culprit found", "culprit": {"sha": "<img src=x onerror=alert(1)>"}}')
    before = {path.name: path.read_bytes() for path in plots.iterdir() if path.is_file()}
    refused = perfgate_in_process(*arguments)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert str(result) in refused.stderr and "40 hex digits" in refused.stderr
    assert {path.name: path.read_bytes() for path in plots.iterdir() if path.is_file()} == before
