"""Ignored Fast DDS variables are recorded by name, never by value: a value may be a secret (a
discovery server's address, a path inside a private profile), and metadata.json travels with every
report and artifact."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import make_workspace
from perfgate import files
from perfgate.measure import environment as run_environment
from perfgate import schema as s

SECRET = "s3cr3t-token-do-not-record"
HOSTILE = {"FASTDDS_STATISTICS": SECRET, "ROS_DISCOVERY_SERVER": f"{SECRET}@10.0.0.1:11811",
           "FASTRTPS_DEFAULT_PROFILES_FILE": f"/home/ci/{SECRET}.xml"}


def test_scrub_environment_returns_names_only():
    clean, ignored = run_environment.scrub_environment({"PATH": "/usr/bin", **HOSTILE})
    assert ignored == sorted(HOSTILE)
    assert SECRET not in repr(ignored)
    assert not set(HOSTILE) & set(clean)


@pytest.mark.compiles
def test_metadata_of_a_real_run_records_names_not_values(tmp_path):
    """`perfgate run --engine upstream` on a small workspace (conftest.make_workspace): the whole command line."""
    root = tmp_path / "workspace"
    root.mkdir()
    make_workspace(root)
    output = tmp_path / "experiment"
    done = subprocess.run([sys.executable, "-m", "perfgate.cli", "run", "--engine", "upstream", "--workspace",
                           str(root), "--output", str(output), "--subexperiments", "intraprocess_best_effort"],
                          capture_output=True, text=True, env={**os.environ, **HOSTILE}, timeout=600)
    assert done.returncode == s.EXIT_OK, done.stderr
    assert files.read_metadata(output)["environment"]["ignored"] == sorted(HOSTILE)
    for path in output.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path
    assert SECRET not in done.stdout + done.stderr
