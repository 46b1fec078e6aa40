"""ab.verdict: did the candidate get slower than the baseline? A paired, exact decision over A/B rounds.

Input: per round, per arm (baseline, candidate), per sub-experiment and payload, the tested
statistics (Median and 90 %) of that arm's run. Both arms ran in the same round on the same
machine, one right after the other, so whatever state the machine was in hits both: the unit of
evidence is the round.

Per sub-experiment and statistic:
  d_r = mean over payloads of log(candidate / baseline) in round r
  H0: median(d) <= log(1 + T)    H1: median(d) > log(1 + T)      (one-sided)
decided by the exact sign test (binomial, p = P(Bin(n, 1/2) >= #{d_r > log(1 + T)})), with Holm's
step-down correction over every test at family-wise level A.

Why the sign test and not Wilcoxon's signed-rank test: a round where one arm hit a bad machine
state gives one extreme d. Under the sign test that round moves the count by exactly one, in either
direction; under Wilcoxon it takes the largest rank. With 16 rounds and 20 tests at A = 0.02 (the
smallest Holm level is 0.001), 15 regressed rounds and one extreme opposite round give p = 0.00026
with the sign test (caught) and p = 0.0026 with Wilcoxon (hidden). The sign test also needs no
symmetry of d, which a machine with occasional slow states does not give. docs/verdict.md has the
figures measured on the reference VM.
Winsorising the rounds by a robust scale (MAD) before Wilcoxon or a sign-flip test does not restore
the guarantee: a regression whose rounds take two states widens the MAD so far that one extreme
opposite round still hides it (docs/verdict.md "Robust alternatives, compared";
benchmarks/bench_verdict_tests.py).

Ratio is exp(median d), the estimate that goes with the sign test; Lower bound is exp of the
order statistic that is the sign test's one-sided lower confidence bound for the median at
confidence 1 - A/m (simultaneous for the m tests, Bonferroni): a failed test at the first Holm step
has its lower bound above 1 + T.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from .. import schema as s
from ..errors import InputError

TESTED_STATISTICS = (s.MEDIAN, s.P90)
DEFAULT_THRESHOLD = 0.01  # a change of up to 1 % is not a regression (measured order effects stay below it)
DEFAULT_ALPHA = 0.02  # family-wise false-alarm level of a whole verdict

# columns of the tables this module builds (verdict.csv and verdict_payloads.csv)
ROUND = "Round"
ARM = "Arm"
STATISTIC = "Statistic"
ROUNDS = "Rounds"
RATIO = "Ratio"
LOWER_BOUND = "Lower bound"
P_VALUE = "p-value"
ADJUSTED_P = "Adjusted p-value"
VERDICT_COLUMNS = (s.EXPERIMENT_TYPE, STATISTIC, ROUNDS, RATIO, LOWER_BOUND, P_VALUE, ADJUSTED_P, s.STATUS)
# what a reader needs beside each test (issue 45), written after VERDICT_COLUMNS: a stored verdict.csv
# from before them lacks them, and its readers require VERDICT_COLUMNS only
THRESHOLD = "Threshold"  # the bound a test was decided at: max(--threshold, its layout threshold)
ABOVE = "Rounds above threshold"  # what the sign test counts: rounds whose d exceeds log(1 + Threshold)
# the arms' own values: per round the geometric mean over the payloads of the statistic (as d averages
# their log ratios), then the median over the test's rounds (us for a latency)
BASELINE_MEDIAN = "Baseline median"
CANDIDATE_MEDIAN = "Candidate median"
REASON = "Reason"  # why the test failed or passed, in words (explain)
EXPLAINED_COLUMNS = (THRESHOLD, ABOVE, BASELINE_MEDIAN, CANDIDATE_MEDIAN, REASON)
PAYLOAD_COLUMNS = (s.EXPERIMENT_TYPE, STATISTIC, s.BYTES, ROUNDS, RATIO, LOWER_BOUND, P_VALUE)
BASELINE_ARM = "baseline"
CANDIDATE_ARM = "candidate"
ARMS = (BASELINE_ARM, CANDIDATE_ARM)
IMPROVED = "improved"  # reported beside Status, never a failure
# passed at the sub-experiment's layout threshold, but the global threshold alone would have failed it
# (ab.layout): reported beside Status, never a failure
LAYOUT_SIZED = "layout-sized"
# usable_round_means' columns: d, and each arm's mean log value over the payloads (its geometric mean's log)
LOG_VALUE = {BASELINE_ARM: "log_baseline", CANDIDATE_ARM: "log_candidate"}


def csv_cells(table: pd.DataFrame, columns, bounds: tuple[str, ...] = (RATIO, LOWER_BOUND)) -> pd.DataFrame:
    """`columns` of a verdict table as verdict.csv writes them (docs/formats.md): the ratio and `bounds` with 3
    decimals (empty when infinite), p-values with 6 significant digits, Threshold with 4 decimals, the arms'
    medians with 6 significant digits (empty without rounds). The latency's and the throughput's alike."""
    out = table.loc[:, list(columns)].copy()
    for column in bounds:
        out[column] = out[column].map(lambda x: f"{x:.3f}" if math.isfinite(x) else "")
    for column in (P_VALUE, ADJUSTED_P):
        if column in out:
            out[column] = out[column].map(lambda x: f"{x:.6g}")
    if THRESHOLD in out:
        out[THRESHOLD] = out[THRESHOLD].map(lambda x: f"{x:.4f}")
    for column in (BASELINE_MEDIAN, CANDIDATE_MEDIAN):
        if column in out:
            out[column] = out[column].map(lambda x: f"{x:.6g}" if math.isfinite(x) else "")
    return out


def require_parameters(threshold: float | None, alpha: float | None) -> tuple[float, float]:
    """--threshold and --alpha, defaulted; InputError (exit 2) for what cannot be a fraction or a level."""
    threshold = DEFAULT_THRESHOLD if threshold is None else float(threshold)
    alpha = DEFAULT_ALPHA if alpha is None else float(alpha)
    if not (math.isfinite(threshold) and 0 <= threshold < 1):
        raise InputError(f"--threshold is a fraction from 0 to below 1 (0.01 = 1 %), got {threshold}")
    if not 0 < alpha < 1:
        raise InputError(f"--alpha is a probability between 0 and 1, got {alpha}")
    return threshold, alpha


# --- the exact test --------------------------------------------------------------------------------
def sign_test_p(d: np.ndarray, shift: float) -> float:
    """One-sided exact sign test of H0: median(d) <= shift. Values equal to the shift are dropped."""
    above = int(np.sum(d > shift))
    return upper_tail(above, above + int(np.sum(d < shift)))


@functools.lru_cache(maxsize=None)
def upper_tail(above: int, n: int) -> float:
    """P(Bin(n, 1/2) >= above); 1 for n = 0."""
    return float(stats.binom.sf(above - 1, n, 0.5)) if n else 1.0


@functools.lru_cache(maxsize=None)
def lower_rank(n: int, level: float) -> int | None:
    """The 1-based rank j of the order statistic that is a lower confidence bound of the median at
    confidence 1 - level: the largest j with P(Bin(n, 1/2) >= j) >= 1 - level. None when even the
    smallest value is not such a bound (too few rounds)."""
    # P(Bin >= j) >= 1 - level  <=>  P(Bin <= j - 1) <= level
    ranks = np.nonzero(stats.binom.cdf(np.arange(n), n, 0.5) <= level)[0]
    return int(ranks[-1]) + 1 if len(ranks) else None


def median_lower_bound(d: np.ndarray, level: float) -> float:
    """Distribution-free one-sided lower confidence bound of median(d); -inf when n is too small."""
    j = lower_rank(len(d), level)
    return float(np.sort(d)[j - 1]) if j is not None else -math.inf


def rounds_needed(tests: int, alpha: float) -> int:
    """The fewest rounds with which a test can reject at Holm's first step (level alpha / tests)."""
    return max(1, math.ceil(math.log2(tests / alpha)))


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error rate control, any dependence)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for step, index in enumerate(order):
        running = max(running, min(1.0, (m - step) * p_values[index]))
        adjusted[index] = running
    return adjusted


