"""ab.attempts: one sub-experiment of one round, measured again (both arms) when an arm's harness failed.

A harness that fails in one round (a timeout on a loaded machine, a subscriber that acknowledged
nothing, a crash, a kill) says nothing about either build, and one bad round must not void the rounds
before it. So both arms of that sub-experiment are measured again in the same round and the same order,
and the round keeps the pair of the attempt that finished: both halves of a pair always come from one
attempt, one machine state. Only a sub-experiment whose every attempt fails is given up: it is measured
in no later round and is what the A/B could not decide; the other sub-experiments go on and are decided
(docs/verdict.md, "A round that fails").

The retries never change a test's error rate: a failed attempt gives no d at all, and whether an attempt
fails is decided by the harness, not by which arm measured faster.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from .. import schema as s

# a sub-experiment is measured up to this many times in one round; three attempts that all fail are no
# longer the machine's bad moment but the sub-experiment's (or a build's) own failure
ROUND_ATTEMPTS = 3


@dataclass(frozen=True)
class Attempted:
    """The last attempt's results (one per arm, in measuring order) and one line per failed attempt."""

    results: list
    failed_attempts: tuple[str, ...]

    @property
    def finished(self) -> bool:
        return all(result.outcome == s.OUTCOME_OK for result in self.results)


def failed_arms(arm_names: Sequence[str], results: list) -> str:
    """`candidate: <error>; baseline: <error>`: the arms of one attempt that did not finish."""
    return "; ".join(f"{name}: {result.error}" for name, result in zip(arm_names, results)
                     if result.outcome != s.OUTCOME_OK)


def measure_attempts(measure: Callable[[], list], arm_names: Sequence[str], attempts: int = ROUND_ATTEMPTS,
                     on_retry: Callable[[int, str], None] | None = None) -> Attempted:
    """Call `measure` (both arms of one sub-experiment, in `arm_names`' order) until every arm finishes,
    at most `attempts` times. `on_retry(next attempt number, what failed)` is told before each new attempt."""
    failed: list[str] = []
    for attempt in range(1, attempts + 1):
        results = measure()
        attempted = Attempted(results, tuple(failed))
        if attempted.finished:
            return attempted
        what = failed_arms(arm_names, results)
        failed.append(f"attempt {attempt} of {attempts}: {what}")
        if attempt < attempts and on_retry is not None:
            on_retry(attempt + 1, what)
    return Attempted(results, tuple(failed))


def unfinished(metadata) -> tuple[str, ...]:
    """What an A/B folder's metadata.json says did not finish (one line each), as the verdict reports it."""
    return tuple(str(line) for line in ((metadata.failures if metadata is not None else None) or ()))


def unfinished_text(lines: Sequence[str]) -> str:
    """The headline's part for what did not finish: the other sub-experiments are decided all the same."""
    return f"{len(lines)} sub-experiment run(s) could not finish, decided without them: " + "; ".join(lines)
