"""perfgate build keeps the installs of the last few commits (WS/installs/<sha>, docs/build.md "Kept
installs"): a copy of WS/install that loads its own libraries ($ORIGIN/../lib, checked with ldd) and
carries its own build record; a commit kept with the same harness sources and CMake arguments is not
built again; --keep-as names one; pruning keeps the N most recently built or used and every named one.

Small installs compiled here with cc (the copy, the record, the refusal, pruning), and a real colcon
build of a stand-in Fast DDS 2.9.1 (the system's library, installed by a source of its own) with the
real harness, through the command line: keep, reuse, names and pruning end to end.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BROKEN, PACKAGE_XML, git_in, make_source, stand_in_fastdds_cmake, system_fastrtps
from perfgate.ab import arms as ab_arms
from perfgate.fastdds import source as fastdds_source
from perfgate.fastdds import harness as native_harness
from perfgate import schema as s
from perfgate.fastdds import colcon, kept
from perfgate.fastdds import record as build_record


def perfgate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfgate.cli", *args], capture_output=True, text=True)


def sha(n: int) -> str:
    return f"{n:x}" * 40 if n < 16 else f"{n:040x}"


# --- a small install compiled here: a libfastrtps.so.2.9 and a harness linked to it -----------------
def make_install(workspace: Path, rpath: str, commit: str, note: str = "") -> dict:
    """WS/install with bin/perfgate-latency loading lib/libfastrtps.so.2.9 through `rpath` ({install} is
    WS/install), and the record a finished build leaves."""
    install = workspace / "install"
    (install / "lib").mkdir(parents=True, exist_ok=True)
    (install / "bin").mkdir(exist_ok=True)
    (workspace / "participant.c").write_text(f'const char *participant(void) {{ return "{note}"; }}\n')
    (workspace / "main.c").write_text('#include <stdio.h>\nconst char *participant(void);\n'
                                      'int main(void) { puts(participant()); return 0; }\n')
    library = install / "lib" / "libfastrtps.so.2.9"
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libfastrtps.so.2.9", "-o", str(library),
                    str(workspace / "participant.c")], check=True)
    harness = install / "bin" / native_harness.LATENCY_EXECUTABLE
    subprocess.run(["cc", "-o", str(harness), str(workspace / "main.c"), str(library), "-Wl,--enable-new-dtags",
                    f"-Wl,-rpath,{rpath.format(install=install)}"], check=True)
    return {"status": s.BUILD_OK, "workspace": str(workspace), "prefix": str(install), "harness": str(harness),
            "fastdds_library": str(library), "log": str(workspace / "log" / "latest_build"),
            "fastdds": {"package": "fastrtps", "version": "2.9.1", "commit": commit, "kind": "git",
                        "uncommitted_changes": False},
            "dependencies": {"fastcdr": {"from": "system", "version": "1.0.26"}},
            "cmake_args": colcon.cmake_arguments(ccache=False), "harness_source": "sources-1"}


RELOCATABLE = "$ORIGIN/../lib:{install}/lib"  # what perfgate build gives every package now
ABSOLUTE = "{install}/lib"  # what it gave before


def runs(harness: Path) -> str:
    return subprocess.run([str(harness)], capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.compiles
def test_a_kept_install_loads_its_own_libraries_and_carries_its_record(tmp_path):
    workspace = tmp_path / "ws"
    record = make_install(workspace, RELOCATABLE, sha(1), note="one")
    folder = kept.keep(workspace, record)
    assert folder == workspace / "installs" / sha(1)
    harness = folder / "bin" / native_harness.LATENCY_EXECUTABLE
    assert colcon.linked_libraries(harness)["libfastrtps.so.2.9"] == str(folder / "lib" / "libfastrtps.so.2.9")
    # the workspace's install changes with the next build: the copy does not follow it
    make_install(workspace, RELOCATABLE, sha(2), note="two")
    assert runs(harness) == "one" and runs(workspace / "install" / "bin" / native_harness.LATENCY_EXECUTABLE) == "two"

    written = json.loads((folder / s.BUILD_RECORD_FILE).read_text())
    assert {key: written[key] for key in ("workspace", "prefix", "harness", "fastdds_library", "kept_from")} == {
        "workspace": str(folder), "prefix": str(folder), "harness": str(harness),
        "fastdds_library": str(folder / "lib" / "libfastrtps.so.2.9"), "kept_from": str(workspace)}
    assert written["fastdds"] == record["fastdds"] and written["cmake_args"] == record["cmake_args"]
    assert sorted(p.name for p in (workspace / "installs").iterdir()) == [sha(1)]  # no temporary left
    # read as a workspace is: its own harness and prefix, the workspace it came from in the metadata
    assert build_record.harness_paths(build_record.read_record(folder), folder) == (harness, folder)
    assert build_record.fastdds_metadata(written).build["kept_from"] == str(workspace)
    arm = ab_arms.parse_arm("baseline", str(folder))
    assert (arm.harness, arm.fastdds_prefix, arm.build_record["fastdds"]["commit"]) == (harness, folder, sha(1))
    # measured, never built in: its workspace is where to build
    done = perfgate("build", "--workspace", str(folder))
    assert done.returncode == s.EXIT_USAGE and done.stderr.strip().splitlines() == [
        f"perfgate build: error: --workspace {folder} is an install kept by `perfgate build --workspace {workspace}`: "
        "build in that workspace (a kept install is measured, not built in)"]
    assert sorted(p.name for p in folder.iterdir()) == ["bin", "lib", s.BUILD_RECORD_FILE]


@pytest.mark.compiles
def test_a_kept_folder_copied_elsewhere_names_its_own_paths(tmp_path):
    workspace = tmp_path / "ws"
    folder = kept.keep(workspace, make_install(workspace, RELOCATABLE, sha(1), note="one"))
    moved = shutil.copytree(folder, tmp_path / "elsewhere" / "one", symlinks=True)
    shutil.rmtree(workspace)
    record = build_record.read_record(moved)
    assert (record["prefix"], record["harness"], record["fastdds_library"]) == (
        str(moved), str(moved / "bin" / native_harness.LATENCY_EXECUTABLE), str(moved / "lib" / "libfastrtps.so.2.9"))
    harness, prefix = build_record.harness_paths(record, moved)
    assert runs(harness) == "one" and prefix == moved


@pytest.mark.compiles
def test_a_copy_that_would_load_the_workspaces_libraries_is_not_kept(tmp_path, capsys):
    workspace = tmp_path / "ws"
    record = make_install(workspace, ABSOLUTE, sha(1))  # an install from before $ORIGIN/../lib
    assert kept.keep(workspace, record) is None
    library = workspace / "install" / "lib" / "libfastrtps.so.2.9"
    assert capsys.readouterr().err.strip().splitlines() == [
        f"perfgate build: warning: {sha(1)} not kept in {workspace / 'installs' / sha(1)}: its harness loads "
        f"{library}, outside the copy (an install without the RPATH $ORIGIN/../lib: built before perfgate set it?)"]
    assert list((workspace / "installs").iterdir()) == []  # nothing half-written either
    # a library the copy cannot find at all is no better
    missing = {"libfastrtps.so.2.9": None}
    assert kept.copy_problem(missing, tmp_path, workspace, record) == "its harness finds no libfastrtps.so.2.9"
    # nor one whose Fast DDS comes from the system while a Fast CDR the workspace built must come along
    three = {**record, "fastdds": {**record["fastdds"], "package": "fastdds"},
             "dependencies": {"fastcdr": {"from": "submodule"}}}
    system = {"libfastdds.so.3.6": str(tmp_path / "copy" / "lib" / "libfastdds.so.3.6"),
              "libfastcdr.so.2": "/usr/lib/x86_64-linux-gnu/libfastcdr.so.2"}
    assert kept.copy_problem(system, tmp_path / "copy", workspace, three).startswith(
        "its harness loads /usr/lib/x86_64-linux-gnu/libfastcdr.so.2, outside the copy")


@pytest.mark.parametrize("change", [{"commit": None}, {"commit": "abc123"}, {"uncommitted_changes": True}])
def test_only_a_clean_full_commit_is_kept(tmp_path, change):
    record = {"status": s.BUILD_OK, "fastdds": {"commit": sha(1), "uncommitted_changes": False}}
    assert kept.keepable_commit(record) == sha(1)
    assert kept.keepable_commit({**record, "fastdds": {**record["fastdds"], **change}}) is None
    assert kept.keepable_commit({**record, "status": s.BUILD_FAILED}) is None
    assert kept.keep(tmp_path, {**record, "fastdds": {**record["fastdds"], **change}}) is None
    assert not (tmp_path / "installs").exists()


@pytest.mark.compiles
def test_reuse_needs_the_same_commit_harness_sources_and_cmake_arguments(tmp_path):
    workspace = tmp_path / "ws"
    record = make_install(workspace, RELOCATABLE, sha(1))
    folder = kept.keep(workspace, record)
    args, sources = record["cmake_args"], record["harness_source"]
    assert kept.reusable(workspace, sha(1), sources, args) == folder
    assert kept.reusable(workspace, sha(2), sources, args) is None
    assert kept.reusable(workspace, sha(1), "sources-2", args) is None  # native/ changed since
    assert kept.reusable(workspace, sha(1), sources, args + ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]) is None
    assert kept.reusable(workspace, None, sources, args) is None
    (folder / "bin" / native_harness.LATENCY_EXECUTABLE).unlink()
    assert kept.reusable(workspace, sha(1), sources, args) is None


@pytest.mark.compiles
def test_a_commit_linked_out_of_the_workspace_is_built_not_reused(tmp_path, capsys):
    """WS/installs/<sha> as a link to a valid kept install elsewhere (perfgate makes no such link): reused,
    the workspace would measure a build it did not make under that commit's name."""
    workspace, other = tmp_path / "ws", tmp_path / "other"
    elsewhere = kept.keep(other, make_install(other, RELOCATABLE, sha(1), note="elsewhere"))
    record = make_install(workspace, RELOCATABLE, sha(1), note="here")
    args, sources = record["cmake_args"], record["harness_source"]
    assert kept.reusable(other, sha(1), sources, args) == elsewhere  # what the link points to would do
    (workspace / "installs").mkdir()
    (workspace / "installs" / sha(1)).symlink_to(elsewhere)
    capsys.readouterr()
    assert kept.reusable(workspace, sha(1), sources, args) is None
    assert f"{workspace / 'installs' / sha(1)} is a link, not an install perfgate kept: not reused" in \
        capsys.readouterr().err
    # the build then keeps its own install in its place; what the link pointed to is untouched
    folder = kept.keep(workspace, record)
    assert folder == workspace / "installs" / sha(1) and not folder.is_symlink()
    assert runs(folder / "bin" / native_harness.LATENCY_EXECUTABLE) == "here"
    assert runs(elsewhere / "bin" / native_harness.LATENCY_EXECUTABLE) == "elsewhere"
    assert kept.reusable(workspace, sha(1), sources, args) == folder


