"""perfgate build for every supported Fast DDS (2.9 to 2.14, 3.x, master): the Fast CDR major each one
needs and the commit's own submodule pin (thirdparty/fastcdr) fetched when the system's does not fit;
compiler warnings never fatal (whatever way the source makes them errors); the harness built against
the workspace's Fast DDS package, a system copy refused after the build; git's whole message; log
tails without terminal escapes, so that a failed build's JUnit is XML that every reader parses.

Real colcon builds of small stand-in sources; the real Fast DDS 3.x build is the slow test
(test_fastdds_source_build.py).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from junitparser import Error, JUnitXml

from conftest import BROKEN, PACKAGE_XML, git_in, make_source
from perfgate.fastdds import source as fastdds_source
from perfgate import schema as s
from perfgate.errors import IncompleteError, InputError, one_line
from perfgate.fastdds import colcon
from perfgate.fastdds import git as build_git
from perfgate.fastdds import logs
from perfgate.fastdds import record as build_record
from perfgate.fastdds.workspace import place_fastcdr

SYSTEM_FASTCDR = fastdds_source.installed_cmake_version("fastcdr")  # Debian's 1.0.26 (ci/debian-packages.txt)
PINNED_URL = "https://fastcdr.example.invalid/eProsima/Fast-CDR.git"


def perfgate(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfgate.cli", *args], capture_output=True, text=True, env=env)


# --- which Fast CDR ---------------------------------------------------------------------------------
@pytest.mark.parametrize("version, major", [("2.9.1", 1), ("2.11.3", 1), ("2.12.0", 2), ("2.14.6", 2),
                                            ("3.0.0", 2), ("3.6.2", 2)])
def test_fast_dds_2_12_and_later_need_fast_cdr_2(version, major):
    package = fastdds_source.PACKAGE_BY_MAJOR[int(version[0])]
    assert fastdds_source.fastcdr_major_needed(fastdds_source.FastddsSource(package, version, int(version[0]))) == major


def test_gitmodules_and_the_gitlink_name_the_pin():
    gitmodules = ('[submodule "thirdparty/asio"]\n\tpath = thirdparty/asio\n\turl = https://github.com/chriskohlhoff/asio.git\n'
                  '# a comment\n[submodule "thirdparty/fastcdr"]\n\tpath = thirdparty/fastcdr\n'
                  '\turl = https://github.com/eProsima/Fast-CDR.git\n[core]\n\turl = not-a-submodule\n')
    assert fastdds_source.parse_gitmodules(gitmodules) == {
        "thirdparty/asio": "https://github.com/chriskohlhoff/asio.git",
        "thirdparty/fastcdr": "https://github.com/eProsima/Fast-CDR.git"}
    # relative URLs are relative to the superproject's (a fork's submodules come from the fork's family)
    assert fastdds_source.resolve_submodule_url("../Fast-CDR.git", "https://github.com/me/Fast-DDS.git") == \
        "https://github.com/me/Fast-CDR.git"
    assert fastdds_source.resolve_submodule_url("../Fast-CDR.git", None) is None
    assert fastdds_source.resolve_submodule_url("https://a/b.git", None) == "https://a/b.git"
    listing = "160000 commit 7d33a3b51a1585f5631b0a8d905bcc4f249d0f34\tthirdparty/fastcdr\n"
    assert fastdds_source.gitlink_commit(listing, "thirdparty/fastcdr") == "7d33a3b51a1585f5631b0a8d905bcc4f249d0f34"
    assert fastdds_source.gitlink_commit("040000 tree 89fa\tthirdparty/fastcdr\n", "thirdparty/fastcdr") is None


def test_the_commits_pin_where_the_system_fast_cdr_does_not_fit():
    three, two = fastdds_source.FastddsSource("fastdds", "3.6.2", 3), fastdds_source.FastddsSource("fastrtps", "2.9.1", 2)
    fourteen = fastdds_source.FastddsSource("fastrtps", "2.14.6", 2)
    pin = fastdds_source.SubmodulePin("thirdparty/fastcdr", PINNED_URL, "7d33a3b51a1585f5631b0a8d905bcc4f249d0f34")
    submodule = {"from": "submodule", "submodule": "thirdparty/fastcdr", "url": PINNED_URL,
                 "commit": "7d33a3b51a1585f5631b0a8d905bcc4f249d0f34", "path": None}
    assert fastdds_source.dependency_plan(three, None, None, "1.0.26", "0.7.2", pin)["fastcdr"] == submodule
    assert fastdds_source.dependency_plan(fourteen, None, None, "1.0.26", "0.7.2", pin)["fastcdr"] == submodule
    assert fastdds_source.dependency_plan(three, None, None, None, "0.7.2", pin)["fastcdr"] == submodule
    # the system's where it fits, a given source before both
    assert fastdds_source.dependency_plan(two, None, None, "1.0.26", "0.7.2", pin)["fastcdr"] == {"from": "system",
                                                                                        "version": "1.0.26"}
    assert fastdds_source.dependency_plan(three, None, None, "2.2.1", "0.7.2", pin)["fastcdr"]["from"] == "system"
    assert fastdds_source.dependency_plan(three, Path("/cdr"), None, "1.0.26", "0.7.2", pin)["fastcdr"] == {
        "from": "source", "path": "/cdr"}
    # a local source with the submodule checked out: that folder
    checked_out = fastdds_source.SubmodulePin("thirdparty/fastcdr", "", None, "/src/fastdds/thirdparty/fastcdr")
    assert fastdds_source.dependency_plan(three, None, None, "1.0.26", "0.7.2", checked_out)["fastcdr"]["path"] == \
        "/src/fastdds/thirdparty/fastcdr"
    with pytest.raises(InputError, match=r"needs Fast CDR 2.x, the system has 1.0.26: .*--fastcdr-source \(the "
                                         r"source pins none as thirdparty/fastcdr\)"):
        fastdds_source.dependency_plan(fourteen, None, None, "1.0.26", "0.7.2", None)


def test_git_says_all_it_said():
    done = subprocess.CompletedProcess(["git"], 128, "", "error: Server does not allow request for unadvertised "
                                       "object 0123\nfatal: the remote end hung up unexpectedly\n")
    assert build_git.git_message(done) == ("error: Server does not allow request for unadvertised object 0123\n"
                                        "fatal: the remote end hung up unexpectedly")
    assert build_git.git_message(subprocess.CompletedProcess(["git"], 1, "", "")) == "git exited 1 saying nothing"


@pytest.fixture(scope="module")
def pinned_origins(tmp_path_factory) -> dict:
    """A Fast CDR repository and a broken Fast DDS 3.x repository whose commit pins it as the submodule
    thirdparty/fastcdr with an URL no machine reaches: git's url.<base>.insteadOf brings it here."""
    root = tmp_path_factory.mktemp("pinned")
    fastcdr = make_source(root / "fastcdr", "fastcdr", "2.3.5", "2.3.5")
    git_in(fastcdr, "init", "-q")
    git_in(fastcdr, "add", ".")
    git_in(fastcdr, "commit", "-qm", "fastcdr 2.3.5")
    pinned = git_in(fastcdr, "rev-parse", "HEAD")
    fastdds = make_source(root / "fastdds", "fastdds", "3.6.2.0", "3.6.2", body=BROKEN)
    # built after Fast CDR, as the real one (its package.xml depends on fastcdr)
    (fastdds / "package.xml").write_text(PACKAGE_XML.format(name="fastdds", version="3.6.2").replace(
        "<buildtool_depend>", "<depend>fastcdr</depend>\n  <buildtool_depend>"))
    (fastdds / ".gitmodules").write_text(f'[submodule "thirdparty/fastcdr"]\n\tpath = thirdparty/fastcdr\n'
                                         f'\turl = {PINNED_URL}\n')
    git_in(fastdds, "init", "-q")
    git_in(fastdds, "add", ".")
    git_in(fastdds, "update-index", "--add", "--cacheinfo", f"160000,{pinned},thirdparty/fastcdr")
    git_in(fastdds, "commit", "-qm", "fastdds 3.6.2 pinning fastcdr")
    git_in(fastdds, "update-index", "--cacheinfo", f"160000,{'1' * 40},thirdparty/fastcdr")
    git_in(fastdds, "commit", "-qm", "pinning a commit that does not exist")
    commits = git_in(fastdds, "log", "--format=%H").split()
    # as `git -c url.<base>.insteadOf=<url>` would, for every git that perfgate build starts
    environment = {**os.environ, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"url.file://{fastcdr}.insteadOf",
                   "GIT_CONFIG_VALUE_0": PINNED_URL}
    return {"fastcdr": fastcdr, "pinned": pinned, "fastdds": fastdds, "good": commits[1], "bad_pin": commits[0],
            "environment": environment}


