"""A bisect step reads its A/B's own, curtailed decision: a sub-experiment the A/B stopped measuring once
its tests were decided has few rounds, and that is no reason to measure the step again (the real run on
Fast DDS master measured two steps again, with 2x and 4x the rounds, before this)."""
from __future__ import annotations

import shutil

from conftest import TESTS_DIR
from perfgate.bisect import driver, search

STEPS = TESTS_DIR / "data" / "bisect-steps"
THRESHOLD, ALPHA = 0.01, 0.02


def test_a_sub_experiment_decided_after_one_round_is_no_reason_to_measure_again(tmp_path):
    folder = shutil.copytree(STEPS / "01-b17122a89b-vs-baf5d3a011", tmp_path / "ab")
    measured = driver._measured(folder, THRESHOLD, ALPHA, 1)
    assert not measured.incomplete
    regressed = {search.Test("intraprocess_best_effort", "Median"), search.Test("intraprocess_best_effort", "90%")}
    assert measured.failed == regressed
    assert measured.ratios[search.Test("intraprocess_best_effort", "Median")] > 1.5  # the 2 us spin
    assert measured.rounds == 1  # interprocess_reliable's one round


def test_a_no_op_step_decided_after_one_round_is_good(tmp_path):
    folder = shutil.copytree(STEPS / "03-0628e14b06-vs-baf5d3a011", tmp_path / "ab")
    measured = driver._measured(folder, THRESHOLD, ALPHA, 0)
    assert not measured.incomplete and measured.failed == frozenset()
    change = {search.Test("intraprocess_best_effort", "Median"): 1.75, search.Test("intraprocess_best_effort", "90%"): 1.68}
    outcome, _ = search.classify(measured, change)
    assert outcome == search.GOOD


def test_without_the_curtailment_record_the_same_rounds_are_too_few(tmp_path):
    folder = shutil.copytree(STEPS / "03-0628e14b06-vs-baf5d3a011", tmp_path / "ab")
    (folder / "curtailed.json").unlink()
    assert driver._measured(folder, THRESHOLD, ALPHA, 0).incomplete
