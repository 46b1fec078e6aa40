"""fastdds.colcon: the colcon build of a workspace: its command line and CMake options, the
environment (ccache, jobs), running it with a log, and checking that the harness it built loads the
workspace's own Fast DDS."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from .. import files
from ..errors import InputError
from .source import release
from ..process_group import own_group
from .workspace import CCACHE_DIR, STATE_DIR

# What every build gets: Release, DDS Security, the performance tests (test/performance), and an
# install RPATH, so the harness finds the workspace's Fast DDS without sourcing setup scripts.
# $ORIGIN/../lib comes first (CMake puts CMAKE_INSTALL_RPATH before the link directories it appends):
# a copy of the merged install (kept.py) then loads its own libraries, not those WS/install holds
# later. No shell sees it (colcon runs cmake without one; CMake escapes it for make itself).
ORIGIN_RPATH = "$ORIGIN/../lib"
CMAKE_OPTIONS = {
    "CMAKE_BUILD_TYPE": "Release",
    "SECURITY": "ON",
    "PERFORMANCE_TESTS": "ON",
    "CMAKE_INSTALL_RPATH": ORIGIN_RPATH,
    "CMAKE_INSTALL_RPATH_USE_LINK_PATH": "ON",
    "PERFGATE_BUILD_TESTS": "OFF",  # the harness's own unit tests run in ci/test.sh, not per commit
}
# Compiler warnings never fail a build: a gate must not break on a compiler version upstream's CI does
# not use. Fast DDS 3.5 and later set CMAKE_COMPILE_WARNING_AS_ERROR, which cmake's
# --compile-no-warning-as-error overrides (CMake 3.24+), but only in the configure it is given to: a
# regeneration during the build (a commit that touches a CMakeLists.txt) forgets it. 3.0 to 3.4
# append -Werror to CMAKE_CXX_FLAGS, which no CMake option undoes. So every compile also goes through
# a launcher that puts -Wno-error last on the compiler's command line (kept in CMake's cache, so
# regenerations keep it). perfgate's own harness adds -Werror only when asked (PERFGATE_WERROR,
# ci/test.sh's build), never in a workspace.
NO_WARNING_AS_ERROR_SINCE = (3, 24)
ALIGN_FUNCTIONS_FLAG = "-falign-functions="
WARNINGS_LAUNCHER = "no-warning-as-error"  # WS/perfgate/<this>
WARNINGS_LAUNCHER_SCRIPT = """#!/bin/sh
# Written by `perfgate build` (docs/build.md "Warnings are never errors"): runs the compiler command
# it is given with -Wno-error last, so that no -Werror before it makes a warning fail the build.
exec "$@" -Wno-error
"""
_FAILED_LINE = re.compile(r"^Failed\s+<<<\s+(\S+)", re.MULTILINE)


# --- the colcon command -------------------------------------------------------------------------
def cmake_arguments(ccache: bool, package: str | None = None, cmake_version: tuple[int, ...] | None = None,
                    warnings_launcher: Path | None = None, source_options: dict[str, str] | None = None,
                    align_functions: int = 0) -> list[str]:
    """colcon's --cmake-args: CMAKE_OPTIONS and the options the source needs (fastdds_source.
    source_cmake_options); the Fast DDS package the harness must build against (native/CMakeLists.txt:
    never a system copy of another major); warnings not fatal (see above: --compile-no-warning-as-error
    where CMake knows it, and the launcher); ccache; every function aligned to `align_functions` bytes
    when given (docs/verdict.md "Code layout averaged, and pinned")."""
    options = {**CMAKE_OPTIONS, **(source_options or {})}
    if align_functions:  # Fast DDS 3.0-3.4 append their -Werror to these: given here, not replaced there
        options.update({f"CMAKE_{language}_FLAGS": f"{ALIGN_FUNCTIONS_FLAG}{align_functions}" for language in ("C", "CXX")})
    args = [f"-D{name}={value}" for name, value in options.items()]
    if package is not None:
        args.append(f"-DPERFGATE_FASTDDS_PACKAGE={package}")
    if cmake_version is not None and cmake_version >= NO_WARNING_AS_ERROR_SINCE:
        args.append("--compile-no-warning-as-error")
    launchers = ([str(warnings_launcher)] if warnings_launcher is not None else []) + (["ccache"] if ccache else [])
    if launchers:  # a CMake list: the first runs the rest
        args += [f"-DCMAKE_C_COMPILER_LAUNCHER={';'.join(launchers)}",
                 f"-DCMAKE_CXX_COMPILER_LAUNCHER={';'.join(launchers)}"]
    return args


def function_alignment(cmake_args) -> int:
    """The --align-functions a build was made with, read back from its CMake arguments (the build
    record's `cmake_args`): 0 for the compiler's own, or for arguments that are not a list of strings."""
    prefix = f"-DCMAKE_CXX_FLAGS={ALIGN_FUNCTIONS_FLAG}"
    for argument in cmake_args if isinstance(cmake_args, list) else []:
        if isinstance(argument, str) and argument.startswith(prefix) and argument[len(prefix):].isdigit():
            return int(argument[len(prefix):])
    return 0


def write_warnings_launcher(workspace: Path) -> Path:
    launcher = workspace / STATE_DIR / WARNINGS_LAUNCHER
    launcher.parent.mkdir(parents=True, exist_ok=True)
    if not launcher.is_file() or launcher.read_text() != WARNINGS_LAUNCHER_SCRIPT:
        files.write_text(launcher, WARNINGS_LAUNCHER_SCRIPT)
    launcher.chmod(0o755)
    return launcher


def colcon_base(workspace: Path) -> list[str]:
    return ["colcon", "--log-base", str(workspace / "log")]


def colcon_paths(workspace: Path) -> list[str]:
    return ["--base-paths", str(workspace / "src"), "--build-base", str(workspace / "build"),
            "--install-base", str(workspace / "install"), "--merge-install"]


def colcon_build_command(workspace: Path, cmake_args: list[str]) -> list[str]:
    # --cmake-args takes everything after it: keep it last
    return colcon_base(workspace) + ["build"] + colcon_paths(workspace) + [
        "--event-handlers", "console_direct-", "console_cohesion-", "--cmake-args", *cmake_args]


def build_environment(environment: dict[str, str], workspace: Path, jobs: int | None, ccache: bool) -> dict[str, str]:
    env = dict(environment)
    if ccache:
        env.setdefault("CCACHE_DIR", str(workspace / CCACHE_DIR))
        env.setdefault("CCACHE_BASEDIR", str(workspace))  # paths inside the workspace hash as relative
    if jobs is not None:
        env["MAKEFLAGS"] = f"-j{jobs}"
    return env


def failed_packages(colcon_output: str) -> list[str]:
    """The packages colcon reports as `Failed <<< name`, in its order."""
    return _FAILED_LINE.findall(colcon_output)


def check_tools(ccache: bool) -> None:
    for tool in ("colcon", "cmake", "git") + (("ccache",) if ccache else ()):
        if shutil.which(tool) is None:
            raise InputError(f"{tool} is not installed (see docs/build.md; --no-ccache builds without ccache)")


def harness_link_problem(library: str | None, workspace: Path, package: str) -> str | None:
    """Why the harness's Fast DDS library is not the workspace's (None when it is): a harness built
    against a system copy would measure another Fast DDS under this commit's name."""
    expected = f"lib{package}.so"
    prefix = Path(workspace) / "install"
    if library is None:
        return f"the harness loads no Fast DDS library (ldd lists no lib{package}.so)"
    if not Path(library).resolve().is_relative_to(Path(workspace).resolve()) or \
            not Path(library).name.startswith(expected):
        return (f"the harness loads {library}, not the workspace's {expected} under {prefix}: it was built "
                "against another Fast DDS (a system package?); see PERFGATE_FASTDDS_PACKAGE in native/CMakeLists.txt")
    return None


def cmake_version() -> tuple[int, ...]:
    """The installed cmake's version, (0,) when it does not say."""
    try:
        output = subprocess.run(["cmake", "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return (0,)
    match = re.search(r"cmake version (\d+(?:\.\d+)*)", output)
    return release(match.group(1)) if match else (0,)


def linked_libraries(executable: Path) -> dict[str, str | None]:
    """Every shared library the dynamic linker picks for an executable (ldd): name -> path (found through
    $ORIGIN it reads <prefix>/bin/../lib/...: written <prefix>/lib/...), None when not found; empty when
    ldd cannot say."""
    try:
        listing = subprocess.run(["ldd", str(executable)], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    libraries: dict[str, str | None] = {}
    for line in listing.splitlines():
        match = re.match(r"\s*(\S+)\s+=>\s+(not found|\S+)", line)
        if match:
            libraries[match.group(1)] = None if match.group(2) == "not found" else os.path.normpath(match.group(2))
    return libraries


def linked_fastdds_library(executable: Path) -> str | None:
    """The Fast DDS library the dynamic linker picks for an executable (ldd), or None."""
    for name, path in linked_libraries(executable).items():
        if re.match(r"lib(fastrtps|fastdds)\.so", name) and path is not None:
            return path
    return None


def run_colcon(command: list[str], environment: dict[str, str], log_path: Path) -> tuple[int, str]:
    """Run colcon with its output to the terminal and to log_path; (exit code, output)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    output: list[str] = []
    with open(log_path, "w") as log:
        log.write(f"$ {' '.join(command)}\n")
        # ended whole with perfgate: a cancelled job's SIGTERM would otherwise leave colcon compiling
        with own_group(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, errors="replace") as process:
            for line in process.stdout:
                output.append(line)
                log.write(line)
                print(line, end="", flush=True)
            code = process.wait()
    return code, "".join(output)
