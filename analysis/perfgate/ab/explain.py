"""ab.explain: why each test of a verdict failed or passed, in words a reviewer reads beside it. Pure.

A "passed" beside a change above the threshold reads as a contradiction unless it says why: the sign
test counts the rounds above the test's bound (its Threshold), and fails the test only when enough of
them are, at its Holm level. A test can also pass because its rounds could never be enough (too few
rounds), or because a curtailed A/B stopped measuring it once its planned rounds could no longer make
it fail (ab.curtail). The reason says which, with the count it rests on.
"""
from __future__ import annotations

import pandas as pd

from .. import schema as s
from . import verdict as v
from .curtail import planned_of


def reason(row: pd.Series, decision: v.Decision, higher_is_better: bool = False) -> str:
    """One test's reason: row is a row of decision.table (with its ABOVE and THRESHOLD). A throughput
    (`higher_is_better`) counts the rounds whose candidate fell below baseline / (1 + Threshold)."""
    sub, statistic = row[s.EXPERIMENT_TYPE], row[v.STATISTIC]
    rounds, above = int(row[v.ROUNDS]), int(row[v.ABOVE])
    if higher_is_better:
        count = f"{above} of {rounds} rounds down more than {threshold_drop(row[v.THRESHOLD]):.1%}"
    else:
        count = f"{above} of {rounds} rounds above +{row[v.THRESHOLD]:.1%}"
    if row[s.STATUS] == s.FAILED:
        return f"{count}: {'lower' if higher_is_better else 'slower'} beyond chance"
    if (sub, statistic) in decision.undecided:
        return f"{count}: undecided at this threshold and level (measured with others)"
    if sub in decision.too_few_rounds:
        return f"{count}: too few rounds to ever fail (a test needs {decision.rounds_needed})"
    planned = planned_of(decision.planned_rounds, sub) if decision.planned_rounds is not None else None
    if sub in decision.stopped and planned is not None and rounds < planned:
        return f"{count}: stopped early, its {planned} planned rounds could no longer make it fail"
    if row[v.LAYOUT_SIZED]:
        return f"{count}: within its layout threshold (+{decision.threshold:.1%} alone would fail it)"
    return f"{count}: not enough to fail (Holm p {row[v.ADJUSTED_P]:.2g} > {decision.alpha:g})"


def explained(decision: v.Decision, higher_is_better: bool = False) -> pd.DataFrame:
    """decision.table with its REASON column."""
    table = decision.table
    reasons = [reason(row, decision, higher_is_better) for _, row in table.iterrows()]
    return table.assign(**{v.REASON: reasons})


def threshold_drop(threshold: float) -> float:
    """The fall a throughput's Threshold stands for: the candidate below baseline / (1 + Threshold)."""
    return 1 - 1 / (1 + threshold)
