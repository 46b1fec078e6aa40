"""A round whose harness fails is measured again, both arms (ab.attempts); a sub-experiment that keeps failing
is given up and the others are still decided; a regression proven on them stands (exit 1), an A/A is
INCOMPLETE (exit 3). Real A/Bs on the system Fast DDS, with harness processes killed from outside mid-round."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest

from conftest import live_processes_of
from perfgate import files
from perfgate import schema as s
from perfgate.ab import attempts

SUBS = ["intraprocess_best_effort", "interprocess_best_effort"]
KILLED = "interprocess_best_effort"  # its subscriber process (UDPv4) is the one killed
COMMON = ["--baseline", "system", "--candidate", "system", "--subexperiments", ",".join(SUBS),
          "--payloads", "16,1024", "--rounds", "10", "--samples", "100"]


class HarnessKiller:
    """Kills the UDPv4 subscriber processes of the A/B in `ab_dir` (found by the run id its metadata.json
    names, in their environment): the first `limit` of them (None: every one), each as soon as it is seen,
    in the middle of the round that started it."""

    def __init__(self, ab_dir: Path, limit: int | None) -> None:
        self.ab_dir, self.limit, self.killed = ab_dir, limit, []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run_id(self) -> str | None:
        try:
            return files.read_metadata(self.ab_dir)["run_id"]
        except Exception:  # not written yet, or being written
            return None

    def targets(self, run_id: str) -> list[int]:
        found = []
        for pid in live_processes_of(run_id):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"udpv4" in argv and b"subscriber" in argv and pid not in self.killed:
                found.append(pid)
        return found

    def run(self) -> None:
        run_id = None
        while not self.stop.wait(0.01):
            run_id = run_id or self.run_id()
            if run_id is None or (self.limit is not None and len(self.killed) >= self.limit):
                continue
            for pid in self.targets(run_id):  # at once: a short run could finish before a later kill
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                self.killed.append(pid)
                break

    def __enter__(self) -> HarnessKiller:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def ab_with_kills(output: Path, limit: int | None, *extra: str) -> tuple[subprocess.CompletedProcess, list[int]]:
    with HarnessKiller(output, limit) as killer:
        result = subprocess.run([sys.executable, "-m", "perfgate.cli", "ab", "--output", str(output), *COMMON, *extra],
                                capture_output=True, text=True, timeout=900)
    return result, killer.killed


def measured_rounds(ab_dir: Path, sub: str) -> list[str]:
    """The rounds in which both arms have the sub-experiment's summary."""
    return [r.name for r in sorted((ab_dir / s.AB_ROUNDS_DIR).iterdir())
            if all((r / arm / s.summary_csv_name(sub)).is_file() for arm in s.AB_ARMS)]


# --- the attempts, on their own ------------------------------------------------------------------------
class _Result:
    """What measure_attempts reads of a harness run: its outcome and error (a SubexperimentResult's)."""

    def __init__(self, outcome: str, error: str | None = None) -> None:
        self.outcome, self.error = outcome, error


def test_an_attempt_that_fails_is_measured_again_both_arms_until_one_finishes():
    calls, retries = [], []
    outcomes = [[_Result(s.OUTCOME_OK), _Result("timeout", "no sample for 1000 ms")],
                [_Result(s.OUTCOME_OK), _Result(s.OUTCOME_OK)]]
    attempted = attempts.measure_attempts(lambda: calls.append(1) or outcomes[len(calls) - 1],
                                          ["baseline", "candidate"], on_retry=lambda n, what: retries.append((n, what)))
    assert attempted.finished and len(calls) == 2
    assert attempted.results is outcomes[1]
    assert attempted.failed_attempts == ("attempt 1 of 3: candidate: no sample for 1000 ms",)
    assert retries == [(2, "candidate: no sample for 1000 ms")]


def test_three_failed_attempts_give_up_and_keep_the_last_results():
    failing = [_Result("crashed", "exit -9"), _Result(s.OUTCOME_OK)]
    calls = []
    attempted = attempts.measure_attempts(lambda: calls.append(1) or failing, ["candidate", "baseline"])
    assert not attempted.finished and len(calls) == attempts.ROUND_ATTEMPTS
    assert attempted.failed_attempts[-1] == "attempt 3 of 3: candidate: exit -9"


# --- real A/Bs --------------------------------------------------------------------------------------
def killed_sub_attempts(ab_dir: Path) -> dict[tuple[str, str], int]:
    """(round, arm) -> how many attempts the killed sub-experiment's harness run took in it (its own
    attempts in a fresh domain, measure.subexperiment), from each round's metadata.json."""
    return {(r.name, arm): files.read_metadata(r / arm)["subexperiments"][KILLED]["attempts"]
            for r in sorted((ab_dir / s.AB_ROUNDS_DIR).iterdir()) for arm in s.AB_ARMS}


