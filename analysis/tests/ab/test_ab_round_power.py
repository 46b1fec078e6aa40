"""Rounds planned from the rounds' own noise (ab.round_power, ab.layout.more_rounds): the power of a
sub-experiment's planned rounds at +5 %, from the rounds of the layout file's A/Bs, exact; a sub-experiment
whose rounds give less than 95 % gets 1.5 times the rounds, fixed before anything is measured."""
from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import ab_inputs
import conftest
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from perfgate import schema as s
from perfgate.ab import layout, layout_file, round_power
from perfgate.ab import verdict as v
from perfgate.errors import InputError

INTRA_BE, INTRA_REL = "intraprocess_best_effort", "intraprocess_reliable"
LIFTED = math.log1p(0.05)


def test_one_statistics_power_is_the_binomial_tail_of_the_rounds_a_regression_lifts_above_the_bound():
    # 7 of 10 rounds have noise that +5 % lifts above a +1 % bound, 3 do not
    noise = np.array([[0.0]] * 7 + [[-0.05]] * 3)
    for rounds in (10, 16, 24):
        needed = round_power.rejection_count(rounds, 0.02 / 20)
        assert v.upper_tail(needed, rounds) <= 0.001 < v.upper_tail(needed - 1, rounds)
        assert round_power.power(noise, 0.01, 0.05, rounds, needed) == pytest.approx(
            stats.binom.sf(needed - 1, rounds, 0.7), abs=1e-12)
    assert round_power.rejection_count(8, 0.001) is None  # 2^-8 > 0.001: 8 rounds can never reject


def test_two_statistics_reject_when_either_does_as_the_multinomial_sum_over_round_patterns_says():
    # a round's two statistics move together: both above, one of them, or neither
    patterns = {(True, True): 5, (True, False): 2, (False, True): 2, (False, False): 1}
    noise = np.array([[0.0 if a else -0.1, 0.0 if b else -0.1] for (a, b), n in patterns.items() for _ in range(n)])
    shares = [n / 10 for n in patterns.values()]
    rounds, needed = 9, 7
    expected = sum(stats.multinomial.pmf(counts, rounds, shares)
                   for counts in itertools.product(range(rounds + 1), repeat=4) if sum(counts) == rounds
                   and (counts[0] + counts[1] >= needed or counts[0] + counts[2] >= needed))
    assert round_power.power(noise, 0.01, 0.05, rounds, needed) == pytest.approx(expected, abs=1e-12)
    alone = stats.binom.sf(needed - 1, rounds, 0.7)  # either statistic alone: 7 of 10 rounds above
    assert alone < expected < 1


def test_power_is_averaged_over_the_abs_each_an_hour_of_its_own():
    calm, rough = np.zeros((12, 2)), np.array([[0.0, 0.0]] * 10 + [[-0.06, -0.06]] * 2)
    one = [round_power.hourly_power([noise], 0.01, 16, 20) for noise in (calm, rough)]
    assert one[0] == 1.0 and one[1] == pytest.approx(stats.binom.sf(14, 16, 10 / 12))
    assert round_power.hourly_power([calm, rough], 0.01, 16, 20) == pytest.approx(sum(one) / 2)
    assert round_power.hourly_power([], 0.01, 16, 20) is None


def heavy_tailed(rng, rounds: int, bad: int) -> list[list[float]]:
    """A layout A/B's d of both statistics: a small spread and `bad` rounds far below (a stall in the baseline)."""
    d = rng.normal(0.0, 0.002, size=rounds)
    d[:bad] -= 0.08
    return [list(d), list(d + rng.normal(0.0, 0.002, size=rounds))]


def moves_of(sub: str, pair: list[list[float]]) -> list[dict]:
    return [{layout.SUBEXPERIMENT: sub, layout.STATISTIC: statistic, layout.D: d}
            for statistic, d in zip(v.TESTED_STATISTICS, pair)]


