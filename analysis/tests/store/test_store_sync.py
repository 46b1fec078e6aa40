"""`perfgate store push/pull` against a bare git repository on disk: the round trip, concurrent pushers
(real processes) whose experiments all arrive exactly once, a label with two contents, a remote that
does not exist."""
from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import metadata, tiny_summary, write_experiment
from perfgate import cli, files
from perfgate.store import experiments as store, branch as store_branch, cli as store_cli, sync as store_sync
from perfgate import schema as s

SUB = "intraprocess_best_effort"


def git(repository: Path, *arguments: str) -> str:
    return subprocess.run(["git", f"--git-dir={repository}", *arguments], capture_output=True, text=True,
                          check=True).stdout


def bare(tmp_path: Path, name: str = "results.git") -> Path:
    repository = tmp_path / name
    subprocess.run(["git", "init", "--quiet", "--bare", str(repository)], check=True)
    return repository


def experiment(store_dir: Path, label: str, value: str = "1.000", ab: bool = False) -> Path:
    """One stored experiment as a gate keeps it (metadata, a summary, gzip'd raw measurements; with `ab`
    a check report in ab/'s place), plus a plot a re-processing left in it (not kept)."""
    folder = store_dir / s.STORE_EXPERIMENTS_DIR / label
    folder.mkdir(parents=True)
    median = float(value)
    write_experiment(folder, {SUB: tiny_summary({16: (median, 2 * median, 3 * median)})},
                     metadata(label, "2026-01-01T00:00:00+00:00"))
    (folder / s.stored_raw_name(SUB)).write_bytes(store.compressed(raw_text(value).encode()))
    if ab:
        (folder / s.check_csv_name(SUB)).write_text("checked\n")
    (folder / s.PLOTS_DIR).mkdir()
    (folder / s.PLOTS_DIR / "x.png").write_bytes(b"png")
    return folder


def raw_text(value: str) -> str:
    return f"Sample,Payload [Bytes],Latency [us]\n0,16,{value}\n1,16,{value}\n"


def summary_text(value: str) -> str:
    median = float(value)
    return files.format_csv(tiny_summary({16: (median, 2 * median, 3 * median)}))


def remote_files(repository: Path, branch: str = store_cli.DEFAULT_BRANCH) -> dict[str, str]:
    listing = git(repository, "ls-tree", "-r", "--name-only", branch).split()
    return {path: git(repository, "show", f"{branch}:{path}") for path in listing if not path.endswith(".gz")}


def labels_in(repository: Path) -> list[str]:
    return sorted({path.split("/")[1] for path in git(repository, "ls-tree", "-r", "--name-only",
                                                       store_cli.DEFAULT_BRANCH).split()})


def store_command(*arguments: str) -> int:
    return cli.main(["store", *arguments])


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


# --- the pure parts -------------------------------------------------------------------------------
def test_what_a_transfer_adds_and_what_conflicts():
    source = {"a": {"metadata.json": "1"}, "b": {"metadata.json": "2", "x.csv": "3"}, "c": {"metadata.json": "4"}}
    target = {"b": {"metadata.json": "2"}, "c": {"metadata.json": "4"}, "d": {"metadata.json": "5"}}
    assert store_sync.plan_transfer(source, target) == (["a"], {"b": ["x.csv"]})
    listing = (b"100644 blob 11 10\texperiments/a/metadata.json\x00100644 blob 12 3\texperiments/b/plots/p.png\0"
               b"100644 blob 13 9\texperiments/.perfgate-summary-index/x.csv.gz\x00100644 blob 14 5\tREADME.md\0"
               b"100644 blob 15 7\texperiments/a/ab/verdict.json\x00")
    branch = store_branch.judge([store_branch.parse_entry(record) for record in listing.split(b"\0") if record])
    assert branch.blobs() == {"a": {"metadata.json": "11", "ab/verdict.json": "15"}}
    # a file the store never keeps quarantines its experiment; what is outside any experiment is ignored
    assert branch.bad == {"b": "'experiments/b/plots/p.png' is not a file the store keeps"}
    assert branch.ignored == ["'experiments/.perfgate-summary-index/x.csv.gz' is in a dot-named folder, which is no "
                              "experiment", "'README.md' is not in an experiment folder (experiments/<label>/)"]