# --- from rounds to paired log ratios --------------------------------------------------------------
def log_ratios(table: pd.DataFrame, statistics: tuple[str, ...] = TESTED_STATISTICS, unit: str = s.BYTES,
               higher_is_better: bool = False) -> pd.DataFrame:
    """Per round, sub-experiment, unit (payload) and statistic: the log of the candidate's slow-down.

    table: one row per round, arm, sub-experiment and unit with the `statistics` columns (the arms'
    summaries stacked). Rows whose other arm lacks that unit are dropped. The slow-down is
    candidate / baseline for a latency, baseline / candidate for a throughput (`higher_is_better`),
    so that everything after this function reads d > 0 as "the candidate is worse" alike.
    A unit where both arms measured 0 has no ratio and is dropped; one arm at 0 is an infinite d.
    Beside the log ratio, each arm's log value (LOG_VALUE), for the values a reader is shown.
    """
    keys = [ROUND, s.EXPERIMENT_TYPE, unit]
    arms = {arm: table[table[ARM] == arm].set_index(keys)[list(statistics)] for arm in ARMS}
    joined = arms[CANDIDATE_ARM].join(arms[BASELINE_ARM], how="inner", lsuffix="_c", rsuffix="_b")
    frames = []
    for statistic in statistics:
        candidate, baseline = joined[f"{statistic}_c"].to_numpy(float), joined[f"{statistic}_b"].to_numpy(float)
        worse, better = (baseline, candidate) if higher_is_better else (candidate, baseline)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.log(worse / better)
            logs = {LOG_VALUE[CANDIDATE_ARM]: np.log(candidate), LOG_VALUE[BASELINE_ARM]: np.log(baseline)}
        frames.append(pd.DataFrame({STATISTIC: statistic, "log_ratio": ratio, **logs}, index=joined.index))
    ratios = pd.concat(frames).reset_index()
    return ratios[~ratios["log_ratio"].isna()].reset_index(drop=True)