@pytest.mark.compiles
@pytest.mark.skipif(SYSTEM_FASTCDR is None or not SYSTEM_FASTCDR.startswith("1."),
                    reason="needs the system's Fast CDR 1 (libfastcdr-dev), which a 3.x does not take")
def test_fast_cdr_from_the_commits_submodule_pin(pinned_origins, tmp_path):
    origins, workspace = pinned_origins, tmp_path / "ws"
    done = perfgate("build", "--workspace", str(workspace), "--git-url", f"file://{origins['fastdds']}", "--commit",
                    origins["good"], env=origins["environment"])
    assert done.returncode == s.EXIT_INCOMPLETE  # the stand-in Fast DDS does not compile: that is all
    record = build_record.read_record(workspace)
    assert record["failed_package"] == "fastdds"
    assert record["dependencies"]["fastcdr"] == {
        "from": "submodule", "submodule": "thirdparty/fastcdr", "url": PINNED_URL, "commit": origins["pinned"],
        "path": None, "version": "2.3.5"}
    checkout = workspace / "src" / "fastcdr"
    assert git_in(checkout, "rev-parse", "HEAD") == origins["pinned"]
    assert (workspace / "install" / "lib" / "libfastcdr.so").exists()  # built, before Fast DDS failed
    assert f"Fast CDR 2.3.5 pinned as thirdparty/fastcdr ({PINNED_URL} at {origins['pinned']})" in done.stdout


