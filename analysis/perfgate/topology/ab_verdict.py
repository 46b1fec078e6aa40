"""topology.ab_verdict: did the candidate Fast DDS make a whole topology worse than the baseline's?

The latency A/B's decision (perfgate.ab.verdict), unchanged, on a topology A/B folder (topology.ab):
per round both arms ran the topology back to back, and each arm's run gives five figures of the
whole system (ROUND_STATISTICS):

    mean[us], 99%[us]  the subscriptions' mean and 99 % latency, pooled per topology as the geometric
                       mean over subscriptions: its ratio candidate / baseline is the mean of the
                       subscriptions' log ratios, each topic counting alike (the latency A/B pools
                       payloads the same way)
    late[%]            the share of received messages that were late (latency_total.csv)
    cpu[%], rss[KB]    the system's CPU while publishing and its peak memory (topology.target)

d_r = log(candidate / baseline) per round and statistic (for late[%], log of the baseline's on-time
share over the candidate's, 100 - late[%]: defined when neither arm had a late message, and above
log(1 + T) when the candidate's on-time share fell by more than T); the exact one-sided sign test of
median(d) <= log(1 + T) over the rounds and Holm over the topology's five tests, at family-wise A.
A round counts only when both arms finished it: an arm that failed is a missing round, never a pass.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import files, junit_writer
from .. import schema as s
from ..ab import verdict as v
from ..errors import InputError
from ..escape.markdown import text as md_text
from ..report.bounds import LOWER_BOUND, bound_text
from ..junit_writer import TestCase
from ..outcome import exit_code, verdict_of
from . import names as n
from .target import measured_resources, publishing_start_ms

ROUNDS_CSV = "rounds.csv"  # Round, Arm and the ROUND_STATISTICS, one row per arm that finished its round
KIND = "ab-topology"  # metadata.json's "kind" of a topology A/B folder
ON_TIME = "on_time[%]"  # 100 - late[%]: what the late share's test compares (defined at 0 late)
UNIT = "system"  # the one unit per round: every figure is already the whole topology's
# The tested statistics, in the order of the verdict's table; the first is the one whose rounds
# say the smallest detectable change (as the Median's in the latency A/B).
ROUND_STATISTICS = (n.MEAN, n.P99, n.LATE_PERCENT, n.RESOURCE_CPU, n.RESOURCE_RSS)
BASELINE_MEDIAN = v.BASELINE_MEDIAN
CANDIDATE_MEDIAN = v.CANDIDATE_MEDIAN
VERDICT_COLUMNS = (*v.VERDICT_COLUMNS, BASELINE_MEDIAN, CANDIDATE_MEDIAN)


# --- one arm's round: its experiment folder to five figures ---------------------------------------------
def arm_figures(folder) -> dict[str, float] | None:
    """The ROUND_STATISTICS of one arm's topology run, None when the run did not finish (no usable figures)."""
    record = files.read_json_object(folder / s.METADATA_FILE, "topology metadata") \
        if (folder / s.METADATA_FILE).is_file() else None
    needed = (n.LATENCY_ALL_CSV, n.LATENCY_TOTAL_CSV, n.RESOURCES_CSV, n.EVENTS_CSV)
    if not record or record.get("outcome") != s.OUTCOME_OK or not all((folder / name).is_file() for name in needed):
        return None
    latency_all = pd.read_csv(folder / n.LATENCY_ALL_CSV)
    total = pd.read_csv(folder / n.LATENCY_TOTAL_CSV).iloc[0]
    usage = pd.read_csv(folder / n.RESOURCES_CSV)
    system = measured_resources(usage, publishing_start_ms(pd.read_csv(folder / n.EVENTS_CSV)))
    return {n.MEAN: pooled(latency_all[n.MEAN]), n.P99: pooled(latency_all[n.P99]),
            n.LATE_PERCENT: float(total[n.LATE_PERCENT]), n.RESOURCE_CPU: system[n.RESOURCE_CPU],
            n.RESOURCE_RSS: system[n.RESOURCE_RSS]}


def pooled(per_subscription: pd.Series) -> float:
    """The geometric mean over subscriptions (NaN when one has no figure: it received nothing)."""
    values = per_subscription.to_numpy(float)
    if len(values) == 0 or not np.all(np.isfinite(values)) or np.any(values <= 0):
        return math.nan
    return float(np.exp(np.log(values).mean()))


