"""bisect.search: the pure search for the commit that made a regression, measured A/B by A/B.

commits[0] is good, commits[-1] is bad. First the A/B of bad against good must show the regression
(the verdict's exact sign test with Holm, ab/verdict.py); its failed tests (sub-experiment x
statistic) and their ratios are "the change"; too few usable rounds there is measured again
with 2x, 4x the rounds too. Then, as `git bisect` does, a commit between the last
known good and the first known bad is measured against good on the regressed sub-experiments, and
classified by where its change lies relative to the whole change, in log scale (so that 2x then 2x
again is half and half):

    fraction f = log(ratio of the step) / log(ratio of bad)   per failed test of the confirmation

    bad        every test failed the verdict's test and f >= HIGH
    good       no test failed and f <= LOW
    ambiguous  anything else: the commit moved by a fraction of the change, or the verdict and the
               size disagree (too few rounds, noise): measured again with twice the rounds, at most
               MORE_ROUNDS times, and then the search stops (exit 3) rather than guess

Every A/B is decided at the layout thresholds (docs/verdict.md): a test is failed only above
max(threshold, its sub-experiment's layout threshold). A step whose tests pass because they are
layout-sized while f >= HIGH stays ambiguous on purpose: its move is most of the change, yet no larger
than one code layout alone can make, so neither side is known; more rounds make the test sharper,
and a move truly above the layout bound then fails (bad), while one at the bound stays undecided.

A commit whose build fails, or that is no Fast DDS source at all, is skipped, as `git bisect skip`
does (with why), and the next one nearest the middle is measured. When only skipped commits are left between good and bad, the culprit is one of them or
bad: exit 3 naming them. Finally the A/B of the culprit against its parent must show the regression
(any failed test); when the parent is good and the culprit is bad, the confirmation was that A/B.

The error rate of a step is the verdict's: a false "bad" needs the family-wise false alarm (alpha)
of its A/B; the ambiguity band keeps a commit that moved by part of the change from being forced to
either side. The cost is at most ceil(log2(n)) steps for n commits after good when nothing is
skipped or ambiguous, plus the confirmation and the culprit's A/B.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

LOW, HIGH = 0.25, 0.75  # below a quarter of the change: good; above three quarters: bad
MORE_ROUNDS = 2  # an ambiguous step is measured again with 2x, then 4x the rounds

# what a step found
BAD, GOOD, AMBIGUOUS, SKIPPED, NO_REGRESSION, REGRESSED = (
    "bad", "good", "ambiguous", "skipped (build failed)", "no regression", "regressed")
CONFIRM, STEP, CULPRIT = "confirm", "step", "culprit"  # what an A/B was for

# the end
FOUND, NOT_REGRESSED, UNDECIDED = "culprit found", "no regression", "cannot decide"
EXIT_CODES = {FOUND: 1, NOT_REGRESSED: 0, UNDECIDED: 3}


@dataclass(frozen=True)
class Test:
    """One test of an A/B's verdict: a sub-experiment and a statistic (Median, 90%)."""
    subexperiment: str
    statistic: str

    def __str__(self) -> str:
        return f"{self.subexperiment} {self.statistic}"


@dataclass(frozen=True)
class Measured:
    """What one A/B of a candidate against a baseline says (from its verdict)."""
    ratios: dict[Test, float]  # candidate / baseline
    lower_bounds: dict[Test, float]
    failed: frozenset[Test]  # the tests the verdict failed (Holm, family-wise alpha), each at its bound
    incomplete: bool = False  # too few usable rounds, or a run that did not finish
    rounds: int = 0
    folder: str = ""  # where the A/B's files are
    # the verdict's layout-sized tests: passed at their sub-experiment's layout threshold, which the
    # global threshold alone would have failed (ab.verdict LAYOUT_SIZED); reported, never a failure
    layout_sized: frozenset[Test] = frozenset()
    thresholds: dict[Test, float] = field(default_factory=dict)  # each test's bound: max(threshold, layout)


@dataclass(frozen=True)
class Unbuilt:
    """What a Measure gives for a commit it could not build: its build failed, or it is no Fast DDS
    source (a commit that moved or lost the CMake project): skipped, with why."""
    commit: int
    why: str


