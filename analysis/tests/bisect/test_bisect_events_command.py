"""issue 25: `perfgate bisect-events` on a real git repository (conftest.fastdds_history: main A-B-C,
M a merge of feature B-F1-F2 into C): a range of one commit is not bisected, a range of several is
(here commits that are no Fast DDS source: skipped as builds that fail, so that bisect cannot
decide, exit 3, and says so in its bisect.json), an
event bisected before is not again, a range whose good is not on bad's first parents is not bisectable,
--max bounds the bisects started.""" 
from __future__ import annotations

import json

import pandas as pd

from conftest import perfgate_in_process
from perfgate import schema as s
from perfgate.history import bisect_links, bisect_plan
from perfgate.history import names as event_names

SUBS = s.DEFAULT_SUBEXPERIMENT_NAMES


def events_csv(path, ranges: list[tuple[str, str, float]], build_changes: dict | None = None) -> None:
    """`build_changes`: (good, bad) -> the event's Build options changed cell (else empty)."""
    rows = [{s.EXPERIMENT_TYPE: SUBS[0], event_names.EVENT_INDEX: "3", s.LABEL: "nightly", event_names.EVENT_COMMIT: bad,
             event_names.EVENT_PREVIOUS_COMMIT: good, event_names.EVENT_CHANGE: str(change),
             event_names.EVENT_LOWER_BOUND: "1.0", event_names.EVENT_PAYLOADS: "16",
             event_names.EVENT_STATISTICS: "Median", event_names.EVENT_P_VALUE: "0.001",
             event_names.EVENT_BUILD_CHANGE: (build_changes or {}).get((good, bad), ""), event_names.EVENT_FIRST_RUN: "3",
             event_names.EVENT_LAST_RUN: "3", event_names.EVENT_GOOD_COMMIT: good, event_names.EVENT_BAD_COMMIT: bad}
            for good, bad, change in ranges]
    pd.DataFrame(rows, columns=list(event_names.EVENT_COLUMNS)).to_csv(path, index=False)


def run(tmp_path, origin, events, most: int):
    return perfgate_in_process("bisect-events", "--events", str(events), "--workspace", str(tmp_path / "ws"),
                               "--git-url", str(origin), "--output", str(tmp_path / "plots" / "bisect"),
                               "--max", str(most), "--time-budget", "3600", "--quick", "--no-plots")


def test_one_commit_ranges_are_skipped_longer_ones_bisected_once(tmp_path, fastdds_history):
    origin, commits = fastdds_history
    events = tmp_path / "events.csv"
    events_csv(events, [(commits["A"], commits["B"], 9.0),  # one commit: B itself
                        (commits["F1"], commits["M"], 8.0),  # F1 is not on M's first parents
                        (commits["A"], commits["C"], 5.0),  # B, C: bisected
                        (commits["B"], commits["M"], 1.0)],  # C, M: beyond --max 1
               {(commits["A"], commits["C"]): "#3 nightly: added -DCMAKE_CXX_FLAGS=-falign-functions=64\n::error::x"})
    output = tmp_path / "plots" / "bisect"
    done = run(tmp_path, origin, events, 1)
    one = bisect_plan.folder_name(commits["A"], commits["B"])
    two = bisect_plan.folder_name(commits["A"], commits["C"])
    later = bisect_plan.folder_name(commits["B"], commits["M"])
    assert f"{one}: one commit" in done.stdout
    assert "not bisectable" in done.stdout and "first-parent" in done.stdout
    assert f"{two}: bisecting 2 commit(s)" in done.stdout
    # beside a change of the runs' build options: bisected all the same, the change said (escaped for the log)
    assert (f"{two}: the runs' build options changed beside it (#3 nightly: added -DCMAKE_CXX_FLAGS=-falign-functions=64"
            "\\n::error::x): both ends are built alike here") in done.stdout
    assert f"{one}: the runs' build options" not in done.stdout
    assert "1 bisect(s) started" in done.stdout and f"left for a later run: {later}" in done.stdout
    # the stand-in holds no Fast DDS: good is no Fast DDS source, skipped as a build that fails, so that
    # bisect cannot decide: exit 3, said so, its folder and bisect.json kept as the record, which the
    # history links (not an error that ends the bisect: no failed.txt)
    assert done.returncode == 3
    assert f"perfgate bisect: build of {commits['A'][:10]} failed, skipped: " in done.stderr
    assert "perfgate bisect: error: cannot decide: the build of good failed, nothing to compare: build failed: " \
        in done.stderr and "no CMakeLists.txt" in done.stderr and f"{two}: failed" not in done.stderr
    assert "1 bisect(s) gave no answer" in done.stderr.splitlines()[-1]
    assert sorted(folder.name for folder in output.iterdir()) == [two]
    assert not (output / two / event_names.BISECT_FAILED_TXT).exists()
    written = json.loads((output / two / "bisect.json").read_text(encoding="utf-8"))
    assert (written["status"], [c["sha"] for c in written["skipped"]]) == ("cannot decide", [commits["A"]])
    assert "no CMakeLists.txt" in written["skipped"][0]["why"]
    assert bisect_links.links(tmp_path / "plots", pd.read_csv(events, dtype=str, keep_default_na=False)) == {
        2: bisect_links.BisectLink(f"bisect/{two}/report.html", "cannot decide", None)}

    # the next run: what was tried is not again, the one left is bisected
    again = run(tmp_path, origin, events, 3)
    assert "1 bisected before" in again.stdout and again.returncode == 3
    assert f"{later}: bisecting 2 commit(s)" in again.stdout and f"{two}: bisecting" not in again.stdout
    assert sorted(folder.name for folder in output.iterdir()) == sorted([two, later])