# --- the decision (pure) -------------------------------------------------------------------------------
def ratios(rounds: pd.DataFrame, name: str) -> pd.DataFrame:
    """The rounds table (ROUNDS_CSV) as the verdict's log ratios, the topology's name as its one
    'sub-experiment'; a round missing an arm is dropped (ab.verdict.log_ratios' inner join)."""
    table = rounds.assign(**{s.EXPERIMENT_TYPE: name, UNIT: UNIT, ON_TIME: 100.0 - rounds[n.LATE_PERCENT]})
    lower_is_better = [statistic for statistic in ROUND_STATISTICS if statistic != n.LATE_PERCENT]
    slower = v.log_ratios(table, tuple(lower_is_better), unit=UNIT)
    late = v.log_ratios(table, (ON_TIME,), unit=UNIT, higher_is_better=True)
    late[v.STATISTIC] = n.LATE_PERCENT
    return pd.concat([slower, late], ignore_index=True)


def decide(rounds: pd.DataFrame, name: str, threshold: float, alpha: float) -> v.Decision:
    decision = v.decide(ratios(rounds, name), threshold=threshold, alpha=alpha, order=[name],
                        statistics=ROUND_STATISTICS, unit=UNIT)
    medians = rounds.groupby(v.ARM)[list(ROUND_STATISTICS)].median()
    table = decision.table.assign(**{
        BASELINE_MEDIAN: [_median(medians, v.BASELINE_ARM, st) for st in decision.table[v.STATISTIC]],
        CANDIDATE_MEDIAN: [_median(medians, v.CANDIDATE_ARM, st) for st in decision.table[v.STATISTIC]]})
    return v.Decision(table, decision.payloads, decision.threshold, decision.alpha, decision.rounds_needed,
                      decision.too_few_rounds, decision.smallest_detectable)


def _median(medians: pd.DataFrame, arm: str, statistic: str) -> float:
    return float(medians.loc[arm, statistic]) if arm in medians.index else math.nan


def status(decision: v.Decision, failures: int = 0) -> str:
    """An arm run that did not finish leaves the verdict INCOMPLETE, whatever the other rounds say."""
    return verdict_of(incomplete=decision.incomplete or failures > 0, regressed=not decision.failed.empty)


def headline(decision: v.Decision, name: str, rounds: int, failures: int = 0) -> str:
    what = f"{len(decision.table)} tests (mean and 99 % latency, late share, CPU, RSS) over {rounds} round(s)"
    failed = decision.failed
    if not failed.empty:
        worst = failed.sort_values(v.LOWER_BOUND, ascending=False).iloc[0]
        parts = [f"{name}: {len(failed)} of {what} failed; worst {worst[v.STATISTIC]} {_ratio(worst[v.RATIO])} the "
                 f"baseline (lower bound {_bound(worst)})"]
    else:
        parts = [f"{name}: no change beyond {decision.threshold:.1%} in {what}"]
    if decision.too_few_rounds:
        parts.append(f"too few usable rounds ({min(decision.too_few_rounds.values())}): a test needs at least "
                     f"{decision.rounds_needed} to ever reject at family-wise {decision.alpha:g}")
    if failures:
        parts.append(f"{failures} arm run(s) did not finish (metadata.json 'failures')")
    return f"{status(decision, failures)}: " + "; ".join(parts)


def _ratio(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:.3f}x"


def _bound(row: pd.Series) -> str:
    """The lower bound, or 'n/a (k rounds)' when too few rounds give none (stored as 0, exp(-inf))."""
    return bound_text(float(row[v.LOWER_BOUND]), int(row[v.ROUNDS]), LOWER_BOUND)


def _finite(value: float) -> float | None:
    return round(float(value), 6) if math.isfinite(value) else None


def summary(row: pd.Series, threshold: float) -> str:
    return (f"{row[v.STATISTIC]}: baseline {row[BASELINE_MEDIAN]:.6g}, candidate {row[CANDIDATE_MEDIAN]:.6g} "
            f"(medians over rounds); candidate {_ratio(row[v.RATIO])} the baseline (lower bound "
            f"{_bound(row)}, threshold {1 + threshold:.3f}x), p = {row[v.P_VALUE]:.3g}, "
            f"Holm-adjusted {row[v.ADJUSTED_P]:.3g}, {row[v.ROUNDS]} rounds")