def test_heavy_tailed_rounds_get_one_and_a_half_times_the_rounds_and_calm_ones_do_not():
    rng = np.random.default_rng(23)
    abs_ = [{**dict(zip([INTRA_REL], [heavy_tailed(rng, 18, 2)])), INTRA_BE: heavy_tailed(rng, 18, 0)} for _ in range(3)]
    moves = [{(sub, statistic): np.asarray(d) for sub, pair in ab.items() for statistic, d in
              zip(v.TESTED_STATISTICS, pair)} for ab in abs_]
    noise = layout.round_noise(moves)
    subs = [INTRA_BE, INTRA_REL]
    bounds = {INTRA_BE: 0.01, INTRA_REL: 0.01}
    reasons = layout.more_rounds(16, 0.01, bounds, subs, noise)
    assert list(reasons) == [INTRA_REL] and "power at +5% in 16 rounds" in reasons[INTRA_REL]
    assert layout.planned_rounds(16, 0.01, bounds, subs, noise) == {INTRA_BE: 16, INTRA_REL: 24}
    # 2 of 18 rounds out of reach; at Holm's first step over 4 tests (0.005) 16 rounds need 14 above, 24 need 19
    assert [round_power.rejection_count(r, 0.02 / 4) for r in (16, 24)] == [14, 19]
    at = {r: round_power.hourly_power(noise[INTRA_REL], 0.01, r, 4) for r in (16, 24)}
    assert at[16] == pytest.approx(stats.binom.sf(13, 16, 16 / 18)) and at[24] == pytest.approx(
        stats.binom.sf(18, 24, 16 / 18))
    assert at[16] < 0.95 <= at[24]
    # without the file's rounds, or with a wide bound, the plan is the bounds' alone
    assert layout.planned_rounds(16, 0.01, bounds, subs) == {INTRA_BE: 16, INTRA_REL: 16}
    assert layout.more_rounds(16, 0.01, {INTRA_BE: 0.03}, subs, noise) == {
        INTRA_BE: "a bound of +3.0%", INTRA_REL: reasons[INTRA_REL]}


def write_noisy_layout(path, samples: list[int], moves: list[list[dict]]) -> str:
    """A layout file whose provenance keeps the rounds of one A/B per entry of `moves`, of `samples` each."""
    path.write_text(json.dumps({"platform": "test", "thresholds": {INTRA_BE: 0.01, INTRA_REL: 0.01},
                                "provenance": {"ab_directories": [{"ab_directory": f"ab{i}", "samples": n, "moves": m}
                                                                  for i, (n, m) in enumerate(zip(samples, moves))]}}))
    return str(path)


def test_the_layout_files_noise_is_used_for_ab_of_its_samples_only_and_bad_moves_are_an_error_naming_it(tmp_path):
    rng = np.random.default_rng(5)
    moves = [moves_of(INTRA_REL, heavy_tailed(rng, 18, 2)) + moves_of(INTRA_BE, heavy_tailed(rng, 18, 0))]
    read = layout_file.load(write_noisy_layout(tmp_path / "layout.json", [50], moves))
    assert read.noise_samples == 50 and sorted(read.noise) == sorted([INTRA_BE, INTRA_REL])
    assert read.noise_for(50) is read.noise and read.noise_for(1000) is None
    assert read.noise[INTRA_REL][0].shape == (18, 2)
    mixed = layout_file.load(write_noisy_layout(tmp_path / "mixed.json", [50, 1000], moves * 2))
    assert len(mixed.noise[INTRA_REL]) == 2 and mixed.noise_samples is None and mixed.noise_for(50) is None
    assert layout_file.load(write_noisy_layout(tmp_path / "none.json", [], [])).noise_for(50) is None
    bad = [moves[0][:-1] + [{layout.SUBEXPERIMENT: INTRA_BE, layout.STATISTIC: "90%", layout.D: [0.0, "x"]}]]
    given = write_noisy_layout(tmp_path / "bad.json", [50], bad)
    with pytest.raises(InputError, match="list of finite numbers") as raised:
        layout_file.load(given)
    assert given in str(raised.value)