@pytest.mark.compiles
def test_pruning_keeps_the_most_recently_used_and_every_named_one(tmp_path):
    workspace = tmp_path / "ws"
    folders = {}
    for n in range(1, 6):
        folders[n] = kept.keep(workspace, make_install(workspace, RELOCATABLE, sha(n)))
        os.utime(folders[n], (1_000_000 + n, 1_000_000 + n))  # built one after the other
    kept.touch(folders[1])  # reused just now
    kept.name(workspace, "baseline", folders[2])
    kept.name(workspace, "candidate", folders[3])
    kept.name(workspace, "candidate", folders[4])  # replaced: 3 is no longer named
    assert os.readlink(workspace / "installs" / "candidate") == sha(4)
    (workspace / "installs" / f".partial-{sha(9)}").mkdir()  # what a killed build left
    (workspace / "installs" / ".partial-candidate").symlink_to(sha(3))  # a name half replaced: no name
    # by use: 1 (just now), 5, 4, 3, 2; the last two kept, and 4 and 2 for their names
    assert kept.prune(workspace, 2) == [folders[3]]
    assert sorted(p.name for p in (workspace / "installs").iterdir()) == sorted(
        [sha(1), sha(2), sha(4), sha(5), "baseline", "candidate"])
    assert build_record.read_record(workspace / "installs" / "baseline")["fastdds"]["commit"] == sha(2)
    kept.name(workspace, "candidate", None)  # a build under that name kept nothing: no stale name
    assert not (workspace / "installs" / "candidate").exists()
    assert sorted(kept.prune(workspace, 0)) == [folders[1], folders[4], folders[5]]  # 0: none but the named
    assert sorted(p.name for p in (workspace / "installs").iterdir()) == [sha(2), "baseline"]


