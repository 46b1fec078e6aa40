"""Issue 23's adversarial pass over `perfgate bisect`: the repository bisected is untrusted, and a commit's
subject or author may hold any character but a line feed. Every first-parent commit is in the range,
its subject and author whole, whatever they hold (a commit dropped is a commit never measured: the
culprit would be named wrongly)."""
from __future__ import annotations

from conftest import git_in
from perfgate.bisect import commits as history

HOSTILE_SUBJECTS = ("field\x1fseparator in a subject", "tab\tand <b>html</b> | pipe", "::error::x")


def test_every_commit_is_in_the_range_whatever_its_subject_and_author_hold(tmp_path):
    origin = tmp_path / "origin"
    origin.mkdir()
    git_in(origin, "init", "--quiet", "--initial-branch", "master")
    git_in(origin, "commit", "--quiet", "--allow-empty", "-m", "good")
    shas = [git_in(origin, "rev-parse", "HEAD")]
    for subject in HOSTILE_SUBJECTS:
        git_in(origin, "commit", "--quiet", "--allow-empty", "--author", "odd\x1fauthor <o@o>", "-m", subject)
        shas.append(git_in(origin, "rev-parse", "HEAD"))
    git_in(origin, "commit", "--quiet", "--allow-empty", "-m", "bad")
    shas.append(git_in(origin, "rev-parse", "HEAD"))
    found = history.fetch_range(str(origin), shas[0], shas[-1], tmp_path / "repo")
    assert [commit.sha for commit in found] == shas
    assert [commit.subject for commit in found] == ["good", *HOSTILE_SUBJECTS, "bad"]
    assert [commit.author for commit in found] == ["t", *["odd\x1fauthor"] * len(HOSTILE_SUBJECTS), "t"]
    assert all(commit.date.startswith("20") for commit in found)
