"""More rounds for the sub-experiments with a wide layout bound (ab.layout.planned_rounds): each test stays
an exact sign test at its own planned rounds, fixed before measuring, so curtailing still gives the full
verdict; `perfgate ab` measures each sub-experiment in its own rounds only and records the plan."""
from __future__ import annotations

import json

import conftest
import numpy as np
import pandas as pd
import pytest
from ab_inputs import SYNTHETIC_SUBS as SUBS, statuses, synthetic_ratios

from perfgate import schema as s
from perfgate.ab import curtail
from perfgate.ab import layout
from perfgate.ab import verdict as v
from perfgate.ab.verdict import ROUND
from perfgate.errors import InputError

INTRA_BE, INTRA_REL = "intraprocess_best_effort", "intraprocess_reliable"


def test_a_bound_above_two_percent_plans_half_as_many_rounds_again():
    given = {"a": 0.01, "b": 0.02, "c": 0.025, "d": 0.03}
    assert layout.planned_rounds(16, 0.01, given, ["a", "b", "c", "d", "e"]) == {"a": 16, "b": 16, "c": 24, "d": 24,
                                                                                 "e": 16}
    assert layout.planned_rounds(10, 0.01, given, ["b", "c"]) == {"b": 10, "c": 15}
    # the global threshold is the bound where it is larger: every sub-experiment is then wide
    assert set(layout.planned_rounds(16, 0.03, {}, ["a", "b"]).values()) == {24}


@pytest.mark.parametrize("seed", range(6))
def test_curtailed_verdicts_equal_full_ones_when_the_plans_differ(seed):
    rng = np.random.default_rng(280 + seed)
    wide = {sub: 0.03 for sub in SUBS[:3]}
    planned = layout.planned_rounds(16, v.DEFAULT_THRESHOLD, wide, SUBS)
    regressed = rng.choice(SUBS, size=int(rng.integers(0, 4)), replace=False)
    shifts = {sub: float(rng.choice([0.0, 0.02, 0.05, 0.1, -0.05])) for sub in regressed}
    ratios = synthetic_ratios(rng, 24, shifts, bad_share=float(rng.choice([0.0, 0.04])))
    names = sorted(set(ratios[ROUND]))
    full_rounds = curtail.truncate(ratios, names, planned)  # what an uncurtailed A/B of this plan measures
    means, _ = v.usable_round_means(full_rounds)
    used = curtail.replay(curtail.test_values(means, names, SUBS, v.TESTED_STATISTICS), SUBS, planned,
                          v.bound_shifts(v.DEFAULT_THRESHOLD, wide, SUBS), v.DEFAULT_ALPHA)
    assert all(used[sub] <= planned[sub] for sub in SUBS)
    full = v.decide(full_rounds, order=SUBS, layout=wide)
    curtailed = curtail.decide_curtailed(curtail.truncate(ratios, names, used), planned=planned, stopped=used,
                                         threshold=v.DEFAULT_THRESHOLD, alpha=v.DEFAULT_ALPHA, order=SUBS, layout=wide)
    assert statuses(curtailed) == statuses(full), (shifts, used)
    assert curtailed.undecided == ()
    rounds_of = dict(zip(full.table[s.EXPERIMENT_TYPE], full.table[v.ROUNDS]))
    assert {rounds_of[sub] for sub in SUBS[:3]} == {24} and {rounds_of[sub] for sub in SUBS[3:]} == {16}


def test_a_record_of_per_subexperiment_plans_is_read_back_and_checked(tmp_path):
    plans = {INTRA_BE: 10, INTRA_REL: 15}
    curtail.write_record(tmp_path, plans, {INTRA_BE: 4}, 0.01, 0.02)
    assert curtail.read_record(tmp_path, [INTRA_BE, INTRA_REL], 15) == (plans, {INTRA_BE: 4})
    curtail.write_record(tmp_path, {INTRA_BE: 10, INTRA_REL: 10}, {}, 0.01, 0.02)
    assert json.loads((tmp_path / s.AB_CURTAILED_JSON).read_text())["planned_rounds"] == 10  # one plan: a number
    floor = {INTRA_BE: 10, INTRA_REL: 15, "floor_udp": 10}  # a floor it was asked to measure: planned, never tested
    curtail.write_record(tmp_path, floor, {}, 0.01, 0.02)
    assert curtail.read_record(tmp_path, [INTRA_BE, INTRA_REL], 15) == (floor, {})
    for planned, stopped, problem in [({INTRA_BE: 10}, {}, "every sub-experiment the A/B has"),
                                      ({INTRA_BE: 10, INTRA_REL: 15, "sub<script>": 10}, {}, "an unknown one"),
                                      ({INTRA_BE: 10, INTRA_REL: 0}, {}, "from 1 to 1000"),
                                      ({INTRA_BE: 10, INTRA_REL: 15}, {INTRA_BE: 11}, "from 0 to 10")]:
        (tmp_path / s.AB_CURTAILED_JSON).write_text(json.dumps({"planned_rounds": planned, "stopped": stopped}))
        with pytest.raises(InputError, match=problem):
            curtail.read_record(tmp_path, [INTRA_BE, INTRA_REL], 10)


@pytest.mark.parametrize("all_rounds", [True, False])
def test_a_real_ab_measures_the_wide_bound_sub_experiment_in_its_extra_rounds_only(harness_paths, tmp_path,
                                                                                  all_rounds):
    out, given = tmp_path / "ab", tmp_path / "layout.json"
    given.write_text(json.dumps({"platform": "test", "thresholds": {INTRA_REL: 0.03}}))
    done = conftest.perfgate_in_process("ab", "--output", str(out), "--baseline", "system", "--candidate", "system",
                                        "--rounds", "10", "--samples", "50", "--payloads", "16,1024",
                                        "--subexperiments", f"{INTRA_BE},{INTRA_REL}", "--no-plots",
                                        "--layout-thresholds", str(given), *(["--all-rounds"] if all_rounds else []))
    assert done.returncode in (s.EXIT_OK, s.EXIT_REGRESSION), done.stderr
    assert f"15 rounds for {INTRA_REL}: a bound of +3.0%" in done.stdout and f"rounds for {INTRA_BE}" not in done.stdout
    planned = {INTRA_BE: 10, INTRA_REL: 15}
    if all_rounds:
        used = planned
    else:  # an A/A: decided early, each sub-experiment within its own plan
        record = json.loads((out / s.AB_CURTAILED_JSON).read_text())
        assert record["planned_rounds"] == planned
        used = {sub: record["stopped"].get(sub, planned[sub]) for sub in planned}
        assert all(1 <= used[sub] <= planned[sub] for sub in planned)
    names = sorted(p.name for p in (out / s.AB_ROUNDS_DIR).iterdir())
    assert names == [f"{r:02d}" for r in range(1, max(used.values()) + 1)]
    for sub, rounds in used.items():
        for arm in s.AB_ARMS:
            measured = [n for n in names if (out / s.AB_ROUNDS_DIR / n / arm / s.summary_csv_name(sub)).exists()]
            assert measured == names[:rounds], (sub, arm)
    table = pd.read_csv(out / s.VERDICT_CSV)
    assert dict(zip(table[s.EXPERIMENT_TYPE], table[v.ROUNDS])) == used
    assert json.loads((out / s.VERDICT_JSON).read_text())["thresholds"] == {INTRA_BE: 0.01, INTRA_REL: 0.03}
    again = conftest.perfgate_in_process("verdict", "--ab-directory", str(out), "--no-plots",
                                         "--layout-thresholds", str(given))
    assert again.returncode == done.returncode, again.stderr
