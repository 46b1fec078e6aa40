"""Layout-aware thresholds (perfgate.ab.layout, ab.layout_file): derived from layout-only A/Bs, then each
sub-experiment tested at max(--threshold, its layout threshold), a pass that the global threshold would
have failed labelled layout-sized, curtailment at the same per-test bound."""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import ab_inputs
import conftest
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from perfgate import schema as s
from perfgate.ab import curtail, layout, layout_file
from perfgate.ab import verdict as v
from perfgate.ab.verdict import ROUND, STATISTIC
from perfgate.errors import InputError
from perfgate.gate.plan import platform_layout_thresholds
from perfgate.model import CpuLatency

one_line_exit_2 = ab_inputs.one_line_exit_2
INTRA, INTER = ab_inputs.SUBS  # intraprocess_best_effort, interprocess_best_effort
layout_ab = ab_inputs.layout_ab
COMMAND = "determine-layout-thresholds"


def derive(tmp_path, *folders, platform="vm-2core-x64"):
    output = tmp_path / f"{platform}_layout.json"
    done = conftest.perfgate_in_process(COMMAND, *[a for f in folders for a in ("--ab-directory", str(f))],
                                        "--platform", platform, "--output", str(output))
    return done, output


# --- the derivation -----------------------------------------------------------------------------------------
def test_a_threshold_is_the_next_half_percent_strictly_above_the_move():
    assert [layout.step_above(x) for x in (0.0, 0.0049, 0.005, 0.029, 0.03, 0.0301)] == \
        [0.005, 0.005, 0.01, 0.03, 0.035, 0.035]


def bound_of_size(d) -> float:
    """The test's own upper confidence bound of |median d|: the sign test's order statistics at one-sided
    0.02 each way (the rank from the binomial directly), exp of the larger side, minus 1."""
    d = np.sort(np.asarray(d, float))
    n = len(d)
    k = max(j for j in range(1, n + 1) if stats.binom.cdf(j - 1, n, 0.5) <= 0.02)
    return math.expm1(max(d[n - k], -d[k - 1]))


def test_each_sub_experiment_gets_a_threshold_above_the_upper_bound_of_any_layout_pairs_move_with_provenance(tmp_path):
    # pair 1: intra 2.7 % faster (the other layout is 2.8 % slower), inter +0.4 %; pair 2: intra +1.2 %, inter -1.6 %
    first = layout_ab(tmp_path / "shift-lines", {INTRA: -0.027, INTER: 0.004}, seed=3)
    second = layout_ab(tmp_path / "link-order", {INTRA: 0.012, INTER: -0.016}, seed=4, commits=("c" * 40, "d" * 40))
    done, output = derive(tmp_path, first, second)
    assert done.returncode == s.EXIT_OK, done.stderr
    content = json.loads(output.read_text())
    assert content["platform"] == "vm-2core-x64"
    largest = content["largest_layout_change"]  # the estimates
    assert largest[INTRA] == pytest.approx(1 / (1 - 0.027) - 1, abs=0.003)  # the faster pair decides intra
    assert largest[INTER] == pytest.approx(1 / (1 - 0.016) - 1, abs=0.003)
    pairs = content["provenance"]["ab_directories"]
    assert [p["ab_directory"] for p in pairs] == [str(first.resolve()), str(second.resolve())]
    assert [(p["baseline"]["commit"], p["candidate"]["commit"]) for p in pairs] == \
        [("a" * 40, "b" * 40), ("c" * 40, "d" * 40)]
    assert pairs[0]["platform"]["id"] == "vm-abc" and pairs[0]["load_average"]["before"] == [1.1, 1.0, 0.9]
    assert pairs[0]["created_utc"] == "2026-11-27T05:00:00.000000Z" and pairs[0]["rounds"] == 16
    # the rounds' d are kept, 16 per sub-experiment and statistic, and the bounds are computed from them
    moves = {(m["subexperiment"], m["statistic"]): m["d"] for p in pairs for m in p["moves"]
             if p["ab_directory"] == str(first.resolve())}
    assert sorted(moves) == sorted((sub, st) for sub in ab_inputs.SUBS for st in v.TESTED_STATISTICS)
    assert all(len(d) == 16 for d in moves.values())
    assert np.median(moves[(INTRA, s.MEDIAN)]) == pytest.approx(math.log(1 - 0.027), abs=0.003)
    bounds = {sub: max(bound_of_size(m["d"]) for p in pairs for m in p["moves"] if m["subexperiment"] == sub)
              for sub in ab_inputs.SUBS}
    assert content["largest_layout_bound"] == pytest.approx(bounds, abs=1e-6)
    assert all(bounds[sub] > largest[sub] for sub in bounds)  # a bound, above the estimate ...
    assert bounds[INTRA] < largest[INTRA] + 0.01  # ... by the rounds' small spread here (sd of d 0.6 %)
    assert content["thresholds"] == {sub: layout.step_above(bounds[sub]) for sub in bounds}
    assert content["thresholds"][INTRA] in (0.03, 0.035, 0.04)
    shifts = pd.DataFrame(pairs[0]["shifts"])
    intra = shifts[shifts["subexperiment"] == INTRA]
    assert (intra["lower"] <= intra["change"]).all() and (intra["change"] <= intra["upper"]).all()
    assert intra["change"].between(-0.031, -0.023).all()
    assert f"threshold +{content['thresholds'][INTRA]:.1%}" in done.stdout
    assert "from 2 layout A/B(s) of 2 pair(s)" in done.stdout


