"""ab.round_power: how likely a sub-experiment's planned rounds are to catch a regression, from the rounds of
the layout file's A/Bs. Pure.

A sub-experiment fails the verdict when one of its tests (one per tested statistic) has enough rounds whose
d lies above its bound. A layout A/B's rounds, each centred on its own A/B's median (the layout move taken
out), are what one hour's round-to-round noise did to d. A regression of size c adds log(1 + c) to every
round; a round then counts toward the test when its noise is above log(1 + bound) - log(1 + c). The
chance that R rounds drawn from one A/B's noise reach the rejection count, for at least one statistic,
is computed exactly (statistics of a round move together, so a round's outcomes are drawn jointly), and
averaged over the file's A/Bs, one hour each: a noisier hour costs more power than the pooled rounds would
say. The rejection count is that of Holm's first step (alpha over the number of tests), the level a
single regressed sub-experiment meets.

This plans rounds, before anything is measured: it changes no test's level, only how many rounds it gets
(docs/verdict.md, "Rounds planned from the rounds' own noise").
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from . import verdict as v

TARGET_EFFECT = 0.05  # issue 28: a +5 % slow-down of one sub-experiment is caught
TARGET_POWER = 0.95  # at least this often


def centred(per_statistic: Sequence[np.ndarray]) -> np.ndarray | None:
    """One A/B's rounds of one sub-experiment as deviations from their own median, a row per round and a
    column per tested statistic; None when the statistics' rounds differ in number (a round missing from
    one of them cannot be paired) or there are none."""
    arrays = [np.asarray(d, float) for d in per_statistic]
    if not arrays or len({len(d) for d in arrays}) != 1 or not len(arrays[0]):
        return None
    return np.column_stack([d - np.median(d) for d in arrays])


def rejection_count(rounds: int, level: float) -> int | None:
    """The fewest of `rounds` rounds above the bound with which the sign test rejects at `level`; None when
    even all of them do not."""
    for above in range(1, rounds + 1):
        if v.upper_tail(above, rounds) <= level:
            return above
    return None


def power(noise: np.ndarray, bound: float, effect: float, rounds: int, needed: int) -> float:
    """P(some statistic has at least `needed` of `rounds` rounds above `bound`) when each round's deviations
    (a row of `noise`) are drawn at random from one A/B's rounds, plus log(1 + effect)."""
    above = noise + math.log1p(effect) > math.log1p(bound)  # rows: rounds; columns: statistics
    patterns, counts = np.unique(above, axis=0, return_counts=True)
    # chance of each count per statistic so far, capped at `needed`: a capped test has rejected, whatever follows
    state = np.zeros((needed + 1,) * above.shape[1])
    state[(0,) * above.shape[1]] = 1.0
    for _ in range(rounds):
        following = np.zeros_like(state)
        for pattern, share in zip(patterns, counts / counts.sum()):
            moved = state
            for axis, is_above in enumerate(pattern):
                if is_above:  # one more above for this statistic: shift by one, the capped ones stay capped
                    moved = np.concatenate([np.zeros_like(moved.take([0], axis)), moved.take(range(needed - 1), axis),
                                            moved.take([needed - 1], axis) + moved.take([needed], axis)], axis)
            following += share * moved
        state = following
    return float(min(1.0, max(0.0, 1.0 - state[(slice(0, needed),) * above.shape[1]].sum())))  # rounding


def each_hour(noises: Sequence[np.ndarray], bound: float, rounds: int, tests: int, alpha: float = v.DEFAULT_ALPHA,
              effect: float = TARGET_EFFECT) -> list[float] | None:
    """The power at +`effect` of `rounds` rounds in each A/B's noise; None with no A/B, or when `rounds` can
    never reject at Holm's first step over `tests` tests."""
    needed = rejection_count(rounds, alpha / tests)
    if not noises or needed is None:
        return None
    return [power(noise, bound, effect, rounds, needed) for noise in noises]


def hourly_power(noises: Sequence[np.ndarray], bound: float, rounds: int, tests: int,
                 alpha: float = v.DEFAULT_ALPHA, effect: float = TARGET_EFFECT) -> float | None:
    """The mean of `each_hour`: the power of `rounds` rounds at an hour like the A/Bs' (None as there)."""
    each = each_hour(noises, bound, rounds, tests, alpha, effect)
    return float(np.mean(each)) if each is not None else None


def smallest_caught(noises: Sequence[np.ndarray], bound: float, rounds: int, tests: int,
                    alpha: float = v.DEFAULT_ALPHA, target: float = TARGET_POWER, step: float = 0.001,
                    largest: float = 1.0) -> float | None:
    """The smallest slow-down, on a grid of `step` up to `largest`, that `rounds` rounds catch with at least
    `target` power in an hour like the A/Bs' (hourly_power); None without A/Bs, when the rounds can never
    reject, or when not even `largest` is caught that often. The power grows with the slow-down, so the grid
    is bisected."""
    def caught(index: int) -> bool:
        chance = hourly_power(noises, bound, rounds, tests, alpha, effect=index * step)
        return chance is not None and chance >= target
    high = round(largest / step)
    if not noises or not caught(high):
        return None
    low = 0  # not caught at 0: an unchanged build fails at most at the test's level
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if caught(middle) else (middle, high)
    return high * step
