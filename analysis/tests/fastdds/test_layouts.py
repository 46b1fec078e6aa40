"""`perfgate build --layouts N`: the Fast DDS library linked again with its objects in other orders,
kept beside the install (fastdds/layouts.py), and `perfgate ab --layouts N` taking them.

The library here is small and compiled by the test (a few C objects and the one-line link script
CMake writes for a shared library), so every link, copy and loader check is the real one."""
from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate import schema as s
from perfgate.ab import arms as ab_arms
from perfgate.errors import InputError
from conftest import PACKAGE_XML, stand_in_fastdds_cmake, system_fastrtps
from perfgate.fastdds import colcon, kept, layouts
from perfgate.fastdds import harness as native_harness
from perfgate.fastdds import source as fastdds_source

UNITS = 6
# one object's path has a dash, which CMake quotes in link.txt
OBJECTS = [f"CMakeFiles/fastrtps.dir/unit_{i}.c.o" for i in range(UNITS - 1)] + \
          ["CMakeFiles/fastrtps.dir/monitor-service/unit_5.c.o"]


def sha(n: int) -> str:
    return f"{n:x}" * 40


def link_line(install: Path) -> str:
    quoted = " ".join(f'"{o}"' if "-" in o else o for o in OBJECTS)
    return (f"/usr/bin/cc -fPIC -O2 -shared -Wl,-soname,libfastrtps.so.2.9 -o libfastrtps.so.2.9 {quoted}  "
            f"-Wl,-rpath,{install}/lib::::::::  -lm \n")


def make_build(workspace: Path, commit: str) -> dict:
    """WS/build/fastrtps/src/cpp: UNITS objects and CMake's link script; WS/install: the library they link
    to in that order and a harness loading it through $ORIGIN/../lib; the record a finished build leaves."""
    cpp = workspace / "build" / "fastrtps" / "src" / "cpp"
    install = workspace / "install"
    for folder in (install / "lib", install / "bin", cpp / "CMakeFiles" / "fastrtps.dir" / "monitor-service"):
        folder.mkdir(parents=True, exist_ok=True)
    for i, obj in enumerate(OBJECTS):
        source = workspace / f"unit_{i}.c"
        body = f"int unit_{i}(int x) {{ return x * {i + 3} + {i}; }}\n"
        if i == 0:
            body += 'const char *participant(void) { return "layouts"; }\n'
        source.write_text(body)
        subprocess.run(["cc", "-c", "-fPIC", "-O2", "-o", str(cpp / obj), str(source)], check=True)
    script = cpp / "CMakeFiles" / "fastrtps.dir" / "link.txt"
    script.write_text(link_line(install))
    subprocess.run(shlex.split(script.read_text()), cwd=cpp, check=True)
    (install / "lib" / "libfastrtps.so.2.9").write_bytes((cpp / "libfastrtps.so.2.9").read_bytes())
    (install / "lib" / "libfastrtps.so").symlink_to("libfastrtps.so.2.9")
    (workspace / "main.c").write_text('#include <stdio.h>\nconst char *participant(void);\n'
                                      'int main(void) { puts(participant()); return 0; }\n')
    harness = install / "bin" / native_harness.LATENCY_EXECUTABLE
    subprocess.run(["cc", "-o", str(harness), str(workspace / "main.c"), str(install / "lib" / "libfastrtps.so.2.9"),
                    "-Wl,--enable-new-dtags", f"-Wl,-rpath,$ORIGIN/../lib:{install}/lib"], check=True)
    return {"status": s.BUILD_OK, "workspace": str(workspace), "prefix": str(install), "harness": str(harness),
            "fastdds_library": str(install / "lib" / "libfastrtps.so"), "log": str(workspace / "log"),
            "fastdds": {"package": "fastrtps", "version": "2.9.1", "commit": commit, "kind": "git",
                        "uncommitted_changes": False},
            "dependencies": {"fastcdr": {"from": "system", "version": "1.0.26"}},
            "cmake_args": colcon.cmake_arguments(ccache=False), "harness_source": "sources-1"}