def write_layout_file(path, thresholds: dict, **more) -> str:
    path.write_text(json.dumps({"platform": "test", "thresholds": thresholds, **more}))
    return str(path)


# --- the idle policy the layout A/Bs measured under -------------------------------------------------------------
AWAKE = CpuLatency.record(requested="awake", held_us=0, idle_driver="haltpoll")
NOT_HELD = CpuLatency.record(requested="awake", held_us=None, idle_driver="haltpoll", problem="Permission denied")


def test_the_file_says_which_idle_policy_its_layout_abs_measured_under_and_never_mixes_two(tmp_path):
    awake = [layout_ab(tmp_path / f"awake{i}", {INTRA: 0.01 * i}, seed=20 + i, cpu_latency=AWAKE) for i in (1, 2)]
    done, output = derive(tmp_path, *awake)
    assert done.returncode == s.EXIT_OK, done.stderr
    content = json.loads(output.read_text())
    assert content["cpu_latency"] == "awake"
    assert [p["cpu_latency"] for p in content["provenance"]["ab_directories"]] == ["awake", "awake"]
    # asked for but not held (no write access to /dev/cpu_dma_latency) measured under the system's policy,
    # as did an A/B from before the entry existed: neither is mixed with awake ones
    for name, entry in (("not-held", NOT_HELD), ("older", None)):
        other = layout_ab(tmp_path / name, {INTRA: 0.01}, seed=30, cpu_latency=entry)
        done, mixed = derive(tmp_path, awake[0], other, platform=f"mixed-{name}")
        one_line_exit_2(done, "measured with --cpu-latency system, the A/Bs before it with awake", str(other))
        assert not mixed.exists()
        done, alone = derive(tmp_path, other, platform=f"alone-{name}")
        assert done.returncode == s.EXIT_OK and json.loads(alone.read_text())["cpu_latency"] == "system"


def test_an_ab_under_another_idle_policy_than_its_layout_file_is_warned_and_a_bad_policy_is_exit_2(tmp_path):
    older = write_layout_file(tmp_path / "older.json", {INTRA: 0.03})  # no entry: derived under the system's policy
    assert layout_file.mode_warning(layout_file.load(older), "system") is None
    assert layout_file.mode_warning(layout_file.load(older), "awake") == (
        f"the layout thresholds in {older} were measured with --cpu-latency system, this A/B measures with awake: "
        "layout moves may be another size")
    awake = layout_file.load(write_layout_file(tmp_path / "awake.json", {INTRA: 0.03}, cpu_latency="awake"))
    assert layout_file.mode_warning(awake, "awake") is None and layout_file.mode_warning(None, "awake") is None
    hostile = write_layout_file(tmp_path / "hostile.json", {INTRA: 0.03}, cpu_latency="poll\n::error::x")
    with pytest.raises(InputError, match="'cpu_latency' is not one of system, awake") as error:
        layout_file.load(hostile)
    assert str(error.value).startswith(f"{hostile}: ") and "::error::" not in str(error.value)