@pytest.mark.compiles
def test_a_pin_that_cannot_be_fetched_says_what_git_said(pinned_origins, tmp_path):
    origins, workspace = pinned_origins, tmp_path / "ws"
    done = perfgate("build", "--workspace", str(workspace), "--git-url", f"file://{origins['fastdds']}", "--commit",
                    origins["bad_pin"], env=origins["environment"])
    assert done.returncode == s.EXIT_INCOMPLETE
    record = build_record.read_record(workspace)
    assert record["error"].startswith(f"Fast CDR pinned as thirdparty/fastcdr: cannot fetch {'1' * 40} from "
                                      f"{PINNED_URL}: ")
    said = record["error"].split(f"{PINNED_URL}: ", 1)[1]
    # git's own words, all of them, on the one error line (its line breaks escaped)
    assert said and one_line(said) in done.stderr and "not our ref" in said
    assert not (workspace / "build").exists()  # nothing was compiled


# --- --fastcdr-url: where the pinned commit is fetched from -----------------------------------------
# A real Fast CDR repository: eProsima's, brought onto the machine as DEVELOPERS.md says (Tools), or
# any clone named by PERFGATE_FASTCDR_REPOSITORY.
FASTCDR_REPOSITORY = Path(os.environ.get("PERFGATE_FASTCDR_REPOSITORY") or "/work/.mirror/eProsima+Fast-CDR/repo")
GITHUB_FASTCDR = "https://github.com/eProsima/Fast-CDR.git"


def test_fastcdr_url_replaces_the_url_of_the_pin_only_where_the_pin_is_fetched():
    three, two = fastdds_source.FastddsSource("fastdds", "3.6.2", 3), fastdds_source.FastddsSource("fastrtps", "2.9.1", 2)
    pin = fastdds_source.SubmodulePin("thirdparty/fastcdr", PINNED_URL, "7d33a3b51a1585f5631b0a8d905bcc4f249d0f34")
    plan = fastdds_source.dependency_plan(three, None, None, "1.0.26", "0.7.2", pin, "/srv/git/Fast-CDR")["fastcdr"]
    assert plan == {"from": "submodule", "submodule": "thirdparty/fastcdr", "url": "/srv/git/Fast-CDR",
                    "gitmodules_url": PINNED_URL, "commit": "7d33a3b51a1585f5631b0a8d905bcc4f249d0f34", "path": None}
    # the system's where it fits; a checked-out submodule is mirrored, not fetched
    assert fastdds_source.dependency_plan(two, None, None, "1.0.26", "0.7.2", pin, "/srv/git/Fast-CDR")["fastcdr"] == {
        "from": "system", "version": "1.0.26"}
    checked_out = fastdds_source.SubmodulePin("thirdparty/fastcdr", "", None, "/src/fastdds/thirdparty/fastcdr")
    assert "gitmodules_url" not in fastdds_source.dependency_plan(three, None, None, "1.0.26", "0.7.2", checked_out,
                                                                  "/srv/git/Fast-CDR")["fastcdr"]


def test_the_version_of_a_source_without_package_xml(tmp_path):
    """Fast CDR 1.x has no package.xml and a project() without VERSION: its configure.ac says it (this
    was a TypeError, exit 1, for a project() without package.xml, and None for configure.ac)."""
    only_project = make_source(tmp_path / "a", "fastcdr", "2.3.5", None)
    assert fastdds_source.source_version(only_project) == "2.3.5"
    old = tmp_path / "fastcdr1"
    old.mkdir()
    (old / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.16)\nproject(fastcdr LANGUAGES CXX)\n")
    (old / "configure.ac").write_text("# c\nm4_define([version_major],[1])\nm4_define([version_minor],[1])\n"
                                      "m4_define([version_micro],[1])\n")
    assert fastdds_source.source_version(old) == "1.1.1"
    assert fastdds_source.configure_ac_version("m4_define([version_major],[1])\n") is None