def usable_round_means(ratios: pd.DataFrame, unit: str = s.BYTES) -> tuple[pd.DataFrame, dict[str, list]]:
    """d per round, sub-experiment and statistic: the mean over payloads of the log ratios (and of
    each arm's log values, where the ratios have them).

    A round counts for a sub-experiment only when both arms have every payload (unit) that
    sub-experiment has in any round: a mean over fewer payloads would be another quantity. Returns
    the means and, per sub-experiment, the payloads they average.
    """
    payloads: dict[str, list] = {}
    means = []
    for sub, rows in ratios.groupby(s.EXPERIMENT_TYPE, sort=False):
        expected = sorted(set(rows[unit]))
        payloads[sub] = expected
        per_round = rows.groupby([ROUND, STATISTIC])
        complete = per_round[unit].nunique() == len(expected)
        averaged = ["log_ratio"] + [column for column in LOG_VALUE.values() if column in rows]
        mean = per_round[averaged].mean()[complete].rename(columns={"log_ratio": "d"})
        means.append(mean.reset_index().assign(**{s.EXPERIMENT_TYPE: sub}))
    if not means:
        return pd.DataFrame(columns=[s.EXPERIMENT_TYPE, ROUND, STATISTIC, "d"]), payloads
    return pd.concat(means, ignore_index=True), payloads


# --- the decision ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Decision:
    table: pd.DataFrame  # VERDICT_COLUMNS plus IMPROVED
    payloads: pd.DataFrame  # PAYLOAD_COLUMNS: the drill-down, not tested
    threshold: float
    alpha: float
    rounds_needed: int
    too_few_rounds: dict[str, int]  # sub-experiment -> usable rounds, below rounds_needed
    smallest_detectable: dict[str, float]  # sub-experiment -> change its own paired spread could detect
    # curtailed rounds (ab.curtail): the rounds planned, the sub-experiments that stopped being measured
    # (-> rounds measured), and the tests these rounds leave undecided at this threshold and level
    planned_rounds: int | dict[str, int] | None = None  # per sub-experiment when they differ (ab.layout)
    stopped: dict[str, int] = field(default_factory=dict)
    undecided: tuple[tuple[str, str], ...] = ()
    # layout-aware thresholds (ab.layout): the layout thresholds given (sub-experiment -> fraction) and
    # where they came from; every test's own bound is the table's THRESHOLD column
    layout: dict[str, float] = field(default_factory=dict)
    layout_source: str | None = None

    def threshold_of(self, sub: str) -> float:
        """The bound sub-experiment `sub` is tested against: max(--threshold, its layout threshold)."""
        return bound_of(self.threshold, self.layout, sub)

    @property
    def failed(self) -> pd.DataFrame:
        return self.table[self.table[s.STATUS] == s.FAILED]

    @property
    def incomplete(self) -> bool:
        return bool(self.too_few_rounds or self.undecided)


