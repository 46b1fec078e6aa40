"""perfgate build: version detection, dependency choice, workspace layout and mirroring, the build
record, failure reporting (exit 3, failing package, log tail, JUnit "build") through a real colcon
build of a small broken source, and what run and gate make of a failed build.

The real Fast DDS build is the slow test (test_fastdds_source_build.py, `ci/slow-test.sh`).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from junitparser import Error, JUnitXml

from conftest import (BROKEN, REPO_ROOT, PACKAGE_XML, git_in, make_source, perfgate_in_process, processes_working_in,
                      terminal_signals)
from perfgate import cli, files
from perfgate.fastdds import source as fastdds_source
from perfgate import schema as s
from perfgate.errors import IncompleteError, InputError
from perfgate.fastdds import colcon
from perfgate.fastdds import git as build_git
from perfgate.fastdds import record as build_record
from perfgate.fastdds import workspace as build_workspace

def perfgate(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfgate.cli", *args], capture_output=True, text=True, cwd=cwd)


# --- what the source is ---------------------------------------------------------------------------
def test_cmake_project_name_and_version():
    assert fastdds_source.parse_cmake_project('project(fastrtps VERSION "2.9.1" LANGUAGES C CXX)\n') == ("fastrtps", "2.9.1")
    assert fastdds_source.parse_cmake_project("cmake_minimum_required(VERSION 3.22)\n  project(fastdds VERSION 3.6.2.0)") == \
        ("fastdds", "3.6.2.0")
    assert fastdds_source.parse_cmake_project("project(fastrtps)") == ("fastrtps", None)
    assert fastdds_source.parse_cmake_project("add_library(x)") is None


def test_detects_fast_dds_2_and_3(tmp_path):
    assert fastdds_source.detect_fastdds(make_source(tmp_path / "two")) == fastdds_source.FastddsSource("fastrtps", "2.9.1", 2)
    # 3.x: package fastdds; CMake says 3.6.2.0, package.xml 3.6.2: the release is 3.6.2
    three = make_source(tmp_path / "three", "fastdds", "3.6.2.0", "3.6.2")
    assert fastdds_source.detect_fastdds(three) == fastdds_source.FastddsSource("fastdds", "3.6.2", 3)
    # without package.xml the CMake project decides
    assert fastdds_source.detect_fastdds(make_source(tmp_path / "bare", xml_version=None)).version == "2.9.1"


@pytest.mark.parametrize("name, cmake_version, xml_version, message", [
    ("cyclonedds", "0.10.2", "0.10.2", "not a Fast DDS source"),
    ("fastrtps", "3.0.0", "3.0.0", "Fast DDS 3.x is package fastdds"),
    ("fastdds", "2.14.0", "2.14.0", "Fast DDS 2.x is package fastrtps"),
])
def test_refuses_what_is_not_a_fast_dds_source(tmp_path, name, cmake_version, xml_version, message):
    with pytest.raises(InputError, match=message):
        fastdds_source.detect_fastdds(make_source(tmp_path / "s", name, cmake_version, xml_version))


def test_refuses_a_folder_without_cmake_lists_or_with_disagreeing_names(tmp_path):
    with pytest.raises(InputError, match="no CMakeLists.txt"):
        fastdds_source.detect_fastdds(tmp_path)
    source = make_source(tmp_path / "s")
    (source / "package.xml").write_text(PACKAGE_XML.format(name="fastdds", version="3.0.0"))
    with pytest.raises(InputError, match="different packages"):
        fastdds_source.detect_fastdds(source)


# --- dependencies -----------------------------------------------------------------------------------
def test_reads_the_installed_fast_cdr_version():
    # libfastcdr-dev is in ci/debian-packages.txt; its config says what dpkg says
    packaged = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libfastcdr-dev"], capture_output=True,
                              text=True).stdout
    assert packaged.startswith(fastdds_source.installed_cmake_version("fastcdr") + "-")
    assert fastdds_source.installed_cmake_version("no_such_package_here") is None


def test_reads_a_cmake_package_version_under_any_prefix(tmp_path):
    config = tmp_path / "lib" / "x86_64-linux-gnu" / "cmake" / "fastcdr" / "fastcdr-config-version.cmake"
    config.parent.mkdir(parents=True)
    config.write_text('set(PACKAGE_VERSION "2.2.1")\n')
    assert fastdds_source.installed_cmake_version("fastcdr", (tmp_path,)) == "2.2.1"


def test_system_dependencies_where_they_fit():
    two, three = fastdds_source.FastddsSource("fastrtps", "2.9.1", 2), fastdds_source.FastddsSource("fastdds", "3.1.0", 3)
    assert fastdds_source.dependency_plan(two, None, None, "1.0.26", "0.7.2") == {
        "fastcdr": {"from": "system", "version": "1.0.26"}, "foonathan_memory": {"from": "system", "version": "0.7.2"}}
    with pytest.raises(InputError, match="needs Fast CDR 2.x, the system has 1.0.26: .*--fastcdr-source"):
        fastdds_source.dependency_plan(three, None, None, "1.0.26", "0.7.2")
    plan = fastdds_source.dependency_plan(three, Path("/src/fastcdr"), None, "1.0.26", "0.7.2")
    assert plan["fastcdr"] == {"from": "source", "path": "/src/fastcdr"}
    with pytest.raises(InputError, match="foonathan memory is not installed"):
        fastdds_source.dependency_plan(two, None, None, "1.0.26", None)
    with pytest.raises(InputError, match="Fast CDR 1.x: none is installed"):
        fastdds_source.dependency_plan(two, None, None, None, "0.7.2")


# --- the colcon command -----------------------------------------------------------------------------
def test_colcon_builds_release_with_security_and_performance_tests(tmp_path):
    command = colcon.colcon_build_command(tmp_path, colcon.cmake_arguments(ccache=True))
    cmake_args = command[command.index("--cmake-args") + 1:]
    assert {"-DCMAKE_BUILD_TYPE=Release", "-DSECURITY=ON", "-DPERFORMANCE_TESTS=ON",
            "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"} <= set(cmake_args)
    assert command[command.index("--base-paths") + 1] == str(tmp_path / "src")
    assert "--merge-install" in command
    assert not any("ccache" in arg for arg in colcon.cmake_arguments(ccache=False))
    environment = colcon.build_environment({}, tmp_path, 3, True)
    assert environment == {"CCACHE_DIR": str(tmp_path / "ccache"), "CCACHE_BASEDIR": str(tmp_path), "MAKEFLAGS": "-j3"}
    assert colcon.build_environment({"CCACHE_DIR": "/shared"}, tmp_path, None, True)["CCACHE_DIR"] == "/shared"


# --- sources into the workspace ---------------------------------------------------------------------
def test_mirror_copies_only_what_changed_with_a_fresh_mtime(tmp_path):
    source, dest, manifest = tmp_path / "source", tmp_path / "dest", tmp_path / "manifest.json"
    (source / "src" / "cpp").mkdir(parents=True)
    (source / ".git").mkdir()
    (source / ".git" / "HEAD").write_text("ref\n")
    for name in ("a.cpp", "b.cpp"):
        (source / "src" / "cpp" / name).write_text(f"// {name}\n")
    (source / "link.cpp").symlink_to("src/cpp/a.cpp")
    assert build_workspace.mirror_tree(source, dest, manifest) == build_workspace.MirrorResult(3, 0, 0)
    assert (dest / "src" / "cpp" / "b.cpp").read_text() == "// b.cpp\n"
    assert os.readlink(dest / "link.cpp") == "src/cpp/a.cpp" and not (dest / ".git").exists()
    assert build_workspace.mirror_tree(source, dest, manifest) == build_workspace.MirrorResult(0, 0, 3)

    copied_at = {name: (dest / "src" / "cpp" / name).stat().st_mtime_ns for name in ("a.cpp", "b.cpp")}
    # new content with an OLD mtime (as another checkout can have): still copied, and newer than before
    (source / "src" / "cpp" / "a.cpp").write_text("// changed\n")
    os.utime(source / "src" / "cpp" / "a.cpp", ns=(10**9, 10**9))
    time.sleep(0.01)
    assert build_workspace.mirror_tree(source, dest, manifest) == build_workspace.MirrorResult(1, 0, 2)
    assert (dest / "src" / "cpp" / "a.cpp").read_text() == "// changed\n"
    assert (dest / "src" / "cpp" / "a.cpp").stat().st_mtime_ns > copied_at["a.cpp"]
    assert (dest / "src" / "cpp" / "b.cpp").stat().st_mtime_ns == copied_at["b.cpp"]

    (source / "src" / "cpp" / "b.cpp").unlink()
    assert build_workspace.mirror_tree(source, dest, manifest) == build_workspace.MirrorResult(0, 1, 2)
    assert not (dest / "src" / "cpp" / "b.cpp").exists()


def test_git_checkout_of_a_commit_keeps_unchanged_files(tmp_path):
    repository = make_source(tmp_path / "repository")
    (repository / "other.cpp").write_text("int other() { return 1; }\n")
    git_in(repository, "init", "-q")
    git_in(repository, "add", ".")
    git_in(repository, "commit", "-qm", "one")
    first = git_in(repository, "rev-parse", "HEAD")
    (repository / "participant.cpp").write_text("int participant() { return 2; }\n")
    git_in(repository, "commit", "-qam", "two")
    second = git_in(repository, "rev-parse", "HEAD")

    checkout = tmp_path / "ws" / "src" / "fastdds"
    assert build_git.fetch_git(f"file://{repository}", first, checkout) == first
    untouched = (checkout / "other.cpp").stat().st_mtime_ns
    assert build_git.fetch_git(f"file://{repository}", second, checkout) == second
    assert (checkout / "participant.cpp").read_text() == "int participant() { return 2; }\n"
    assert (checkout / "other.cpp").stat().st_mtime_ns == untouched
    assert build_git.local_commit(checkout) == (second, False)
    assert build_git.local_commit(tmp_path) == (None, None)


# --- which commit: parent:<rev> and merge-base:<rev>,<other> ------------------------------------------
# main R-A-B-C (R the root), feature F1-F2-F3 off A, and on the branch merged M = C merging F3:
# the first parent of M is C (its second F3); merge-base(F3, C) = A, three commits back from F3.
@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[str, Path, dict[str, str]]:
    origin = tmp_path_factory.mktemp("history")
    git_in(origin, "init", "-q", "--initial-branch", "main")
    commits = {}

    def commit(name: str) -> None:
        git_in(origin, "commit", "-q", "--allow-empty", "-m", name)
        commits[name] = git_in(origin, "rev-parse", "HEAD")

    for name in ("R", "A", "B", "C"):
        commit(name)
    git_in(origin, "checkout", "-q", "-b", "feature", commits["A"])
    for name in ("F1", "F2", "F3"):
        commit(name)
    git_in(origin, "checkout", "-q", "-b", "merged", commits["C"])
    git_in(origin, "merge", "-q", "--no-ff", "-m", "M", "feature")
    commits["M"] = git_in(origin, "rev-parse", "HEAD")
    git_in(origin, "checkout", "-q", "main")
    return f"file://{origin}", origin, commits


@pytest.mark.parametrize("text, revision", [
    ("0123abc", build_git.Revision("ref", ("0123abc",))),
    ("refs/pull/7/head", build_git.Revision("ref", ("refs/pull/7/head",))),
    ("parent:v2.9.1", build_git.Revision("parent", ("v2.9.1",))),
    ("merge-base:0123abc,main", build_git.Revision("merge-base", ("0123abc", "main"))),
])
def test_commit_forms_parse(text, revision):
    assert build_git.parse_revision(text) == revision


@pytest.mark.parametrize("form, in_origin, name", [
    ("parent:{C}", ["rev-parse", "{C}^"], "B"),
    ("parent:{M}", ["rev-parse", "{M}^1"], "C"),  # a merge: its first parent (its second is F3)
    ("parent:merged", ["rev-parse", "merged^1"], "C"),  # a branch: its head's
    ("merge-base:{F3},main", ["merge-base", "{F3}", "main"], "A"),
    ("merge-base:feature,{C}", ["merge-base", "feature", "{C}"], "A"),
    ("{B}", ["rev-parse", "{B}"], "B"),
])
def test_parent_and_merge_base_resolve_in_a_shallow_checkout(history, tmp_path, form, in_origin, name):
    url, origin, commits = history
    expected = git_in(origin, *[arg.format(**commits) for arg in in_origin])
    assert expected == commits[name]
    checkout = tmp_path / "ws" / "src" / "fastdds"
    assert build_git.fetch_git(url, form.format(**commits), checkout) == expected
    assert git_in(checkout, "rev-parse", "HEAD") == expected
    if not form.startswith("merge-base:"):  # (which fetches 100 commits deep: all of this small history)
        assert (checkout / ".git" / "shallow").is_file()  # only the history needed was fetched


def test_merge_base_deepens_a_shallow_fetch_until_the_histories_meet(history, tmp_path):
    url, origin, commits = history
    base = git_in(origin, "merge-base", commits["F3"], commits["C"])
    assert base == commits["A"]  # F3 -> F2 -> F1 -> A: three commits back
    shallow = tmp_path / "shallow"
    build_git.init_checkout(url, shallow)
    with pytest.raises(IncompleteError, match=f"merge-base:{commits['F3']},main: no merge base of {commits['F3']} "
                                              f"and {commits['C']} within 2 commits"):
        build_git.merge_base(shallow, url, commits["F3"], "main", depths=(1, 2))
    # two commits deep, F3's history stops at F2 (its parent F1 left out), and C's at B
    assert set((shallow / ".git" / "shallow").read_text().split()) == {commits["F2"], commits["B"]}
    # three commits deep is not enough either (F3's history stops at F1)...
    build_git.init_checkout(url, tmp_path / "three")
    with pytest.raises(IncompleteError, match="within 3 commits"):
        build_git.merge_base(tmp_path / "three", url, commits["F3"], "main", depths=(3,))
    # ... so the search goes deeper until four commits reach A from F3
    deeper = tmp_path / "deeper"
    build_git.init_checkout(url, deeper)
    assert build_git.merge_base(deeper, url, commits["F3"], "main", depths=(1, 2, 3, 4)) == base


@pytest.mark.compiles
def test_the_build_record_keeps_what_was_asked_and_the_commit(history, tmp_path, capsys):
    url, origin, commits = history
    origin_record = build_workspace.prepare_sources(tmp_path / "ws", None, url, f"parent:{commits['M']}", {})
    assert origin_record["requested_ref"] == f"parent:{commits['M']}"
    assert origin_record["commit"] == commits["C"] == git_in(origin, "rev-parse", f"{commits['M']}^1")
    assert (origin_record["kind"], origin_record["repository"]) == ("git", url)
    assert f"perfgate build: --commit parent:{commits['M']} is {commits['C']}" in capsys.readouterr().out


@pytest.mark.parametrize("form, message", [
    ("parent:{R}", "parent:{R}: {R} has no parent (a root commit)"),
    ("merge-base:{F3},no-such-branch", "cannot fetch no-such-branch from {url}: fatal: couldn't find remote ref "
                                       "no-such-branch"),
    ("parent:no-such-branch", "cannot fetch no-such-branch from {url}: fatal: couldn't find remote ref no-such-branch"),
])
@pytest.mark.heavy
def test_a_commit_that_cannot_be_found_exits_3_in_one_line(history, tmp_path, form, message):
    url, origin, commits = history
    workspace = tmp_path / "ws"
    done = perfgate("build", "--workspace", str(workspace), "--git-url", url, "--commit", form.format(**commits))
    assert done.returncode == s.EXIT_INCOMPLETE
    assert done.stderr.strip().splitlines() == [
        f"perfgate build: error: {workspace}/src/fastdds: {message.format(url=url, **commits)}"]
    record = build_record.read_record(workspace)  # a failed build's record: what was asked, why it failed
    assert record["status"] == s.BUILD_FAILED and record["error"] == message.format(url=url, **commits)
    assert record["fastdds"]["requested_ref"] == form.format(**commits)
    assert not (workspace / "build").exists()  # nothing was compiled


@pytest.mark.parametrize("form, message", [
    ("parent:", "--commit 'parent:' is not parent:<rev>"),
    ("merge-base:{F3}", "--commit 'merge-base:{F3}' is not merge-base:<rev>,<other>"),
    ("merge-base:{F3},", "is not merge-base:<rev>,<other>"),
    ("merge-base:a,b,c", "is not merge-base:<rev>,<other>"),
    ("HEAD~1", "--commit 'HEAD~1' is not a commit, tag or branch, parent:<rev> or merge-base:<rev>,<other>"),
    ("main:refs/heads/x", "is not a commit, tag or branch"),  # a refspec would write a local ref
    ("--upload-pack=touch x", "is not a commit, tag or branch"),  # an option to git fetch
])
@pytest.mark.heavy
def test_a_malformed_commit_form_exits_2_before_anything_is_fetched(history, tmp_path, form, message):
    url, _, commits = history
    workspace = tmp_path / "ws"
    done = perfgate("build", "--workspace", str(workspace), "--git-url", url, "--commit", form.format(**commits))
    assert done.returncode == s.EXIT_USAGE
    assert message.format(**commits) in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not workspace.exists()  # no checkout, no record
    with pytest.raises(InputError, match="is not"):
        build_git.fetch_git(url, form.format(**commits), workspace / "src" / "fastdds")
    assert not workspace.exists()


# --- a failing build, for real ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def broken_build(tmp_path_factory):
    """A real colcon build of a Fast-DDS-like source with a compile error, through the command line."""
    root = tmp_path_factory.mktemp("broken")
    source = make_source(root / "source", body=BROKEN)
    workspace = root / "ws"
    done = perfgate("build", "--workspace", str(workspace), "--source", str(source), "--junit", str(root / "junit.xml"))
    return root, source, workspace, done


@pytest.mark.compiles
def test_a_failed_build_exits_3_naming_the_package_and_the_error(broken_build):
    _, _, workspace, done = broken_build
    assert done.returncode == s.EXIT_INCOMPLETE
    last = done.stderr.strip().splitlines()
    assert last[0].startswith(f"perfgate build: error: {workspace}/log/latest_build/fastrtps/stdout_stderr.log: "
                              "colcon build failed (exit 2) in package fastrtps; last lines of its log:")
    assert any("error: ‘missing_symbol’ was not declared in this scope" in line for line in last)
    assert "Traceback" not in done.stderr


@pytest.mark.compiles
def test_the_workspace_layout(broken_build):
    _, source, workspace, _ = broken_build
    assert (workspace / "src" / "fastdds" / "participant.cpp").read_text() == BROKEN
    harness = workspace / "src" / "perfgate_harness"
    assert (harness / "package.xml").is_file() and (harness / "src" / "main.cpp").is_file()
    assert not (harness / "build").exists()
    assert {p.name for p in workspace.iterdir()} >= {"src", "build", "log", "ccache", "perfgate", s.BUILD_RECORD_FILE}
    assert (workspace / "build" / "fastrtps" / "CMakeCache.txt").is_file()


@pytest.mark.compiles
def test_a_failed_build_leaves_a_record(broken_build):
    _, source, workspace, _ = broken_build
    record = build_record.read_record(workspace)
    assert record["status"] == s.BUILD_FAILED
    assert record["failed_package"] == "fastrtps"
    assert record["error"] == "colcon build failed (exit 2) in package fastrtps"
    assert "missing_symbol" in record["log_tail"]
    assert record["fastdds"]["package"] == "fastrtps" and record["fastdds"]["version"] == "2.9.1"
    assert record["fastdds"]["kind"] == "local" and record["fastdds"]["source_path"] == str(source)
    assert "-DSECURITY=ON" in record["cmake_args"]
    metadata = build_record.fastdds_metadata(record)
    assert metadata.source == s.FASTDDS_SOURCE_COLCON and metadata.version == "2.9.1"
    assert metadata.build["cmake_args"] == record["cmake_args"]


@pytest.mark.compiles
def test_a_failed_build_is_the_junit_error_testcase_build(broken_build):
    root, _, _, _ = broken_build
    suites = list(JUnitXml.fromfile(str(root / "junit.xml")))
    assert [suite.name for suite in suites] == [s.BUILD_TESTCASE]
    (case,) = list(suites[0])
    assert case.name == s.BUILD_TESTCASE
    (error,) = case.result
    assert isinstance(error, Error)
    assert error.message == "colcon build failed (exit 2) in package fastrtps"
    assert "missing_symbol" in error.text


@pytest.mark.compiles
def test_run_against_a_failed_build_is_incomplete(broken_build, tmp_path):
    _, _, workspace, _ = broken_build
    done = perfgate("run", "--workspace", str(workspace), "--output", str(tmp_path / "out"))
    assert done.returncode == s.EXIT_INCOMPLETE
    assert "the Fast DDS build failed: colcon build failed (exit 2) in package fastrtps" in done.stderr
    upstream = perfgate("run", "--engine", "upstream", "--workspace", str(workspace), "--output", str(tmp_path / "up"))
    assert upstream.returncode == s.EXIT_INCOMPLETE


@pytest.mark.compiles
def test_gate_reports_a_failed_build_in_junit_and_metadata(broken_build, tmp_path):
    _, _, workspace, _ = broken_build
    output, summary = tmp_path / "experiment", tmp_path / "summary.md"
    done = perfgate("gate", "--workspace", str(workspace), "--output", str(output), "--label", "pr-7",
                    "--summary-markdown", str(summary))
    assert done.returncode == s.EXIT_INCOMPLETE, done.stderr
    suites = list(JUnitXml.fromfile(str(output / s.JUNIT_FILE)))
    (case,) = list(suites[0])
    assert case.name == s.BUILD_TESTCASE and isinstance(case.result[0], Error)
    properties = {p.name: p.value for p in suites[0].properties()}
    assert properties["fastdds.version"] == "2.9.1" and properties["platform.id"] != "unknown"
    metadata = files.read_metadata(output)
    assert metadata["label"] == "pr-7"
    assert metadata["build_failed"]["failed_package"] == "fastrtps"
    assert metadata["fastdds"]["source"] == s.FASTDDS_SOURCE_COLCON
    assert "the Fast DDS build failed" in summary.read_text() and "missing_symbol" in summary.read_text()


@pytest.mark.compiles
def test_a_gate_measuring_the_runners_workspace_says_so_and_whose_build_it_is(broken_build, tmp_path, monkeypatch,
                                                                               capsys):
    # $PERFGATE_WORKSPACE set runner-wide: a gate given no Fast DDS measures that workspace's last build, and
    # says so first (here a failed build: exit 3, as with --workspace)
    _, source, workspace, _ = broken_build
    monkeypatch.setenv(s.WORKSPACE_ENV, str(workspace))
    assert cli.main(["gate", "--output", str(tmp_path / "out"), "--label", "pr-8"]) == s.EXIT_INCOMPLETE
    first = capsys.readouterr().out.splitlines()[0]
    finished = build_record.read_record(workspace)["finished_utc"]
    assert first == (f"perfgate gate: Fast DDS: the perfgate build workspace {workspace} (Fast DDS 2.9.1, source "
                     f"{source}, failed to build at {finished}), chosen by $PERFGATE_WORKSPACE")
    assert files.read_metadata(tmp_path / "out")["build_failed"]["failed_package"] == "fastrtps"


def test_a_gate_on_a_built_workspace_whose_harness_is_gone_reports_it_in_junit(tmp_path):
    # a record that says built, its harness removed since (a cleaned cache, a half-copied workspace):
    # nothing can be measured, and CI still gets its JUnit file and report, exit 3
    workspace = tmp_path / "ws"
    workspace.mkdir()
    harness = workspace / "install" / "bin" / "perfgate-latency"
    build_record.record_path(workspace).write_text(json.dumps({
        "status": s.BUILD_OK, "workspace": str(workspace), "prefix": str(workspace / "install"),
        "harness": str(harness), "fastdds": {"package": "fastrtps", "version": "2.9.1", "commit": "ab" * 20},
        "finished_utc": "2026-11-26T10:00:00.000000Z"}))
    output, summary = tmp_path / "experiment", tmp_path / "summary.md"
    done = perfgate_in_process("gate", "--workspace", str(workspace), "--output", str(output),
                               "--summary-markdown", str(summary))
    assert done.returncode == s.EXIT_INCOMPLETE, done.stderr
    (case,) = list(list(JUnitXml.fromfile(str(output / s.JUNIT_FILE)))[0])
    assert case.name == s.BUILD_TESTCASE and isinstance(case.result[0], Error)
    assert "the workspace's harness is missing: build it again" in case.result[0].message
    assert files.read_metadata(output)["build_failed"]["log"] == str(harness)
    assert "the workspace's harness is missing" in summary.read_text()
    assert "Traceback" not in done.stderr


@pytest.mark.compiles
def test_a_failed_build_replaces_the_record_of_an_earlier_one(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    build_record.record_path(workspace).write_text(json.dumps({"status": s.BUILD_OK, "harness": "/x"}))
    source = make_source(tmp_path / "source", body=BROKEN)
    assert perfgate("build", "--workspace", str(workspace), "--source", str(source), "--no-ccache").returncode == 3
    record = build_record.read_record(workspace)
    assert record["status"] == s.BUILD_FAILED and record["ccache"] == {"enabled": False, "dir": None}
    assert "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache" not in record["cmake_args"]


@pytest.mark.compiles
def test_a_git_commit_that_fails_records_its_commit(tmp_path):
    repository = make_source(tmp_path / "repository", body=BROKEN)
    git_in(repository, "init", "-q")
    git_in(repository, "add", ".")
    git_in(repository, "commit", "-qm", "broken")
    commit = git_in(repository, "rev-parse", "HEAD")
    workspace = tmp_path / "ws"
    done = perfgate("build", "--workspace", str(workspace), "--git-url", f"file://{repository}", "--commit", commit)
    assert done.returncode == s.EXIT_INCOMPLETE
    fastdds = build_record.read_record(workspace)["fastdds"]
    assert (fastdds["commit"], fastdds["repository"], fastdds["kind"]) == (commit, f"file://{repository}", "git")
    missing = perfgate("build", "--workspace", str(workspace), "--git-url", f"file://{repository}", "--commit", "0" * 40)
    assert missing.returncode == s.EXIT_INCOMPLETE and "cannot fetch" in missing.stderr


# --- usage errors: exit 2, one line, nothing built ----------------------------------------------------
@pytest.mark.parametrize("args, message", [
    (["--source", "{tmp}", "--git-url", "file:///x", "--commit", "a"], "either --source or --git-url"),
    (["--git-url", "file:///x"], "--git-url and --commit go together"),
    (["--source", "{tmp}/missing"], "--source: not a folder"),
    ([], "the workspace has no Fast DDS source yet"),
])
@pytest.mark.heavy
def test_usage_errors(tmp_path, args, message):
    done = perfgate("build", "--workspace", str(tmp_path / "ws"), *[a.format(tmp=tmp_path) for a in args])
    assert done.returncode == s.EXIT_USAGE
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not build_record.record_path(tmp_path / "ws").exists()


@pytest.mark.compiles
def test_fast_dds_3_without_fast_cdr_2_is_refused_before_building(tmp_path):
    source = make_source(tmp_path / "source", "fastdds", "3.1.0.0", "3.1.0")
    done = perfgate("build", "--workspace", str(tmp_path / "ws"), "--source", str(source))
    assert done.returncode == s.EXIT_USAGE
    assert "Fast DDS 3.1.0 needs Fast CDR 2.x, the system has 1.0.26" in done.stderr
    assert not (tmp_path / "ws" / "build").exists()


@pytest.mark.heavy
def test_run_and_gate_read_no_record_as_usage_error(tmp_path):
    done = perfgate("run", "--workspace", str(tmp_path), "--output", str(tmp_path / "out"))
    assert done.returncode == s.EXIT_USAGE and "no build record" in done.stderr
    (tmp_path / s.BUILD_RECORD_FILE).write_text("{not json")
    done = perfgate("gate", "--workspace", str(tmp_path), "--output", str(tmp_path / "out"))
    assert done.returncode == s.EXIT_USAGE and "malformed build record" in done.stderr


# --- the gate workflow builds the commit under test ---------------------------------------------------
def test_the_gate_workflow_builds_fast_dds_before_the_gate():
    import re

    import yaml

    workflow = yaml.safe_load((REPO_ROOT / ".github" / "workflows" / "gate.yml").read_text())
    steps = workflow["jobs"]["gate"]["steps"]
    ids = [step.get("id") for step in steps]
    assert ids.index("build") < ids.index("gate")
    step = steps[ids.index("build")]
    assert step["if"] == "${{ inputs.fastdds-ref != '' && inputs.fastdds-prefix == '' }}"
    assert "ci/build_fastdds.sh" in step["run"]
    used = set(re.findall(r"(--[a-z][a-z-]+)", step["run"]))
    assert used == {"--workspace", "--git-url", "--commit", "--keep-as"}
    usage = perfgate("build", "--help").stdout
    assert all(option in usage for option in used)
    gate = steps[ids.index("gate")]
    # the gate measures what the build step built in $PERFGATE_WORKSPACE, named explicitly
    assert '--workspace "$PERFGATE_WORKSPACE"' in step["run"]
    assert "(inputs.fastdds-ref != '' && 'workspace')" in gate["env"]["FASTDDS"]
    assert '--fastdds "$FASTDDS"' in gate["run"] and "--fastdds" in perfgate("gate", "--help").stdout


# --- stopped while building ---------------------------------------------------------------------------
@pytest.mark.compiles
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])  # a cancelled CI job; Ctrl-C sent to perfgate
def test_a_stopped_build_leaves_nothing_building(tmp_path, signum):
    # A SIGTERM reached perfgate alone: colcon, make and the compilers built on, reparented to init.
    source = make_source(tmp_path / "source")
    with open(source / "CMakeLists.txt", "a") as cmake:  # a build step that is still running when the signal comes
        cmake.write("add_custom_target(long_step ALL COMMAND sleep 300)\n")
    workspace = (tmp_path / "ws").resolve()
    build = subprocess.Popen([sys.executable, "-m", "perfgate.cli", "build", "--workspace", str(workspace),
                              "--source", str(source), "--no-ccache"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, preexec_fn=terminal_signals)
    deadline = time.monotonic() + 300  # until the long step runs; not a timing assertion
    while build.poll() is None and time.monotonic() < deadline and \
            not any(line.startswith("sleep 300") for line in processes_working_in(workspace).values()):
        time.sleep(0.05)
    assert build.poll() is None, build.communicate()
    build.send_signal(signum)
    _, err = build.communicate(timeout=60)
    assert build.returncode == 130, err
    assert "Traceback" not in err
    assert processes_working_in(workspace) == {}