# --- the verdict at per-sub-experiment bounds ----------------------------------------------------------------
def test_a_layout_sized_change_passes_labelled_and_one_above_its_layout_threshold_fails(tmp_path):
    ab = tmp_path / "ab"
    ab_inputs.write_rounds(ab, 16, {INTRA: 0.025, INTER: 0.05}, seed=11)
    given = write_layout_file(tmp_path / "layout.json", {INTRA: 0.035, INTER: 0.03})
    done = conftest.perfgate_in_process("verdict", "--ab-directory", str(ab), "--no-plots", "--layout-thresholds", given)
    assert done.returncode == s.EXIT_REGRESSION, done.stderr
    record = json.loads((ab / s.VERDICT_JSON).read_text())
    assert record["thresholds"] == {INTRA: 0.035, INTER: 0.03}
    assert record["layout_thresholds"] == {"file": given, "thresholds": {INTRA: 0.035, INTER: 0.03}}
    assert {r["subexperiment"] for r in record["failed"]} == {INTER}
    assert sorted((r["subexperiment"], r["statistic"]) for r in record["layout_sized"]) == \
        sorted((INTRA, st) for st in v.TESTED_STATISTICS)
    assert re.search(rf"layout-sized, not a failure: {INTRA} Median \+2\.\d % \(layout threshold \+3\.5%\)",
                     record["headline"])
    table = pd.read_csv(ab / s.VERDICT_CSV)
    assert table.loc[table[s.EXPERIMENT_TYPE] == INTRA, s.STATUS].tolist() == [s.PASSED, s.PASSED]
    intra_rows = [line for line in (ab / s.REPORT_MARKDOWN).read_text().splitlines() if line.startswith(f"| {INTRA} |")]
    assert len(intra_rows) == 2 and all(
        "| +3.5 % | 1" in row and "| 16 | passed (layout-sized) | " in row
        and row.endswith(" rounds above +3.5%: within its layout threshold (+1.0% alone would fail it) |")
        for row in intra_rows), intra_rows
    assert "passed (layout-sized)" in (ab / s.REPORT_HTML).read_text()
    assert "layout-sized (passed): " + INTRA in done.stdout
    # without the layout file both fail: the label marks exactly what the global threshold would fail
    again = conftest.perfgate_in_process("verdict", "--ab-directory", str(ab), "--no-plots")
    record = json.loads((ab / s.VERDICT_JSON).read_text())
    assert again.returncode == s.EXIT_REGRESSION and {r["subexperiment"] for r in record["failed"]} == {INTRA, INTER}
    assert record["layout_sized"] == [] and record["layout_thresholds"] is None
    assert record["thresholds"] == {INTRA: v.DEFAULT_THRESHOLD, INTER: v.DEFAULT_THRESHOLD}


def test_a_layout_threshold_below_the_global_one_changes_nothing(tmp_path):
    ab = tmp_path / "ab"
    ab_inputs.write_rounds(ab, 16, {INTRA: 0.025}, seed=12)
    given = write_layout_file(tmp_path / "layout.json", {INTRA: 0.002})
    done = conftest.perfgate_in_process("verdict", "--ab-directory", str(ab), "--no-plots", "--layout-thresholds", given)
    record = json.loads((ab / s.VERDICT_JSON).read_text())
    assert done.returncode == s.EXIT_REGRESSION and record["thresholds"][INTRA] == v.DEFAULT_THRESHOLD
    assert {r["subexperiment"] for r in record["failed"]} == {INTRA}


def test_the_platform_layout_file_is_read_from_requirements_when_perfgate_platform_names_it(tmp_path, monkeypatch):
    ab = tmp_path / "ab"
    ab_inputs.write_rounds(ab, 16, {INTRA: 0.025}, seed=13)
    (tmp_path / s.REQUIREMENTS_DIR).mkdir()
    write_layout_file(tmp_path / s.REQUIREMENTS_DIR / "vm-test_layout.json", {INTRA: 0.04})
    monkeypatch.setenv(s.PLATFORM_ENV, "vm-test")
    done = conftest.perfgate_in_process("verdict", "--ab-directory", str(ab), "--no-plots", cwd=tmp_path)
    record = json.loads((ab / s.VERDICT_JSON).read_text())
    assert done.returncode == s.EXIT_OK, done.stdout + done.stderr
    assert record["layout_thresholds"]["file"] == os.path.join(s.REQUIREMENTS_DIR, "vm-test_layout.json")
    assert record["thresholds"][INTRA] == 0.04 and record["layout_sized"]
    read = platform_layout_thresholds("vm-test", tmp_path / s.REQUIREMENTS_DIR)
    assert read.path == str(tmp_path / s.REQUIREMENTS_DIR / "vm-test_layout.json") and read.thresholds == {INTRA: 0.04}
    assert platform_layout_thresholds("other", tmp_path / s.REQUIREMENTS_DIR) is None


