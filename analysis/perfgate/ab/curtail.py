"""ab.curtail: which tests of an A/B can no longer change their decision, so their sub-experiments stop.

The verdict (ab.verdict) is an exact sign test per test on the rounds' d values, Holm over the m tests.
An A/B plans R rounds. After k of them a test has `above` rounds with d > shift and `below` with d <
shift (a round with d == shift, or one that did not finish, counts for neither, as in the verdict);
`remaining` = R - k rounds are still to come. Whatever they show, the test's final p-value lies in

    [p_best, p_worst] = [P(Bin(n + r, 1/2) >= above + r), P(Bin(n + r, 1/2) >= above)]    n = above + below

because a round above the shift can only lower p (P(Bin(n+1) >= a+1) <= P(Bin(n) >= a)), one below can
only raise it, and one at the shift or unusable leaves it. The p-value of the rounds seen so far,
P(Bin(n) >= above), lies in the same interval.

Holm's step-down procedure is monotone: lowering any p-values can only add rejections (its i-th
smallest p-value is compared with a level that grows with i). So, with every test's final p-value in
its interval, the final rejections are at least Holm's rejections of the vector of all p_worst
("certainly rejected": whatever the remaining rounds show and whatever Holm does with the others) and
at most Holm's rejections of the vector of all p_best (outside it: "can never reject", not even at the
most lenient level Holm could give it). A test in the first set or outside the second is decided; a
sub-experiment stops being measured when all its tests are decided; the A/B ends when all are. A
stopped sub-experiment keeps the interval it had when it stopped, which still holds its (never
measured) full-run p-value, so later decisions stay sound; intervals only narrow, so a decided test
stays decided with the same outcome. When every measured test has no round left, the still-measured
tests are decided too (docs/verdict.md, "Curtailed rounds", has the argument), so the A/B never
needs more than its R rounds.

The verdict of a curtailed A/B is Holm on each test's own rounds: that p-vector lies inside the
intervals, so it rejects exactly the tests the full R rounds would. This is why curtailing changes
no error rate. It assumes that a round's outcome does not depend on whether other sub-experiments
were measured in it.

With layout-aware thresholds (ab.layout) every test is counted against its own sub-experiment's shift,
log(1 + max(--threshold, its layout threshold)), the very bound the verdict tests it at: the argument
above holds test by test, so curtailing and the verdict must use the same per-sub-experiment bounds.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import files
from .. import schema as s
from ..errors import IncompleteError, InputError
from . import verdict as v
from .verdict import ROUND, STATISTIC, holm, rounds_needed, upper_tail

MEANS_D = "d"  # the column of usable_round_means


@dataclass(frozen=True)
class Bounds:
    """Per test: the smallest and largest p-value the planned rounds can still end with."""
    best: float
    worst: float


def sign_bounds(above: int, below: int, remaining: int) -> Bounds:
    n = above + below
    return Bounds(best=upper_tail(above + remaining, n + remaining), worst=upper_tail(above, n + remaining))


def holm_rejects(p_values: list[float], alpha: float) -> list[bool]:
    return [p <= alpha for p in holm(p_values)]


def counts(d: np.ndarray, shift: float) -> tuple[int, int]:
    return int(np.sum(d > shift)), int(np.sum(d < shift))


Tests = dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]  # (sub, statistic) -> (round positions, d)


def test_values(means: pd.DataFrame, round_names: list[str] | None, subs: list[str],
                statistics: tuple[str, ...]) -> Tests:
    """Per test, the usable rounds' positions in `round_names` and their d (usable_round_means' table);
    round_names None: every row at position 0 (all of them measured)."""
    position = {name: i for i, name in enumerate(round_names)} if round_names is not None else {}
    values: Tests = {}
    for sub in subs:
        for statistic in statistics:
            rows = means[(means[s.EXPERIMENT_TYPE] == sub) & (means[STATISTIC] == statistic)]
            places = rows[ROUND].map(position).to_numpy(float) if round_names is not None else np.zeros(len(rows))
            values[(sub, statistic)] = (places, rows[MEANS_D].to_numpy(float))
    return values


Shift = float | dict[str, float]  # one shift for every test, or per sub-experiment (verdict.bound_shifts)


def shift_of(shift: Shift, sub: str) -> float:
    return shift[sub] if isinstance(shift, dict) else shift


Planned = int | dict[str, int]  # the rounds planned: the same for every sub-experiment, or per sub-experiment


def planned_of(planned: Planned, sub: str) -> int:
    return planned[sub] if isinstance(planned, dict) else planned


def most_planned(planned: Planned) -> int:
    """The rounds the A/B plans at most (how many round folders it may hold)."""
    return max(planned.values()) if isinstance(planned, dict) else planned


def open_tests(values: Tests, measured: dict[str, int], planned: Planned, shift: Shift,
               alpha: float) -> dict[tuple[str, str], bool | None]:
    """Per test (sub-experiment, statistic): True (certainly rejected), False (can never reject) or None
    (undecided), when sub-experiment `sub` has been measured in the first `measured[sub]` of its
    planned rounds (its d values of later rounds, if `values` has any, are not looked at).

    With fewer planned rounds than a test needs to ever reject, nothing is decided here: the verdict
    calls such an A/B incomplete, as it always did.
    """
    keys = list(values)
    if keys and min(planned_of(planned, sub) for sub, _ in keys) < rounds_needed(len(keys), alpha):
        return {key: None for key in keys}
    best, worst = [], []
    for key in keys:
        positions, d = values[key]
        above, below = counts(d[positions < measured.get(key[0], 0)], shift_of(shift, key[0]))
        bounds = sign_bounds(above, below, max(planned_of(planned, key[0]) - measured.get(key[0], 0), 0))
        best.append(bounds.best)
        worst.append(bounds.worst)
    possible, certain = holm_rejects(best, alpha), holm_rejects(worst, alpha)
    return {key: True if sure else (False if not can else None)
            for key, can, sure in zip(keys, possible, certain)}


def open_subexperiments(decisions: dict[tuple[str, str], bool | None]) -> list[str]:
    """The sub-experiments with a test still undecided, in the order of the decisions."""
    return list(dict.fromkeys(sub for (sub, _), decided in decisions.items() if decided is None))


def replay(values: Tests, subs: list[str], planned: Planned, shift: Shift, alpha: float) -> dict[str, int]:
    """Curtailment replayed on stored rounds: per sub-experiment, how many of its planned rounds a
    curtailed A/B would have measured. The rule `perfgate ab` applies after each round."""
    measured = {sub: 0 for sub in subs}
    still = list(subs)
    for k in range(1, most_planned(planned) + 1):
        for sub in still:
            measured[sub] = min(k, planned_of(planned, sub))
        still = open_subexperiments(open_tests(values, measured, planned, shift, alpha))
        if not still:
            break
    return measured


def truncate(table: pd.DataFrame, round_names: list[str], measured: dict[str, int]) -> pd.DataFrame:
    """The rows of a table with Round and Experiment type a curtailed A/B has: per sub-experiment, its
    first measured[sub] rounds."""
    position = {name: i for i, name in enumerate(round_names)}
    index = table[ROUND].map(position)
    limit = table[s.EXPERIMENT_TYPE].map(measured).fillna(0)
    return table[index < limit].reset_index(drop=True)


# --- while measuring ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Curtailing:
    """Stop measuring a sub-experiment once its tests are decided, at the verdict's own threshold and
    level (perfgate ab and ab-throughput; --all-rounds: no Curtailing, every round measures all), and
    at the verdict's layout thresholds (sub-experiment -> fraction; ab.layout), when it has any."""
    threshold: float
    alpha: float
    layout: dict[str, float] = field(default_factory=dict)

    def after_round(self, ab_dir: Path, planned: Planned, read_values: Callable[[Path, list[str]], Tests],
                    measured: dict[str, int], stopped: dict[str, int], program: str) -> bool:
        """After a round: add the sub-experiments whose tests its rounds decide to `stopped` (-> rounds
        measured), write curtailed.json, say so. True when every test is decided (the A/B ends)."""
        names = list(measured)
        try:
            values = read_values(ab_dir, names)
        except IncompleteError:  # no round has a result yet: nothing is decided
            values = None
        if values is not None:
            decisions = open_tests(values, measured, planned, v.bound_shifts(self.threshold, self.layout, names),
                                   self.alpha)
            still = open_subexperiments(decisions)
            newly = [name for name in names if name not in still and name not in stopped]
            stopped.update({name: measured[name] for name in newly})
            if newly:
                print(f"perfgate {program}: decided after {max(measured.values())} round(s), no longer measured: "
                      f"{', '.join(newly)}", flush=True)
        write_record(ab_dir, planned, stopped, self.threshold, self.alpha, self.layout)
        if len(stopped) == len(names):
            print(f"perfgate {program}: every test decided after {max(measured.values())} of "
                  f"{most_planned(planned)} rounds",
                  flush=True)
            return True
        return False


