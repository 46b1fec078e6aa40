"""A results branch whose tree git itself objects to (issue 23): malformed tree entries, built by hand
with `git hash-object --literally` in a bare repository, and the real `perfgate store pull`.

- A tree entry git's fsck refuses (a `.git` name, a zero-padded mode) on a runner that checks what
  it fetches (transfer.fsckObjects): the fetch failed, so every pull and push stopped for good; now
  the experiment holding it is quarantined like any other bad one and the good one beside it pulled.
- A blob stored under a folder's mode: the remote's pack-objects cannot send the branch at all, no
  option of the fetch reaches there; the pull is exit 2, writes nothing, and its one line names the
  object and how to find and drop its entry, which this test then does, after which the pull works.
"""
from __future__ import annotations

import subprocess

from perfgate import cli
from perfgate import schema as s
from store_branches import (BRANCH, bare, blob, experiment_tree, good_files, git, labels, publish, pull,
                                  snapshot, tree)


def fsck_on_fetch(monkeypatch) -> None:
    """The runner's git checks every object it fetches (a hardened runner's global config)."""
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "transfer.fsckObjects")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "true")


def test_entries_fsck_refuses_quarantine_their_experiment_on_a_runner_that_checks_fetches(tmp_path, capsys,
                                                                                          monkeypatch):
    fsck_on_fetch(monkeypatch)
    remote = bare(tmp_path)
    text = blob(remote, b"x\n")
    dot_git = experiment_tree(remote, "bad-dotgit", [("100644", ".git", text)])
    padded = ("040000", "bad-padded", tree(remote, good_files(remote, "bad-padded")))  # zero-padded folder mode
    good = ("40000", "good-1", tree(remote, good_files(remote, "good-1")))
    publish(remote, tree(remote, [("40000", s.STORE_EXPERIMENTS_DIR, tree(remote, [dot_git, good, padded]))]))
    store = tmp_path / "store"
    code, out, err = pull(store, remote, capsys)
    assert code == s.EXIT_OK, err
    assert labels(store) == ["bad-padded", "good-1"]  # a zero-padded mode is still a folder of regular files
    assert err == ["perfgate store: warning: experiment 'bad-dotgit' not pulled: 'experiments/bad-dotgit/.git' is "
                   "not a plain file name (letters, digits, '.', '_', '-')"]
    assert out.startswith("pulled 2 experiment(s)") and out.endswith("; 1 not pulled (above)\n")


def test_a_blob_under_a_folders_mode_names_what_to_repair_and_pulls_once_repaired(tmp_path, capsys):
    remote = bare(tmp_path)
    good = ("40000", "good-1", tree(remote, good_files(remote, "good-1")))
    first = publish(remote, tree(remote, [("40000", s.STORE_EXPERIMENTS_DIR, tree(remote, [good]))]))
    store = tmp_path / "store"
    assert pull(store, remote, capsys)[0] == s.EXIT_OK
    text = blob(remote, b"not a folder\n")
    experiments = tree(remote, [good, ("40000", "bad", text)])
    root = tree(remote, [("40000", s.STORE_EXPERIMENTS_DIR, experiments)])
    git(remote, "update-ref", f"refs/heads/{BRANCH}", git(remote, "commit-tree", root, "-p", first, "-m", "bad"))
    before = snapshot(tmp_path, store), snapshot(store / s.STORE_EXPERIMENTS_DIR, store / "none")
    code, out, err = pull(store, remote, capsys)
    assert code == s.EXIT_USAGE and out == "" and len(err) == 1
    # nothing written outside the store nor into its experiments (git keeps its FETCH_HEAD in .perfgate-git)
    assert (snapshot(tmp_path, store), snapshot(store / s.STORE_EXPERIMENTS_DIR, store / "none")) == before
    assert err[0].startswith(f"perfgate store: error: git fetch of {remote} branch {BRANCH} failed: the remote "
                             f"cannot send the branch, whose tree names object {text} as what it is not")
    assert f"Repair the branch in the repository {remote} itself: `git ls-tree -r -t {BRANCH} | grep {text}` " \
           "names the entry" in err[0]
    assert f"or reset the branch to a commit before it (this store last fetched {first})" in err[0]

    # the repair the line gives, done in the remote: the entry found, a tree without it committed
    found = subprocess.run(f"git --git-dir={remote} ls-tree -r -t {BRANCH} | grep {text}", shell=True,
                           capture_output=True, text=True).stdout.splitlines()
    assert found == [f"040000 tree {text}\t{s.STORE_EXPERIMENTS_DIR}/bad"]
    newer = ("40000", "good-2", tree(remote, good_files(remote, "good-2")))
    repaired = tree(remote, [("40000", s.STORE_EXPERIMENTS_DIR, tree(remote, [good, newer]))])
    git(remote, "update-ref", f"refs/heads/{BRANCH}", git(remote, "commit-tree", repaired, "-m", "repaired"))
    code, out, err = pull(store, remote, capsys)
    assert code == s.EXIT_OK and err == [] and out.startswith("pulled 1 experiment(s)")
    assert labels(store) == ["good-1", "good-2"]
    assert cli.main(["store", "check", "--store", str(store)]) == s.EXIT_OK