@pytest.mark.compiles
def test_the_same_commit_kept_again_replaces_its_folder(tmp_path):
    workspace = tmp_path / "ws"
    kept.name(workspace, "baseline", kept.keep(workspace, make_install(workspace, RELOCATABLE, sha(1), note="old")))
    record = make_install(workspace, RELOCATABLE, sha(1), note="new")
    folder = kept.keep(workspace, {**record, "harness_source": "sources-2"})
    assert runs(folder / "bin" / native_harness.LATENCY_EXECUTABLE) == "new"
    assert build_record.read_record(workspace / "installs" / "baseline")["harness_source"] == "sources-2"
    assert sorted(p.name for p in (workspace / "installs").iterdir()) == [sha(1), "baseline"]


# --- bad input: exit 2, one line, nothing built ----------------------------------------------------
@pytest.mark.parametrize("args, message", [
    (["--keep-installs", "-1"], "--keep-installs must be 0 (keep none) or more, got -1"),
    (["--keep-installs", "two"], "argument --keep-installs: invalid int value: 'two'"),
    (["--keep-as", "../x"], "--keep-as '../x' is not a plain name"),
    (["--keep-as", "a/b"], "--keep-as 'a/b' is not a plain name"),
    (["--keep-as", ".hidden"], "is not a plain name"),
    (["--keep-as", sha(1)], "not a 40-digit commit"),
    (["--keep-as", "baseline", "--keep-installs", "0"], "--keep-as baseline names a kept install, and "
                                                        "--keep-installs 0 keeps none"),
])
@pytest.mark.heavy
def test_bad_keep_options_exit_2_before_anything_is_built(tmp_path, args, message):
    source = tmp_path / "source"
    source.mkdir()
    done = perfgate("build", "--workspace", str(tmp_path / "ws"), "--source", str(source), *args)
    assert done.returncode == s.EXIT_USAGE
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr
    assert not (tmp_path / "ws").exists()