# --- curtailment at the same per-test bounds ----------------------------------------------------------------
SUBS = [f"{name}" for name in s.DEFAULT_SUBEXPERIMENT_NAMES]


def synthetic_ratios(rng: np.random.Generator, rounds: int, shifts: dict[str, float]) -> pd.DataFrame:
    """Rounds like the real ones: a per-round state per sub-experiment (sd 2.5 %), now and then one arm in a
    bad machine state (x1.3-1.8), and a change of `shifts[sub]`."""
    rows = []
    for r in range(rounds):
        for sub in SUBS:
            state = rng.normal(0, 0.025) + (rng.choice([-1, 1]) * math.log(rng.uniform(1.3, 1.8))
                                            if rng.random() < 0.04 else 0.0)
            for statistic in v.TESTED_STATISTICS:
                for payload in (16, 16384):
                    rows.append({ROUND: f"{r + 1:02d}", s.EXPERIMENT_TYPE: sub, s.BYTES: payload, STATISTIC: statistic,
                                 "log_ratio": math.log1p(shifts.get(sub, 0.0)) + state + rng.normal(0, 0.005)})
    return pd.DataFrame(rows)


@pytest.mark.heavy  # a simulation: 24 sets of 16 rounds, replayed both ways
def test_curtailed_verdicts_equal_full_ones_at_layout_thresholds():
    rng = np.random.default_rng(2028)
    given = {SUBS[0]: 0.035, SUBS[1]: 0.03, SUBS[2]: 0.05}
    rounds, differs, saved = 16, 0, 0
    for trial in range(24):
        # layout-sized changes, changes above their layout threshold, and unchanged ones
        ratios = synthetic_ratios(rng, rounds, {SUBS[0]: 0.03, SUBS[1]: 0.08, SUBS[3]: 0.06 * (trial % 2)})
        names = sorted(set(ratios[ROUND]))
        means, _ = v.usable_round_means(ratios)
        used = curtail.replay(curtail.test_values(means, names, SUBS, v.TESTED_STATISTICS), SUBS, rounds,
                              v.bound_shifts(v.DEFAULT_THRESHOLD, given, SUBS), v.DEFAULT_ALPHA)
        full = v.decide(ratios, order=SUBS, layout=given)
        cut = curtail.decide_curtailed(curtail.truncate(ratios, names, used), planned=rounds,
                                       stopped={sub: n for sub, n in used.items() if n < rounds},
                                       threshold=v.DEFAULT_THRESHOLD, alpha=v.DEFAULT_ALPHA, order=SUBS, layout=given)
        assert not cut.undecided and not cut.incomplete
        assert full.table[s.STATUS].tolist() == cut.table[s.STATUS].tolist()
        assert full.table[v.THRESHOLD].tolist() == cut.table[v.THRESHOLD].tolist()
        saved += sum(rounds - n for n in used.values())
        # curtailing at the global threshold alone would have stopped other sub-experiments
        alone = curtail.replay(curtail.test_values(means, names, SUBS, v.TESTED_STATISTICS), SUBS, rounds,
                               math.log1p(v.DEFAULT_THRESHOLD), v.DEFAULT_ALPHA)
        differs += alone != used
    assert saved > 0 and differs > 0


# --- bad input ---------------------------------------------------------------------------------------------
def test_a_folder_that_is_no_ab_is_exit_2_and_nothing_is_written(tmp_path):
    good = layout_ab(tmp_path / "good", {INTRA: 0.01}, seed=5)
    (tmp_path / "empty").mkdir()
    done, output = derive(tmp_path, good, tmp_path / "empty")
    one_line_exit_2(done, "not an A/B folder", str(tmp_path / "empty"))
    assert not output.exists()
    done, output = derive(tmp_path, good, good)
    one_line_exit_2(done, "given twice")
    done, output = derive(tmp_path, good, platform="../up")
    one_line_exit_2(done, "--platform")
    assert not output.exists()


@pytest.mark.parametrize("text, problem", [
    ('{"status": "PASS", "status": "REGRESSION"}', "given twice"),
    ('["PASS"]', "not a JSON object"),
    ('{"status": "<script>alert(1)</script>"}', "'status' is not one of"),
    ('{"status": "INCOMPLETE"}', "the A/B is incomplete"),
    ('{"status": ' + "[" * 100000, "verdict"),
])
def test_a_hostile_verdict_json_is_exit_2_one_line(tmp_path, text, problem):
    ab = layout_ab(tmp_path / "ab", {INTRA: 0.01}, seed=6)
    (ab / s.VERDICT_JSON).write_text(text)
    done, output = derive(tmp_path, ab)
    one_line_exit_2(done, problem, s.VERDICT_JSON)
    assert "<script>" not in done.stderr and not output.exists()