# --- the files ------------------------------------------------------------------------------------------
def verdict_json(decision: v.Decision, name: str, round_names: list[str], metadata: dict) -> dict:
    def rows(frame: pd.DataFrame) -> list[dict]:
        return [{"subexperiment": r[s.EXPERIMENT_TYPE], "statistic": r[v.STATISTIC], "ratio": _finite(r[v.RATIO]),
                 "lower_bound": _finite(r[v.LOWER_BOUND]), "p_value": float(r[v.P_VALUE]),
                 "adjusted_p_value": float(r[v.ADJUSTED_P]), "rounds": int(r[v.ROUNDS]),
                 "baseline_median": _finite(r[BASELINE_MEDIAN]), "candidate_median": _finite(r[CANDIDATE_MEDIAN])}
                for _, r in frame.iterrows()]

    failures = len(metadata.get("failures") or [])
    verdict = status(decision, failures)
    return {
        "status": verdict, "exit_code": exit_code(verdict),
        "headline": headline(decision, name, len(round_names), failures),
        "kind": "topology", "topology": name,
        "method": "exact one-sided sign test on per-round log ratios (candidate / baseline; late share: baseline's "
                  "on-time share / candidate's), Holm over the topology's tests",
        "threshold": decision.threshold, "alpha": decision.alpha, "tests": len(decision.table),
        "rounds_needed": decision.rounds_needed, "rounds": round_names, "too_few_rounds": decision.too_few_rounds,
        "smallest_detectable_change": {k: (round(x, 4) if math.isfinite(x) else None)
                                       for k, x in decision.smallest_detectable.items()},
        "failed": rows(decision.failed), "improved": rows(decision.table[decision.table[v.IMPROVED]]),
        "all": rows(decision.table), "arms": metadata.get("arms"), "time_s": metadata.get("time_s"),
        "failures": metadata.get("failures", []),
    }


def junit_xml(decision: v.Decision, name: str, rounds: int, failures: int = 0) -> str:
    """One testcase per statistic: failed when the test rejects, an error when too few rounds finished
    or an arm run did not (a missing result is never a pass)."""
    cases = []
    for _, row in decision.table.iterrows():
        text = f"topology {name} {summary(row, decision.threshold)}"
        too_few, failed = bool(decision.too_few_rounds), row[s.STATUS] == s.FAILED
        case = TestCase(f"{name} {row[v.STATISTIC]} vs baseline", classname=f"topology.{name}.ab",
                        stdout=None if too_few or failed or failures else text)
        if too_few or (failures and not failed):
            case.add_error_info(text, headline(decision, name, rounds, failures),
                                "too_few_rounds" if too_few else "arm_run_failed")
        elif failed:
            case.add_failure_info(text, text, "regression")
        cases.append(case)
    return junit_writer.document("perfgate topology A/B", [junit_writer.suite(f"topology.{name}.ab", cases)])


def csv_table(decision: v.Decision) -> pd.DataFrame:
    out = decision.table.loc[:, list(VERDICT_COLUMNS)].copy()
    for column in (v.RATIO, v.LOWER_BOUND, BASELINE_MEDIAN, CANDIDATE_MEDIAN):
        out[column] = out[column].map(lambda x: f"{x:.6g}" if math.isfinite(x) else "")
    for column in (v.P_VALUE, v.ADJUSTED_P):
        out[column] = out[column].map(lambda x: f"{x:.6g}")
    return out


def markdown(decision: v.Decision, name: str, round_names: list[str]) -> str:
    lines = [f"## perfgate topology A/B: {md_text(headline(decision, name, len(round_names)))}", "",
             "| Statistic | Baseline | Candidate | Ratio | Lower bound | p (Holm) | Rounds | Status |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    ordered = pd.concat([decision.failed, decision.table[decision.table[s.STATUS] != s.FAILED]])
    for _, r in ordered.iterrows():
        lines.append(f"| {md_text(r[v.STATISTIC])} | {r[BASELINE_MEDIAN]:.6g} | {r[CANDIDATE_MEDIAN]:.6g} | "
                     f"{_ratio(r[v.RATIO])} | {_bound(r)} | {r[v.ADJUSTED_P]:.3g} | {r[v.ROUNDS]} | "
                     f"{r[s.STATUS]}{' (improved)' if r[v.IMPROVED] else ''} |")
    return "\n".join(lines) + "\n"


def read_rounds_csv(path) -> pd.DataFrame:
    table = pd.read_csv(path, dtype={v.ROUND: str, v.ARM: str})
    missing = [column for column in (v.ROUND, v.ARM, *ROUND_STATISTICS) if column not in table.columns]
    if missing:
        raise InputError(f"not a topology A/B rounds table: no column {', '.join(missing)}", path)
    return table
