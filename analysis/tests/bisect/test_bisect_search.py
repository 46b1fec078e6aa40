"""bisect.search and bisect.commits without processes: the search over a model of commits whose true
change against good is known, each "A/B" answered from that model the way the verdict answers
(a ratio, a lower bound, failed above the threshold), so every path of the search is exercised:
the culprit in the middle within ceil(log2(n)) + 2 A/Bs, no regression, skipped builds, an ambiguous
step measured again with more rounds, a culprit whose parent A/B does not confirm it."""
from __future__ import annotations

import math

import pytest

from perfgate.bisect import commits as history
from perfgate.bisect import search
from perfgate.errors import InputError

MEDIAN = search.Test("interprocess_best_effort", "Median")
P90 = search.Test("interprocess_best_effort", "90%")
OTHER = search.Test("intraprocess_best_effort", "Median")


class Model:
    """Commits whose log latency against good is `levels[i]` (per test); `broken` fail to build;
    `noisy[(commit, rounds)]` answers incomplete. Records every A/B asked for."""

    def __init__(self, levels, broken=(), noisy=(), tests=(MEDIAN, P90), threshold=0.01):
        self.levels, self.broken, self.noisy, self.tests, self.threshold = levels, set(broken), set(noisy), tests, threshold
        self.asked = []

    def __call__(self, commit, against, tests, rounds):
        self.asked.append((commit, against, tests, rounds))
        if commit in self.broken or against in self.broken:
            return None, 1.0
        tests = tests if tests is not None else list(self.tests)
        ratios = {t: math.exp(self.levels[commit] - self.levels[against]) for t in tests}
        if (commit, rounds) in self.noisy:
            return search.Measured(ratios, ratios, frozenset(), incomplete=True, rounds=rounds or 16), 2.0
        failed = frozenset(t for t, r in ratios.items() if r > 1 + self.threshold)
        return search.Measured(ratios, {t: r ** 0.9 for t, r in ratios.items()}, failed, rounds=rounds or 16), 2.0

    @property
    def ab_count(self):
        return sum(1 for commit, against, *_ in self.asked if commit not in self.broken and against not in self.broken)


def step(levels_at: int, count: int = 12, size: float = math.log(1.5)) -> list[float]:
    """count commits, the change (a +50 % latency) made by commit `levels_at`."""
    return [size if i >= levels_at else 0.0 for i in range(count)]


@pytest.mark.parametrize("culprit", range(1, 12))
def test_the_culprit_is_found_within_the_budget_wherever_it_is(culprit):
    model = Model(step(culprit))
    result = search.bisect(12, model, rounds=16)
    assert (result.status, result.exit_code, result.culprit) == (search.FOUND, 1, culprit)
    assert result.ab_count == model.ab_count <= search.step_budget(12) == math.ceil(math.log2(11)) + 2
    assert result.change == {MEDIAN: pytest.approx(1.5), P90: pytest.approx(1.5)}
    # the confirmation measures the whole request, every step only the regressed tests, against good
    assert model.asked[0] == (11, 0, None, None)
    assert all(set(tests) == {MEDIAN, P90} and rounds == 16 for _, _, tests, rounds in model.asked[1:])
    assert (result.steps[-1].kind, result.steps[-1].against) == (search.CULPRIT, culprit - 1)
    assert result.culprit_change.failed == frozenset({MEDIAN, P90})


def test_the_last_step_is_the_culprit_against_its_parent():
    model = Model(step(5))
    result = search.bisect(12, model, rounds=16)
    assert (result.steps[-1].kind, result.steps[-1].commit, result.steps[-1].against) == (search.CULPRIT, 5, 4)
    assert [s.kind for s in result.steps[:-1]] == [search.CONFIRM] + [search.STEP] * (len(result.steps) - 2)
    assert all(s.against == 0 for s in result.steps[:-1])


def test_two_commits_the_confirmation_is_the_culprits_ab():
    model = Model(step(1, count=2))
    result = search.bisect(2, model, rounds=16)
    assert (result.status, result.culprit, result.ab_count) == (search.FOUND, 1, 1)


