"""One verdict notion: the words a run's result is told in and the exit code each one is.

`check`, `junit`, `check-throughput`, `verdict` (the A/B), the gate's report and the gate itself all
decide with `verdict_of` and turn words into exit codes with `exit_code`; the gate keeps the most
severe of its steps' codes with `most_severe` (docs/formats.md section 11).
"""
from __future__ import annotations

from . import schema as s

PASS = "PASS"
REGRESSION = "REGRESSION"
INCOMPLETE = "INCOMPLETE"  # a result is missing: never a pass
MEASURED = "MEASURED"  # measured with nothing to check against (the gate's throughput without requirements)
VERDICTS = (PASS, REGRESSION, INCOMPLETE, MEASURED)

_EXIT_CODES = {PASS: s.EXIT_OK, MEASURED: s.EXIT_OK, REGRESSION: s.EXIT_REGRESSION, INCOMPLETE: s.EXIT_INCOMPLETE}

# Which exit code wins, least severe first: bad input found on the way (2) makes any verdict
# meaningless; a regression (1) that was proven stays proven whatever else is missing (each test keeps
# its error rate on the data it had), so it beats a missing result (3), which leaves only a pass unproven.
SEVERITY = (s.EXIT_OK, s.EXIT_INCOMPLETE, s.EXIT_REGRESSION, s.EXIT_USAGE)


def verdict_of(*, incomplete: bool, regressed: bool) -> str:
    """A proven regression outranks missing data (both are reported); missing data outranks a pass."""
    if regressed:
        return REGRESSION
    return INCOMPLETE if incomplete else PASS


def exit_code(verdict: str) -> int:
    return _EXIT_CODES[verdict]


def most_severe(*codes: int) -> int:
    """The most severe of exit codes (2 over 1 over 3 over 0); codes that are none of these (a step
    that was not run) are left out."""
    known = [code for code in codes if code in SEVERITY]
    return max(known, key=SEVERITY.index) if known else s.EXIT_OK
