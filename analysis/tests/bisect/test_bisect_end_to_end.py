"""`perfgate bisect` end to end (issue 25): a real git repository of twelve commits, each built with
the real `perfgate build` (colcon, the real harness) and measured by real A/Bs over loopback.

The stand-in Fast DDS 2.9.1 (conftest.stand_in_fastdds_cmake) installs the system's libfastrtps and,
beside it, a small library its CMake package links into whatever uses Fast DDS (the harness): it
defines sendmsg and sendto, the calls Fast DDS' UDP transport sends with, and busy-waits DELAY_US
before calling the C library's. Commit 8 raises DELAY_US from 0 to 300: every UDP send of both the
publisher and the echo gets slower, which the A/B of interprocess_best_effort sees. The other commits
change a note installed beside, and the search meets, in this order:
- commit 5, which does not build (a syntax error), and commit 6, which is no Fast DDS source (its
  CMakeLists.txt moved away; commit 7 brings it back): both skipped, each with why;
- commit 4, noisy: its first A/B (the first PERFGATE_RUN_ID its library sees, kept in NOISE_FILE) is
  slowed by NOISE_US per send, a part of commit 8's change, as a machine busy during one measurement
  would: that step is ambiguous, measured again with twice the rounds, and then good;
- commits 7 (good), 9 and 8 (bad), then commit 8 against its parent.
"""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PACKAGE_XML, git_in, stand_in_fastdds_cmake, system_fastrtps
from perfgate import schema as s
from perfgate.bisect import names as bisect_names
from perfgate.bisect import search
from perfgate.fastdds import source as fastdds_source

CULPRIT, BROKEN_AT, NOT_FASTDDS_AT, NOISY_AT, COUNT = 8, 5, 6, 4, 12  # commits 0 (good) .. 11 (bad)
CLEAN_BAD = 3  # commits 1..3 change only the note: a range without a regression
DELAY_US = 300
# a part of the change: the round trip's two sends each NOISE_US slower, where the culprit's are 300 us
# slower: about half of the culprit's change in log scale (its Median 12x to 27x here) whatever the
# latency without the wait (23 to 55 us measured here), inside the ambiguous band (0.25, 0.75)
NOISE_US = 50
ROUNDS = 7