def unit_order(library: Path) -> list[int]:
    """The units' functions in address order, as the linker placed them."""
    listing = subprocess.run(["nm", "-n", "--defined-only", str(library)], capture_output=True, text=True,
                             check=True).stdout
    return [int(line.split()[2][5:]) for line in listing.splitlines() if line.split()[2].startswith("unit_")]


def expected_order(seed: int) -> list[int]:
    by_hash = sorted(OBJECTS, key=lambda o: hashlib.sha256(f"{seed}:{o}".encode()).hexdigest())
    return [OBJECTS.index(o) for o in by_hash]


# --- the command, pure --------------------------------------------------------------------------------
def test_the_link_command_takes_the_seeds_order_and_the_installs_run_path():
    script = link_line(Path("/ws/install"))
    one = layouts.shuffled_command(script, 1, "/out/lib.so")
    assert one[:7] == ["/usr/bin/cc", "-fPIC", "-O2", "-shared", "-Wl,-soname,libfastrtps.so.2.9", "-o", "/out/lib.so"]
    assert one[7:7 + UNITS] == [OBJECTS[i] for i in expected_order(1)]  # the dash's quotes gone, as a shell reads them
    assert one[7 + UNITS:] == ["-Wl,-rpath,$ORIGIN/../lib", "-lm"]
    orders = {tuple(layouts.shuffled_command(script, seed, "x")[7:7 + UNITS]) for seed in range(1, 9)}
    assert len(orders) == 8 and all(sorted(order) == sorted(OBJECTS) for order in orders)
    assert layouts.shuffled_command(script, 3, "x") == layouts.shuffled_command(script, 3, "x")


@pytest.mark.parametrize("script, problem", [
    ("cc -shared -o a.so x.o y.o\ncc -o b.so x.o\n", "a link script of one command expected, found 2"),
    ("cc -shared -o a.so x.o\n", "the object files are not one run of arguments"),
    ("cc -shared -o a.so x.o -lm y.o\n", "the object files are not one run of arguments"),
    ("cc -shared x.o y.o\n", "no single -o in the link command"),
])
def test_a_link_script_it_cannot_read_is_refused(script, problem):
    with pytest.raises(ValueError, match=problem):
        layouts.shuffled_command(script, 1, "out.so")


# --- kept with the install ------------------------------------------------------------------------------
@pytest.mark.compiles
def test_layouts_are_kept_beside_the_install_each_linked_in_its_seeds_order(tmp_path):
    workspace = tmp_path / "ws"
    record = make_build(workspace, sha(1))
    assert unit_order(workspace / "install" / "lib" / "libfastrtps.so.2.9") == list(range(UNITS))
    folder = kept.keep(workspace, record, layouts=3)
    assert folder == workspace / "installs" / sha(1)
    top = json.loads((folder / s.BUILD_RECORD_FILE).read_text())
    assert top["layouts"] == {"count": 3, "order": layouts.ORDER}
    assert sorted(p.name for p in (folder / layouts.LAYOUTS_DIR).iterdir()) == ["1", "2", "3"]
    seen = set()
    for seed in (1, 2, 3):
        layout = folder / layouts.LAYOUTS_DIR / str(seed)
        library = layout / "lib" / "libfastrtps.so.2.9"
        assert unit_order(library) == expected_order(seed)
        seen.add(tuple(unit_order(library)))
        harness = layout / "bin" / native_harness.LATENCY_EXECUTABLE
        assert colcon.linked_libraries(harness)["libfastrtps.so.2.9"] == str(library)
        assert subprocess.run([str(harness)], capture_output=True, text=True, check=True).stdout == "layouts\n"
        runpath = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True).stdout
        assert "Library runpath: [$ORIGIN/../lib]" in runpath
        # the rest is the install's own files, linked, not copied; the library is its own file
        assert harness.stat().st_ino == (folder / "bin" / native_harness.LATENCY_EXECUTABLE).stat().st_ino
        assert library.stat().st_ino != (folder / "lib" / "libfastrtps.so.2.9").stat().st_ino
        assert (layout / "lib" / "libfastrtps.so").readlink() == Path("libfastrtps.so.2.9")
        own = json.loads((layout / s.BUILD_RECORD_FILE).read_text())
        assert own["layout"] == {"seed": seed, "of": 3, "order": layouts.ORDER}
        assert (own["prefix"], own["harness"], own["fastdds_library"], own["fastdds"]["commit"]) == (
            str(layout), str(harness), str(library), sha(1))
        assert not (layout / layouts.LAYOUTS_DIR).exists()
    assert len(seen) == 3
    # the install's own library is untouched by the links beside it
    assert unit_order(folder / "lib" / "libfastrtps.so.2.9") == list(range(UNITS))

    # reused only when it has as many layouts as asked
    arguments = (workspace, sha(1), record["harness_source"], record["cmake_args"])
    assert kept.reusable(*arguments, 3) == folder and kept.reusable(*arguments, 2) == folder
    assert kept.reusable(*arguments, 4) is None

    # an A/B takes them in order; an install with fewer is refused, naming it
    arm = ab_arms.parse_arm("baseline", str(folder), 3)
    assert [spec.fastdds_prefix for spec in arm.layouts] == [folder / "layouts" / str(k) for k in (1, 2, 3)]
    assert all(spec.name == "baseline" and spec.build_record["layout"]["seed"] == k
               for k, spec in enumerate(arm.layouts, 1))
    with pytest.raises(InputError, match=r"--candidate: --layouts 4 needs an install `perfgate build --layouts 4` "
                                         r"kept \(it has 3 layouts\)"):
        ab_arms.parse_arm("candidate", str(folder), 4)