# --- the verdict of a curtailed A/B --------------------------------------------------------------------
def decide_curtailed(ratios: pd.DataFrame, *, planned: Planned | None, stopped: dict[str, int], threshold: float,
                     alpha: float, order: list[str], statistics: tuple[str, ...] = v.TESTED_STATISTICS,
                     unit: str = s.BYTES, layout: dict[str, float] | None = None,
                     layout_source: str | None = None) -> v.Decision:
    """ab.verdict.decide on the rounds each test used. A sub-experiment that stopped being measured is no
    `too few rounds`; a test its rounds leave undecided at this threshold and level (another --threshold
    or --alpha than the A/B curtailed with) makes the verdict incomplete."""
    decision = v.decide(ratios, threshold=threshold, alpha=alpha, order=order, statistics=statistics, unit=unit,
                        layout=layout, layout_source=layout_source)
    if not stopped or planned is None:
        return dataclasses.replace(decision, planned_rounds=planned)
    means, _ = v.usable_round_means(ratios, unit)
    # every round a stopped sub-experiment has was measured before it stopped; the others have none left
    measured = {sub: stopped.get(sub, planned_of(planned, sub)) for sub in order}
    decisions = open_tests(test_values(means, None, order, statistics), measured, planned,
                           v.bound_shifts(threshold, layout, order), alpha)
    return dataclasses.replace(
        decision, planned_rounds=planned, stopped=dict(stopped),
        too_few_rounds={sub: n for sub, n in decision.too_few_rounds.items() if sub not in stopped},
        undecided=tuple(key for key, decided in decisions.items() if decided is None))