# --- end to end: a stand-in Fast DDS 2.9.1 built with the real harness, through the command line ------
# The system's libfastrtps installed by a source of its own (conftest.stand_in_fastdds_cmake).


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """Commits c1 <- c2 <- c3 of the stand-in (each installs its own note), built one after the other in
    one workspace as CI does: c1 as baseline, c2 as candidate, c2's parent as baseline (kept: reused),
    c3 unnamed, then c3 again as candidate keeping 1. Every step's output and the folders after it."""
    library = system_fastrtps()
    # the test command installs both (ci/debian-packages.txt): their absence is a broken set-up, not a skip
    assert library is not None and fastdds_source.installed_cmake_version("fastcdr") is not None, \
        "needs the system's Fast DDS 2.x and Fast CDR (ci/debian-packages.txt)"
    root = tmp_path_factory.mktemp("kept")
    origin = root / "origin"
    origin.mkdir()
    (origin / "CMakeLists.txt").write_text(stand_in_fastdds_cmake(library))
    (origin / "package.xml").write_text(PACKAGE_XML.format(name="fastrtps", version="2.9.1"))
    git_in(origin, "init", "-q")
    commits = {}
    for name in ("c1", "c2", "c3"):
        (origin / "note.txt").write_text(f"{name}\n")
        git_in(origin, "add", ".")
        git_in(origin, "commit", "-qm", name)
        commits[name] = git_in(origin, "rev-parse", "HEAD")
    workspace, url = root / "ws", f"file://{origin}"
    steps, log = {}, workspace / "perfgate" / "colcon-build.log"
    for step, ref, options in (("c1", commits["c1"], ["--keep-as", "baseline", "--keep-installs", "2", "--jobs", "1"]),
                               ("c2", commits["c2"], ["--keep-as", "candidate", "--keep-installs", "2"]),
                               ("parent", f"parent:{commits['c2']}", ["--keep-as", "baseline", "--keep-installs", "2"]),
                               ("c3", commits["c3"], ["--keep-installs", "2"]),
                               ("c3 again", commits["c3"], ["--keep-as", "candidate", "--keep-installs", "1"])):
        colcon_log = log.stat().st_mtime_ns if log.is_file() else None
        done = perfgate("build", "--workspace", str(workspace), "--git-url", url, "--commit", ref, *options)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        steps[step] = {"done": done, "colcon_ran": log.stat().st_mtime_ns != colcon_log,
                       "installs": sorted(p.name for p in (workspace / "installs").iterdir()),
                       "names": {p.name: os.readlink(p) for p in (workspace / "installs").iterdir() if p.is_symlink()},
                       "record": build_record.read_record(workspace)}
    # a local source with a change not committed: built, not kept, and the name it asked for is gone
    (origin / "note.txt").write_text("c3 and a change\n")
    done = perfgate("build", "--workspace", str(workspace), "--source", str(origin), "--keep-as", "candidate")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    steps["dirty"] = {"done": done, "installs": sorted(p.name for p in (workspace / "installs").iterdir())}
    return workspace, commits, steps