# --- against a bare repository ----------------------------------------------------------------------
def test_push_then_pull_round_trip_carries_the_kept_files_only_and_only_adds(tmp_path, capsys):
    remote = bare(tmp_path)
    first, second = tmp_path / "runner-a", tmp_path / "runner-b"
    experiment(first, "run-1")
    experiment(first, "run-2", "2.000", ab=True)
    (first / s.STORE_HISTORY_DIR).mkdir()
    (first / s.STORE_HISTORY_DIR / "history.html").write_text("derived")
    (first / s.STORE_EXPERIMENTS_DIR / ".perfgate-summary-index").mkdir()
    (first / s.STORE_EXPERIMENTS_DIR / ".perfgate-summary-index" / f"{SUB}.csv.gz").write_bytes(b"cache")

    assert store_command("push", "--store", str(first), "--remote", str(remote)) == s.EXIT_OK
    assert capsys.readouterr().out.startswith(f"pushed 2 experiment(s) to {remote} branch perfgate-results (")
    kept = [s.METADATA_FILE, s.summary_csv_name(SUB)]
    assert sorted(remote_files(remote)) == sorted([f"experiments/run-1/{name}" for name in kept]
                                                  + [f"experiments/run-2/{name}" for name in kept]
                                                  + [f"experiments/run-2/{s.check_csv_name(SUB)}"])
    assert remote_files(remote)["experiments/run-2/" + s.summary_csv_name(SUB)] == summary_text("2.000")

    # a second runner pulls into an empty store: the same bytes, no plots, nothing derived
    assert store_command("pull", "--store", str(second), "--remote", str(remote)) == s.EXIT_OK
    assert capsys.readouterr().out.startswith("pulled 2 experiment(s)")
    for label in ("run-1", "run-2"):
        mine, theirs = first / "experiments" / label, second / "experiments" / label
        assert sorted(store.kept_files(theirs)) == sorted(store.kept_files(mine))
        for relative, path in store.kept_files(mine).items():
            assert (theirs / relative).read_bytes() == path.read_bytes()
        assert not (theirs / s.PLOTS_DIR).exists()
    assert gzip.decompress((second / "experiments/run-2" / s.stored_raw_name(SUB)).read_bytes()) == \
        raw_text("2.000").encode()
    assert not (second / s.STORE_HISTORY_DIR).exists()
    assert [p.name for p in (second / "experiments").iterdir()] == ["run-1", "run-2"] or \
        sorted(p.name for p in (second / "experiments").iterdir()) == ["run-1", "run-2"]  # no staging left

    # the second runner measures run-3 and pushes it; the first pulls it; pushing again adds nothing
    experiment(second, "run-3", "3.000")
    assert store_command("push", "--store", str(second), "--remote", str(remote)) == s.EXIT_OK
    assert capsys.readouterr().out.startswith("pushed 1 experiment(s)")
    assert store_command("pull", "--store", str(first), "--remote", str(remote)) == s.EXIT_OK
    assert capsys.readouterr().out.startswith("pulled 1 experiment(s)")
    assert (first / "experiments/run-3" / s.summary_csv_name(SUB)).read_text() == summary_text("3.000")
    commits = git(remote, "rev-list", "--count", store_cli.DEFAULT_BRANCH)
    assert store_command("push", "--store", str(first), "--remote", str(remote)) == s.EXIT_OK
    assert "nothing to push" in capsys.readouterr().out
    assert git(remote, "rev-list", "--count", store_cli.DEFAULT_BRANCH) == commits
    assert labels_in(remote) == ["run-1", "run-2", "run-3"]


PUSHER = """
import sys, time
from pathlib import Path
from perfgate import cli
start = Path(sys.argv[1])
while not start.exists():
    time.sleep(0.005)
sys.exit(cli.main(["store", "push", "--store", sys.argv[2], "--remote", sys.argv[3]]))
"""