@pytest.mark.compiles
def test_a_layout_that_does_not_link_keeps_nothing(tmp_path, capsys):
    workspace = tmp_path / "ws"
    record = make_build(workspace, sha(2))
    (workspace / "build" / "fastrtps" / "src" / "cpp" / OBJECTS[3]).unlink()  # the build tree moved on
    assert kept.keep(workspace, record, layouts=2) is None
    error = capsys.readouterr().err
    script = workspace / "build" / "fastrtps" / "src" / "cpp" / "CMakeFiles" / "fastrtps.dir" / "link.txt"
    assert error.startswith(f"perfgate build: warning: {sha(2)} not kept in {workspace / 'installs' / sha(2)}: "
                            f"{script}: linking layout 1 failed (exit 1): ")
    assert "cannot find CMakeFiles/fastrtps.dir/unit_3.c.o" in error and error.count("\n") == 1
    assert list((workspace / "installs").iterdir()) == []  # no partial copy left
    # without layouts the same build is kept
    assert kept.keep(workspace, record) == workspace / "installs" / sha(2)


def perfgate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfgate.cli", *args], capture_output=True, text=True)


@pytest.mark.compiles
def test_bad_layout_options_are_one_line_and_exit_2(tmp_path):
    workspace = tmp_path / "ws"
    folder = kept.keep(workspace, make_build(workspace, sha(3)))  # kept without layouts
    source = tmp_path / "src"
    source.mkdir()
    cases = [
        (["build", "--workspace", str(tmp_path / "b"), "--source", str(source), "--keep-installs", "0",
          "--layouts", "2"], "perfgate build: error: --layouts needs a kept install to keep them in: --keep-installs 1 or more"),
        (["build", "--workspace", str(tmp_path / "b"), "--source", str(source), "--layouts", "65"],
         "perfgate build: error: --layouts must be from 0 to 64, got 65"),
        (["ab", "--output", str(tmp_path / "out"), "--baseline", str(folder), "--candidate", str(folder),
          "--layouts", "2"], f"perfgate ab: error: {folder}: --baseline: --layouts 2 needs an install "
                             "`perfgate build --layouts 2` kept (it has no layouts)"),
        (["ab", "--output", str(tmp_path / "out"), "--baseline", str(folder), "--candidate", str(folder),
          "--layouts", "-1"], "perfgate ab: error: --layouts must be from 0 to 64, got -1"),
    ]
    for arguments, line in cases:
        done = perfgate(*arguments)
        assert (done.returncode, done.stderr.strip().splitlines()) == (s.EXIT_USAGE, [line]), arguments
    assert not (tmp_path / "out").exists() and not (tmp_path / "b").exists()


# --- functions aligned to the cache line --------------------------------------------------------------
UNIT_C = "".join(f"int unit_{i}(int x) {{ return x * {i + 3} + {i}; }}\n" for i in range(8))