@pytest.mark.heavy
def test_a_harness_killed_mid_round_is_measured_again_and_the_a_a_passes(harness_paths, tmp_path):
    """One UDPv4 subscriber killed as soon as it is seen. Where the kill lands decides what measures again,
    and each is what is meant for it: before its peers found each other, that arm's own next attempt in a
    fresh domain (measure.subexperiment); after, both arms of the round again (ab.attempts). Either way
    every round has both arms and the A/A passes. (The A/B attempts alone: the tests below.)"""
    output = tmp_path / "aa"
    done, killed = ab_with_kills(output, 1, "--all-rounds")
    assert len(killed) == 1
    assert done.returncode == s.EXIT_OK, done.stdout + done.stderr
    assert "PASS: no regression above +1.0% in 4 tests" in done.stdout
    metadata = files.read_metadata(output)
    assert metadata["failures"] == []
    if metadata["retried"]:  # killed while measuring
        assert len(metadata["retried"]) == 1 and KILLED in metadata["retried"][0]
        assert metadata["retried"][0].endswith("measured again")
        assert "measuring both arms again (attempt 2 of 3)" in done.stderr
    else:  # killed before discovery completed
        again = {key: n for key, n in killed_sub_attempts(output).items() if n > 1}
        assert list(again.values()) == [2], killed_sub_attempts(output)
        assert "trying again in a fresh domain" in done.stderr
        assert "measuring both arms again" not in done.stderr
    # every round has both arms of both sub-experiments: the killed one's pair is the second attempt's
    for sub in SUBS:
        assert measured_rounds(output, sub) == [f"{i:02d}" for i in range(1, 11)]
    assert live_processes_of(metadata["run_id"]) == []


@pytest.mark.heavy
def test_a_sub_experiment_that_keeps_failing_leaves_a_proven_regression_standing(harness_paths, tmp_path):
    # +20 us on every intra-process round trip of the candidate (a few us without): a regression the
    # other sub-experiment proves, while every UDPv4 subscriber is killed
    output = tmp_path / "regressed"
    done, killed = ab_with_kills(output, None, "--inject-delay-ns", "intraprocess_best_effort=20000")
    assert killed  # (one or both arms' subscribers per attempt: in turns both run at once)
    assert done.returncode == s.EXIT_REGRESSION, done.stdout + done.stderr
    verdict = files.read_json_object(output / s.VERDICT_JSON, "verdict")
    assert verdict["status"] == "REGRESSION"
    assert verdict["headline"].startswith("REGRESSION: ") and " of 4 tests " in verdict["headline"]
    assert "could not finish, decided without them: round 01 interprocess_best_effort: attempt 3 of 3" \
        in verdict["headline"]
    table = pd.read_csv(output / s.VERDICT_CSV)
    assert set(table.loc[table[s.STATUS] == s.FAILED, s.EXPERIMENT_TYPE]) == {"intraprocess_best_effort"}
    assert measured_rounds(output, KILLED) == []
    given_up = [line for line in done.stderr.splitlines() if line.endswith("is measured in no later round")]
    assert len(given_up) == 1 and f"round 01 {KILLED}: every one of 3 attempts failed" in given_up[0]
    metadata = files.read_metadata(output)
    # one round's attempts, then never measured again
    assert len(metadata["failures"]) == 1 and metadata["failures"][0].startswith(f"round 01 {KILLED}: attempt 3 of 3: ")
    assert metadata["retried"] == []
    assert live_processes_of(metadata["run_id"]) == []


@pytest.mark.heavy
def test_an_a_a_whose_sub_experiment_keeps_failing_is_incomplete_and_decides_the_other(harness_paths, tmp_path):
    output = tmp_path / "aa"
    done, killed = ab_with_kills(output, None)
    assert killed
    assert done.returncode == s.EXIT_INCOMPLETE, done.stdout + done.stderr
    verdict = files.read_json_object(output / s.VERDICT_JSON, "verdict")
    assert verdict["status"] == "INCOMPLETE"
    assert "1 sub-experiment run(s) could not finish" in verdict["headline"]
    table = pd.read_csv(output / s.VERDICT_CSV)
    decided = table[table[s.EXPERIMENT_TYPE] == "intraprocess_best_effort"]
    assert list(decided[s.STATUS]) == [s.PASSED, s.PASSED]
    assert measured_rounds(output, KILLED) == []
    assert len(measured_rounds(output, "intraprocess_best_effort")) >= 1
    metadata = files.read_metadata(output)
    assert len(metadata["failures"]) == 1 and metadata["failures"][0].startswith(f"round 01 {KILLED}: attempt 3 of 3: ")
    assert live_processes_of(metadata["run_id"]) == []
