"""perfgate.outcome: the one verdict and which exit code wins."""
from __future__ import annotations

import pytest

from perfgate import outcome
from perfgate import schema as s


@pytest.mark.parametrize("codes, expected", [
    ((s.EXIT_OK, s.EXIT_REGRESSION), s.EXIT_REGRESSION),
    # issue 44: a regression proven by one step stands when another step could not finish
    ((s.EXIT_REGRESSION, s.EXIT_INCOMPLETE), s.EXIT_REGRESSION),
    ((s.EXIT_OK, s.EXIT_INCOMPLETE), s.EXIT_INCOMPLETE),
    ((s.EXIT_INCOMPLETE, s.EXIT_USAGE, s.EXIT_REGRESSION), s.EXIT_USAGE),  # bad input makes any verdict meaningless
    ((s.EXIT_OK, None, 130), s.EXIT_OK),  # a step not run (None) or a code of no verdict is left out
])
def test_the_most_severe_code_is_2_then_1_then_3_then_0(codes, expected):
    assert outcome.most_severe(*codes) == expected


def test_a_proven_regression_outranks_missing_data_and_each_verdict_has_its_code():
    assert outcome.verdict_of(incomplete=True, regressed=True) == outcome.REGRESSION
    assert outcome.verdict_of(incomplete=True, regressed=False) == outcome.INCOMPLETE
    assert outcome.verdict_of(incomplete=False, regressed=True) == outcome.REGRESSION
    assert outcome.verdict_of(incomplete=False, regressed=False) == outcome.PASS
    assert [outcome.exit_code(v) for v in outcome.VERDICTS] == [s.EXIT_OK, s.EXIT_REGRESSION, s.EXIT_INCOMPLETE, s.EXIT_OK]