def bound_of(threshold: float, layout: dict[str, float] | None, sub: str) -> float:
    """A sub-experiment's bound: the global threshold, raised to its layout threshold when that is larger."""
    return max(threshold, (layout or {}).get(sub, 0.0))


def bound_shifts(threshold: float, layout: dict[str, float] | None, subs) -> dict[str, float]:
    """Per sub-experiment, log(1 + its bound): what its d values are tested against."""
    return {sub: math.log1p(bound_of(threshold, layout, sub)) for sub in subs}


def _typical(log_values: np.ndarray | None) -> float:
    """exp(median of per-round mean log values): the arm's value over the test's rounds."""
    if log_values is None or not len(log_values):
        return math.nan
    return float(np.exp(np.median(log_values)))


def _test_row(sub: str, statistic: str, d: np.ndarray, shift: float, level: float,
              log_values: dict[str, np.ndarray] | None = None) -> dict:
    log_values = log_values or {}
    return {
        s.EXPERIMENT_TYPE: sub,
        STATISTIC: statistic,
        ROUNDS: len(d),
        ABOVE: int(np.sum(d > shift)),
        BASELINE_MEDIAN: _typical(log_values.get(BASELINE_ARM)),
        CANDIDATE_MEDIAN: _typical(log_values.get(CANDIDATE_ARM)),
        RATIO: float(np.exp(np.median(d))) if len(d) else math.nan,
        LOWER_BOUND: float(np.exp(median_lower_bound(d, level))) if len(d) else math.nan,
        P_VALUE: sign_test_p(d, shift),
        # an improvement: the same test, mirrored (the candidate faster by more than the threshold)
        IMPROVED: len(d) > 0 and sign_test_p(-d, shift) <= level,
    }


def decide(ratios: pd.DataFrame, *, threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA,
           order: list[str] | None = None, statistics: tuple[str, ...] = TESTED_STATISTICS,
           unit: str = s.BYTES, layout: dict[str, float] | None = None, layout_source: str | None = None) -> Decision:
    """The verdict on a table of log ratios (see log_ratios); with `layout` (sub-experiment -> layout
    threshold, ab.layout) each sub-experiment is tested against max(threshold, its layout threshold)."""
    means, payloads = usable_round_means(ratios, unit)
    subs = order or list(dict.fromkeys(ratios[s.EXPERIMENT_TYPE]))
    shifts = bound_shifts(threshold, layout, subs)
    tests = len(subs) * len(statistics)
    level = alpha / max(tests, 1)
    table = decide_tests(means, subs, threshold=threshold, alpha=alpha, statistics=statistics, layout=layout)
    needed = rounds_needed(tests, alpha)
    usable = {sub: int(table.loc[table[s.EXPERIMENT_TYPE] == sub, ROUNDS].min()) for sub in subs}
    return Decision(
        table=table,
        payloads=payload_drilldown(ratios, shifts, level, subs, statistics, unit),
        threshold=threshold,
        alpha=alpha,
        rounds_needed=needed,
        too_few_rounds={sub: n for sub, n in usable.items() if n < needed},
        smallest_detectable={sub: smallest_detectable_change(means, sub, shifts[sub], level, statistic=statistics[0])
                             for sub in subs},
        layout={sub: float(x) for sub, x in (layout or {}).items() if sub in subs},
        layout_source=layout_source,
    )