def test_bad_that_does_not_regress_is_exit_0_after_one_ab():
    model = Model([0.0] * 12)
    result = search.bisect(12, model, rounds=16)
    assert (result.status, result.exit_code, result.ab_count, result.culprit) == (search.NOT_REGRESSED, 0, 1, None)
    assert result.steps[0].outcome == search.NO_REGRESSION


def test_an_improvement_is_no_regression():
    result = search.bisect(12, Model(step(4, size=math.log(0.5))), rounds=16)
    assert result.status == search.NOT_REGRESSED


def test_a_broken_build_is_skipped_and_reported():
    # the first midpoint (5 of 0..11) does not build: its neighbour nearest the middle is measured
    model = Model(step(7), broken={5})
    result = search.bisect(12, model, rounds=16)
    assert (result.status, result.culprit, result.skipped) == (search.FOUND, 7, [5])
    skipped = [s for s in result.steps if s.outcome == search.SKIPPED]
    assert [(s.commit, s.measured) for s in skipped] == [(5, None)]
    assert result.ab_count <= search.step_budget(12) + 1


def test_only_skipped_commits_left_cannot_decide():
    # the culprit 6 sits right after a broken 5: the first bad is 6 or 5 cannot be told... here 5 and 6
    # both broken, culprit 6: between the last good 4 and the first bad 7 only skipped commits remain
    model = Model(step(6), broken={5, 6})
    result = search.bisect(12, model, rounds=16)
    assert (result.status, result.exit_code, result.culprit) == (search.UNDECIDED, 3, None)
    assert result.candidates == [5, 6, 7] and result.skipped == [5, 6]
    assert "build failed" in result.why


def test_a_broken_good_or_bad_cannot_decide():
    result = search.bisect(12, Model(step(6), broken={11}), rounds=16)
    assert (result.status, result.ab_count) == (search.UNDECIDED, 0)


def test_an_ambiguous_step_measures_more_rounds_then_stops():
    # two commits each make half the change: commit 6 (of 0..11) moved by half of it
    half = math.log(1.5) / 2
    levels = [0.0] * 3 + [half] * 6 + [2 * half] * 3
    model = Model(levels)
    result = search.bisect(12, model, rounds=16)
    assert (result.status, result.exit_code) == (search.UNDECIDED, 3)
    ambiguous = [(commit, rounds) for commit, against, tests, rounds in model.asked[1:] if commit == 5 or commit == 6]
    assert [rounds for _, rounds in ambiguous] == [16, 32, 64]  # twice, then four times the rounds
    assert "50% of the change" in result.why and "ambiguous" in result.why
    assert result.candidates == list(range(1, 12))  # nothing was decided: the culprit may be any of them


def test_a_noisy_step_is_measured_again_not_guessed():
    model = Model(step(8), noisy={(5, 16)})  # 5's first A/B has too few usable rounds
    result = search.bisect(12, model, rounds=16)
    assert (result.status, result.culprit) == (search.FOUND, 8)
    fives = [(s.outcome, s.measured.rounds) for s in result.steps if s.commit == 5]
    assert fives == [(search.AMBIGUOUS, 16), (search.GOOD, 32)]


def test_a_confirmation_with_too_few_usable_rounds_is_measured_again():
    model = Model(step(4), noisy={(11, None)})
    result = search.bisect(12, model, rounds=16)
    assert (result.status, result.culprit) == (search.FOUND, 4)
    assert [(s.kind, s.outcome, s.measured.rounds) for s in result.steps[:2]] == [
        (search.CONFIRM, search.AMBIGUOUS, 16), (search.CONFIRM, search.REGRESSED, 32)]
    stuck = search.bisect(12, Model(step(4), noisy={(11, None), (11, 32), (11, 64)}), rounds=16)
    assert (stuck.status, stuck.ab_count) == (search.UNDECIDED, 3) and "too few usable rounds" in stuck.why


