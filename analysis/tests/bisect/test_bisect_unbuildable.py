"""issue 25: what `perfgate bisect` does with commits it cannot build or fetch, on real git repositories
(conftest.fastdds_history: main A-B-C, whose commits hold no Fast DDS source) and on the search's model:

- a commit that is no Fast DDS source is skipped like a failed build (`git bisect skip`), reported as
  skipped with why, not the end of the bisect with an error;
- a --good/--bad that looks like an abbreviated commit and names no branch or tag is exit 2 in one
  line saying to give the full sha (git fetches a commit by its full sha only);
- git's stderr of several lines is printed one console line each, escaped, not as one line holding `\\n`.
"""
from __future__ import annotations

import json
import math

from conftest import git_in, perfgate_in_process
from perfgate import schema as s
from perfgate.bisect import commits as history
from perfgate.bisect import names as bisect_names
from perfgate.bisect import report, search

MEDIAN = search.Test("interprocess_best_effort", "Median")
NO_CMAKE = "not a Fast DDS source: no CMakeLists.txt"


def bisect(tmp_path, good, bad, url):
    return perfgate_in_process("bisect", "--workspace", str(tmp_path / "ws"), "--git-url", str(url), "--good", good,
                               "--bad", bad, "--output", str(tmp_path / "out"), "--subexperiments",
                               "interprocess_best_effort", "--payloads", "16", "--quick", "--no-plots")


class Commits:
    """Commits whose Median against good is 1.5x from `culprit` on; `unbuilt` are no Fast DDS source."""

    def __init__(self, culprit: int, unbuilt: dict[int, str]):
        self.culprit, self.unbuilt, self.asked = culprit, unbuilt, []

    def __call__(self, commit, against, tests, rounds):
        self.asked.append(commit)
        for index in (against, commit):
            if index in self.unbuilt:
                return search.Unbuilt(index, self.unbuilt[index]), 1.0
        ratio = 1.5 ** ((commit >= self.culprit) - (against >= self.culprit))
        failed = frozenset({MEDIAN}) if ratio > 1.01 else frozenset()
        return search.Measured({MEDIAN: ratio}, {MEDIAN: ratio ** 0.9}, failed, rounds=rounds or 16), 2.0


def test_a_commit_that_is_no_fast_dds_source_is_skipped_with_why_and_the_culprit_still_found():
    model = Commits(culprit=7, unbuilt={5: NO_CMAKE})
    result = search.bisect(12, model, rounds=16)
    assert (result.status, result.culprit, result.skipped) == (search.FOUND, 7, [5])
    skipped = [step for step in result.steps if step.outcome == search.SKIPPED]
    assert [(step.commit, step.measured, step.why) for step in skipped] == [(5, None, f"build failed: {NO_CMAKE}")]
    commits = [history.Commit(f"{i:040x}", f"commit {i}", "a", "2026-01-01") for i in range(12)]
    bisection = report.Bisection(result, commits, "/srv/git/x", 0.01, 0.02, 1.0)
    written = report.bisect_json(bisection)
    assert written["skipped"] == [{**report.commit_json(bisection, 5), "why": f"build failed: {NO_CMAKE}"}]
    assert f"skipped {commits[5].short}: build failed: {NO_CMAKE}" in report.summary_lines(bisection)
    assert f"build failed: {NO_CMAKE}" in report.markdown(bisection)


def test_good_that_is_no_fast_dds_source_cannot_be_decided_and_says_which_and_why():
    result = search.bisect(12, Commits(culprit=7, unbuilt={0: NO_CMAKE}), rounds=16)
    assert (result.status, result.exit_code, result.skipped) == (search.UNDECIDED, 3, [0])
    assert result.why == f"the build of good failed, nothing to compare: build failed: {NO_CMAKE}"
    assert (result.steps[0].commit, result.steps[0].against, result.steps[0].outcome) == (0, 11, search.SKIPPED)
    bad = search.bisect(12, Commits(culprit=7, unbuilt={11: "no version"}), rounds=16)
    assert (bad.skipped, bad.why) == ([11], "the build of bad failed, nothing to compare: build failed: no version")
    assert math.isclose(search.step_budget(12), 6)