@pytest.mark.compiles
def test_a_built_commit_is_kept_and_its_copy_runs_on_its_own_library(builds):
    workspace, commits, steps = builds
    folder = workspace / "installs" / commits["c1"]
    first = steps["c1"]
    assert first["colcon_ran"] and first["installs"] == sorted([commits["c1"], "baseline"])
    assert first["done"].stdout.strip().splitlines()[-1].endswith(f"; kept in {folder}")
    harness = folder / "bin" / native_harness.LATENCY_EXECUTABLE
    runpath = subprocess.run(["readelf", "-d", str(harness)], capture_output=True, text=True).stdout
    assert f"Library runpath: [$ORIGIN/../lib:{workspace / 'install' / 'lib'}]" in runpath
    assert colcon.linked_fastdds_library(harness) == str(folder / "lib" / "libfastrtps.so.2.9")
    assert native_harness.fastdds_version(native_harness.HarnessPaths(harness, harness, folder)) == "2.9.1"
    assert (folder / "share" / "fastrtps" / "note.txt").read_text() == "c1\n"  # c1's install, whatever WS holds now
    arm = ab_arms.parse_arm("baseline", str(workspace / "installs" / "baseline"))
    assert arm.harness == harness and arm.build_record["fastdds"]["commit"] == commits["c1"]
    assert arm.build_record["kept_from"] == str(workspace) and arm.build_record["harness_source"] == \
        native_harness.source_digest()


@pytest.mark.compiles
def test_a_kept_commit_is_not_built_again(builds):
    workspace, commits, steps = builds
    folder = workspace / "installs" / commits["c1"]
    reuse = steps["parent"]
    assert not reuse["colcon_ran"] and "Starting >>>" not in reuse["done"].stdout
    assert reuse["done"].stdout.strip().splitlines()[-1] == \
        f"perfgate build: {commits['c1']} already built, kept in {folder}"
    # WS/install holds c2 now: the workspace's record names the kept copy of what was asked
    record = reuse["record"]
    assert (record["prefix"], record["harness"], record["workspace"]) == (
        str(folder), str(folder / "bin" / native_harness.LATENCY_EXECUTABLE), str(workspace))
    assert record["fastdds"]["commit"] == commits["c1"] and "reused_utc" in record
    assert record["fastdds"]["requested_ref"] == f"parent:{commits['c2']}"  # what was asked this time
    assert build_record.harness_paths(record, workspace) == (folder / "bin" / native_harness.LATENCY_EXECUTABLE, folder)
    assert reuse["names"] == {"baseline": commits["c1"], "candidate": commits["c2"]}


