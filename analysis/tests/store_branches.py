"""Results branches built from hand-written git objects (`git hash-object -w --literally`, `git
commit-tree`, `git update-ref` in a bare repository), as an attacker who can push to the results
repository would build them, and the real `perfgate store pull` run on them: for the store/ tests."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
from pathlib import Path

from conftest import metadata, tiny_summary
from perfgate import cli, files
from perfgate import schema as s

SUB = "intraprocess_best_effort"
BRANCH = "perfgate-results"


# --- writing git objects by hand ------------------------------------------------------------------
def git(repository: Path, *arguments: str, stdin: bytes | None = None) -> str:
    return subprocess.run(["git", f"--git-dir={repository}", *arguments], input=stdin, capture_output=True,
                          check=True).stdout.decode().strip()


def blob(repository: Path, data: bytes) -> str:
    return git(repository, "hash-object", "-w", "--stdin", stdin=data)


def blob_of_file(repository: Path, path: Path) -> str:
    return git(repository, "hash-object", "-w", str(path))


def tree(repository: Path, entries: list[tuple[str, bytes | str, str]]) -> str:
    """A tree object of (mode, name, object id) entries in git's order (a folder's name sorts as if
    it ended in '/'), duplicates kept (`--literally`: git's own checks would refuse some of these
    trees, an attacker's tools do not)."""
    named = [(mode, name if isinstance(name, bytes) else name.encode(), object_id) for mode, name, object_id in entries]
    named.sort(key=lambda entry: entry[1] + (b"/" if entry[0] == "40000" else b""))
    raw = b"".join(mode.encode() + b" " + name + b"\0" + bytes.fromhex(object_id) for mode, name, object_id in named)
    return git(repository, "hash-object", "-w", "--literally", "-t", "tree", "--stdin", stdin=raw)


def publish(repository: Path, root: str) -> str:
    commit = git(repository, "commit-tree", root, "-m", "crafted")
    git(repository, "update-ref", f"refs/heads/{BRANCH}", commit)
    return commit


def bare(tmp_path: Path) -> Path:
    repository = tmp_path / "results.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(repository)], check=True)
    return repository


def good_files(repository: Path, label: str, median: float = 1.0) -> list[tuple[str, str, str]]:
    """The entries of a valid stored experiment: metadata, a summary, gzip'd raw measurements."""
    meta = (json.dumps(metadata(label, "2026-01-01T00:00:00+00:00"), indent=2) + "\n").encode()
    summary = files.format_csv(tiny_summary({16: (median, 2 * median, 3 * median)})).encode()
    raw = gzip.compress(f"Sample,Payload [Bytes],Latency [us]\n0,16,{median}\n1,16,{median}\n".encode(), mtime=0)
    return [("100644", s.METADATA_FILE, blob(repository, meta)),
            ("100644", s.summary_csv_name(SUB), blob(repository, summary)),
            ("100644", s.stored_raw_name(SUB), blob(repository, raw))]


def branch_of(repository: Path, experiments: list[tuple[str, bytes | str, str]],
              root_extra: list[tuple[str, str, str]] = ()) -> str:
    """Publish a branch `experiments/<entries>` (+ entries beside experiments/); a good experiment
    'good-1' is always among them."""
    good = tree(repository, good_files(repository, "good-1"))
    folder = tree(repository, [("40000", "good-1", good), *experiments])
    return publish(repository, tree(repository, [("40000", s.STORE_EXPERIMENTS_DIR, folder), *root_extra]))


def experiment_tree(repository: Path, label: str, extra: list[tuple[str, bytes | str, str]]) -> tuple[str, str, str]:
    return ("40000", label, tree(repository, good_files(repository, label) + extra))


# --- what must hold after any pull ----------------------------------------------------------------
def snapshot(root: Path, store: Path) -> dict[str, tuple]:
    """Every path under root outside the store: its kind, size, mode and time (nothing may change)."""
    found = {}
    for folder, names, file_names in os.walk(root, followlinks=False):
        if Path(folder) == store:
            names.clear()
            continue
        for name in names + file_names:
            path = Path(folder) / name
            if path == store:
                continue
            status = path.lstat()
            found[str(path)] = (status.st_mode, status.st_size, status.st_mtime_ns)
    return found


def pull(store: Path, remote: Path, capsys) -> tuple[int, str, list[str]]:
    code = cli.main(["store", "pull", "--store", str(store), "--remote", str(remote)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    return code, captured.out, captured.err.splitlines()


def labels(store: Path) -> list[str]:
    return sorted(p.name for p in (store / s.STORE_EXPERIMENTS_DIR).iterdir())


def assert_only_good_pulled(store: Path) -> None:
    """good-1 landed whole, with exactly its three files, nothing else and no staging folder left."""
    assert labels(store) == ["good-1"]
    folder = store / s.STORE_EXPERIMENTS_DIR / "good-1"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [s.METADATA_FILE, s.summary_csv_name(SUB), s.stored_raw_name(SUB)])
    assert not any(p.is_symlink() or p.stat().st_mode & 0o111 for p in folder.iterdir())


# --- the CVE-2025-4517 shape ----------------------------------------------------------------------