def text_addresses(binary: Path) -> dict[str, int]:
    listing = subprocess.run(["nm", "--defined-only", str(binary)], capture_output=True, text=True, check=True).stdout
    return {parts[2]: int(parts[0], 16) for parts in (line.split() for line in listing.splitlines())
            if len(parts) == 3 and parts[1] in "Tt"}


def test_a_builds_alignment_is_read_back_from_its_cmake_arguments_and_anything_else_is_the_compilers_own():
    for value in (0, 16, 64, 4096):
        assert colcon.function_alignment(colcon.cmake_arguments(ccache=True, align_functions=value)) == value
    # a record's arguments come from a file: what is not a list of such strings is no alignment
    for hostile in (None, "-DCMAKE_CXX_FLAGS=-falign-functions=64", [64], ["-DCMAKE_CXX_FLAGS=-falign-functions=x64"],
                    ["-DCMAKE_C_FLAGS=-falign-functions=64"]):
        assert colcon.function_alignment(hostile) == 0


@pytest.mark.compiles
def test_align_functions_compiles_every_function_of_the_build_on_the_line(tmp_path):
    library = system_fastrtps()
    assert library is not None and fastdds_source.installed_cmake_version("fastcdr") is not None, \
        "needs the system's Fast DDS 2.x and Fast CDR (ci/debian-packages.txt)"
    origin = tmp_path / "origin"
    origin.mkdir()
    (origin / "CMakeLists.txt").write_text(stand_in_fastdds_cmake(library, linked="unit.c"))
    (origin / "package.xml").write_text(PACKAGE_XML.format(name="fastrtps", version="2.9.1"))
    (origin / "unit.c").write_text(UNIT_C)
    (origin / "note.txt").write_text("aligned\n")
    workspace = tmp_path / "ws"
    done = perfgate("build", "--workspace", str(workspace), "--source", str(origin), "--align-functions", "64",
                    "--keep-installs", "0", "--jobs", "2")
    assert done.returncode == s.EXIT_OK, done.stdout[-3000:] + done.stderr[-3000:]
    record = json.loads((workspace / s.BUILD_RECORD_FILE).read_text())
    assert {"-DCMAKE_C_FLAGS=-falign-functions=64", "-DCMAKE_CXX_FLAGS=-falign-functions=64"} <= set(record["cmake_args"])
    assert colcon.function_alignment(record["cmake_args"]) == 64  # what an A/B and a layout file read back
    # the package's own C library: every function starts a 64-byte line
    units = text_addresses(workspace / "install" / "lib" / "libstandin_unit.so")
    unit_functions = {name: address for name, address in units.items() if name.startswith("unit_")}
    assert sorted(unit_functions) == [f"unit_{i}" for i in range(8)]
    assert all(address % 64 == 0 for address in unit_functions.values()), {n: hex(a) for n, a in unit_functions.items()}
    # perfgate's C++ harness too (245 functions), but for the C runtime's start-up code and what GCC
    # compiles as cold, which it never aligns: the parts it splits off a function (.cold) and the
    # noreturn error path (throw_failure). The compiler's default, 16 bytes, leaves three quarters off the line.
    harness = {name: address for name, address in
               text_addresses(workspace / "install" / "bin" / native_harness.LATENCY_EXECUTABLE).items()
               if not name.endswith(".cold") and name not in ("_start", "_fini", "_init", "deregister_tm_clones",
                                                                "register_tm_clones", "__do_global_dtors_aux",
                                                                "frame_dummy")}
    off_the_line = sorted(name for name, address in harness.items() if address % 64)
    assert len(harness) > 100 and len(off_the_line) <= 2, off_the_line
    assert all("throw_failure" in name for name in off_the_line), off_the_line
    # an alignment that is no power of two, or beyond a page, is refused before anything is built
    for value, line in (("48", "perfgate build: error: --align-functions must be 0 or a power of two from 16 to 4096, "
                               "got 48"), ("8192", "perfgate build: error: --align-functions must be 0 or a power of "
                                                   "two from 16 to 4096, got 8192")):
        bad = perfgate("build", "--workspace", str(workspace), "--source", str(origin), "--align-functions", value)
        assert (bad.returncode, bad.stderr.strip().splitlines()) == (s.EXIT_USAGE, [line])