def test_repository_options_are_checked_before_anything_is_fetched(tmp_path, monkeypatch):
    (tmp_path / "mirror").mkdir()
    monkeypatch.chdir(tmp_path)
    assert build_git.check_git_url("mirror", "--fastcdr-url") == str(tmp_path / "mirror")  # git runs elsewhere
    assert build_git.check_git_url(GITHUB_FASTCDR, "--git-url") == GITHUB_FASTCDR
    assert build_git.check_git_url("git@github.com:eProsima/Fast-CDR.git", "--git-url") == \
        "git@github.com:eProsima/Fast-CDR.git"
    for url, message in (("--upload-pack=touch x", "starts with '-', which git would read as an option"),
                         ("https://a/b.git\n[core]", "holds a control character"), (" ", "is empty")):
        with pytest.raises(InputError, match=re.escape(message)):
            build_git.check_git_url(url, "--fastcdr-url")


@pytest.mark.parametrize("args, message", [
    (["--fastcdr-url=-x"], "--fastcdr-url '-x' starts with '-'"),
    (["--fastcdr-url", ""], "--fastcdr-url is empty"),
    (["--fastcdr-url", "/srv/Fast-CDR", "--fastcdr-source", "{tmp}"], "either --fastcdr-source or --fastcdr-url"),
    (["--git-url=-u", "--commit", "v3.6.2"], "--git-url '-u' starts with '-'"),
])
def test_bad_repository_options_exit_2_before_anything_is_made(tmp_path, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    done = perfgate("build", "--workspace", str(tmp_path / "ws"), *args)
    assert done.returncode == s.EXIT_USAGE, done.stderr
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert not (tmp_path / "ws").exists()


@pytest.fixture(scope="module")
def pinning_real_fastcdr(tmp_path_factory) -> dict:
    """A stand-in Fast DDS 3.x repository whose commits pin real Fast CDR commits under GitHub's URL, which
    no machine here reaches: v2.3.5 (what Fast DDS 3.6.2 pins) and v1.1.1 (a major 3.x does not take)."""
    if not (FASTCDR_REPOSITORY / "HEAD").is_file() and not (FASTCDR_REPOSITORY / ".git").exists():
        pytest.skip(f"no Fast CDR repository at {FASTCDR_REPOSITORY} (PERFGATE_FASTCDR_REPOSITORY)")
    tags = {tag: git_in(FASTCDR_REPOSITORY, "rev-parse", f"{tag}^{{commit}}") for tag in ("v2.3.5", "v1.1.1")}
    fastdds = make_source(tmp_path_factory.mktemp("pinning") / "fastdds", "fastdds", "3.6.2.0", "3.6.2", body=BROKEN)
    (fastdds / ".gitmodules").write_text(f'[submodule "thirdparty/fastcdr"]\n\tpath = thirdparty/fastcdr\n'
                                         f'\turl = {GITHUB_FASTCDR}\n')
    git_in(fastdds, "init", "-q")
    git_in(fastdds, "add", ".")
    commits = {}
    for tag, pinned in tags.items():
        git_in(fastdds, "update-index", "--add", "--cacheinfo", f"160000,{pinned},thirdparty/fastcdr")
        git_in(fastdds, "commit", "-qm", f"pinning Fast CDR {tag}")
        commits[tag] = git_in(fastdds, "rev-parse", "HEAD")
    return {"fastdds": fastdds, "pinned": tags, "commits": commits}


@pytest.mark.heavy
def test_a_pin_is_fetched_from_the_fastcdr_url(pinning_real_fastcdr, tmp_path):
    """Through the command line, up to the sources: the pin fetched from the real Fast CDR repository
    given as --fastcdr-url (GitHub's URL of .gitmodules is not reached), recorded with both URLs; a
    Fast CDR 1 pinned for a Fast DDS 3 stops the build there (exit 3), before anything is compiled."""
    origins, workspace = pinning_real_fastcdr, tmp_path / "ws"
    done = perfgate("build", "--workspace", str(workspace), "--git-url", f"file://{origins['fastdds']}", "--commit",
                    origins["commits"]["v1.1.1"], "--fastcdr-url", str(FASTCDR_REPOSITORY), "--no-ccache")
    assert done.returncode == s.EXIT_INCOMPLETE, done.stderr
    record = build_record.read_record(workspace)
    assert record["dependencies"]["fastcdr"] == {
        "from": "submodule", "submodule": "thirdparty/fastcdr", "url": str(FASTCDR_REPOSITORY.resolve()),
        "gitmodules_url": GITHUB_FASTCDR, "commit": origins["pinned"]["v1.1.1"], "path": None}
    assert git_in(workspace / "src" / "fastcdr", "rev-parse", "HEAD") == origins["pinned"]["v1.1.1"]
    assert "Fast CDR 1.1.1 is not the 2.x this Fast DDS needs" in record["error"]
    assert not (workspace / "build").exists()  # nothing was compiled
    # the same commit without --fastcdr-url: GitHub is asked, which says no here (or, with a host, 1.1.1 again)
    without = perfgate("build", "--workspace", str(tmp_path / "ws2"), "--git-url", f"file://{origins['fastdds']}",
                       "--commit", origins["commits"]["v1.1.1"], "--no-ccache")
    assert without.returncode == s.EXIT_INCOMPLETE
    assert build_record.read_record(tmp_path / "ws2")["dependencies"]["fastcdr"]["url"] == GITHUB_FASTCDR


def test_the_pinned_fast_cdr_2_is_placed_from_the_fastcdr_url(pinning_real_fastcdr, tmp_path):
    """The source step of a build that goes on: v2.3.5, the pin of Fast DDS 3.6.2, checked out from the
    real repository with its version read (the compile of Fast CDR itself is the slow test's)."""
    origins, workspace = pinning_real_fastcdr, tmp_path / "ws"
    checkout = tmp_path / "fastdds"
    build_git.fetch_git(f"file://{origins['fastdds']}", origins["commits"]["v2.3.5"], checkout)
    pin = fastdds_source.read_submodule_pin(checkout, checkout, None, fetch_url=str(FASTCDR_REPOSITORY))
    assert pin == fastdds_source.SubmodulePin("thirdparty/fastcdr", GITHUB_FASTCDR, origins["pinned"]["v2.3.5"])
    three = fastdds_source.FastddsSource("fastdds", "3.6.2", 3)
    plan = fastdds_source.dependency_plan(three, None, None, "1.0.26", "0.7.2", pin, str(FASTCDR_REPOSITORY))
    placed = place_fastcdr(workspace, plan["fastcdr"], 2)
    assert placed["version"] == "2.3.5" and placed["url"] == str(FASTCDR_REPOSITORY)
    assert git_in(workspace / "src" / "fastcdr", "rev-parse", "HEAD") == origins["pinned"]["v2.3.5"]
    # a source whose .gitmodules names no URL: the commit is enough with --fastcdr-url
    (checkout / ".gitmodules").unlink()
    assert fastdds_source.read_submodule_pin(checkout, checkout, None) is None
    assert fastdds_source.read_submodule_pin(checkout, checkout, None, fetch_url=str(FASTCDR_REPOSITORY)) == \
        fastdds_source.SubmodulePin("thirdparty/fastcdr", "", origins["pinned"]["v2.3.5"])


# --- warnings never fatal; the harness against the workspace's Fast DDS only ------------------------
def test_cmake_arguments_make_no_warning_an_error_and_name_the_package(tmp_path):
    launcher = colcon.write_warnings_launcher(tmp_path)
    args = colcon.cmake_arguments(ccache=True, package="fastdds", cmake_version=(3, 25, 1), warnings_launcher=launcher)
    assert {"--compile-no-warning-as-error", "-DPERFGATE_FASTDDS_PACKAGE=fastdds",
            f"-DCMAKE_CXX_COMPILER_LAUNCHER={launcher};ccache", f"-DCMAKE_C_COMPILER_LAUNCHER={launcher};ccache"} <= set(args)
    older = colcon.cmake_arguments(ccache=False, package="fastrtps", cmake_version=(3, 22), warnings_launcher=launcher)
    assert "--compile-no-warning-as-error" not in older  # CMake before 3.24 knows no such option
    assert f"-DCMAKE_CXX_COMPILER_LAUNCHER={launcher}" in older
    assert colcon.cmake_arguments(ccache=False) == [f"-D{k}={v}" for k, v in colcon.CMAKE_OPTIONS.items()]
    # the launcher puts -Wno-error after everything the build system says
    said = subprocess.run([str(launcher), "echo", "g++", "-Werror", "-c", "x.cpp"], capture_output=True, text=True)
    assert said.stdout == "g++ -Werror -c x.cpp -Wno-error\n"


def test_a_harness_loading_another_fast_dds_is_a_problem(tmp_path):
    workspace = tmp_path / "ws"
    own = str(workspace / "install" / "lib" / "libfastdds.so.3.6")
    assert colcon.harness_link_problem(own, workspace, "fastdds") is None
    system = "/usr/lib/x86_64-linux-gnu/libfastrtps.so.2.9"
    problem = colcon.harness_link_problem(system, workspace, "fastdds")
    assert problem.startswith(f"the harness loads {system}, not the workspace's libfastdds.so under "
                              f"{workspace / 'install'}")
    assert colcon.harness_link_problem(str(workspace / "install" / "lib" / "libfastrtps.so.2.14"), workspace,
                                      "fastdds") is not None
    assert "loads no Fast DDS library" in colcon.harness_link_problem(None, workspace, "fastrtps")


# A stand-in Fast DDS that makes warnings errors both ways Fast DDS 3.x does (3.5 on: the CMake
# property; 3.0 to 3.4: -Werror in CMAKE_CXX_FLAGS), and whose code warns: it builds only when
# perfgate build keeps warnings from being errors. It installs no CMake package, so the harness
# finds none in the workspace and falls back to the system's Fast DDS 2.9.1: which the check after
# the build must refuse.
WARNING_AS_ERROR_CMAKE = """cmake_minimum_required(VERSION 3.16)
project(fastrtps VERSION "2.14.6" LANGUAGES CXX)
set(CMAKE_COMPILE_WARNING_AS_ERROR ON)
set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} -Wall -Werror")
add_compile_options(-fdiagnostics-color=always)
add_library(fastrtps SHARED participant.cpp)
install(TARGETS fastrtps)
"""
WARNS = "int participant() { int unused = 0; return 0; }\n"


@pytest.fixture(scope="module")
def warning_build(tmp_path_factory):
    root = tmp_path_factory.mktemp("warnings")
    source = make_source(root / "source", "fastrtps", "2.14.6", "2.14.6", body=WARNS)
    (source / "CMakeLists.txt").write_text(WARNING_AS_ERROR_CMAKE)
    workspace = root / "ws"
    done = perfgate("build", "--workspace", str(workspace), "--source", str(source),
                    "--fastcdr-source", str(make_source(root / "fastcdr", "fastcdr", "2.3.5", "2.3.5")))
    return workspace, done


@pytest.mark.compiles
@pytest.mark.skipif(colcon.cmake_version() < colcon.NO_WARNING_AS_ERROR_SINCE, reason="needs CMake 3.24+")
def test_warnings_that_the_source_makes_errors_do_not_fail_the_build(warning_build):
    workspace, done = warning_build
    record = build_record.read_record(workspace)
    assert record.get("failed_package") is None, record.get("log_tail")  # built, warnings and all
    log = (workspace / "log" / "latest_build" / "fastrtps" / "stdout_stderr.log").read_text()
    assert "-Wunused-variable" in log and "warning" in log
    assert (workspace / "install" / "lib" / "libfastrtps.so").exists()


@pytest.mark.compiles
@pytest.mark.skipif(colcon.cmake_version() < colcon.NO_WARNING_AS_ERROR_SINCE, reason="needs CMake 3.24+")
def test_warnings_stay_warnings_when_make_regenerates_the_build(warning_build):
    # a commit that touches a CMakeLists.txt: make re-runs CMake, which forgets --compile-no-warning-as-error
    workspace, _ = warning_build
    build_dir = workspace / "build" / "fastrtps"
    (workspace / "src" / "fastdds" / "CMakeLists.txt").write_text(WARNING_AS_ERROR_CMAKE + "# touched\n")
    os.utime(workspace / "src" / "fastdds" / "participant.cpp")
    done = subprocess.run(["cmake", "--build", str(build_dir)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    said = logs.printable(done.stdout + done.stderr)
    assert "Configuring done" in said  # CMake did run again
    assert "warning: unused variable" in said and "error" not in said


@pytest.mark.compiles
@pytest.mark.skipif(fastdds_source.installed_cmake_version("fastrtps") is None, reason="needs a system Fast DDS 2.x")
def test_a_harness_built_against_the_system_fast_dds_fails_the_build(warning_build):
    workspace, done = warning_build
    assert done.returncode == s.EXIT_INCOMPLETE
    record = build_record.read_record(workspace)
    assert record["status"] == s.BUILD_FAILED
    assert record["error"].startswith(f"the harness loads {record['fastdds_library']}, not the workspace's "
                                      f"libfastrtps.so under {workspace / 'install'}")
    assert not Path(record["fastdds_library"]).resolve().is_relative_to(workspace)
    assert f"perfgate build: error: {workspace / 'install' / 'bin' / 'perfgate-latency'}: the harness loads" in \
        done.stderr
    assert "-DPERFGATE_FASTDDS_PACKAGE=fastrtps" in record["cmake_args"]
    with pytest.raises(IncompleteError, match="the Fast DDS build failed: the harness loads"):
        build_record.harness_paths(record, workspace)


# --- log tails without terminal escapes: valid JUnit ------------------------------------------------
COLOURED_LOG = ("\x1b[01m\x1b[Kparticipant.cpp:1:32:\x1b[m\x1b[K \x1b[01;31m\x1b[Kerror: \x1b[m\x1b[K"
                "‘\x1b[01m\x1b[Kmissing_symbol\x1b[m\x1b[K’ was not declared in this scope\r\n"
                "\x1b]8;;file:///x\x07link\x1b]8;;\x07 bell\x07 backspace\x08 nul\x00 form feed\x0c end\tok\n")


def test_log_tails_lose_terminal_escapes_and_control_characters(tmp_path):
    log = tmp_path / "stdout_stderr.log"
    log.write_text(COLOURED_LOG)
    assert logs.log_tail(log) == ("participant.cpp:1:32: error: ‘missing_symbol’ was not declared in this scope\n"
                                   "link bell backspace nul form feed end\tok")


def test_junit_of_a_record_with_a_raw_coloured_tail_parses(tmp_path):
    # a record written before tails were cleaned: the JUnit is cleaned on its own
    record = {"status": s.BUILD_FAILED, "error": "colcon build failed (exit 2) in package fastdds\x1b[0m",
              "log": "/ws/log/latest_build/fastdds/stdout_stderr.log", "log_tail": COLOURED_LOG, "duration_s": 3.0}
    path = tmp_path / "junit.xml"
    path.write_text(build_record.build_junit_xml(record, {"fastdds.version": "3.6.2"}))
    ET.parse(path)
    (case,) = list(list(JUnitXml.fromfile(str(path)))[0])
    (error,) = case.result
    assert error.message == "colcon build failed (exit 2) in package fastdds"
    assert "‘missing_symbol’ was not declared in this scope" in error.text and "\x1b" not in error.text


@pytest.fixture(scope="module")
def coloured_broken_build(tmp_path_factory):
    """A real build failing with GCC's colours on, as Fast DDS turns them on under ccache."""
    root = tmp_path_factory.mktemp("coloured")
    source = make_source(root / "source", body=BROKEN)
    text = (source / "CMakeLists.txt").read_text()
    (source / "CMakeLists.txt").write_text(text.replace("add_library", "add_compile_options(-fdiagnostics-color=always)\n"
                                                                       "add_library"))
    workspace, junit = root / "ws", root / "junit.xml"
    done = perfgate("build", "--workspace", str(workspace), "--source", str(source), "--junit", str(junit))
    return workspace, junit, done


@pytest.mark.compiles
def test_a_failed_builds_junit_with_compiler_colours_is_xml(coloured_broken_build, tmp_path):
    workspace, junit, done = coloured_broken_build
    assert done.returncode == s.EXIT_INCOMPLETE
    log = (workspace / "log" / "latest_build" / "fastrtps" / "stdout_stderr.log").read_text()
    assert "\x1b[" in log  # the compiler did colour its messages
    ET.parse(junit)  # well-formed XML 1.0
    (case,) = list(list(JUnitXml.fromfile(str(junit)))[0])
    (error,) = case.result
    assert isinstance(error, Error)
    assert "error: ‘missing_symbol’ was not declared in this scope" in error.text
    assert "\x1b" not in junit.read_text() and "\x1b" not in build_record.read_record(workspace)["log_tail"]
    # and the gate's JUnit of that build too
    output = tmp_path / "gate"
    gate = perfgate("gate", "--workspace", str(workspace), "--output", str(output))
    assert gate.returncode == s.EXIT_INCOMPLETE
    ET.parse(output / s.JUNIT_FILE)
    assert "missing_symbol" in (output / s.REPORT_MARKDOWN).read_text()


# --- a source without the bundled SQLite (a sparse checkout) -------------------------------------
# Fast DDS' shapes: the option in the top CMakeLists.txt, the bundled file in the library's source
# list (src/cpp/CMakeLists.txt up to 3.x, src/cpp/source.cmake on master), compiled only when ON.
SQLITE_TOP = """cmake_minimum_required(VERSION 3.16)
project(fastrtps VERSION "2.14.6" LANGUAGES C CXX)
option(SQLITE3_SUPPORT "Activate SQLITE3 support" ON)
add_subdirectory(src/cpp)
"""
SQLITE_LIST = """set(sqlite3_source_files
    rtps/persistence/SQLite3PersistenceService.cpp
    rtps/persistence/sqlite3.c
)
set(sources ${PROJECT_SOURCE_DIR}/participant.cpp)
if(SQLITE3_SUPPORT)
    list(APPEND sources ${sqlite3_source_files})
endif()
add_library(fastrtps SHARED ${sources})
install(TARGETS fastrtps)
"""


def sqlite_source(folder: Path, list_file: str = "src/cpp/CMakeLists.txt", bundled: bool = False) -> Path:
    source = make_source(folder, "fastrtps", "2.14.6", "2.14.6")
    (source / "CMakeLists.txt").write_text(SQLITE_TOP)
    (source / list_file).parent.mkdir(parents=True, exist_ok=True)
    (source / list_file).write_text(SQLITE_LIST if list_file == "src/cpp/CMakeLists.txt" else
                                    f"# the sources\n{SQLITE_LIST}")
    if list_file != "src/cpp/CMakeLists.txt":
        (source / "src" / "cpp" / "CMakeLists.txt").write_text(f"include({list_file.split('/')[-1]})\n")
    persistence = source / "src" / "cpp" / "rtps" / "persistence"
    persistence.mkdir(parents=True)
    (persistence / "SQLite3PersistenceService.cpp").write_text("int persistence() { return 1; }\n")
    if bundled:
        (persistence / "sqlite3.c").write_text("int sqlite3_stand_in(void) { return 3; }\n")
    return source


@pytest.mark.parametrize("list_file", ["src/cpp/CMakeLists.txt", "src/cpp/source.cmake"])
def test_sqlite_support_is_turned_off_only_where_the_bundled_sqlite_is_missing(tmp_path, list_file):
    missing = sqlite_source(tmp_path / "missing", list_file)
    assert fastdds_source.source_cmake_options(missing) == {"SQLITE3_SUPPORT": "OFF"}
    assert fastdds_source.source_cmake_options(sqlite_source(tmp_path / "bundled", list_file, bundled=True)) == {}
    # Debian's repacked source lists no bundled SQLite (its patches link the system's): nothing to turn off
    debian = sqlite_source(tmp_path / "debian", list_file)
    listing = debian / list_file
    listing.write_text(listing.read_text().replace("    rtps/persistence/sqlite3.c\n", ""))
    assert fastdds_source.source_cmake_options(debian) == {}
    # a source without the option (not Fast DDS' shape) is left alone
    assert fastdds_source.source_cmake_options(tmp_path / "missing" / "src") == {}
    args = colcon.cmake_arguments(ccache=False, source_options={"SQLITE3_SUPPORT": "OFF"})
    assert args == [f"-D{k}={v}" for k, v in colcon.CMAKE_OPTIONS.items()] + ["-DSQLITE3_SUPPORT=OFF"]


@pytest.mark.compiles
def test_a_source_without_the_bundled_sqlite_builds_with_sqlite_support_off(tmp_path):
    source = sqlite_source(tmp_path / "source", "src/cpp/source.cmake")
    # what CMake says without the option: the source cannot even be configured
    plain = subprocess.run(["cmake", "-S", str(source), "-B", str(tmp_path / "plain")], capture_output=True, text=True)
    assert plain.returncode != 0 and "sqlite3.c" in plain.stderr
    workspace = tmp_path / "ws"
    done = perfgate("build", "--workspace", str(workspace), "--source", str(source), "--no-ccache",
                    "--fastcdr-source", str(make_source(tmp_path / "fastcdr", "fastcdr", "2.3.5", "2.3.5")))
    assert "the source lacks the bundled SQLite (src/cpp/rtps/persistence/sqlite3.c): built with " \
           "-DSQLITE3_SUPPORT=OFF" in done.stdout
    record = build_record.read_record(workspace)
    assert "-DSQLITE3_SUPPORT=OFF" in record["cmake_args"]
    # Fast DDS' package built (the stand-in offers the harness no CMake package: what happens to the
    # harness is test_a_harness_built_against_the_system_fast_dds_fails_the_build's concern)
    assert record.get("failed_package") != "fastrtps", record.get("log_tail")
    assert (workspace / "install" / "lib" / "libfastrtps.so").exists()
    cache = (workspace / "build" / "fastrtps" / "CMakeCache.txt").read_text()
    assert "SQLITE3_SUPPORT:BOOL=OFF" in cache