def test_no_bisect_starts_after_the_time_budget_and_bad_options_are_exit_2(tmp_path, fastdds_history):
    origin, commits = fastdds_history
    events = tmp_path / "events.csv"
    events_csv(events, [(commits["A"], commits["C"], 5.0), (commits["B"], commits["M"], 1.0)])
    output = tmp_path / "plots" / "bisect"
    spent = perfgate_in_process("bisect-events", "--events", str(events), "--workspace", str(tmp_path / "ws"),
                                "--git-url", str(origin), "--output", str(output), "--max", "2", "--time-budget", "0")
    assert spent.returncode == 0 and "time budget of 0 s spent" in spent.stdout
    assert "left for a later run: " + " ".join(bisect_plan.folder_name(commits[g], commits[b])
                                               for g, b in (("A", "C"), ("B", "M"))) in spent.stdout
    assert not output.exists() and not (tmp_path / "ws").exists()
    for option, value in (("--alpha", "1.5"), ("--threshold", "-1"), ("--git-url", "-x"), ("--fastcdr-url", "-x")):
        arguments = {"--events": str(events), "--workspace": str(tmp_path / "ws"), "--git-url": str(origin),
                     "--output": str(output), "--max": "2", "--time-budget": "60", option: value}
        refused = perfgate_in_process("bisect-events", *[part for pair in arguments.items() for part in pair])
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, (option, refused.stderr)
        assert not output.exists() and not (tmp_path / "ws").exists()


def test_git_errors_of_several_lines_are_printed_one_line_each(tmp_path, fastdds_history):
    """Before: `... does not appear to be a git repository\\nfatal: Could not read ...` on one line."""
    _, commits = fastdds_history
    events = tmp_path / "events.csv"
    events_csv(events, [(commits["A"], commits["C"], 5.0)])
    url = tmp_path / "not a repository"
    url.mkdir()
    done = run(tmp_path, url, events, 1)
    assert done.returncode == 3 and "\\n" not in done.stderr, done.stderr
    folder = bisect_plan.folder_name(commits["A"], commits["C"])
    lines = done.stderr.strip().splitlines()
    assert lines[0] == (f"perfgate bisect-events: {folder}: not bisected: {tmp_path / 'ws' / 'perfgate' / 'bisect.git'}: "
                        f"cannot fetch --good {commits['A']} from {url}: fatal: '{url}' does not appear to be a git "
                        "repository")
    assert lines[1] == "perfgate bisect-events:   fatal: Could not read from remote repository."
    assert lines[-2] == "perfgate bisect-events:   and the repository exists."
    assert lines[-1] == "perfgate bisect-events: error: 1 bisect(s) gave no answer (see above)"