def decide_tests(means: pd.DataFrame, subs: list[str], *, threshold: float = DEFAULT_THRESHOLD,
               alpha: float = DEFAULT_ALPHA, statistics: tuple[str, ...] = TESTED_STATISTICS,
               layout: dict[str, float] | None = None) -> pd.DataFrame:
    """The tests and their Holm decision (VERDICT_COLUMNS, IMPROVED, THRESHOLD, LAYOUT_SIZED) on the
    per-round d of usable_round_means: the part of `decide` that fails or passes. Pure; on its own for
    replays that resample the rounds' d (ab.resample), where the payload drill-down is not needed."""
    shifts = bound_shifts(threshold, layout, subs)
    global_shift = math.log1p(threshold)
    level = alpha / max(len(subs) * len(statistics), 1)
    rows, global_p = [], []
    for sub in subs:
        for statistic in statistics:
            test = means[(means[s.EXPERIMENT_TYPE] == sub) & (means[STATISTIC] == statistic)]
            d = test["d"].to_numpy(float)
            logs = {arm: test[column].to_numpy(float) for arm, column in LOG_VALUE.items() if column in test}
            rows.append(_test_row(sub, statistic, d, shifts[sub], level, logs))
            global_p.append(sign_test_p(d, global_shift))
    table = pd.DataFrame(rows, columns=list(VERDICT_COLUMNS) + [IMPROVED, ABOVE, BASELINE_MEDIAN, CANDIDATE_MEDIAN])
    table[ADJUSTED_P] = holm(table[P_VALUE].tolist()) if len(table) else []
    table[s.STATUS] = np.where(table[ADJUSTED_P] <= alpha, s.FAILED, s.PASSED)
    table[THRESHOLD] = [math.expm1(shifts[sub]) for sub in table[s.EXPERIMENT_TYPE]]
    # the same Holm procedure at the global threshold alone: what it fails and the layout bound passes
    rejected_globally = np.array(holm(global_p), dtype=float) <= alpha if len(table) else np.array([], dtype=bool)
    table[LAYOUT_SIZED] = rejected_globally & (table[s.STATUS] == s.PASSED).to_numpy()
    return table


def payload_drilldown(ratios: pd.DataFrame, shifts: dict[str, float], level: float, subs: list[str],
                      statistics: tuple[str, ...] = TESTED_STATISTICS, unit: str = s.BYTES) -> pd.DataFrame:
    """Per sub-experiment, statistic and payload, the test's figures at the sub-experiment's own shift."""
    rows = []
    for (sub, statistic, key), group in ratios.groupby([s.EXPERIMENT_TYPE, STATISTIC, unit]):
        if sub not in shifts:
            continue
        row = _test_row(sub, statistic, group["log_ratio"].to_numpy(float), shifts[sub], level)
        row[unit] = key.item() if hasattr(key, "item") else key
        rows.append(row)
    columns = [unit if column == s.BYTES else column for column in PAYLOAD_COLUMNS] + [IMPROVED]
    table = pd.DataFrame(rows, columns=columns)
    position = {sub: i for i, sub in enumerate(subs)}
    table = table[table[s.EXPERIMENT_TYPE].isin(position)]
    table = table.assign(_sub=table[s.EXPERIMENT_TYPE].map(position),
                         _statistic=table[STATISTIC].map(statistics.index))
    return table.sort_values(["_sub", "_statistic", unit]).drop(columns=["_sub", "_statistic"]).reset_index(drop=True)


def smallest_detectable_change(means: pd.DataFrame, sub: str, shift: float, level: float,
                               power: float = 0.95, statistic: str = s.MEDIAN) -> float:
    """The smallest relative slow-down this sub-experiment's own rounds would catch with `power`.

    The rounds' spread around their median (the noise of d, whatever its shape) is shifted by a
    candidate change c; c is detectable when the sign test rejects with probability `power`, i.e.
    when enough shifted rounds exceed the threshold. Uses the first tested statistic's rounds (the Median).
    """
    d = means.loc[(means[s.EXPERIMENT_TYPE] == sub) & (means[STATISTIC] == statistic), "d"].to_numpy(float)
    n = len(d)
    if n == 0 or lower_rank(n, level) is None or not np.isfinite(d).all():  # (a round where one arm got nothing)
        return math.inf
    # fewest rounds above the threshold that reject at `level`
    needed = n + 1 - lower_rank(n, level)  # the fewest rounds above the threshold that reject
    noise = d - np.median(d)
    # a round exceeds the threshold when noise + c > shift: q is the share of rounds that must, and
    # c puts the noise quantile that leaves a share q above it at the threshold
    shares = np.linspace(0.5, 1.0, 501)
    q = shares[np.argmax(stats.binom.sf(needed - 1, n, shares) >= power)]
    c = shift - float(np.quantile(noise, 1 - q))
    return float(np.expm1(max(c, shift)))
