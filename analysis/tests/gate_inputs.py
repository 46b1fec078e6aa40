"""Working folders for gate tests that run `perfgate gate` in the test's process (support module beside
conftest: test files never import one another)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from conftest import REPO_ROOT
from perfgate import cli, files
from perfgate import schema as s

# what would make the gate measure elsewhere or write to a CI's files: unset for every gate test
GATE_ENVIRONMENT = (s.PLATFORM_ENV, s.PIN_CPUS_ENV, s.WORKSPACE_ENV, s.STORE_ENV, "GITHUB_ACTIONS", "GITHUB_WORKSPACE",
                    "GITHUB_STEP_SUMMARY")


def gate_folder(folder: Path, monkeypatch) -> Path:
    """`folder` as the gate's working folder, with none of GATE_ENVIRONMENT set."""
    monkeypatch.chdir(folder)
    for name in GATE_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    return folder


def topology_gate_folder(folder: Path, monkeypatch, subexperiment: str, payload: int) -> Path:
    """A gate folder with generous latency requirements for platform `bench` (one sub-experiment at one
    payload) and perfgate's light topology in topologies/."""
    gate_folder(folder, monkeypatch)
    (folder / "requirements").mkdir()
    files.write_csv(folder / "requirements" / "bench.csv", pd.DataFrame(
        [{s.EXPERIMENT_TYPE: subexperiment, s.BYTES: payload, **{m: 100000.0 for m in s.CHECKED_MAGNITUDES}}],
        columns=list(s.REQUIREMENT_COLUMNS)))
    (folder / "topologies").mkdir()
    shutil.copy(REPO_ROOT / "topologies" / "light.json", folder / "topologies" / "light.json")
    return folder


def quick_gate(subexperiment: str, payload: int, *arguments: str) -> int:
    """`perfgate gate --quick` for platform `bench` on one sub-experiment at one payload, no history, in
    the test's process."""
    return cli.main(["gate", "--platform", "bench", "--quick", "--subexperiments", subexperiment, "--payloads",
                     str(payload), "--no-history", *arguments])