SEND_DELAY_C = """/* sendmsg and sendto, what Fast DDS' UDP transport sends with, busy-waiting first: DELAY_US, and
   NOISE_US more in the first A/B of this build (the first PERFGATE_RUN_ID seen, kept in NOISE_FILE) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "delay.h"

static long wait_us = -1;

static long this_wait(void)
{
    long wait = DELAY_US;
    const char *run = getenv("PERFGATE_RUN_ID");
    if (wait_us >= 0)
        return wait_us;
    if (NOISE_US > 0 && run && *run) {
        int fd = open(NOISE_FILE, O_RDWR | O_CREAT, 0644);
        if (fd >= 0) {
            char first[128] = {0};
            flock(fd, LOCK_EX);
            if (read(fd, first, sizeof first - 1) <= 0) {
                strncpy(first, run, sizeof first - 1);
                if (write(fd, first, strlen(first)) < 0)
                    first[0] = 0;
            }
            flock(fd, LOCK_UN);
            close(fd);
            if (strcmp(first, run) == 0)
                wait += NOISE_US;
        }
    }
    wait_us = wait;
    return wait;
}

static void spin(void)
{
    struct timespec start, now;
    long wait = this_wait();
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000000L + (now.tv_nsec - start.tv_nsec) / 1000 < wait);
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
AB_OPTIONS = ["--subexperiments", "interprocess_best_effort", "--payloads", "16", "--rounds", str(ROUNDS),
              "--samples", "100", "--threshold", "0.05"]


def make_history(origin: Path, library: Path, noise_file: Path) -> list[str]:
    origin.mkdir()
    git_in(origin, "init", "--quiet", "--initial-branch", "master")
    (origin / "package.xml").write_text(PACKAGE_XML.format(name="fastrtps", version="2.9.1"))
    commits = []
    for index in range(COUNT):
        (origin / "delay.h").write_text(f"#define DELAY_US {DELAY_US if index >= CULPRIT else 0}\n"
                                        f"#define NOISE_US {NOISE_US if index == NOISY_AT else 0}\n"
                                        f"#define NOISE_FILE \"{noise_file}\"\n")
        (origin / "note.txt").write_text(f"commit {index}\n")
        source = SEND_DELAY_C + ("this does not compile\n" if index == BROKEN_AT else "")
        (origin / "send_delay.c").write_text(source)
        cmake = origin / "CMakeLists.txt"
        if index == NOT_FASTDDS_AT:
            cmake.unlink()
        else:
            cmake.write_text(stand_in_fastdds_cmake(library, linked="send_delay.c"))
        subject = {CULPRIT: f"writer: wait {DELAY_US} us before each send", BROKEN_AT: "a change that breaks the build",
                   NOT_FASTDDS_AT: "move the build elsewhere", NOT_FASTDDS_AT + 1: "repair the build"}.get(
                       index, f"no-op change {index}")
        git_in(origin, "add", "--all", ".")
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
    commits = make_history(root / "origin", library, root / "noise-run-id")
    workspace = root / "ws"
    found = bisect(workspace, root / "origin", commits[0], commits[-1], root / "found")
    clean = bisect(workspace, root / "origin", commits[0], commits[CLEAN_BAD], root / "clean")
    return root, commits, found, clean


def steps_of(result: dict, commits: list[str]) -> list[tuple]:
    """Each step as (kind, commit index, against index, outcome, rounds planned: its A/B folder's rounds)."""
    index = {sha: i for i, sha in enumerate(commits)}
    return [(step["kind"], index[step["commit"]], index[step["against"]], step["outcome"],
             len(list((Path(step["ab_directory"]) / s.AB_ROUNDS_DIR).iterdir())) if "ab_directory" in step else None)
            for step in result["steps"]]


@pytest.mark.compiles
@pytest.mark.fastdds
@pytest.mark.slow
def test_bisect_names_the_commit_that_made_the_echo_slower(bisected):
    root, commits, found, _ = bisected
    assert found.returncode == s.EXIT_REGRESSION, found.stdout[-4000:] + found.stderr[-4000:]
    result = json.loads((root / "found" / bisect_names.BISECT_JSON).read_text())
    assert result["status"] == "culprit found" and result["culprit"]["sha"] == commits[CULPRIT]
    assert result["culprit"]["subject"] == f"writer: wait {DELAY_US} us before each send"
    # the search as docs/bisect.md describes it: the middle (5, then 6: skipped), the next nearest (4:
    # noisy, measured again with twice the rounds), then 7, 9, 8, and the culprit against its parent
    assert steps_of(result, commits) == [
        ("confirm", 11, 0, "regressed", ROUNDS),
        ("step", BROKEN_AT, 0, search.SKIPPED, None), ("step", NOT_FASTDDS_AT, 0, search.SKIPPED, None),
        ("step", NOISY_AT, 0, "ambiguous", ROUNDS), ("step", NOISY_AT, 0, "good", 2 * ROUNDS),
        ("step", 7, 0, "good", ROUNDS), ("step", 9, 0, "bad", ROUNDS), ("step", 8, 0, "bad", ROUNDS),
        ("culprit", CULPRIT, CULPRIT - 1, "regressed", ROUNDS)]
    # within the budget of a search without ambiguous steps, plus the one measured again
    assert result["ab_count"] == result["ab_budget"] + 1 == math.ceil(math.log2(COUNT - 1)) + 2 + 1
    # the culprit against its parent shows the regression, several times the latency
    against_parent = result["culprit"]["against_parent"]["tests"]
    assert all(test["failed"] and test["ratio"] > 1.5 for test in against_parent)
    # every A/B is a real A/B folder, its verdict beside its rounds
    measured = [step for step in result["steps"] if "ab_directory" in step]
    assert len(measured) == result["ab_count"]
    assert all((Path(step["ab_directory"]) / s.VERDICT_JSON).is_file() for step in measured)
    assert (root / "found" / s.PLOTS_DIR / bisect_names.BISECT_CHART_PNG).is_file()
    assert commits[CULPRIT] in (root / "found" / s.REPORT_MARKDOWN).read_text()
    assert commits[CULPRIT] in (root / "found" / s.REPORT_HTML).read_text()
    assert f"perfgate bisect: REGRESSION: culprit {commits[CULPRIT][:10]}" in found.stdout


@pytest.mark.compiles
@pytest.mark.fastdds
@pytest.mark.slow
def test_a_noisy_step_is_measured_again_not_guessed(bisected):
    root, commits, found, _ = bisected
    result = json.loads((root / "found" / bisect_names.BISECT_JSON).read_text())
    noisy = [step for step in result["steps"] if step["commit"] == commits[NOISY_AT]]
    first, again = noisy
    median = {(t["statistic"]): t for t in first["tests"]}["Median"]
    # the first A/B saw a part of the change: neither good nor bad, said so
    assert first["outcome"] == "ambiguous" and 1.05 < median["ratio"] and "% of the change" in first["why"]
    assert again["outcome"] == "good" and not any(t["failed"] for t in again["tests"])
    assert f"{commits[NOISY_AT][:10]} against {commits[0][:10]} ({2 * ROUNDS} rounds)" in found.stdout
    # report.md's steps table (#, kind, commit, subject, against, rounds, change, outcome, why, wall): both
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in (root / "found" / s.REPORT_MARKDOWN).read_text().splitlines() if line.startswith("| ")]
    assert [(row[5], row[7]) for row in rows if row[2] == commits[NOISY_AT][:10]] == [
        (str(ROUNDS), "ambiguous"), (str(2 * ROUNDS), "good")]