@dataclass(frozen=True)
class Step:
    kind: str  # CONFIRM, STEP, CULPRIT
    commit: int  # index into the commits
    against: int
    outcome: str  # BAD, GOOD, AMBIGUOUS, SKIPPED, REGRESSED, NO_REGRESSION
    measured: Measured | None  # None: the build failed
    wall_s: float = 0.0
    why: str = ""


@dataclass
class Result:
    status: str  # FOUND, NOT_REGRESSED, UNDECIDED
    why: str
    steps: list[Step] = field(default_factory=list)
    change: dict[Test, float] = field(default_factory=dict)  # bad against good, the failed tests
    culprit: int | None = None
    culprit_change: Measured | None = None  # the culprit against its parent
    skipped: list[int] = field(default_factory=list)
    candidates: list[int] = field(default_factory=list)  # when undecided: where the culprit may be

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    @property
    def ab_count(self) -> int:
        return sum(step.measured is not None for step in self.steps)


def fraction(ratio: float, whole: float) -> float:
    """Where `ratio` lies between no change (0) and the whole change `whole` (1), in log scale."""
    if not (ratio > 0 and whole > 0 and math.isfinite(ratio) and math.isfinite(whole)) or whole == 1:
        return math.nan
    return math.log(ratio) / math.log(whole)


def classify(measured: Measured, change: dict[Test, float], low: float = LOW, high: float = HIGH) -> tuple[str, str]:
    """A step's outcome (BAD, GOOD or AMBIGUOUS) and why, from its A/B against good."""
    if measured.incomplete:
        return AMBIGUOUS, "too few usable rounds to decide"
    fractions = {test: fraction(measured.ratios.get(test, math.nan), whole) for test, whole in change.items()}
    said = ", ".join(f"{test} {f:.0%} of the change" if math.isfinite(f) else f"{test} not measured"
                     for test, f in fractions.items())
    bad = all(test in measured.failed and f >= high for test, f in fractions.items())
    good = all(test not in measured.failed and f <= low for test, f in fractions.items())
    if bad:
        return BAD, said
    if good:
        return GOOD, said
    sized = [test for test in change if test in measured.layout_sized]
    return AMBIGUOUS, said + ("; verdict failed " + ", ".join(map(str, sorted(measured.failed, key=str)))
                              if measured.failed else "; verdict passed") + (
        "; layout-sized: " + ", ".join(map(str, sized)) if sized else "")


def next_commit(good: int, bad: int, skipped: set[int]) -> int | None:
    """The commit nearest the middle of (good, bad) that is not skipped (the lower one on a tie); None
    when none is left."""
    left = [i for i in range(good + 1, bad) if i not in skipped]
    if not left:
        return None
    middle = (good + bad) / 2
    return min(left, key=lambda i: (abs(i - middle), i))


def step_budget(commits: int) -> int:
    """The A/Bs a search over `commits` commits (good included) needs when nothing is skipped or
    ambiguous: ceil(log2(n)) steps for the n commits after good, the confirmation and the culprit's."""
    n = commits - 1
    return math.ceil(math.log2(n)) + 2 if n > 1 else 2


# what the driver gives: build `commit` (an index) and measure it against `against` on `tests`
# (None: the whole request) with `rounds` (None: the request's); Unbuilt when one of the two could
# not be built (None: the same, without a reason)
Measure = Callable[[int, int, "list[Test] | None", "int | None"], "tuple[Measured | Unbuilt | None, float]"]


def skip_reason(unbuilt: Unbuilt | None) -> str:
    return "build failed" if unbuilt is None else f"build failed: {unbuilt.why}"


def _measure_until_clear(measure: Measure, kind: str, commit: int, against: int, change: dict[Test, float],
                         rounds: int, steps: list[Step], decide) -> tuple[str, str]:
    """Measure, and again with 2x, 4x the rounds while the outcome is AMBIGUOUS; returns the last."""
    outcome, why = AMBIGUOUS, ""
    for more in range(MORE_ROUNDS + 1):
        measured, wall = measure(commit, against, list(change), rounds * 2 ** more)
        if not isinstance(measured, Measured):
            steps.append(Step(kind, commit, against, SKIPPED, None, wall, skip_reason(measured)))
            return SKIPPED, skip_reason(measured)
        outcome, why = decide(measured)
        steps.append(Step(kind, commit, against, outcome, measured, wall, why))
        if outcome != AMBIGUOUS:
            break
    return outcome, why


