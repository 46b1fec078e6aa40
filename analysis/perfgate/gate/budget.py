"""gate.budget: one false-alarm budget for the whole gate with a baseline build (issue 28 item 1).

An unchanged commit must fail the whole gate, all its checks together, in at most 2 % of gates. The
budget is split, and the parts add up (a union bound: no assumption on how the parts depend):

- the A/B verdicts 1.5 %: the latency A/B's family-wise level (Holm over its tests), or, when the
  gate also runs the throughput A/B, 1.0 % for the latency A/B and 0.5 % for the throughput A/B;
- the gross requirement checks 0.5 % (latency.gross: a margin derived so that unchanged gates miss it
  in well under 0.5 %; docs/verdict.md says what that estimate rests on).

A lower level needs rounds: an exact sign test of n rounds reaches p = 2^-n at best, and Holm's first
step tests at level / m. So the gate asks its A/Bs for at least the rounds with which a test can
reject at all (quick) or can reject with one round against it (full: the property the 16 rounds of
the latency A/B were chosen for, docs/verdict.md), never fewer than the A/B's own default.
"""
from __future__ import annotations

WHOLE_GATE = 0.02
GROSS_CHECKS = 0.005
AB_VERDICTS = WHOLE_GATE - GROSS_CHECKS
THROUGHPUT_AB_SHARE = 0.005  # of AB_VERDICTS, when the gate runs the throughput A/B too


def ab_levels(throughput_ab: bool) -> tuple[float, float | None]:
    """The family-wise levels of the latency A/B and of the throughput A/B (None: not run)."""
    if not throughput_ab:
        return AB_VERDICTS, None
    # rounded: 0.015 - 0.005 is 0.009999999999999998 in binary, which every stored verdict would show
    return round(AB_VERDICTS - THROUGHPUT_AB_SHARE, 12), THROUGHPUT_AB_SHARE


def rounds_for(tests: int, level: float, default: int, *, one_round_against: bool) -> int:
    """The fewest rounds n (at least `default`) with which Holm's first step at level / tests can
    reject: 2^-n <= level / tests, or with one round against the rest, (n + 1) / 2^n <= level / tests."""
    smallest = level / max(1, tests)
    n = 1
    while ((n + 1) if one_round_against else 1) / 2 ** n > smallest:
        n += 1
    return max(default, n)
