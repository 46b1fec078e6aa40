"""`perfgate bisect` end to end (issue 25): a real git repository of twelve commits, each built with
the real `perfgate build` (colcon, the real harness) and measured by real A/Bs over loopback.

The stand-in Fast DDS 2.9.1 installs the system's libfastrtps and, beside it, a small library its CMake
package links into whatever uses Fast DDS (the harness): it defines sendmsg and sendto, the calls Fast
DDS' UDP transport sends with, and busy-waits DELAY_US before calling the C library's. One commit in the
middle raises DELAY_US from 0 to 300: every UDP send of both the publisher and the echo gets slower,
which the A/B of interprocess_best_effort sees. The other commits change a note installed beside; one
of them breaks the build (a syntax error) and the next repairs it.
"""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PACKAGE_XML, git_in
from perfgate import schema as s
from perfgate.fastdds import source as fastdds_source
from perfgate.bisect import names as bisect_names

CULPRIT, BROKEN_AT, COUNT = 7, 5, 12  # commits 0 (good) .. 11 (bad)
DELAY_US = 300

STAND_IN_CMAKE = """cmake_minimum_required(VERSION 3.16)
project(fastrtps VERSION "2.9.1" LANGUAGES C)
include(CMakePackageConfigHelpers)
add_library(standin_send_delay SHARED send_delay.c)
target_link_libraries(standin_send_delay PRIVATE dl)
install(TARGETS standin_send_delay)
install(FILES "{library}" DESTINATION lib RENAME libfastrtps.so.2.9)
install(FILES note.txt DESTINATION share/fastrtps)
file(WRITE "${{CMAKE_CURRENT_BINARY_DIR}}/fastrtps-config.cmake" [=[
get_filename_component(_prefix "${{CMAKE_CURRENT_LIST_DIR}}/../../.." ABSOLUTE)
find_package(fastcdr REQUIRED)
find_package(foonathan_memory REQUIRED)
if(NOT TARGET fastrtps)
  add_library(fastrtps SHARED IMPORTED)
  set_target_properties(fastrtps PROPERTIES IMPORTED_LOCATION "${{_prefix}}/lib/libfastrtps.so.2.9"
    IMPORTED_SONAME libfastrtps.so.2.9 INTERFACE_LINK_LIBRARIES
    "-Wl,--no-as-needed;${{_prefix}}/lib/libstandin_send_delay.so;-Wl,--as-needed;fastcdr;foonathan_memory")
endif()
]=])
write_basic_package_version_file("${{CMAKE_CURRENT_BINARY_DIR}}/fastrtps-config-version.cmake" VERSION 2.9.1
                                 COMPATIBILITY SameMajorVersion)
install(FILES "${{CMAKE_CURRENT_BINARY_DIR}}/fastrtps-config.cmake"
              "${{CMAKE_CURRENT_BINARY_DIR}}/fastrtps-config-version.cmake" DESTINATION share/fastrtps/cmake)
"""

SEND_DELAY_C = """/* sendmsg and sendto, what Fast DDS' UDP transport sends with, busy-waiting DELAY_US first */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/socket.h>
#include <time.h>
#include "delay.h"

static void spin(void)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000000L + (now.tv_nsec - start.tv_nsec) / 1000 < DELAY_US);
}

ssize_t sendmsg(int fd, const struct msghdr *message, int flags)
{
    static ssize_t (*real)(int, const struct msghdr *, int);
    if (!real) real = (ssize_t (*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
    spin();
    return real(fd, message, flags);
}

ssize_t sendto(int fd, const void *data, size_t length, int flags, const struct sockaddr *to, socklen_t size)
{
    static ssize_t (*real)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
    if (!real) real = (ssize_t (*)(int, const void *, size_t, int, const struct sockaddr *, socklen_t))
        dlsym(RTLD_NEXT, "sendto");
    spin();
    return real(fd, data, length, flags, to, size);
}
"""

# the A/Bs: one sub-experiment, one payload, the fewest rounds that can reject (7 for 2 tests at 0.02);
# the planted change is several times the latency, so a 5 % threshold loses nothing and keeps an
# unchanged commit from failing on this shared machine's order effects
AB_OPTIONS = ["--subexperiments", "interprocess_best_effort", "--payloads", "16", "--rounds", "7",
              "--samples", "100", "--threshold", "0.05"]


def system_fastrtps() -> Path | None:
    listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    match = re.search(r"libfastrtps\.so\.2\.\d+ \(.*?\) => (\S+)", listing)
    return Path(match.group(1)).resolve() if match else None


