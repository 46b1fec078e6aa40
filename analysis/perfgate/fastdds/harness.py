"""The native harness (native/): built with CMake on first use into a cache keyed by what it is built from.

`ensure_harness()` returns the paths of perfgate-latency and perfgate-floor, building them when the
cache has no build for the current native/ sources, Fast DDS prefix and compiler. A failed build
raises IncompleteError (exit 3) carrying the tail of the build log.

    python -m perfgate.fastdds.harness build [--test] [--fastdds-prefix DIR]

builds (with --test also the GoogleTest unit tests, warnings as errors, and runs them with ctest).
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import IncompleteError, PerfgateError
from ..escape.workflow import log_text
# one way to make a build log's tail printable (GCC colours, control characters), Fast DDS' or the harness's
from .logs import log_tail
from ..process_group import own_group
from ..schema import EXIT_INCOMPLETE, EXIT_OK


def _native_dir() -> Path:
    """The harness sources: shipped as package data in an installed perfgate (pyproject.toml), else the
    repository's native/ (a checkout or an editable install, whose edits must count at once)."""
    package = Path(__file__).resolve().parents[1]  # perfgate/, this module being perfgate/fastdds/harness.py
    shipped = package / "native"
    return shipped if (shipped / "CMakeLists.txt").is_file() else package.parents[1] / "native"


NATIVE_DIR = _native_dir()
CACHE_ENV = "PERFGATE_CACHE_DIR"
DEFAULT_CACHE = Path.home() / ".cache" / "perfgate" / "harness"
LATENCY_EXECUTABLE = "perfgate-latency"
FLOOR_EXECUTABLE = "perfgate-floor"
UNIT_TESTS_EXECUTABLE = "perfgate_unit_tests"
BUILD_LOG = "build.log"
BUILT_STAMP = "built.ok"  # written last: a build folder without it is unfinished
# Source folders that are build output, never input to the hash.
IGNORED_DIRS = {"build", "install", "log", ".git", "__pycache__"}


@dataclass(frozen=True)
class HarnessPaths:
    latency: Path  # perfgate-latency
    floor: Path  # perfgate-floor
    build_dir: Path