class Stop(Exception):
    """Raised by a Measure that cannot go on (an A/B that failed): the search ends, undecided."""


def bisect(count: int, measure: Measure, rounds: int) -> Result:
    """The search over `count` commits (0 good, count - 1 bad) with `measure` (see Measure)."""
    if count < 2:
        raise ValueError("a bisection needs a good and a bad commit")
    steps: list[Step] = []
    try:
        return _search(count, measure, rounds, steps)
    except Stop as stop:
        return Result(UNDECIDED, str(stop), steps)


def _search(count: int, measure: Measure, rounds: int, steps: list[Step]) -> Result:
    good, bad = 0, count - 1
    for more in range(MORE_ROUNDS + 1):  # too few usable rounds: more rounds, as for a step
        measured, wall = measure(bad, good, None, None if more == 0 else rounds * 2 ** more)
        if not isinstance(measured, Measured):
            which = bad if measured is None else measured.commit
            steps.append(Step(CONFIRM, which, good if which == bad else bad, SKIPPED, None, wall, skip_reason(measured)))
            return Result(UNDECIDED, f"the build of {'bad' if which == bad else 'good'} failed, nothing to compare: "
                                     f"{skip_reason(measured)}", steps, skipped=[which])
        confirmed = bool(measured.failed) and not measured.incomplete
        steps.append(Step(CONFIRM, bad, good, REGRESSED if confirmed else
                          AMBIGUOUS if measured.incomplete else NO_REGRESSION, measured, wall,
                          "too few usable rounds to decide" if measured.incomplete else ""))
        if not measured.incomplete:
            break
    if measured.incomplete:
        return Result(UNDECIDED, f"the A/B of bad against good has too few usable rounds after {MORE_ROUNDS} more "
                                 "measurements", steps)
    if not confirmed:
        return Result(NOT_REGRESSED, "bad does not regress against good", steps)
    change = {test: measured.ratios[test] for test in sorted(measured.failed, key=str)}
    result = Result(UNDECIDED, "", steps, change)
    skipped: set[int] = set()

    def against_change(step: Measured) -> tuple[str, str]:
        return classify(step, change)

    while (commit := next_commit(good, bad, skipped)) is not None:
        outcome, why = _measure_until_clear(measure, STEP, commit, 0, change, rounds, steps, against_change)
        if outcome == SKIPPED:
            skipped.add(commit)
        elif outcome == BAD:
            bad = commit
        elif outcome == GOOD:
            good = commit
        else:
            result.why = f"commit {commit} stays ambiguous after {MORE_ROUNDS} more measurements: {why}"
            result.candidates = list(range(good + 1, bad + 1))
            break
    result.skipped = sorted(skipped)
    if result.why:
        return result
    if bad - good > 1:  # only skipped commits left between them
        result.candidates = [i for i in range(good + 1, bad + 1)]
        result.why = "only commits whose build failed are left between the last good and the first bad commit"
        return result
    result.culprit = bad
    if bad == count - 1 and good == 0:
        result.culprit_change = measured  # the confirmation was the culprit against its parent
    else:
        def regressed(step: Measured) -> tuple[str, str]:
            if step.incomplete:
                return AMBIGUOUS, "too few usable rounds to decide"
            return (REGRESSED, "") if step.failed else (NO_REGRESSION, "the verdict passed")

        outcome, why = _measure_until_clear(measure, CULPRIT, bad, bad - 1, change, rounds, steps, regressed)
        if outcome != REGRESSED:
            result.culprit = None
            result.candidates = [bad]
            result.why = (f"commit {bad} is the first bad one against good, but its A/B against its parent does "
                          f"not show the regression ({outcome}: {why}); the change may be spread over commits")
            return result
        result.culprit_change = steps[-1].measured
    result.status, result.why = FOUND, f"commit {bad} regresses against its parent"
    return result
