"""report.bounds: an A/B test's confidence bound as every table shows it (the A/B reports, the gate's
page and step summary, the pull-request comment), so that all of them read alike.

The bound is the sign test's distribution-free one-sided confidence bound for the median of the
test's per-round d (ab.verdict.median_lower_bound): an order statistic of k rounds that exists only
when 2^-k <= alpha / tests, i.e. with at least verdict.json's `rounds_needed` rounds. A test decided
after fewer (curtailed rounds stop a test that can no longer reject after 1-4 of them) has none: the
verdict stores exp(-inf), a latency lower bound of 0 (verdict.csv `0.000`) and a throughput upper
bound (its inverse) of infinity (an empty cell). Printed as `0.000x` it reads like a measurement, so
every table says `n/a (k rounds)` instead; verdict.csv and verdict.json keep their numbers.
"""
from __future__ import annotations

import math

LOWER_BOUND = "Lower bound"  # the latency A/B's (ab.verdict.LOWER_BOUND)
UPPER_BOUND = "Upper bound"  # the throughput A/B's (ab.throughput_report.UPPER_BOUND)


def bound_defined(value: float, column: str) -> bool:
    """A lower bound exists when it is above 0 (a latency's d is finite, so 0 is only exp(-inf)); an
    upper bound when it is finite (0 is real there: a candidate that received nothing)."""
    if not math.isfinite(value):
        return False
    return value > 0 if column == LOWER_BOUND else True


def undefined_text(rounds: int | None) -> str:
    """'n/a (2 rounds)': no bound exists with so few rounds."""
    if rounds is None:
        return "n/a"
    return f"n/a ({rounds} round{'' if rounds == 1 else 's'})"


def bound_text(value: float, rounds: int | None, column: str) -> str:
    """'1.023x', or 'n/a (k rounds)' where the k rounds give no bound."""
    return f"{value:.3f}x" if bound_defined(value, column) else undefined_text(rounds)


def bound_cell(bound: str | None, rounds: str | None, column: str) -> str | None:
    """The bound of a verdict.csv row as text (written by the code under test: parsed, never shown as
    it is); None when the cell holds something that is not a number (the caller shows it escaped)."""
    text = (bound or "").strip()
    try:
        value = float(text) if text else math.nan  # empty: the throughput A/B's infinite bound, or no rounds
    except ValueError:
        return None
    return bound_text(value, _whole_number(rounds), column)


def _whole_number(text: str | None) -> int | None:
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return int(value) if math.isfinite(value) and value >= 0 and value == int(value) else None