def ensure_harness(fastdds_prefix: Path | None = None, *, source_dir: Path = NATIVE_DIR,
                   cache_dir: Path | None = None, with_tests: bool = False) -> HarnessPaths:
    """Paths of the built harness, building it first if this source/prefix/compiler has no build yet."""
    source_dir = Path(source_dir).resolve()
    build_dir = _cache_root(cache_dir) / build_key(source_dir, fastdds_prefix, _compiler())
    paths = HarnessPaths(build_dir / LATENCY_EXECUTABLE, build_dir / FLOOR_EXECUTABLE, build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    # One build at a time per folder: parallel test workers and runs share the cache.
    with _locked(build_dir.with_name(build_dir.name + ".lock")):
        if _is_built(paths, with_tests):
            return paths
        (build_dir / BUILT_STAMP).unlink(missing_ok=True)
        _build(source_dir, build_dir, fastdds_prefix, with_tests)
        for executable in (paths.latency, paths.floor):
            if not executable.is_file():
                raise IncompleteError(f"the harness build did not produce {executable.name}", build_dir / BUILD_LOG)
        (build_dir / BUILT_STAMP).write_text("ok\n")
    return paths


def fastdds_version(harness: HarnessPaths) -> str:
    """The Fast DDS version the harness was built against, as its headers say (e.g. "2.9.1")."""
    try:
        result = subprocess.run([str(harness.latency), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise IncompleteError(f"cannot run the harness: {error}", harness.latency) from None
    version = result.stdout.strip()
    if result.returncode != 0 or not version or "\n" in version:
        raise IncompleteError(f"`--version` failed (exit {result.returncode}): {result.stderr.strip()}",
                              harness.latency)
    return version


def build_key(source_dir: Path, fastdds_prefix: Path | None, compiler: str) -> str:
    """A hash of every source file (path and content), the source folder itself, the Fast DDS prefix and
    the compiler identity. The folder because a CMake build tree belongs to one source folder: two
    checkouts (or the repository and an installed wheel) with the same files cannot share one."""
    digest = hashlib.sha256()
    digest.update(f"source={Path(source_dir).resolve()}\0".encode())
    _hash_sources(digest, source_dir)
    digest.update(f"prefix={Path(fastdds_prefix).resolve() if fastdds_prefix else ''}\0".encode())
    digest.update(f"compiler={compiler}\0".encode())
    return digest.hexdigest()[:20]


def source_digest(source_dir: Path = NATIVE_DIR) -> str:
    """A hash of the harness's source files, paths and contents, wherever they are: what a kept install's
    harness was built from (fastdds_build/kept.py reuses one only for the same sources)."""
    digest = hashlib.sha256()
    _hash_sources(digest, Path(source_dir))
    return digest.hexdigest()


def _hash_sources(digest, source_dir: Path) -> None:
    for path in sorted(_source_files(source_dir)):
        digest.update(str(path.relative_to(source_dir)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")


def _source_files(source_dir: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(source_dir):
        dirs[:] = [d for d in dirs if d not in IGNORED_DIRS]
        for name in files:
            yield Path(root) / name


def _compiler() -> str:
    """Which C++ compiler CMake will pick and its version line."""
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or "c++"
    try:
        version = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        version = ""
    return f"{compiler} {version.splitlines()[0] if version else 'unknown'}"


def _cache_root(cache_dir: Path | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    return Path(os.environ[CACHE_ENV]) if os.environ.get(CACHE_ENV) else DEFAULT_CACHE


def _is_built(paths: HarnessPaths, with_tests: bool) -> bool:
    needed = [paths.latency, paths.floor] + ([paths.build_dir / UNIT_TESTS_EXECUTABLE] if with_tests else [])
    return (paths.build_dir / BUILT_STAMP).is_file() and all(p.is_file() for p in needed)


def _build(source_dir: Path, build_dir: Path, fastdds_prefix: Path | None, with_tests: bool) -> None:
    if shutil.which("cmake") is None:
        raise IncompleteError("cmake is not installed: cannot build the harness (see ci/debian-packages.txt)")
    configure = ["cmake", "-S", str(source_dir), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                 f"-DPERFGATE_BUILD_TESTS={'ON' if with_tests else 'OFF'}",
                 f"-DPERFGATE_WERROR={'ON' if with_tests else 'OFF'}"]
    if fastdds_prefix is not None:
        configure.append(f"-DCMAKE_PREFIX_PATH={Path(fastdds_prefix).resolve()}")
    compile_all = ["cmake", "--build", str(build_dir), "--parallel", str(os.cpu_count() or 1)]
    log_path = build_dir / BUILD_LOG
    with open(log_path, "w") as log:
        for command in (configure, compile_all):
            log.write(f"$ {' '.join(command)}\n")
            log.flush()
            returncode = _build_step(command, log)
            if returncode != 0:
                log.close()
                raise IncompleteError(
                    f"building the harness failed (`{' '.join(command[:2])}` exit {returncode}); "
                    f"last lines of the log:\n{log_tail(log_path)}", log_path)


def _build_step(command: list[str], log) -> int:
    """One cmake step, ended whole with perfgate (process_group)."""
    with own_group(command, stdout=log, stderr=subprocess.STDOUT) as process:
        return process.wait()


@contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run_unit_tests(harness: HarnessPaths) -> int:
    return subprocess.run(["ctest", "--test-dir", str(harness.build_dir), "--output-on-failure"]).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perfgate.fastdds.harness",
                                     description="Build perfgate's native harness (and run its unit tests).")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build perfgate-latency and perfgate-floor into the cache")
    build.add_argument("--test", action="store_true",
                       help="also build the unit tests with warnings as errors and run them with ctest")
    build.add_argument("--fastdds-prefix", "--fastdds_prefix", type=Path, default=None,
                       help="install prefix of the Fast DDS to build against (default: the system one)")
    options = parser.parse_args(argv)
    try:
        harness = ensure_harness(options.fastdds_prefix, with_tests=options.test)
        print(f"perfgate-latency: {harness.latency}")
        print(f"perfgate-floor: {harness.floor}")
        print(f"Fast DDS: {log_text(fastdds_version(harness))}")
    except PerfgateError as error:
        print(error, file=sys.stderr)
        return error.exit_code
    if options.test and _run_unit_tests(harness) != 0:
        print(f"{harness.build_dir}: harness unit tests failed", file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