@pytest.mark.compiles
def test_the_upstream_engine_refuses_a_kept_install_and_a_reused_workspace(builds, tmp_path):
    # LatencyTest runs from a colcon build tree: a kept folder has none, and a workspace whose record
    # was reused holds the tree of the last commit colcon built (exit 2, before anything runs)
    workspace, commits, _ = builds
    for index, target in enumerate((workspace / "installs" / commits["c1"], workspace / "installs" / "baseline")):
        output = tmp_path / f"up-{index}"
        completed = subprocess.run([sys.executable, "-m", "perfgate.cli", "run", "--engine", "upstream",
                                    "--workspace", str(target), "--output", str(output)],
                                   capture_output=True, text=True)
        assert completed.returncode == s.EXIT_USAGE, completed.stderr
        assert len(completed.stderr.strip().splitlines()) == 1
        assert "--engine upstream needs the build tree of the commit it measures" in completed.stderr
        assert not output.exists()


@pytest.mark.compiles
def test_names_protect_their_folders_and_pruning_keeps_the_last_n(builds):
    workspace, commits, steps = builds
    c1, c2, c3 = commits["c1"], commits["c2"], commits["c3"]
    # three kept with --keep-installs 2: c2, the least recently used, stays as "candidate"
    assert steps["c3"]["colcon_ran"] and steps["c3"]["installs"] == sorted([c1, c2, c3, "baseline", "candidate"])
    assert steps["c3"]["record"]["prefix"] == str(workspace / "install")  # built: the workspace's own install
    # c3 again as candidate, keeping 1: reused; c2 is no longer named and goes, c1 stays as "baseline"
    last = steps["c3 again"]
    assert not last["colcon_ran"]
    assert last["installs"] == sorted([c1, c3, "baseline", "candidate"])
    assert last["names"] == {"baseline": c1, "candidate": c3}
    assert (workspace / "installs" / c3 / "share" / "fastrtps" / "note.txt").read_text() == "c3\n"


@pytest.mark.compiles
def test_a_source_with_uncommitted_changes_is_built_not_kept(builds):
    workspace, commits, steps = builds
    dirty = steps["dirty"]
    assert f"perfgate build: not kept in {workspace / 'installs'}: the source has uncommitted changes" in \
        dirty["done"].stdout
    assert dirty["done"].stderr.strip().splitlines()[-1] == \
        f"perfgate build: warning: --keep-as candidate: nothing kept, {workspace / 'installs' / 'candidate'} removed"
    assert dirty["installs"] == sorted([commits["c1"], commits["c3"], "baseline"])
    assert (workspace / "install" / "share" / "fastrtps" / "note.txt").read_text() == "c3 and a change\n"


@pytest.mark.compiles
def test_a_failed_build_leaves_no_name_pointing_at_another_commit(tmp_path):
    workspace = tmp_path / "ws"
    kept.name(workspace, "candidate", kept.keep(workspace, make_install(workspace, RELOCATABLE, sha(1))))
    done = perfgate("build", "--workspace", str(workspace), "--source", str(make_source(tmp_path / "s", body=BROKEN)),
                    "--keep-as", "candidate", "--no-ccache")
    assert done.returncode == s.EXIT_INCOMPLETE
    assert sorted(p.name for p in (workspace / "installs").iterdir()) == [sha(1)]  # kept, no longer named


@pytest.mark.compiles
def test_a_run_of_a_kept_install_records_its_own_commit_not_the_workspace_checkouts(builds, tmp_path):
    # WS/src holds the last commit built (c3); a run against c1's kept folder measured c1
    workspace, commits, _ = builds
    folder = workspace / "installs" / commits["c1"]
    output = tmp_path / "run"
    done = perfgate("run", "--output", str(output), "--fastdds-prefix", str(folder),
                    "--harness", str(folder / "bin" / native_harness.LATENCY_EXECUTABLE),
                    "--subexperiments", "intraprocess_best_effort", "--payloads", "16", "--samples", "20")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    fastdds = json.loads((output / s.METADATA_FILE).read_text())["fastdds"]
    assert fastdds["commit"] == commits["c1"] and fastdds["prefix"] == str(folder)
    assert fastdds["version"] == "2.9.1" and fastdds["build"]["workspace"] == str(folder)