@pytest.mark.heavy
def test_concurrent_pushers_all_arrive_exactly_once(tmp_path):
    remote = bare(tmp_path)
    # the remote takes a while to accept each push, so pushers that started together are rejected and retry
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\ncat >/dev/null\nsleep 0.4\n")
    hook.chmod(0o755)
    runners, per_runner = 4, 3
    expected = {}
    for runner in range(runners):
        store_dir = tmp_path / f"runner-{runner}"
        for number in range(per_runner):
            label = f"r{runner}-{number}"
            experiment(store_dir, label, f"{runner + 1}.{number:03d}")
            expected[label] = summary_text(f"{runner + 1}.{number:03d}")
        experiment(store_dir, "shared")  # the same experiment on every runner (pulled earlier): once on the remote
    expected["shared"] = summary_text("1.000")
    start = tmp_path / "start"
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    pushers = [subprocess.Popen([sys.executable, "-c", PUSHER, str(start), str(tmp_path / f"runner-{runner}"),
                                 str(remote)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=environment) for runner in range(runners)]
    start.touch()
    outcomes = [(pusher.wait(timeout=300), *pusher.communicate()) for pusher in pushers]
    assert [code for code, _, _ in outcomes] == [s.EXIT_OK] * runners, outcomes
    retried = sum(err.count("push rejected") for _, _, err in outcomes)
    print(f"{retried} rejected push(es) retried")
    assert retried >= 1  # they did collide
    assert labels_in(remote) == sorted(expected)
    files = remote_files(remote)
    for label, summary in expected.items():
        assert files[f"experiments/{label}/{s.summary_csv_name(SUB)}"] == summary
    # each experiment was added by exactly one commit, never added twice
    log = git(remote, "log", "--name-status", "--format=", store_cli.DEFAULT_BRANCH)
    added = [line.split("\t")[1] for line in log.splitlines() if line.startswith("A\t")]
    metadata_added = sorted(path.split("/")[1] for path in added if path.endswith(s.METADATA_FILE))
    assert metadata_added == sorted(expected)
    assert not [line for line in log.splitlines() if line and not line.startswith("A\t")]  # nothing modified or deleted


def test_one_label_with_two_contents_is_skipped_both_ways_never_replaced_and_blocks_nothing(tmp_path, capsys):
    # issue 23: a label with other content on the branch (a rewritten branch, two runners, one label) made
    # every later push and pull exit 2, the runner blocked for good; it is now skipped with a warning
    remote = bare(tmp_path)
    first, second = tmp_path / "runner-a", tmp_path / "runner-b"
    experiment(first, "nightly-1", "1.000")
    experiment(second, "nightly-1", "9.000")
    experiment(second, "other", "2.000")
    assert store_command("push", "--store", str(first), "--remote", str(remote)) == s.EXIT_OK
    capsys.readouterr()

    warning = (f"perfgate store: warning: experiment 'nightly-1' not pushed: differs between the store and {remote} "
               f"branch perfgate-results ('{s.stored_raw_name(SUB)}', '{s.summary_csv_name(SUB)}'): an experiment is "
               "never replaced; give one of them another label")
    for _ in range(2):  # and again: never a blockade
        assert store_command("push", "--store", str(second), "--remote", str(remote)) == s.EXIT_OK
        captured = capsys.readouterr()
        assert captured.err.splitlines() == [warning]
    assert labels_in(remote) == ["nightly-1", "other"]
    assert remote_files(remote)[f"experiments/nightly-1/{s.summary_csv_name(SUB)}"] == summary_text("1.000")
    assert store_command("pull", "--store", str(second), "--remote", str(remote)) == s.EXIT_OK
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [warning.replace("not pushed", "not pulled")]
    assert "nothing to pull; 1 not pulled (above)" in captured.out
    assert (second / "experiments/nightly-1" / s.summary_csv_name(SUB)).read_text() == summary_text("9.000")


def test_a_remote_that_does_not_exist_and_no_remote_are_one_line_exit_2(tmp_path, capsys, monkeypatch):
    experiment(tmp_path / "store", "run-1")
    missing = tmp_path / "nowhere.git"
    for action in ("push", "pull"):
        assert store_command(action, "--store", str(tmp_path / "store"), "--remote", str(missing)) == s.EXIT_USAGE
        line = one_error_line(capsys)
        # git's own message, whole, on one line
        assert line.startswith(f"perfgate store: error: git ls-remote {missing} failed: fatal: '{missing}' does not "
                               "appear to be a git repository / fatal: Could not read from remote repository.")
    monkeypatch.delenv(s.STORE_REMOTE_ENV, raising=False)
    assert store_command("push", "--store", str(tmp_path / "store")) == s.EXIT_USAGE
    assert one_error_line(capsys) == ("perfgate store: error: give --remote URL (or set PERFGATE_STORE_REMOTE): the "
                                      "git repository that keeps the store")
    # the environment variable names the remote
    remote = bare(tmp_path)
    monkeypatch.setenv(s.STORE_REMOTE_ENV, str(remote))
    assert store_command("push", "--store", str(tmp_path / "store")) == s.EXIT_OK
    assert labels_in(remote) == ["run-1"]


def test_pulling_from_a_remote_without_the_branch_adds_nothing(tmp_path, capsys):
    remote = bare(tmp_path)
    assert store_command("pull", "--store", str(tmp_path / "store"), "--remote", str(remote)) == s.EXIT_OK
    assert capsys.readouterr().out == f"{remote} has no branch perfgate-results yet: nothing to pull\n"
    assert not (tmp_path / "store" / s.STORE_EXPERIMENTS_DIR).exists()


@pytest.mark.heavy
def test_sigterm_during_a_push_leaves_no_temporary_file_and_loses_nothing(tmp_path):
    remote = bare(tmp_path)
    marker = tmp_path / "receiving"
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ncat >/dev/null\ntouch {marker}\nsleep 3\nexit 1\n")  # slow, then refuses
    hook.chmod(0o755)
    store_dir = tmp_path / "runner"
    experiment(store_dir, "run-1")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    pusher = subprocess.Popen([sys.executable, "-m", "perfgate.cli", "store", "push", "--store", str(store_dir),
                               "--remote", str(remote)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=environment)
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline and pusher.poll() is None
        time.sleep(0.02)
    pusher.send_signal(signal.SIGTERM)
    _, err = pusher.communicate(timeout=30)
    assert pusher.returncode == 130 and err == "perfgate store: interrupted\n"
    cache = store_dir / store_sync.CACHE_DIR
    assert not list(cache.glob("index.*"))  # the temporary index
    assert not [p for p in (store_dir / s.STORE_EXPERIMENTS_DIR).iterdir() if p.name.startswith(".")]
    hook.write_text("#!/bin/sh\ncat >/dev/null\n")
    time.sleep(3.5)  # the refused receive finishes
    assert store_command("push", "--store", str(store_dir), "--remote", str(remote)) == s.EXIT_OK
    assert labels_in(remote) == ["run-1"]
