"""ab.resample: the spread of the rounds' d, and the verdict's power and false alarms on bootstrap sets
of stored rounds. Pure (frames in, values out).

A bootstrap set is R rounds drawn with replacement from the stored rounds; a round's d (ab.verdict:
the mean over payloads of log(candidate / baseline)) keeps its baseline and candidate together, and
one draw of rounds serves every sub-experiment present in all rounds, so the dependence between
sub-experiments measured in the same round stays. A sub-experiment missing from some rounds (a
curtailed A/B, a failed run) is drawn from the rounds that have it, separately.

A regression of the candidate by a factor (1 + e) on one sub-experiment multiplies every candidate
sample, hence its Median and 90 % (percentiles scale with the samples), hence adds log(1 + e) to
that sub-experiment's d in every round: the set's d are shifted so, and the project's decision
(verdict.decide_tests: the sign tests and Holm, as `perfgate verdict` decides) is run on the set.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from .. import schema as s
from . import verdict as v

D = "d"  # usable_round_means' column


def round_means(table: pd.DataFrame) -> pd.DataFrame:
    """Per round, sub-experiment and statistic, the verdict's d (usable rounds only)."""
    return v.usable_round_means(v.log_ratios(table))[0]


def spread(means: pd.DataFrame, subs: list[str], statistics: tuple[str, ...] = v.TESTED_STATISTICS) -> pd.DataFrame:
    """Per sub-experiment and statistic: the rounds, the standard deviation of d between rounds and a
    robust one (MAD x 1.4826, which equals the sd for normal data)."""
    rows = []
    for sub in subs:
        for statistic in statistics:
            d = means.loc[(means[s.EXPERIMENT_TYPE] == sub) & (means[v.STATISTIC] == statistic), D].to_numpy(float)
            d = d[np.isfinite(d)]
            rows.append({s.EXPERIMENT_TYPE: sub, v.STATISTIC: statistic, v.ROUNDS: len(d),
                         "sd": float(np.std(d, ddof=1)) if len(d) > 1 else math.nan,
                         "robust sd": float(stats.median_abs_deviation(d, scale="normal")) if len(d) else math.nan})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Resampled:
    sets: int
    rounds: int  # R, the rounds of every set
    false_alarms: int  # unmodified sets with any test failed
    unchanged: dict[str, int]  # sub-experiment -> unmodified sets in which it failed
    caught: dict[tuple[str, float], int]  # (sub-experiment, effect) -> sets in which it failed
    drawn_apart: dict[str, int]  # sub-experiment missing from some rounds -> the rounds it was drawn from


def _wide(means: pd.DataFrame, sub: str, statistics: tuple[str, ...]) -> pd.DataFrame:
    """One row per round that has every statistic's d of `sub`, one column per statistic."""
    rows = means[means[s.EXPERIMENT_TYPE] == sub]
    return rows.pivot(index=v.ROUND, columns=v.STATISTIC, values=D).reindex(columns=list(statistics)).dropna()


def draw_set(per_sub: dict[str, pd.DataFrame], all_rounds: list[str], rounds: int, rng: np.random.Generator,
             statistics: tuple[str, ...]) -> pd.DataFrame:
    """One bootstrap set as usable_round_means' table: rounds named 1..R, the drawn rounds' d."""
    common = rng.integers(0, len(all_rounds), rounds)
    names = np.array([f"{k + 1:04d}" for k in range(rounds)])
    frames = []
    for sub, wide in per_sub.items():
        if not len(wide):
            continue
        if len(wide) == len(all_rounds):
            picked = wide.reindex(np.asarray(all_rounds)[common]).to_numpy(float)
        else:
            picked = wide.to_numpy(float)[rng.integers(0, len(wide), rounds)]
        for j, statistic in enumerate(statistics):
            frames.append(pd.DataFrame({s.EXPERIMENT_TYPE: sub, v.ROUND: names, v.STATISTIC: statistic,
                                        D: picked[:, j]}))
    return pd.concat(frames, ignore_index=True)


def resampled_failures(means: pd.DataFrame, subs: list[str], *, rounds: int, sets: int, effects: list[float],
                       seed: int, threshold: float = v.DEFAULT_THRESHOLD, alpha: float = v.DEFAULT_ALPHA,
                       layout: dict[str, float] | None = None, regressed: list[str] | None = None,
                       statistics: tuple[str, ...] = v.TESTED_STATISTICS) -> Resampled:
    """`sets` bootstrap sets of `rounds` rounds: in each, the verdict on the set as drawn (a false alarm
    when any test fails: these are unchanged builds) and, per sub-experiment of `regressed` (default:
    all) and effect, on the set with that sub-experiment's candidate slower by the effect (caught when
    either of its tests fails). Every decision is Holm over all tests of `subs`, as the A/B's verdict."""
    regressed = list(subs) if regressed is None else list(regressed)
    rng = np.random.default_rng(seed)
    per_sub = {sub: _wide(means, sub, statistics) for sub in subs}
    all_rounds = sorted(set(means[v.ROUND]))
    false_alarms, unchanged = 0, {sub: 0 for sub in subs}
    caught = {(sub, effect): 0 for sub in regressed for effect in effects}

    def failed_subs(set_means: pd.DataFrame) -> set[str]:
        table = v.decide_tests(set_means, subs, threshold=threshold, alpha=alpha, statistics=statistics,
                               layout=layout)
        return set(table.loc[table[s.STATUS] == s.FAILED, s.EXPERIMENT_TYPE])

    for _ in range(sets):
        drawn = draw_set(per_sub, all_rounds, rounds, rng, statistics)
        failed = failed_subs(drawn)
        false_alarms += bool(failed)
        for sub in failed:
            unchanged[sub] += 1
        is_sub = {sub: (drawn[s.EXPERIMENT_TYPE] == sub).to_numpy() for sub in regressed}
        for effect in effects:
            for sub in regressed:
                shifted = drawn.copy()
                shifted.loc[is_sub[sub], D] += math.log1p(effect)
                caught[(sub, effect)] += sub in failed_subs(shifted)
    return Resampled(sets, rounds, false_alarms, unchanged, caught,
                     {sub: len(w) for sub, w in per_sub.items() if len(w) != len(all_rounds)})


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a fraction k of n."""
    interval = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    return float(interval.low), float(interval.high)