@pytest.mark.compiles
@pytest.mark.fastdds
@pytest.mark.slow
def test_a_broken_build_and_a_commit_without_fast_dds_are_skipped_with_why(bisected):
    root, commits, found, _ = bisected
    result = json.loads((root / "found" / bisect_names.BISECT_JSON).read_text())
    assert [commit["sha"] for commit in result["skipped"]] == [commits[BROKEN_AT], commits[NOT_FASTDDS_AT]]
    broken, moved = result["skipped"]
    assert broken["why"].startswith("build failed: ") and "not a Fast DDS source" not in broken["why"]
    assert moved["why"].startswith("build failed: ") and moved["why"].endswith("not a Fast DDS source: no CMakeLists.txt")
    for index in (BROKEN_AT, NOT_FASTDDS_AT):
        skipped = [step for step in result["steps"] if step["commit"] == commits[index]]
        assert [step["outcome"] for step in skipped] == ["skipped (build failed)"]
        assert f"perfgate bisect: build of {commits[index][:10]} failed, skipped: " in found.stderr
    assert re.search(f"perfgate bisect: skipped {commits[NOT_FASTDDS_AT][:10]}: build failed: .*no CMakeLists.txt",
                     found.stdout)


@pytest.mark.compiles
@pytest.mark.fastdds
@pytest.mark.slow
def test_a_range_without_a_regression_is_exit_0_after_one_ab(bisected):
    root, commits, _, clean = bisected
    assert clean.returncode == s.EXIT_OK, clean.stdout[-4000:] + clean.stderr[-4000:]
    result = json.loads((root / "clean" / bisect_names.BISECT_JSON).read_text())
    assert (result["status"], result["ab_count"], result["culprit"]) == ("no regression", 1, None)
    assert f"perfgate bisect: PASS: {commits[CLEAN_BAD][:10]} does not regress against {commits[0][:10]}" \
        in clean.stdout