def undecided_text(decision: v.Decision) -> str:
    tests = ", ".join(f"{sub} {statistic} ({decision.stopped.get(sub, '?')} of "
                      f"{planned_of(decision.planned_rounds, sub)} rounds)"
                      for sub, statistic in decision.undecided)
    return (f"undecided at threshold +{decision.threshold:.1%} and family-wise {decision.alpha:g}: {tests}; the A/B "
            f"stopped measuring them when its own threshold and level had decided them (measure again with --all-rounds)")


# --- curtailed.json: what a curtailed A/B measured -------------------------------------------------------
def write_record(ab_dir: Path, planned: Planned, stopped: dict[str, int], threshold: float, alpha: float,
                 layout: dict[str, float] | None = None) -> None:
    if isinstance(planned, dict) and len(set(planned.values())) == 1:
        planned = most_planned(planned)  # the same for all: one number, as before per-sub-experiment plans
    record = {"planned_rounds": planned, "threshold": threshold, "alpha": alpha, "stopped": stopped}
    if layout:  # the layout thresholds it curtailed at (read back by no one: the verdict is given its own)
        record["layout_thresholds"] = dict(layout)
    files.write_text(Path(ab_dir) / s.AB_CURTAILED_JSON, json.dumps(record, indent=2, sort_keys=True) + "\n")


