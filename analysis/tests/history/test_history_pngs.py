"""Which history PNGs are drawn (issue 24 item 5): every sub-experiment's plots of all payloads, the
payload plots of the series that moved, every one with --all-plots; none left from an older history."""
from __future__ import annotations

import pandas as pd
import pytest

from perfgate import cli, files
from perfgate import schema as s
from perfgate.history import change_points as cp
from perfgate.history import names as event_names
from perfgate.history.pngs import payload_plots_wanted
from history_synthetic import SUBS, write_store


def test_the_payload_plots_wanted_are_the_change_points_and_the_event_cells():
    changes = pd.DataFrame({s.EXPERIMENT_TYPE: [SUBS[1], SUBS[1], SUBS[0]], s.BYTES: [16, 1024, 64],
                            cp.STATISTIC: [s.MEDIAN, s.P99, s.MAX]})
    events = pd.DataFrame({s.EXPERIMENT_TYPE: [SUBS[1], SUBS[2]], event_names.EVENT_PAYLOADS: ["32 16384", "16"],
                           event_names.EVENT_STATISTICS: [f"{s.MEDIAN} {s.MAX}", s.MEDIAN]})
    assert payload_plots_wanted(changes, events, SUBS[1]) == {
        (s.MEDIAN, 16), (s.P99, 1024), (s.MEDIAN, 32), (s.MEDIAN, 16384), (s.MAX, 32), (s.MAX, 16384)}
    assert payload_plots_wanted(changes, events, SUBS[0]) == {(s.MAX, 64)}
    assert payload_plots_wanted(changes, events, SUBS[3]) == set()


@pytest.mark.heavy
def test_history_draws_the_payload_plots_of_what_moved_and_removes_older_ones(tmp_path, capsys):
    write_store(tmp_path / "store", 30, 20)  # SUBS[1] 8 % slower from run 20, SUBS[0] flat
    requirements = tmp_path / "requirements.csv"
    files.write_csv(requirements, pd.DataFrame([{s.EXPERIMENT_TYPE: sub, s.BYTES: 16, s.MEDIAN: 100.0, s.P99: 200.0,
                                                 s.MAX: 900.0} for sub in SUBS[:2]]))
    plots = tmp_path / "plots"
    # a payload plot an earlier history drew of the flat sub-experiment, and a file that is no plot of ours
    stale, other = s.history_payload_png(plots, SUBS[0], 16, s.MAX), plots / SUBS[0] / "notes.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    other.write_bytes(b"mine")
    command = ["history", "--requirements", str(requirements), "--experiments-results", str(tmp_path / "store"),
               "--plots-directory", str(plots)]
    assert cli.main(command) == s.EXIT_OK
    changes = pd.read_csv(plots / "change_points.csv")
    events = pd.read_csv(plots / event_names.EVENTS_CSV)
    moved = changes[changes[s.EXPERIMENT_TYPE] == SUBS[1]]
    assert len(moved) and (changes[s.EXPERIMENT_TYPE] == SUBS[0]).sum() == 0
    assert list(events[s.EXPERIMENT_TYPE]) == [SUBS[1]]
    expected = {s.history_magnitude_png(plots, sub, m) for sub in SUBS[:2] for m in s.PLOTTED_MAGNITUDES}
    expected |= {s.history_payload_png(plots, SUBS[1], int(row[s.BYTES]), row[cp.STATISTIC]) for _, row in moved.iterrows()}
    expected |= {s.history_payload_png(plots, SUBS[1], int(p), statistic)
                 for p in str(events.at[0, event_names.EVENT_PAYLOADS]).split()
                 for statistic in events.at[0, event_names.EVENT_STATISTICS].split()}
    assert set(plots.rglob("*.png")) == expected | {other}
    assert len(expected) < 2 * (4 + 2 * 3)
    assert other.read_bytes() == b"mine"
    assert f"{len(expected)} plots in {plots} (the 8 of all payloads, and one per series that moved" in \
        capsys.readouterr().out

    assert cli.main([*command, "--all-plots"]) == s.EXIT_OK
    assert len(set(plots.rglob("*.png")) - {other}) == 2 * (4 + 2 * 3)
    assert stale.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "20 plots in" in capsys.readouterr().out
