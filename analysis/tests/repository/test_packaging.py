"""Packaging: a wheel carries the harness sources, and an installed perfgate builds its harness from them."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from fnmatch import fnmatch
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from perfgate.fastdds import harness

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def _native_files() -> list[str]:
    """native/'s sources as git knows them (build output and untracked scratch excluded)."""
    listed = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "native"], capture_output=True, text=True,
                            check=True).stdout.split()
    return [name for name in listed if (REPO_ROOT / name).is_file()]


def test_every_python_package_is_listed():
    # The package list is explicit (pyproject.toml says why): a new sub-package must be added there,
    # or an installed perfgate fails to import it.
    found = {".".join(path.parent.relative_to(REPO_ROOT / "analysis").parts)
             for path in (REPO_ROOT / "analysis" / "perfgate").rglob("__init__.py")}
    listed = {name for name in SETUPTOOLS["packages"] if not name.startswith("perfgate.native")}
    assert not found - listed, f"add {sorted(found - listed)} to [tool.setuptools] packages in pyproject.toml"
    assert not listed - found, f"pyproject.toml lists packages that do not exist: {sorted(listed - found)}"


def test_package_data_covers_every_native_source():
    patterns = SETUPTOOLS["package-data"]
    uncovered = []
    for name in _native_files():
        folder, file = os.path.split(Path(name).relative_to("native").as_posix())
        package = "perfgate.native" + (f".{folder.replace('/', '.')}" if folder else "")
        if not any(fnmatch(file, pattern) for pattern in patterns.get(package, [])):
            uncovered.append(name)
    assert "native/CMakeLists.txt" in _native_files()
    assert uncovered == []


def test_the_checkout_builds_from_its_own_native_folder():
    assert harness.NATIVE_DIR == REPO_ROOT / "native"


@pytest.mark.slow
@pytest.mark.fastdds
def test_installed_wheel_builds_its_harness_and_runs(tmp_path):
    # Built from a copy: setuptools keeps what it once copied in build/ and would ship modules removed
    # since, and the working tree stays untouched by a test.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO_ROOT / name, source / name)
    build_output = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    shutil.copytree(REPO_ROOT / "analysis" / "perfgate", source / "analysis" / "perfgate", ignore=build_output)
    shutil.copytree(REPO_ROOT / "native", source / "native", ignore=build_output)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(source)],
                   check=True)
    (wheel,) = wheels.glob("perfgate-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name.removeprefix("perfgate/") for name in archive.namelist() if name.startswith("perfgate/native/")}
    assert shipped >= set(_native_files())

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    # The dependencies come from this test's environment (a .pth file) so that the test needs no
    # download; only the wheel is installed, and `pip check` still verifies they satisfy its metadata.
    # The editable perfgate of this environment stays invisible: .pth files of a folder added this way
    # are not run.
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "perfgate-test-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True)
    subprocess.run([str(python), "-m", "pip", "check"], check=True)
    where = subprocess.run([str(python), "-c", "from perfgate.fastdds import harness; print(harness.NATIVE_DIR)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path).stdout.strip()
    assert Path(where) == Path(site) / "perfgate" / "native"

    # A cache of its own: the harness is built from the installed sources, as on a first use.
    environment = {**os.environ, harness.CACHE_ENV: str(tmp_path / "cache")}
    output = tmp_path / "experiment"
    result = subprocess.run([str(venv / "bin" / "perfgate"), "run", "--subexperiments", "intraprocess_best_effort",
                             "--samples", "50", "--payloads", "16", "--output", str(output)],
                            capture_output=True, text=True, cwd=tmp_path, env=environment, timeout=900)
    assert result.returncode == 0, result.stderr
    assert "intraprocess_best_effort: ok" in result.stdout
    with open(output / "measurements_intraprocess_best_effort.csv", newline="") as raw:
        rows = list(csv.DictReader(raw))
    assert len(rows) == 50
    assert {row["Payload [Bytes]"] for row in rows} == {"16"}
    assert all(float(row["Latency [us]"]) > 0 for row in rows)
    metadata = json.loads((output / "metadata.json").read_text())
    assert metadata["fastdds"]["version"].startswith("2.")
    assert list((tmp_path / "cache").glob("*/perfgate-latency"))
