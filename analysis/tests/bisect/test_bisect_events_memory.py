"""Issue 44: `perfgate bisect-events` took 2.8 GB on a 152 MB events.csv (read whole, every row kept). It
streams the file: a row is checked and folded into its commit range, so ten times the rows of the same
ranges cost no more memory; a file of more regression ranges than a history has, a row of another length
or an oversized cell is one line, exit 2."""
from __future__ import annotations

import csv
import tracemalloc

import pytest

from conftest import perfgate_in_process
from perfgate import schema as s
from perfgate.history import bisect_plan
from perfgate.history import names as event_names

SUBS = s.DEFAULT_SUBEXPERIMENT_NAMES
RANGES = [(f"{i:x}" * 40, f"{i + 5:x}" * 40) for i in range(1, 6)]  # five regression ranges


def write_events(path, rows: int, ranges=RANGES) -> None:
    """`rows` regression events, row i of range i % 5 (the later, the larger its change) and of
    sub-experiment i % 10, with payload 16 << (i % 4) and 16384."""
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(event_names.EVENT_COLUMNS)
        for i in range(rows):
            good, bad = ranges[i % len(ranges)]
            writer.writerow([SUBS[i % len(SUBS)], str(i), "nightly", "2026-12-01 02:00", bad, good, f"{1 + i % len(ranges)}.{i % 7}", "1.0",
                             f"{16 << (i % 4)} 16384", "Median 99%", "0.001", "" if i % 3 else "#1: added -DX=1",
                             str(i), str(i), good, bad])


def bisect_events(tmp_path, events):
    return perfgate_in_process("bisect-events", "--events", str(events), "--workspace", str(tmp_path / "ws"),
                               "--git-url", str(tmp_path / "origin"), "--output", str(tmp_path / "out"),
                               "--max", "1", "--time-budget", "3600", "--quick", "--no-plots")


def peak_bytes(tmp_path, rows: int) -> int:
    """The traced peak of one `perfgate bisect-events` over `rows` events whose ranges were all bisected
    before (nothing fetched), with its answer checked."""
    events = tmp_path / f"events-{rows}.csv"
    write_events(events, rows)
    tracemalloc.start()
    try:
        done = bisect_events(tmp_path, events)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert done.returncode == 0, done.stderr
    assert f"{len(RANGES)} regression range(s) in {events}, {len(RANGES)} bisected before" in done.stdout
    return peak


@pytest.mark.heavy
def test_ten_times_the_rows_of_the_same_ranges_take_no_more_memory(tmp_path):
    for good, bad in RANGES:
        (tmp_path / "out" / bisect_plan.folder_name(good, bad)).mkdir(parents=True)
    peak_bytes(tmp_path, 100)  # the modules a first run imports are not the file's memory
    small, large = peak_bytes(tmp_path, 2_000), peak_bytes(tmp_path, 20_000)
    assert large < 1.5 * small, (small, large)  # read whole, the rows kept: about ten times


def test_the_streamed_plan_is_the_one_of_the_table(tmp_path):
    import pandas as pd

    from perfgate.history import bisect_events

    events = tmp_path / "events.csv"
    write_events(events, 60)
    table = pd.read_csv(events, dtype=str, keep_default_na=False)
    streamed = bisect_events._read_regressions(events)
    assert streamed == bisect_plan.regressions(table, events)
    assert [(p.good, p.bad) for p in streamed] == [RANGES[i] for i in (4, 3, 2, 1, 0)]  # largest change first
    first = streamed[-1]  # rows 0, 5, 10...
    assert first.subexperiments == (SUBS[0], SUBS[5]) and first.payloads == (16, 32, 64, 128, 16384)
    assert first.build_change == "#1: added -DX=1"


@pytest.mark.parametrize("content, message", [
    ("{header}\n" + "x," * 12 + "\n", "event on line 2: 13 cells, not 16"),
    ("{header}\n{subexperiment},1,n,{big},{sha},1,1,16,Median,0.1,\n",
     "cannot read the history's events: field larger"),
    ("Experiment type,Index\nx,1\n", "the history's events have the columns Experiment type, Index, not"),
    ("{header}\n\xff\n", "cannot read the history's events"),
])
def test_a_malformed_events_file_is_one_line_exit_2(tmp_path, content, message):
    events = tmp_path / "events.csv"
    text = content.format(header=",".join(event_names.EVENT_COLUMNS), subexperiment=SUBS[0], big="a" * 200_000,
                          sha="b" * 40)
    events.write_bytes(text.encode("utf-8").replace("\xff".encode("utf-8"), b"\xff"))  # ÿ: a byte no UTF-8
    done = bisect_events(tmp_path, events)
    assert done.returncode == s.EXIT_USAGE, done.stderr
    assert done.stderr.count("\n") == 1 and message in done.stderr and str(events) in done.stderr, done.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "ws").exists()


def test_more_regression_ranges_than_a_history_has_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(bisect_plan, "MAX_RANGES", 3)  # the bound, not the thing under test: kept small to write
    events = tmp_path / "events.csv"
    write_events(events, 8)  # five ranges
    done = bisect_events(tmp_path, events)
    assert done.returncode == s.EXIT_USAGE, done.stderr
    assert "event on line 5: more than 3 regression ranges" in done.stderr and done.stderr.count("\n") == 1