def test_a_real_ab_plans_more_rounds_for_the_sub_experiment_whose_layout_rounds_have_heavy_tails(harness_paths,
                                                                                              tmp_path):
    rng = np.random.default_rng(7)
    moves = [moves_of(INTRA_REL, heavy_tailed(rng, 18, 2)) + moves_of(INTRA_BE, heavy_tailed(rng, 18, 0))]
    given = write_noisy_layout(tmp_path / "layout.json", [50], moves)
    out = tmp_path / "ab"
    done = conftest.perfgate_in_process("ab", "--output", str(out), "--baseline", "system", "--candidate", "system",
                                        "--rounds", "10", "--samples", "50", "--payloads", "16",
                                        "--subexperiments", f"{INTRA_BE},{INTRA_REL}", "--no-plots",
                                        "--layout-thresholds", given)
    assert done.returncode in (s.EXIT_OK, s.EXIT_REGRESSION), done.stderr
    assert f"15 rounds for {INTRA_REL}: " in done.stdout and f"rounds for {INTRA_BE}" not in done.stdout
    # what this machine can see, before measuring: each sub-experiment's smallest slow-down caught (issue 43)
    read = layout_file.load(given)
    caught = layout.smallest_caught({INTRA_BE: 10, INTRA_REL: 15}, 0.01, read.thresholds, read.noise_for(50), 0.02)
    assert f"{INTRA_BE} +{caught[INTRA_BE]:.1%} (10 rounds), {INTRA_REL} +{caught[INTRA_REL]:.1%} (15 rounds)" \
        in done.stdout
    record = json.loads((out / s.AB_CURTAILED_JSON).read_text())
    assert record["planned_rounds"] == {INTRA_BE: 10, INTRA_REL: 15}
    assert json.loads((out / s.VERDICT_JSON).read_text())["planned_rounds"] == {INTRA_BE: 10, INTRA_REL: 15}
    # the same file for an A/B of other samples per round: its rounds say nothing of theirs
    other = conftest.perfgate_in_process("ab", "--output", str(tmp_path / "other"), "--baseline", "system",
                                         "--candidate", "system", "--rounds", "10", "--samples", "40", "--payloads",
                                         "16", "--subexperiments", f"{INTRA_BE},{INTRA_REL}", "--no-plots",
                                         "--layout-thresholds", given)
    assert other.returncode in (s.EXIT_OK, s.EXIT_REGRESSION), other.stderr
    assert "planned by the bounds alone" in other.stdout
    assert "the smallest slow-down caught with 95% power is unknown: no layout file with rounds of 40 samples" \
        in other.stdout
    assert json.loads((tmp_path / "other" / s.AB_CURTAILED_JSON).read_text())["planned_rounds"] == 10


