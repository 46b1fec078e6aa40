"""ab.layout: layout-aware thresholds, derived from A/Bs of builds that differ only in code layout. Pure.

A no-op commit that shifts lines, another link order or another function alignment moves where code
lands in memory, and with it the caches and branch predictors: the binary is faster or slower
although no code changed (issue 28: a comment-only commit made intraprocess_reliable 2.9 % faster in
all 16 rounds). The verdict's global threshold (1 %) cannot tell such a move from a regression. So
each sub-experiment gets its own bound, above what layout alone moved it on this platform, and is
tested against max(--threshold, that bound) (ab.verdict.decide; docs/verdict.md "Layout-aware
thresholds").

What a layout A/B says about a sub-experiment: d, the round's mean over payloads of
log(candidate / baseline) for each tested statistic (Median, 90 %), the very quantity the verdict tests.
A pair's move is median(d) over its rounds; a layout move can go either way (the other layout is the
slower one by as much), so its size is |median d|. The rounds of every A/B of the same two builds are
pooled: measuring a pair again narrows what is known of its move.

The threshold is not the estimated move but an upper confidence bound of its size: the distribution-free
(sign test) bounds of median(d) at one-sided level BOUND_LEVEL each way, the size exp(max(upper, -lower))
- 1, so that the true move lies below it with confidence 1 - 2 BOUND_LEVEL (96 %). A threshold at the
point estimate sat inside the move's own uncertainty: measured again, a pair of the file failed the
gate (docs/verdict.md, "Wall times at the four-pair file, and a layout-only A/B that failed"). The
bound narrows toward the move as rounds are added (on average 0.8 sd of d above it at 12 rounds, 0.6 at
24, 0.4 at 48), which is what gives power back.

A pair's move is not one fixed size: measured hours apart, the same two builds moved TCP best effort by
1.7 % and by 6.5 % (docs/verdict.md, "Layout moves across an afternoon"). Pooling rounds bounds the mean move,
not what one A/B draws. So each layout A/B is also taken on its own: the move it shows, the size that
its rounds' sign test establishes at BOUND_LEVEL (the lower bound of |median d| in its own direction,
0 when the interval holds 0). A threshold at or above that size is one at which that A/B, in either
direction, passes the verdict even at the most lenient level Holm can give a test (the whole alpha).
The sub-experiment's threshold is the larger of the two, the largest pooled size and the largest shown
move over every pair, A/B and both statistics, raised to the next multiple of STEP strictly above it.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import schema as s
from . import round_power, verdict as v

STEP = 0.005  # thresholds are multiples of 0.5 %: a bound above the measured move, not a copy of it
# A wide bound leaves less room between itself and a regression the gate must catch (+5 %): with the
# planned rounds alone, the sub-experiments layout moves most lost power (docs/verdict.md, "More rounds for
# wide bounds"). Those get WIDE_BOUND_ROUNDS times the rounds, fixed before anything is measured; so do
# those whose rounds in the layout file's A/Bs are too noisy for the planned rounds (ab.round_power).
WIDE_BOUND = 0.02
WIDE_BOUND_ROUNDS = 1.5

SUBEXPERIMENT = "subexperiment"
STATISTIC = "statistic"
ROUNDS = "rounds"
CHANGE = "change"  # exp(median d) - 1: the verdict's estimate of the shift
LOWER = "lower"  # exp of the sign test's one-sided bounds of median d at BOUND_LEVEL, minus 1
UPPER = "upper"
SIZE = "size"  # exp(max(upper, -lower)) - 1 of d: how much slower one layout may be than the other
SHOWN = "shown"  # exp(max(lower, -upper, 0)) - 1 of d: the move these rounds establish, in their direction
SHIFT_COLUMNS = (SUBEXPERIMENT, STATISTIC, ROUNDS, CHANGE, LOWER, UPPER, SIZE, SHOWN)
BOUND_LEVEL = v.DEFAULT_ALPHA  # each side: the move is below its size with confidence 1 - 2 x 0.02
D = "d"  # a layout A/B's rounds' d, kept in the file's provenance so that a later derivation pools them

Moves = dict[tuple[str, str], np.ndarray]  # (sub-experiment, statistic) -> the rounds' d


def round_moves(ratios: pd.DataFrame, subs: list[str],
                statistics: tuple[str, ...] = v.TESTED_STATISTICS) -> Moves:
    """One layout A/B's d per round, for every sub-experiment and statistic, from its log ratios
    (ab.verdict.log_ratios); rounds where an arm measured nothing are left out, as the verdict does."""
    means, _ = v.usable_round_means(ratios)
    return {(sub, statistic): means.loc[(means[s.EXPERIMENT_TYPE] == sub) & (means[v.STATISTIC] == statistic),
                                        "d"].to_numpy(float)
            for sub in subs for statistic in statistics}


def pooled(moves: list[Moves]) -> Moves:
    """The rounds of several A/Bs of the same pair of builds, together, per sub-experiment and statistic."""
    keys = list(dict.fromkeys(key for m in moves for key in m))
    return {key: np.concatenate([m[key] for m in moves if key in m]) for key in keys}


def shifts(moves: Moves, level: float = BOUND_LEVEL) -> pd.DataFrame:
    """A pair's shift per sub-experiment and statistic (SHIFT_COLUMNS): the estimate, its one-sided bounds
    at `level` each way and the size they bound. Too few rounds for a bound give an infinite size."""
    rows = []
    for (sub, statistic), d in moves.items():
        d = np.asarray(d, float)
        if not len(d):
            rows.append({SUBEXPERIMENT: sub, STATISTIC: statistic, ROUNDS: 0, CHANGE: math.nan, LOWER: math.nan,
                         UPPER: math.nan, SIZE: math.nan, SHOWN: math.nan})
            continue
        lower, upper = v.median_lower_bound(d, level), -v.median_lower_bound(-d, level)
        rows.append({SUBEXPERIMENT: sub, STATISTIC: statistic, ROUNDS: len(d), CHANGE: math.expm1(float(np.median(d))),
                     LOWER: math.expm1(lower), UPPER: math.expm1(upper), SIZE: math.expm1(max(upper, -lower)),
                     SHOWN: math.expm1(max(lower, -upper, 0.0))})
    return pd.DataFrame(rows, columns=list(SHIFT_COLUMNS))


def step_above(size: float, step: float = STEP) -> float:
    """The next multiple of `step` strictly above `size` (2.9 % -> 3.0 %, 3.0 % -> 3.5 %)."""
    steps = math.floor(round(size / step, 9)) + 1  # round: 0.03 / 0.005 is 5.999999... in binary
    return round(steps * step, 6)


def thresholds(pairs: list[pd.DataFrame], single_abs: list[pd.DataFrame] | None = None,
               step: float = STEP) -> dict[str, float]:
    """Per sub-experiment, the layout threshold: the next step above the largest size over every pair
    (shifts of the pooled rounds) and statistic, or above the largest move one A/B alone shows
    (`single_abs`: shifts of each A/B's own rounds), whichever is larger. A sub-experiment with a
    non-finite size (no rounds, or too few for a bound) has no threshold: its layout move is unknown,
    never taken as zero or as unbounded."""
    table = pd.concat(pairs, ignore_index=True)
    shown = largest(single_abs, SHOWN) if single_abs else {}
    result = {}
    for sub, rows in table.groupby(SUBEXPERIMENT, sort=False):
        sizes = rows[SIZE].to_numpy(float)
        if len(sizes) and np.isfinite(sizes).all():
            result[str(sub)] = step_above(max(float(sizes.max()), shown.get(str(sub), 0.0)), step)
    return result


def largest(pairs: list[pd.DataFrame], column: str = SIZE) -> dict[str, float]:
    """Per sub-experiment, the largest size (or, column=CHANGE, the largest estimated move |change|;
    column=SHOWN, the largest move shown)."""
    table = pd.concat(pairs, ignore_index=True)
    if column == CHANGE:
        table = table.assign(**{CHANGE: np.expm1(np.abs(np.log1p(table[CHANGE].to_numpy(float))))})
    return {str(sub): float(rows[column].max()) for sub, rows in table.groupby(SUBEXPERIMENT, sort=False)}


def more_rounds(rounds: int, threshold: float, layout: dict[str, float] | None, subs,
                noise: dict[str, list[np.ndarray]] | None = None, alpha: float = v.DEFAULT_ALPHA) -> dict[str, str]:
    """The sub-experiments an A/B plans WIDE_BOUND_ROUNDS times `rounds` for, each with why: one tested
    against a bound above WIDE_BOUND, or one whose rounds in the layout file's A/Bs (`noise`: per
    sub-experiment, each A/B's rounds centred, ab.round_power.centred) give it less than TARGET_POWER power
    at +TARGET_EFFECT in `rounds` (its rounds have heavy tails: a round or two that a regression does not
    lift above the bound)."""
    subs = list(subs)
    tests = len(subs) * len(v.TESTED_STATISTICS)
    reasons = {}
    for sub in subs:
        bound = v.bound_of(threshold, layout, sub)
        if bound > WIDE_BOUND + 1e-12:
            reasons[sub] = f"a bound of +{bound:.1%}"
            continue
        chance = round_power.hourly_power((noise or {}).get(sub, []), bound, rounds, tests, alpha)
        if chance is not None and chance < round_power.TARGET_POWER:
            reasons[sub] = (f"{chance:.0%} power at +{round_power.TARGET_EFFECT:.0%} in {rounds} rounds of the layout "
                            "A/Bs' noise")
    return reasons


def planned_rounds(rounds: int, threshold: float, layout: dict[str, float] | None, subs,
                   noise: dict[str, list[np.ndarray]] | None = None, alpha: float = v.DEFAULT_ALPHA) -> dict[str, int]:
    """Per sub-experiment, the rounds an A/B plans: `rounds`, or WIDE_BOUND_ROUNDS times as many (rounded
    up) for those of `more_rounds`. The plan is fixed before anything is measured, from the layout file
    alone, so each test stays an exact sign test at its own planned rounds and Holm's family-wise level
    holds as before."""
    subs = list(subs)
    return rounds_with_more(rounds, more_rounds(rounds, threshold, layout, subs, noise, alpha), subs)


def smallest_caught(planned: dict[str, int], threshold: float, layout: dict[str, float] | None,
                    noise: dict[str, list[np.ndarray]] | None, alpha: float = v.DEFAULT_ALPHA) -> dict[str, float | None]:
    """Per sub-experiment, the smallest slow-down its `planned` rounds catch with TARGET_POWER power at its
    bound, in an hour like the layout file's A/Bs (`noise`, as for more_rounds); None where the file has no
    rounds of it (or none at this A/B's samples) or no slow-down up to +100 % is caught that often. Said
    before measuring, so a maintainer knows what this machine can see (issue 43)."""
    tests = len(planned) * len(v.TESTED_STATISTICS)
    return {sub: round_power.smallest_caught((noise or {}).get(sub, []), v.bound_of(threshold, layout, sub), rounds,
                                             tests, alpha)
            for sub, rounds in planned.items()}


def smallest_caught_text(caught: dict[str, float | None], planned: dict[str, int]) -> str:
    """One line: each sub-experiment's smallest slow-down caught with TARGET_POWER power in its planned rounds."""
    said = [f"{sub} +{c:.1%} ({planned[sub]} rounds)" if c is not None else f"{sub} unknown"
            for sub, c in caught.items()]
    return (f"the smallest slow-down caught with {round_power.TARGET_POWER:.0%} power in the planned rounds, in an hour "
            "like the layout file's A/Bs: " + ", ".join(said))


def rounds_with_more(rounds: int, more, subs) -> dict[str, int]:
    """`rounds` per sub-experiment, WIDE_BOUND_ROUNDS times as many (rounded up) for those in `more`."""
    return {sub: math.ceil(rounds * WIDE_BOUND_ROUNDS) if sub in more else rounds for sub in subs}


def parse_moves(value, where: str) -> Moves:
    """The `moves` of one A/B in a layout file's provenance, checked: each a known sub-experiment, a tested
    statistic and a list of finite numbers, once each. ValueError (one sentence naming `where`)."""
    if not isinstance(value, list):
        raise ValueError(f"{where} has no list of moves")
    moves: Moves = {}
    for move in value:
        sub, statistic, d = (move.get(k) for k in (SUBEXPERIMENT, STATISTIC, D)) if isinstance(move, dict) \
            else (None, None, None)
        if sub not in s.KNOWN_SUBEXPERIMENTS or statistic not in v.TESTED_STATISTICS or not isinstance(d, list) or \
                (sub, statistic) in moves or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                    and math.isfinite(x) for x in d):
            raise ValueError(f"{where} has a move that is not a known sub-experiment, a tested statistic and a list "
                             f"of finite numbers, once each")
        moves[(sub, statistic)] = np.asarray(d, float)
    return moves


def round_noise(moves: list[Moves]) -> dict[str, list[np.ndarray]]:
    """Per sub-experiment, each A/B's rounds centred on their own median (ab.round_power.centred), for the
    A/Bs that have all tested statistics of it with their rounds paired."""
    noise: dict[str, list[np.ndarray]] = {}
    for ab in moves:
        for sub in dict.fromkeys(sub for sub, _ in ab):
            rounds = [ab.get((sub, statistic)) for statistic in v.TESTED_STATISTICS]
            centred = round_power.centred(rounds) if all(d is not None for d in rounds) else None
            if centred is not None:
                noise.setdefault(sub, []).append(centred)
    return noise


def parse_thresholds(data: dict) -> dict[str, float]:
    """The `thresholds` of a layout file's object, checked: sub-experiment names of the contract mapped to
    fractions from 0 to below 1. ValueError (one sentence) for anything else; the caller names the file."""
    table = data.get("thresholds")
    if not isinstance(table, dict):
        raise ValueError("'thresholds' is not an object of sub-experiment: fraction")
    result = {}
    for sub, value in table.items():
        if sub not in s.KNOWN_SUBEXPERIMENTS or s.KNOWN_SUBEXPERIMENTS[sub].is_floor:
            raise ValueError("'thresholds' names something that is not a sub-experiment of the contract")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value)
                                                                                 and 0 <= value < 1):
            raise ValueError(f"the threshold of {sub} is not a fraction from 0 to below 1 (0.03 = 3 %)")
        result[sub] = float(value)
    return result
