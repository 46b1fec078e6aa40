"""Shared test fixtures: where the published Fast DDS measurements are, and small data builders."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
FASTDDS_FIXTURES = REPO_ROOT.parent / "shared" / "fixtures" / "eprosima-fastrtps-latency"


@pytest.fixture(scope="session")
def fastdds_fixtures() -> Path:
    # The published measurements sit beside the repository (CI clones main with shared/ beside it).
    # Missing fixtures are a broken checkout, not a reason to skip.
    assert FASTDDS_FIXTURES.is_dir(), f"published Fast DDS fixtures not found at {FASTDDS_FIXTURES}"
    return FASTDDS_FIXTURES


@pytest.fixture(scope="session")
def harness_paths():
    # The native harness, built once into the shared cache (perfgate.harness; a file lock keeps
    # parallel workers from building it twice). A failed build fails the tests that need it.
    from perfgate.harness import ensure_harness

    return ensure_harness()


def live_processes_of(run_id: str) -> list[int]:
    """Live (not zombie) processes whose environment carries this run's id (run.RUN_ID_ENV): what a
    run, or one of its harness processes, may have left behind."""
    from perfgate import run

    needle = f"{run.RUN_ID_ENV}={run_id}".encode()
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if needle in (proc / "environ").read_bytes().split(b"\0") and run.process_state(int(proc.name)) != "Z":
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def git_in(folder: Path, *args: str) -> str:
    """git in `folder` with a fixed identity and no user or system configuration; its stdout."""
    import os
    import subprocess

    environment = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                   "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(folder), *args], env=environment, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture(scope="module")
def fastdds_history(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A small repository standing in for Fast DDS: main A-B-C, feature B-F1-F2, and M on `merged`,
    a merge of feature into C (first parent C). Fetchable by commit (allowAnySHA1InWant)."""
    origin = tmp_path_factory.mktemp("fastdds-origin")
    git_in(origin, "init", "--quiet", "--initial-branch", "main")
    git_in(origin, "config", "uploadpack.allowAnySHA1InWant", "true")
    commits = {}
    for name in ("A", "B", "C"):
        git_in(origin, "commit", "--quiet", "--allow-empty", "-m", name)
        commits[name] = git_in(origin, "rev-parse", "HEAD")
    git_in(origin, "checkout", "--quiet", "-b", "feature", commits["B"])
    for name in ("F1", "F2"):
        git_in(origin, "commit", "--quiet", "--allow-empty", "-m", name)
        commits[name] = git_in(origin, "rev-parse", "HEAD")
    git_in(origin, "checkout", "--quiet", "-b", "merged", commits["C"])
    git_in(origin, "merge", "--quiet", "--no-ff", "-m", "M", "feature")
    commits["M"] = git_in(origin, "rev-parse", "HEAD")
    return origin, commits