def test_the_derivation_prints_each_sub_experiments_power_at_the_rounds_a_full_ab_plans_for_it(tmp_path):
    intra, inter = ab_inputs.SUBS  # in each A/B, 2 of 18 rounds with a stalled baseline: the candidate 8 % faster
    abs_ = []
    for seed in (61, 62, 63):
        folder = ab_inputs.layout_ab(tmp_path / f"ab{seed}", {}, seed=seed, rounds=18)
        for round_name in ("01", "02"):
            path = folder / s.AB_ROUNDS_DIR / round_name / "candidate" / s.summary_csv_name(intra)
            table = pd.read_csv(path)
            for column in (s.MEDIAN, s.P90):
                table[column] *= 0.92
            table.to_csv(path, index=False)
        assert conftest.perfgate_in_process("verdict", "--ab-directory", str(folder), "--no-plots").returncode == 0
        abs_.append(folder)
    output = tmp_path / "layout.json"
    arguments = ["determine-layout-thresholds", "--platform", "test", "--output", str(output)]
    done = conftest.perfgate_in_process(*arguments, *[x for f in abs_ for x in ("--ab-directory", str(f))])
    assert done.returncode == s.EXIT_OK, done.stderr
    lines = {sub: next(line for line in done.stdout.splitlines() if f": {sub}: " in line) for sub in (intra, inter)}
    # 4 tests: Holm's first step at 0.005 needs 14 of 16 rounds (too few here: 74 %) or 19 of 24 rounds above
    caught = stats.binom.sf(18, 24, 16 / 18)
    assert f"+5% caught {caught:.0%} of the time in its 24 planned rounds at level 0.02" in lines[intra]
    assert "+5% caught 100% of the time in its 16 planned rounds at level 0.02" in lines[inter]
    read = layout_file.load(output)
    assert layout.planned_rounds(16, 0.01, read.thresholds, [intra, inter], read.noise_for(1000)) == {intra: 24,
                                                                                                     inter: 16}


def run_power_bench(*arguments):
    return subprocess.run([sys.executable, str(conftest.REPO_ROOT / "benchmarks" / "bench_round_power.py"), *arguments],
                          capture_output=True, text=True, timeout=120, cwd=conftest.REPO_ROOT)


def test_the_power_bench_prints_each_hours_power_at_the_planned_rounds_and_refuses_bad_files_in_one_line(tmp_path):
    rng = np.random.default_rng(9)
    moves = [moves_of(INTRA_REL, heavy_tailed(rng, 18, bad)) + moves_of(INTRA_BE, heavy_tailed(rng, 18, 0))
             for bad in (0, 2)]  # a calm hour and one with 2 of 18 rounds out of reach
    given = write_noisy_layout(tmp_path / "layout.json", [1000, 1000], moves)
    done = run_power_bench("--layout-thresholds", given, "--effects", "0.05", "--rounds", "16")
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith("intraprocess_")}
    # 4 tests at 0.02: 16 rounds need 14 above (power 74 % in the rough hour), so 24 are planned: 19 above
    rough = stats.binom.sf(18, 24, 16 / 18)
    assert f"{(1 + rough) / 2:6.1%} [{rough:.0%}, 100%]" in rows[INTRA_REL] and " 24 " in rows[INTRA_REL]
    assert "100.0% [100%, 100%]" in rows[INTRA_BE] and " 16 " in rows[INTRA_BE]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"thresholds": {INTRA_BE: 0.01}, "provenance": {"ab_directories": [{"moves": 3}]}}))
    refused = run_power_bench("--layout-thresholds", str(bad))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and str(bad) in refused.stderr


def test_the_smallest_slow_down_caught_is_where_the_power_first_reaches_95_percent():
    bound, tests, alpha = 0.01, 20, 0.01
    # no noise: every round is lifted above the bound by anything larger than it, nothing smaller
    assert round_power.smallest_caught([np.zeros((16, 2))], bound, 16, tests, alpha) == pytest.approx(0.011)
    rng = np.random.default_rng(3)
    noises = [rng.normal(0, 0.02, (16, 2)) for _ in range(6)]
    c = round_power.smallest_caught(noises, bound, 16, tests, alpha)
    assert round_power.hourly_power(noises, bound, 16, tests, alpha, effect=c) >= 0.95
    assert round_power.hourly_power(noises, bound, 16, tests, alpha, effect=c - 0.001) < 0.95
    # noisier hours, or fewer rounds, need a larger slow-down
    assert round_power.smallest_caught([2 * n for n in noises], bound, 16, tests, alpha) > c
    assert round_power.smallest_caught(noises, bound, 12, tests, alpha) > c
    # nothing known, or rounds that can never reject at Holm's first step: no figure
    assert round_power.smallest_caught([], bound, 16, tests, alpha) is None
    assert round_power.smallest_caught(noises, bound, 4, tests, alpha) is None