def make_history(origin: Path, library: Path) -> list[str]:
    origin.mkdir()
    git_in(origin, "init", "--quiet", "--initial-branch", "master")
    (origin / "CMakeLists.txt").write_text(STAND_IN_CMAKE.format(library=library))
    (origin / "package.xml").write_text(PACKAGE_XML.format(name="fastrtps", version="2.9.1"))
    (origin / "send_delay.c").write_text(SEND_DELAY_C)
    commits = []
    for index in range(COUNT):
        (origin / "delay.h").write_text(f"#define DELAY_US {DELAY_US if index >= CULPRIT else 0}\n")
        (origin / "note.txt").write_text(f"commit {index}\n")
        source = SEND_DELAY_C + ("this does not compile\n" if index == BROKEN_AT else "")
        (origin / "send_delay.c").write_text(source)
        subject = {CULPRIT: f"writer: wait {DELAY_US} us before each send", BROKEN_AT: "a change that breaks the build",
                   BROKEN_AT + 1: "repair the build"}.get(index, f"no-op change {index}")
        git_in(origin, "add", ".")
        git_in(origin, "commit", "--quiet", "-m", subject)
        commits.append(git_in(origin, "rev-parse", "HEAD"))
    return commits


def bisect(workspace: Path, origin: Path, good: str, bad: str, output: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfgate.cli", "bisect", "--workspace", str(workspace),
                           "--git-url", str(origin), "--good", good, "--bad", bad, "--output", str(output),
                           "--jobs", "2", *AB_OPTIONS], capture_output=True, text=True, timeout=3600)


@pytest.fixture(scope="module")
def bisected(tmp_path_factory):
    library = system_fastrtps()
    assert library is not None and fastdds_source.installed_cmake_version("fastcdr") is not None, \
        "needs the system's Fast DDS 2.x and Fast CDR (ci/debian-packages.txt)"
    root = tmp_path_factory.mktemp("bisect")
    commits = make_history(root / "origin", library)
    workspace = root / "ws"
    found = bisect(workspace, root / "origin", commits[0], commits[-1], root / "found")
    clean = bisect(workspace, root / "origin", commits[0], commits[BROKEN_AT - 1], root / "clean")
    return root, commits, found, clean


@pytest.mark.compiles
@pytest.mark.fastdds
@pytest.mark.slow
def test_bisect_names_the_commit_that_made_the_echo_slower(bisected):
    root, commits, found, _ = bisected
    assert found.returncode == s.EXIT_REGRESSION, found.stdout[-4000:] + found.stderr[-4000:]
    result = json.loads((root / "found" / bisect_names.BISECT_JSON).read_text())
    assert result["status"] == "culprit found" and result["culprit"]["sha"] == commits[CULPRIT]
    assert result["culprit"]["subject"] == f"writer: wait {DELAY_US} us before each send"
    assert result["ab_count"] <= math.ceil(math.log2(COUNT - 1)) + 2 == result["ab_budget"]
    # the culprit against its parent shows the regression, several times the latency
    against_parent = result["culprit"]["against_parent"]["tests"]
    assert all(test["failed"] and test["ratio"] > 1.5 for test in against_parent)
    assert result["steps"][-1]["kind"] == "culprit" and result["steps"][-1]["against"] == commits[CULPRIT - 1]
    # every A/B is a real A/B folder, its verdict beside its rounds
    measured = [step for step in result["steps"] if "ab_directory" in step]
    assert len(measured) == result["ab_count"]
    for step in measured:
        folder = Path(step["ab_directory"])
        assert (folder / s.VERDICT_JSON).is_file() and len(list((folder / s.AB_ROUNDS_DIR).iterdir())) == 7
    assert (root / "found" / s.PLOTS_DIR / bisect_names.BISECT_CHART_PNG).is_file()
    assert commits[CULPRIT] in (root / "found" / s.REPORT_MARKDOWN).read_text()
    assert commits[CULPRIT] in (root / "found" / s.REPORT_HTML).read_text()
    assert f"perfgate bisect: REGRESSION: culprit {commits[CULPRIT][:10]}" in found.stdout


@pytest.mark.compiles
@pytest.mark.fastdds
@pytest.mark.slow
def test_a_broken_build_is_skipped_and_reported(bisected):
    root, commits, found, _ = bisected
    result = json.loads((root / "found" / bisect_names.BISECT_JSON).read_text())
    assert [commit["sha"] for commit in result["skipped"]] == [commits[BROKEN_AT]]
    skipped = [step for step in result["steps"] if step["commit"] == commits[BROKEN_AT]]
    assert [step["outcome"] for step in skipped] == ["skipped (build failed)"]
    assert f"perfgate bisect: build of {commits[BROKEN_AT][:10]} failed, skipped" in found.stderr


@pytest.mark.compiles
@pytest.mark.fastdds
@pytest.mark.slow
def test_a_range_without_a_regression_is_exit_0_after_one_ab(bisected):
    root, commits, _, clean = bisected
    assert clean.returncode == s.EXIT_OK, clean.stdout[-4000:] + clean.stderr[-4000:]
    result = json.loads((root / "clean" / bisect_names.BISECT_JSON).read_text())
    assert (result["status"], result["ab_count"], result["culprit"]) == ("no regression", 1, None)
    assert f"perfgate bisect: PASS: {commits[BROKEN_AT - 1][:10]} does not regress against {commits[0][:10]}" \
        in clean.stdout