def test_an_ab_of_one_sub_experiment_a_curtailed_one_and_one_without_verdict_are_exit_2(tmp_path):
    one = tmp_path / "one"
    ab_inputs.write_rounds(one, 16, {}, seed=8, skip={(r, arm, INTER) for r in range(16) for arm in s.AB_ARMS})
    assert conftest.perfgate_in_process("verdict", "--ab-directory", str(one), "--no-plots").returncode == s.EXIT_OK
    one_line_exit_2(derive(tmp_path, one)[0], "one sub-experiment only")
    curtailed = layout_ab(tmp_path / "curtailed", {}, seed=9)
    curtail.write_record(curtailed, 16, {INTRA: 4}, v.DEFAULT_THRESHOLD, v.DEFAULT_ALPHA)
    one_line_exit_2(derive(tmp_path, curtailed)[0], "--all-rounds")
    undecided = tmp_path / "undecided"
    ab_inputs.write_rounds(undecided, 16, {}, seed=10)
    one_line_exit_2(derive(tmp_path, undecided)[0], "no verdict.json")


@pytest.mark.parametrize("thresholds, problem", [
    ({"<img src=x>": 0.03}, "not a sub-experiment of the contract"),
    ({INTRA: 5}, "not a fraction"),
    ({INTRA: "0.03"}, "not a fraction"),
    ({INTRA: True}, "not a fraction"),
    ({"floor_udp": 0.03}, "not a sub-experiment of the contract"),
])
def test_a_hostile_layout_file_is_exit_2_one_line_before_anything_is_written(tmp_path, thresholds, problem):
    ab = tmp_path / "ab"
    ab_inputs.write_rounds(ab, 16, {}, seed=14)
    given = write_layout_file(tmp_path / "layout.json", thresholds)
    done = conftest.perfgate_in_process("verdict", "--ab-directory", str(ab), "--no-plots", "--layout-thresholds", given)
    one_line_exit_2(done, problem, given)
    assert "<img" not in done.stderr and not (ab / s.VERDICT_JSON).exists()
    with pytest.raises(InputError):
        (tmp_path / "requirements").mkdir(exist_ok=True)
        write_layout_file(tmp_path / "requirements" / "p_layout.json", thresholds)
        platform_layout_thresholds("p", tmp_path / "requirements")


# --- a real A/B --------------------------------------------------------------------------------------------
def test_a_real_ab_of_the_system_fastdds_records_the_layout_thresholds_it_used(harness_paths, tmp_path):
    out = tmp_path / "ab"
    given = write_layout_file(tmp_path / "layout.json", {INTRA: 0.05})
    ab = subprocess.Popen([sys.executable, "-m", "perfgate", "ab", "--output", str(out), "--baseline", "system",
                           "--candidate", "system", "--rounds", "10", "--samples", "50", "--payloads", "16",
                           "--subexperiments", ",".join(ab_inputs.SUBS), "--no-plots", "--layout-thresholds", given],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the file changes while the A/B measures (a checkout, a pull): it decides at what it read and curtailed with
        assert conftest.wait_until(lambda: (out / s.AB_ROUNDS_DIR).is_dir() or ab.poll() is not None, 120)
        write_layout_file(tmp_path / "layout.json", {INTRA: 0.09, INTER: 0.2})
        stdout, stderr = ab.communicate(timeout=600)
    finally:
        ab.kill()
        ab.wait()
    done = subprocess.CompletedProcess(ab.args, ab.returncode, stdout, stderr)
    assert done.returncode in (s.EXIT_OK, s.EXIT_REGRESSION), done.stderr
    record = json.loads((out / s.VERDICT_JSON).read_text())
    assert record["thresholds"] == {INTRA: 0.05, INTER: v.DEFAULT_THRESHOLD}
    assert record["layout_thresholds"] == {"file": given, "thresholds": {INTRA: 0.05}}
    assert json.loads((out / s.AB_CURTAILED_JSON).read_text())["layout_thresholds"] == {INTRA: 0.05}
    assert f"layout thresholds from {given}: {INTRA} +5.0%" in done.stdout
    # the file has no cpu_latency: derived under the system's policy, while the A/B keeps idle CPUs awake
    assert f"warning: the layout thresholds in {given} were measured with --cpu-latency system" in done.stderr
