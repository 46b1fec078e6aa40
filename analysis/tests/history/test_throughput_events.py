"""Throughput events (issue 24): change points of one throughput sub-experiment a few runs apart are one
event, events.csv's columns, a drop the regression; a flat history has none."""
from __future__ import annotations

import numpy as np
import pandas as pd

from perfgate import schema as s
from perfgate.history import change_points as cp
from perfgate.history import files as hf
from perfgate.history import names as event_names
from perfgate.history import throughput as th

SUBS = [s.throughput_name("interprocess_reliable"), s.throughput_name("intraprocess_best_effort")]
RUNS, STEP_AT = 40, 25


def values(seed: int, drop: float = 1.0, rise: float = 1.0) -> pd.DataFrame:
    """Two throughput sub-experiments x 3 payloads x demands 100/1000 over RUNS runs: per run a 1 %
    machine drift shared by the run, per value 1 % of its own; from STEP_AT on, every test of SUBS[0]
    at `drop` times its level and every test of SUBS[1] at `rise` times."""
    rng = np.random.default_rng(seed)
    drift = rng.lognormal(0, 0.01, RUNS)
    rows = []
    for sub, factor in zip(SUBS, (drop, rise)):
        for payload in (16, 1024, 16384):
            for demand in (100, 1000):
                level = 100.0 * demand / payload ** 0.3
                series = level * drift * rng.lognormal(0, 0.01, RUNS)
                series[STEP_AT:] *= factor
                rows.append(pd.DataFrame({s.EXPERIMENT_TYPE: sub, s.BYTES: payload,
                                          cp.STATISTIC: th.series_name(demand, 5), cp.INDEX: range(RUNS),
                                          cp.VALUE: series}))
    return pd.concat(rows, ignore_index=True)


def described() -> pd.DataFrame:
    return pd.DataFrame({s.LABEL: [f"nightly-{i:02d}" for i in range(RUNS)],
                         cp.COMMIT: [f"{i:02x}" + "d" * 38 for i in range(RUNS)]})


def events_of(table: pd.DataFrame) -> pd.DataFrame:
    changes = th.throughput_change_points(table, described())
    return th.throughput_events(changes, table, described())


def test_a_planted_drop_is_one_regression_event_at_its_run():
    events = events_of(values(1, drop=0.9))
    assert list(events.columns) == list(event_names.EVENT_COLUMNS)
    assert len(events) == 1
    event = events.iloc[0]
    # at its run +-1 (the "found"): the rank detector may take a run of low drift just before a
    # step as its first run, as it does here (run 24's machine drift is -2.7 %)
    assert event[s.EXPERIMENT_TYPE] == SUBS[0] and abs(event[event_names.EVENT_INDEX] - STEP_AT) <= 1
    assert event[s.LABEL] == f"nightly-{event[event_names.EVENT_INDEX]:02d}"
    assert event[event_names.EVENT_COMMIT].startswith(f"{event[event_names.EVENT_INDEX]:02x}")
    assert -12 < event[event_names.EVENT_CHANGE] < -8 and event[event_names.EVENT_LOWER_BOUND] < 0
    assert event[event_names.EVENT_PAYLOADS] == "16 1024 16384"
    assert event[event_names.EVENT_STATISTICS] == f"{th.series_name(100, 5)} {th.series_name(1000, 5)}"
    line = hf.event_lines(events, higher_is_worse=False)[0]
    assert line.startswith(f"  REGRESSION: {SUBS[0]} -")
    assert hf.format_events(events).splitlines()[0] == ",".join(event_names.EVENT_COLUMNS)


def test_a_rise_is_an_improvement_listed_after_the_drop():
    events = events_of(values(2, drop=0.9, rise=1.1))
    assert list(events[s.EXPERIMENT_TYPE]) == SUBS
    assert all(abs(index - STEP_AT) <= 1 for index in events[event_names.EVENT_INDEX])
    assert [line.split(":")[0] for line in hf.event_lines(events, higher_is_worse=False)] == \
        ["  REGRESSION", "  improvement"]


def test_a_flat_throughput_history_has_no_event():
    for seed in range(3):
        assert events_of(values(10 + seed)).empty