def test_a_culprit_its_parent_does_not_confirm_cannot_decide():
    # between good and bad the latency creeps up by a sixth of the change per commit after 5: the first
    # commit beyond three quarters regresses against good but hardly against its parent
    levels = [0.0] * 6 + [math.log(1.5) * k / 6 for k in range(1, 7)]
    model = Model(levels, threshold=0.1)
    result = search.bisect(12, model, rounds=16)
    assert result.status == search.UNDECIDED and result.culprit is None


def test_a_measurement_that_stops_ends_undecided_with_its_reason():
    def measure(commit, against, tests, rounds):
        raise search.Stop("the A/B of x against y failed: harness crashed")
    result = search.bisect(5, measure, rounds=16)
    assert (result.status, result.why) == (search.UNDECIDED, "the A/B of x against y failed: harness crashed")


# --- the pieces -------------------------------------------------------------------------------------
def test_classify_needs_the_verdict_and_the_size_to_agree():
    change = {MEDIAN: 2.0}
    def measured(ratio, failed):
        return search.Measured({MEDIAN: ratio}, {MEDIAN: ratio}, frozenset({MEDIAN}) if failed else frozenset())
    assert search.classify(measured(1.9, True), change)[0] == search.BAD
    assert search.classify(measured(1.0, False), change)[0] == search.GOOD
    assert search.classify(measured(2 ** 0.5, True), change)[0] == search.AMBIGUOUS  # half, in log scale
    assert search.classify(measured(1.9, False), change)[0] == search.AMBIGUOUS  # size says bad, test did not
    assert search.classify(measured(1.05, True), change)[0] == search.AMBIGUOUS  # failed, but a small part
    two = {MEDIAN: 2.0, OTHER: 2.0}  # two regressions that disagree: not decided by one of them
    split = search.Measured({MEDIAN: 2.0, OTHER: 1.0}, {MEDIAN: 2.0, OTHER: 1.0}, frozenset({MEDIAN}))
    assert search.classify(split, two)[0] == search.AMBIGUOUS


def test_next_commit_is_nearest_the_middle_and_not_skipped():
    assert search.next_commit(0, 11, set()) == 5
    assert search.next_commit(0, 11, {5}) == 6
    assert search.next_commit(0, 11, {5, 6}) == 4
    assert search.next_commit(4, 5, set()) is None
    assert search.next_commit(4, 7, {5, 6}) is None


def test_step_budget():
    assert [search.step_budget(n) for n in (2, 3, 5, 12, 13, 17)] == [2, 3, 4, 6, 6, 6]


def test_first_parent_range_and_log_parsing():
    shas = [f"{i:x}" * 40 for i in range(1, 6)]
    text = "\0".join("\n".join((sha, f"2026-01-0{i}T00:00:00Z", "A. Author", f"subject {i}"))
                     for i, sha in enumerate(reversed(shas)))
    newest_first = history.parse_log(text + "\0not a commit record\0")
    assert [c.sha for c in newest_first] == list(reversed(shas))
    assert [c.sha for c in history.first_parent_range(newest_first, shas[1])] == shas[1:]
    assert history.first_parent_range(newest_first, "f" * 40) is None


def test_commit_links_only_for_github():
    sha = "a" * 40
    assert history.commit_link("https://github.com/eProsima/Fast-DDS.git", sha) == \
        f"https://github.com/eProsima/Fast-DDS/commit/{sha}"
    assert history.commit_link("git@github.com:eProsima/Fast-DDS.git", sha) == \
        f"https://github.com/eProsima/Fast-DDS/commit/{sha}"
    assert history.commit_link("/srv/git/Fast-DDS", sha) is None
    assert history.commit_link("https://github.com/a/b\"><script>", sha) is None


@pytest.mark.parametrize("text", ["HEAD~1", "parent:main", "merge-base:a,b", "-x", "a b", ""])
def test_good_and_bad_are_plain_revisions(text):
    with pytest.raises(InputError, match="--good"):
        history.require_ref(text, "--good")
