"""Curtailed rounds (perfgate.ab.curtail): a sub-experiment whose tests are decided stops being measured,
and the verdict on the rounds each test used is the verdict on all the planned rounds."""
from __future__ import annotations

import json
import math
import shutil

import conftest
from ab_inputs import SYNTHETIC_SUBS as SUBS, curtailed_copy, statuses, stored_rounds, synthetic_ratios
import numpy as np
import pandas as pd
import pytest

from perfgate import schema as s
from perfgate.ab import curtail
from perfgate.ab import verdict as v
from perfgate.ab.verdict import ROUND


def curtailed_and_full(ratios: pd.DataFrame, rounds: int, threshold: float = v.DEFAULT_THRESHOLD,
                       alpha: float = v.DEFAULT_ALPHA) -> tuple[v.Decision, v.Decision, dict[str, int]]:
    names = sorted(set(ratios[ROUND]))
    subs = list(dict.fromkeys(ratios[s.EXPERIMENT_TYPE]))
    means, _ = v.usable_round_means(ratios)
    used = curtail.replay(curtail.test_values(means, names, subs, v.TESTED_STATISTICS), subs, rounds,
                          math.log1p(threshold), alpha)
    full = v.decide(ratios, threshold=threshold, alpha=alpha, order=subs)
    curtailed = curtail.decide_curtailed(curtail.truncate(ratios, names, used), planned=rounds, stopped=used,
                                         threshold=threshold, alpha=alpha, order=subs)
    return full, curtailed, used




def test_the_bounds_hold_every_p_value_the_remaining_rounds_can_give():
    # every outcome of the remaining rounds (above, below or at the shift) ends inside [best, worst]
    for above in range(0, 6):
        for below in range(0, 6):
            for remaining in range(0, 5):
                bounds = curtail.sign_bounds(above, below, remaining)
                for more_above in range(remaining + 1):
                    for more_below in range(remaining - more_above + 1):
                        p = v.upper_tail(above + more_above, above + below + more_above + more_below)
                        assert bounds.best <= p <= bounds.worst
                assert bounds.best <= v.upper_tail(above, above + below) <= bounds.worst


def test_two_rounds_against_a_regression_end_a_test_of_sixteen_when_all_others_can_never_reject():
    # 20 tests at 2 %: with 19 tests that can never reject, the last one's most lenient level is
    # 0.02 / 20 = 0.001, and 14 of 16 rounds give p = 0.0021: it can never reject either
    values = {(f"sub{i}", "Median"): (np.arange(5.0), np.array([-1.0, -1, -1, -1, -1])) for i in range(1, 10)}
    values.update({(f"sub{i}", "90%"): (np.arange(5.0), np.array([-1.0, -1, -1, -1, -1])) for i in range(1, 10)})
    values[("sub0", "Median")] = (np.arange(2.0), np.array([-1.0, -1]))
    values[("sub0", "90%")] = (np.arange(2.0), np.array([1.0, 1]))
    measured = {f"sub{i}": 5 for i in range(1, 10)} | {"sub0": 2}
    decided = curtail.open_tests(values, measured, 16, 0.0, 0.02)
    assert decided[("sub0", "Median")] is False
    assert decided[("sub0", "90%")] is None
    assert all(decided[(f"sub{i}", statistic)] is False for i in range(1, 10) for statistic in ("Median", "90%"))


@pytest.mark.heavy
@pytest.mark.parametrize("rounds, trials", [(16, 60), (10, 30)])
def test_curtailed_verdicts_equal_full_ones_on_many_synthetic_rounds(rounds, trials):
    rng = np.random.default_rng(28 + rounds)
    saved, failed_sets = [], 0
    for trial in range(trials):
        regressed = rng.choice(SUBS, size=int(rng.integers(0, 4)), replace=False)
        shifts = {sub: float(rng.choice([0.0, 0.01, 0.02, 0.05, 0.1, -0.05])) for sub in regressed}
        ratios = synthetic_ratios(rng, rounds, shifts, bad_share=float(rng.choice([0.0, 0.04, 0.15])))
        full, curtailed, used = curtailed_and_full(ratios, rounds)
        assert statuses(curtailed) == statuses(full), (trial, shifts, used)
        assert curtailed.undecided == () and not curtailed.too_few_rounds and not full.too_few_rounds
        failed_sets += not full.failed.empty
        saved.append(1 - sum(used.values()) / (rounds * len(SUBS)))
    assert 0 < failed_sets < trials  # both verdicts occur
    assert np.mean(saved) > 0.2  # and rounds are saved: not a rule that never stops