def test_a_range_of_commits_without_fast_dds_is_cannot_decide_with_a_report_not_an_error(fastdds_history, tmp_path):
    """Before: the build's InputError ended the bisect, exit 2, no bisect.json."""
    origin, commits = fastdds_history
    done = bisect(tmp_path, commits["A"], commits["C"], origin)
    assert done.returncode == s.EXIT_INCOMPLETE, done.stderr
    written = json.loads((tmp_path / "out" / bisect_names.BISECT_JSON).read_text())
    assert written["status"] == "cannot decide" and written["ab_count"] == 0
    assert [(c["sha"], NO_CMAKE in c["why"]) for c in written["skipped"]] == [(commits["A"], True)]
    assert [(step["commit"], step["outcome"]) for step in written["steps"]] == [(commits["A"], search.SKIPPED)]
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith(f"perfgate bisect: build of {commits['A'][:10]} failed, skipped: ") and NO_CMAKE in lines[0]
    assert lines[-1].startswith("perfgate bisect: error: cannot decide: the build of good failed, nothing to compare")
    assert NO_CMAKE in lines[-1]


def test_an_abbreviated_commit_is_exit_2_saying_to_give_the_full_sha(fastdds_history, tmp_path):
    origin, commits = fastdds_history
    short = commits["A"][:10]
    done = bisect(tmp_path, short, commits["C"], origin)
    assert done.returncode == s.EXIT_USAGE, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"perfgate bisect: error: --good {short} is no branch or tag of {origin} and not a full commit: git fetches a "
        "commit only by its full 40-hex sha; give that, or a branch or tag"]
    assert not (tmp_path / "out").exists() and not (tmp_path / "ws").exists()
    bad = bisect(tmp_path, commits["A"], commits["C"][:7].upper(), origin)
    assert bad.returncode == s.EXIT_USAGE and f"--bad {commits['C'][:7].upper()} is no branch or tag" in bad.stderr


def test_a_branch_named_like_an_abbreviated_commit_is_still_a_branch(fastdds_history, tmp_path):
    origin, commits = fastdds_history
    git_in(origin, "branch", "--force", "0123456789", commits["C"])
    done = bisect(tmp_path, commits["A"], "0123456789", origin)
    # fetched as the branch it is: the bisect runs (and ends at good, which is no Fast DDS source)
    assert done.returncode == s.EXIT_INCOMPLETE, done.stderr
    written = json.loads((tmp_path / "out" / bisect_names.BISECT_JSON).read_text())
    assert written["bad"]["sha"] == commits["C"]


def test_git_errors_of_several_lines_are_printed_one_line_each_escaped(tmp_path):
    """Before: `... does not appear to be a git repository\\nfatal: Could not read ...` on one line."""
    url = tmp_path / "not ##[a repository"
    url.mkdir()
    done = bisect(tmp_path, "a" * 40, "b" * 40, url)
    assert done.returncode == s.EXIT_INCOMPLETE, done.stderr
    lines = done.stderr.strip().splitlines()
    assert "\\n" not in done.stderr and len(lines) >= 3, done.stderr
    shown = str(url).replace("##[", "#\\x23[")
    assert lines[0] == (f"perfgate bisect: error: {tmp_path / 'ws' / 'perfgate' / 'bisect.git'}: cannot fetch --good "
                        f"{'a' * 40} from {shown}: fatal: '{shown}' does not appear to be a git repository")
    assert lines[1] == "perfgate bisect:   fatal: Could not read from remote repository."
    assert lines[-1] == "perfgate bisect:   and the repository exists."
    assert "##[" not in done.stderr
