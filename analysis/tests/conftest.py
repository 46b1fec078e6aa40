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