# --- stored real rounds, through `perfgate verdict` ------------------------------------------------------
@pytest.mark.parametrize("name, status", [("aa", "PASS"), ("injected", "REGRESSION")])
def test_stored_real_rounds_give_the_same_verdict_curtailed(tmp_path, name, status):
    full_dir, cut_dir = tmp_path / "full", tmp_path / "curtailed"
    shutil.copytree(stored_rounds() / name, full_dir)
    used = curtailed_copy(stored_rounds() / name, cut_dir)
    assert min(used.values()) < 10  # something was saved on these very rounds
    codes = [conftest.perfgate_in_process("verdict", "--ab-directory", str(d), "--no-plots").returncode
             for d in (full_dir, cut_dir)]
    assert codes[0] == codes[1] == {"PASS": s.EXIT_OK, "REGRESSION": s.EXIT_REGRESSION}[status]
    full, cut = (pd.read_csv(d / s.VERDICT_CSV) for d in (full_dir, cut_dir))
    assert full[s.STATUS].tolist() == cut[s.STATUS].tolist()
    assert (full[v.ROUNDS] == 10).all()
    assert cut[v.ROUNDS].tolist() == [used[sub] for sub in cut[s.EXPERIMENT_TYPE]]
    record = json.loads((cut_dir / s.VERDICT_JSON).read_text())
    assert record["status"] == status and record["planned_rounds"] == 10 and record["undecided"] == []
    assert [(r["subexperiment"], r["rounds"]) for r in record["rounds_used"]] == \
        [(sub, used[sub]) for sub in cut[s.EXPERIMENT_TYPE]]
    stopped = [sub for sub, n in used.items() if n < 10]
    assert record["stopped"] == {sub: used[sub] for sub in stopped}
    report_md = (cut_dir / s.REPORT_MARKDOWN).read_text()
    assert f"| {stopped[0]} | Median |" in report_md and f"| {used[stopped[0]]} of 10 |" in report_md


def test_a_curtailed_ab_decided_again_at_another_threshold_is_incomplete_where_its_rounds_do_not_decide(tmp_path):
    used = curtailed_copy(stored_rounds() / "aa", tmp_path / "ab")
    done = conftest.perfgate_in_process("verdict", "--ab-directory", str(tmp_path / "ab"), "--no-plots",
                                        "--threshold", "0")
    record = json.loads((tmp_path / "ab" / s.VERDICT_JSON).read_text())
    # at threshold 0 an A/A's rounds above and below it are even: fewer rounds than planned decide nothing
    assert done.returncode == s.EXIT_INCOMPLETE and record["status"] == "INCOMPLETE"
    assert record["undecided"] and "undecided at threshold +0.0%" in done.stderr
    assert {u["subexperiment"] for u in record["undecided"]} <= {sub for sub, n in used.items() if n < 10}


@pytest.mark.parametrize("record, problem", [
    ('{"planned_rounds": 10, "stopped": {"nosuch_sub": 3}}', "stopped names a sub-experiment"),
    ('{"planned_rounds": 10, "stopped": {"interprocess_best_effort": 11}}', "not a whole number from 0 to 10"),
    ('{"planned_rounds": true, "stopped": {}}', "planned_rounds is not a whole number"),
    ('{"planned_rounds": 10, "stopped": []}', "stopped is not an object"),
    ('{"planned_rounds": 10, "stopped": {}', "malformed JSON"),
])
def test_a_bad_curtailment_record_is_one_line_and_exit_2(tmp_path, record, problem):
    shutil.copytree(stored_rounds() / "aa", tmp_path / "ab")
    (tmp_path / "ab" / s.AB_CURTAILED_JSON).write_text(record)
    done = conftest.perfgate_in_process("verdict", "--ab-directory", str(tmp_path / "ab"), "--no-plots")
    assert done.returncode == s.EXIT_USAGE
    assert done.stderr.count("\n") == 1 and problem in done.stderr and s.AB_CURTAILED_JSON in done.stderr
    assert not (tmp_path / "ab" / s.VERDICT_CSV).exists()


# --- a real curtailed A/B --------------------------------------------------------------------------------
def test_a_real_ab_stops_measuring_decided_sub_experiments_and_its_verdict_is_the_stored_rounds(harness_paths, tmp_path):
    out = tmp_path / "ab"
    subs = ["intraprocess_best_effort", "interprocess_best_effort"]
    done = conftest.perfgate_in_process("ab", "--output", str(out), "--baseline", "system", "--candidate", "system",
                                        "--rounds", "10", "--samples", "50", "--payloads", "16,1024",
                                        "--subexperiments", ",".join(subs), "--no-plots")
    assert done.returncode in (s.EXIT_OK, s.EXIT_REGRESSION), done.stderr
    record = json.loads((out / s.AB_CURTAILED_JSON).read_text())
    assert record["planned_rounds"] == 10 and record["threshold"] == v.DEFAULT_THRESHOLD
    # an A/A: a test whose rounds fall below the threshold twice can never reject; so something stopped
    assert record["stopped"] and all(1 <= n < 10 for n in record["stopped"].values())
    assert "no longer measured" in done.stdout
    names = sorted(p.name for p in (out / s.AB_ROUNDS_DIR).iterdir())
    for sub, n in record["stopped"].items():  # never measured after it was decided
        measured = [name for name in names if (out / s.AB_ROUNDS_DIR / name / "baseline" / s.summary_csv_name(sub)).exists()]
        assert measured == names[:n]
    table = pd.read_csv(out / s.VERDICT_CSV)
    for _, row in table.iterrows():
        assert row[v.ROUNDS] <= record["stopped"].get(row[s.EXPERIMENT_TYPE], len(names))
    # decided again from the folder: the same verdict
    again = conftest.perfgate_in_process("verdict", "--ab-directory", str(out), "--no-plots")
    assert again.returncode == done.returncode
    assert pd.read_csv(out / s.VERDICT_CSV)[s.STATUS].tolist() == table[s.STATUS].tolist()
