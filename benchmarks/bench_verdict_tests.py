"""Which exact test should the A/B verdict use? The sign test beside two robust alternatives (issue 28 item 4).

    .venv/bin/python benchmarks/bench_verdict_tests.py                  # synthetic, stored real rounds, worst cases
    .venv/bin/python benchmarks/bench_verdict_tests.py --sets 100       # smaller CPU budget

Three one-sided tests of H0: median(d) <= log(1 + T) on a test's per-round d (ab.verdict), Holm over
all 20 tests (10 sub-experiments x Median and 90 %) at the verdict's family-wise level:
- sign:      the verdict's exact sign test (binomial), no assumption on the shape of d;
- wilcoxon:  scipy.stats.wilcoxon (exact) on d winsorised at median(d) +- 3 MADn(d) (MADn = 1.4826 MAD);
             the winsorisation is fitted to the data, so its level is not exact: measured here;
- signflip:  a sign-flip (randomisation) test of the sum of d - shift winsorised the same way,
             re-winsorised inside every flip, so it is exact whenever d is symmetric about the shift
             (the arms exchangeable); all 2^n flips for n <= 12, else 4095 fixed random flips plus the
             identity (p = (1 + #{T_flip >= T}) / 4096: still a valid p-value, never below 1/4096).
Prints, side by side: family-wise false alarms (A/A, any of the 20 tests) and power (the regressed
sub-experiment's Median or 90 % failed) on synthetic rounds (the hidden-state model of
bench_gate_quality.synthetic_values: per-run state sd 2.5 %, 4 % of runs in a bad state x1.3-1.8),
10 and 16 rounds, +0 / +3 / +5 / +10 % on one sub-experiment; the same on the stored real rounds
(analysis/tests/data/ab-rounds); and the worst cases of the guarantee: one round in an extreme state
against 15 regressed (does it hide the regression?) or 15 unchanged ones (does it fake one?).
Pure computation: no Fast DDS, one process. About 2.5 CPU minutes at the default --sets 200.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gate_quality import stored_values, synthetic_values  # noqa: E402

from perfgate import schema as s  # noqa: E402
from perfgate.ab import verdict as v  # noqa: E402

WINSOR_MADS = 3.0  # a round further than 3 robust sds from the others' median is clamped there
MADN = 1.4826  # MAD -> sd for normal data
RANDOM_FLIPS = 4095
STORED = Path(__file__).resolve().parent.parent / "analysis" / "tests" / "data" / "ab-rounds"


def winsorised(x: np.ndarray) -> np.ndarray:
    """x clamped to median +- WINSOR_MADS robust sds, row by row (x: one row per sign vector)."""
    centre = np.median(x, axis=-1, keepdims=True)
    scale = MADN * np.median(np.abs(x - centre), axis=-1, keepdims=True)
    return np.clip(x, centre - WINSOR_MADS * scale, centre + WINSOR_MADS * scale)


def sign_p(d: np.ndarray, shift: float) -> float:
    return v.sign_test_p(d, shift)


def wilcoxon_p(d: np.ndarray, shift: float) -> float:
    x = winsorised(d - shift)
    if not np.any(x != 0):
        return 1.0
    return float(stats.wilcoxon(x, alternative="greater", method="exact").pvalue)


_FLIPS: dict[int, np.ndarray] = {}


def flips(n: int) -> np.ndarray:
    """The sign vectors the randomisation test uses; row 0 is the identity."""
    if n not in _FLIPS:
        if n <= 12:
            grid = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1).astype(float)
        else:
            grid = np.random.default_rng(n).integers(0, 2, size=(RANDOM_FLIPS + 1, n)).astype(float)
            grid[0] = 0
        _FLIPS[n] = 1.0 - 2.0 * grid
    return _FLIPS[n]


def signflip_p(d: np.ndarray, shift: float) -> float:
    x = d - shift
    if len(x) == 0:
        return 1.0
    totals = winsorised(flips(len(x)) * x).sum(axis=1)
    return float(np.mean(totals >= totals[0] - 1e-12))


TESTS = {"sign": sign_p, "wilcoxon": wilcoxon_p, "signflip": signflip_p}


def failed_tests(values: dict, test, alpha: float, shift: float) -> set:
    keys = list(values)
    adjusted = v.holm([test(values[key][1], shift) for key in keys])
    return {key for key, p in zip(keys, adjusted) if p <= alpha}


def synthetic_rows(subs: list[str], rounds: int, sets: int, seed: int, alpha: float, shift: float) -> list[str]:
    rows = []
    for level in (0.0, 0.03, 0.05, 0.10):
        rng = np.random.default_rng(seed + int(level * 1000) + rounds)
        target = subs[0]
        hits = {name: 0 for name in TESTS}
        for _ in range(sets):
            values = synthetic_values(rng, subs, rounds, {target: level} if level else {})
            for name, test in TESTS.items():
                failed = failed_tests(values, test, alpha, shift)
                hits[name] += bool(failed) if not level else any(key[0] == target for key in failed)
        what = "false alarms (any of 20)" if not level else f"power, +{level:.0%} on one"
        rows.append(f"{rounds:>6} {what:<26} " + " ".join(f"{hits[n] / sets:>9.1%}" for n in TESTS)
                    + f"   ({sets} sets)")
    return rows


def stored_rows(alpha: float, shift: float) -> list[str]:
    """The stored real quick A/B rounds: their own verdicts, and the A/A rounds with one sub-experiment
    shifted by a known ratio (the other one unchanged: a Holm family of 4 tests)."""
    aa, injected = stored_values(STORED / "aa"), stored_values(STORED / "injected")
    rows = []

    def row(name: str, values: dict, target: str | None) -> str:
        cells = []
        for test in TESTS.values():
            failed = failed_tests(values, test, alpha, shift)
            hit = bool(failed) if target is None else any(key[0] == target for key in failed)
            extra = sorted({key[0] for key in failed if key[0] != target}) if target else []
            cells.append(f"{'FAIL' if hit else 'pass'}{'+' + ','.join(extra) if extra else ''}")
        return f"{name:<40} " + " ".join(f"{c:>9}" for c in cells)

    rows.append(row("aa/ (A/A, 10 rounds)", aa, None))
    rows.append(row("injected/ (2000 ns in intraprocess_b_e)", injected, "intraprocess_best_effort"))
    for target in sorted({key[0] for key in aa}):
        for level in (0.03, 0.05, 0.10):
            shifted = {key: (places, d + (math.log1p(level) if key[0] == target else 0.0))
                       for key, (places, d) in aa.items()}
            rows.append(row(f"aa/ + {level:.0%} on {target}", shifted, target))
    return rows


def worst_case_rows(alpha: float, shift: float, tests_in_family: int = 20) -> list[str]:
    """The guarantee, at Holm's first step (alpha / 20): 15 rounds of one behaviour, one extreme round.

    hide: 15 rounds regressed, every one above the threshold (by +10 % with spread sd 0.003 or 0.02;
    or two-state: 7 at +1.5 % and 8 at +10 %, as a code path that takes one of two states per run
    gives), and one round where the candidate looked x1.3, x1.8 or x10 faster: does the test still
    reject (the sign test does: 15 of 16, p = 0.00026)? fake: 15 unchanged rounds (sd 0.003 or 0.02
    around 0), one round x1.3, x1.8 or x10 slower: does it reject?"""
    level = alpha / tests_in_family
    spread = stats.norm.ppf((np.arange(15) + 0.5) / 15)
    regressed = {"sd 0.003": math.log(1.10) + 0.003 * spread, "sd 0.02": math.log(1.10) + 0.02 * spread,
                 "two-state": np.log(np.r_[np.full(7, 1.015), np.full(8, 1.10)]) + 0.0005 * spread}
    unchanged = {"sd 0.003": 0.003 * spread, "sd 0.02": 0.02 * spread}
    rows = []
    for what, rounds, sign in (("hide", regressed, -1.0), ("fake", unchanged, 1.0)):
        for name, others in rounds.items():
            for extreme in (1.3, 1.8, 10.0):
                d = np.append(others, sign * math.log(extreme))
                ps = [test(d, shift) for test in TESTS.values()]
                rows.append(f"{what:<5} {name:<10} extreme x{extreme:<5} "
                            + " ".join(f"{'rejects' if p <= level else 'no':>8} p={p:<8.2g}" for p in ps))
    return rows


def boundary_rows(rounds: int, tests: int, seed: int, shift: float) -> list[str]:
    """Each test's own level at the boundary of H0 (median(d) = the threshold, the hidden-state noise):
    the share of single tests with p <= 0.05 and <= 0.01. An exact test stays at or below them."""
    rng = np.random.default_rng(seed + rounds)
    ds = [values[1] + shift
          for values in (synthetic_values(rng, ["x"], rounds, {})[("x", s.MEDIAN)] for _ in range(tests))]
    rows = []
    for nominal in (0.05, 0.01):
        shares = [np.mean([test(d, shift) <= nominal for d in ds]) for test in TESTS.values()]
        rows.append(f"{rounds:>6} {f'level at the H0 boundary, {nominal}':<26} "
                    + " ".join(f"{x:>9.2%}" for x in shares) + f"   ({tests} tests)")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=200, help="synthetic sets per setting")
    parser.add_argument("--boundary-tests", type=int, default=2000, help="single tests at the H0 boundary")
    parser.add_argument("--seed", type=int, default=28)
    options = parser.parse_args()
    alpha, shift = v.DEFAULT_ALPHA, math.log1p(v.DEFAULT_THRESHOLD)
    subs = list(s.DEFAULT_SUBEXPERIMENT_NAMES)
    started = time.process_time()
    header = " ".join(f"{name:>9}" for name in TESTS)
    print(f"== worst cases of the guarantee: 16 rounds, level {alpha}/20 (Holm's first step) ==")
    print(f"{'':<37} " + " ".join(f"{name:>19}" for name in TESTS))
    print("\n".join(worst_case_rows(alpha, shift)))
    print(f"\n== stored real rounds ({STORED.name}/: quick A/B, 2 sub-experiments, Holm over 4 tests) ==")
    print(f"{'':<40} {header}")
    print("\n".join(stored_rows(alpha, shift)))
    print(f"\n== synthetic rounds: {len(subs)} sub-experiments x Median and 90 %, Holm over {2 * len(subs)} at "
          f"{alpha}, threshold +{v.DEFAULT_THRESHOLD:.0%} ==")
    print(f"{'rounds':>6} {'':<26} {header}")
    for rounds in (10, 16):
        print("\n".join(boundary_rows(rounds, options.boundary_tests, options.seed, shift)), flush=True)
        print("\n".join(synthetic_rows(subs, rounds, options.sets, options.seed, alpha, shift)), flush=True)
    print(f"\n(CPU {time.process_time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