def read_record(ab_dir: Path, subs: list[str], rounds_present: int = 0) -> tuple[Planned | None, dict[str, int]]:
    """(planned rounds, sub-experiment -> rounds measured when it stopped); (None, {}) without the file.
    The file may come from elsewhere (a store, a copied folder): every value is checked, and the plan
    holds at least the `rounds_present` round folders the A/B has (the reports say "N of planned")."""
    path = Path(ab_dir) / s.AB_CURTAILED_JSON
    data = files.read_json_object(path, "a curtailment record")
    if data is None:
        return None, {}
    planned, stopped = data.get("planned_rounds"), data.get("stopped")
    if isinstance(planned, dict):
        # every sub-experiment the A/B has, and only known ones (a floor it was asked to measure is never tested)
        if not set(subs) <= set(planned) <= set(s.KNOWN_SUBEXPERIMENTS):
            raise InputError("planned_rounds does not name every sub-experiment the A/B has, or names an unknown one",
                             path)
        if not all(_whole(n) and 1 <= n <= 1000 for n in planned.values()):
            raise InputError("planned_rounds: the rounds of a sub-experiment are not a whole number from 1 to 1000",
                             path)
    elif not _whole(planned) or not 1 <= planned <= 1000:
        raise InputError("planned_rounds is not a whole number of rounds from 1 to 1000", path)
    if most_planned(planned) < rounds_present:
        raise InputError(f"planned_rounds {most_planned(planned)} is fewer than the {rounds_present} rounds the A/B "
                         f"holds", path)
    if not isinstance(stopped, dict):
        raise InputError("stopped is not an object of sub-experiment: rounds", path)
    for sub, rounds in stopped.items():
        if sub not in subs:
            raise InputError("stopped names a sub-experiment the A/B has no rounds or request of", path)
        if not _whole(rounds) or not 0 <= rounds <= planned_of(planned, sub):
            raise InputError(f"stopped: the rounds of a sub-experiment are not a whole number from 0 to "
                             f"{planned_of(planned, sub)}", path)
    return planned, dict(stopped)


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- how the reports say it ----------------------------------------------------------------------------
PLANNED = "_planned"  # a column the reports' tables add: the rounds the A/B planned


def rounds_text(decision: v.Decision, folders: int) -> str:
    """The first words of a verdict's setting line: the rounds measured, planned, and needed."""
    needed = f"{decision.rounds_needed} needed to ever reject"
    if decision.planned_rounds is None or not decision.stopped:
        return f"{folders} rounds ({needed})"
    return (f"{folders} of {most_planned(decision.planned_rounds)} planned rounds ({needed}); curtailed: "
            f"{len(decision.stopped)} sub-experiment(s) stopped once decided, the verdict is the full one's")


def with_planned(table: pd.DataFrame, decision: v.Decision, columns: list, planned_columns: list) -> tuple:
    """(table, columns) for a report: with "Rounds" as "used of planned" when the A/B was curtailed."""
    if decision.planned_rounds is None or not decision.stopped:
        return table, columns
    planned = decision.planned_rounds
    return table.assign(**{PLANNED: table[s.EXPERIMENT_TYPE].map(planned) if isinstance(planned, dict)
                           else planned}), planned_columns


def json_fields(decision: v.Decision) -> dict:
    """verdict.json's record of the rounds each test used."""
    return {
        "planned_rounds": decision.planned_rounds,
        "stopped": decision.stopped,
        "undecided": [{"subexperiment": sub, "statistic": statistic} for sub, statistic in decision.undecided],
        "rounds_used": [{"subexperiment": r[s.EXPERIMENT_TYPE], "statistic": r[STATISTIC], "rounds": int(r[v.ROUNDS])}
                        for _, r in decision.table.iterrows()],
    }
