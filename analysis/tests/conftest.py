"""Shared test fixtures and data builders: where the published Fast DDS measurements are, experiment
folders, Fast-DDS-like sources and colcon workspaces, git repositories, and the processes of a run.

Test files sit in folders that mirror the package (ab/, history/, ...); they import the builders from
here (`from conftest import ...`) or from the support modules beside it (ab_inputs, report_inputs,
throughput_inputs, history_synthetic, escape_hostile, store_scripts), never from one another, and find
files through REPO_ROOT and TESTS_DIR, never through their own __file__ (a test file may move).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfgate import cli, files
from perfgate.latency import process
from perfgate.measure import upstream
from perfgate.measure import environment as run_environment
from perfgate.measure import supervise as supervision
from perfgate import schema as s
from perfgate.fastdds import colcon
from perfgate.fastdds import record as build_record
from perfgate.fastdds.harness import ensure_harness

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parents[1]
# eProsima's published Fast-RTPS 1.9.2/1.9.3 latency measurements (Apache-2.0; data/fastdds-published/README.md)
FASTDDS_FIXTURES = TESTS_DIR / "data" / "fastdds-published"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def pytest_collection_modifyitems(items) -> None:
    # A test that uses the real harness needs Fast DDS, whether or not its author remembered the marker.
    for item in items:
        if "harness_paths" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.fastdds)


@pytest.fixture(scope="session")
def fastdds_fixtures() -> Path:
    # Missing fixtures are a broken checkout, not a reason to skip.
    assert FASTDDS_FIXTURES.is_dir(), f"published Fast DDS fixtures not found at {FASTDDS_FIXTURES}"
    return FASTDDS_FIXTURES


@pytest.fixture(scope="session")
def harness_paths():
    # The native harness, built once into the shared cache (perfgate.fastdds.harness; a file lock keeps
    # parallel workers from building it twice). A failed build fails the tests that need it.
    return ensure_harness()


def perfgate_in_process(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`perfgate ARGS` run by the command line's own entry point (cli.main) in this process, its exit
    code, stdout and stderr as a finished process's: what a user sees of a command that fails before it
    measures, without a new interpreter importing pandas for each of hundreds of cases. An exception
    cli.main lets through (a traceback to a user) fails the test. Commands whose processes or signals
    are tested run as real processes."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd or Path.cwd()), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(args))
        except SystemExit as exit:  # argparse's usage errors (exit 2) and --help (exit 0)
            code = exit.code if isinstance(exit.code, int) else 1
    return subprocess.CompletedProcess(["perfgate", *args], code, out.getvalue(), err.getvalue())


def live_processes_of(run_id: str) -> list[int]:
    """Live (not zombie) processes whose environment carries this run's id (run_environment.RUN_ID_ENV): what a
    run, or one of its harness processes, may have left behind."""
    needle = f"{run_environment.RUN_ID_ENV}={run_id}".encode()
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if needle in (proc / "environ").read_bytes().split(b"\0") and supervision.process_state(int(proc.name)) != "Z":
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def wait_until(condition, limit_s: float) -> bool:
    """Whether `condition()` came true within `limit_s` seconds (polled; a bound for a loaded machine, never
    a timing the test asserts)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def git_in(folder: Path, *args: str) -> str:
    """git in `folder` with a fixed identity and no user or system configuration; its stdout."""
    environment = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                   "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(folder), *args], env=environment, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture(scope="module")
def fastdds_history(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A small repository standing in for Fast DDS: main A-B-C, feature B-F1-F2, and M on `merged`,
    a merge of feature into C (first parent C). Fetchable by commit (allowAnySHA1InWant)."""
    origin = tmp_path_factory.mktemp("fastdds-origin")
    git_in(origin, "init", "--quiet", "--initial-branch", "main")
    git_in(origin, "config", "uploadpack.allowAnySHA1InWant", "true")
    commits = {}
    for name in ("A", "B", "C"):
        git_in(origin, "commit", "--quiet", "--allow-empty", "-m", name)
        commits[name] = git_in(origin, "rev-parse", "HEAD")
    git_in(origin, "checkout", "--quiet", "-b", "feature", commits["B"])
    for name in ("F1", "F2"):
        git_in(origin, "commit", "--quiet", "--allow-empty", "-m", name)
        commits[name] = git_in(origin, "rev-parse", "HEAD")
    git_in(origin, "checkout", "--quiet", "-b", "merged", commits["C"])
    git_in(origin, "merge", "--quiet", "--no-ff", "-m", "M", "feature")
    commits["M"] = git_in(origin, "rev-parse", "HEAD")
    return origin, commits


# --- experiment folders ---------------------------------------------------------------------------
PLATFORM_A = {"id": "platform-a", "cpu_model": "Test CPU", "cores": 4, "kernel": "6.1", "governor": "performance",
              "hostname": "a"}


def metadata(label: str, created: str | None, *, commit: str = "c0ffee", platform: dict | None = PLATFORM_A,
             latency_definition: str | None = s.ROUND_TRIP) -> dict:
    data = {"label": label, "fastdds": {"version": "2.9.1", "commit": commit,
                                                   "source": s.FASTDDS_SOURCE_SYSTEM, "prefix": "/usr"}}
    if created is not None:
        data["created_utc"] = created
    if platform is not None:
        data["platform"] = dict(platform)
    if latency_definition is not None:
        data["latency_definition"] = latency_definition
    return data


def tiny_summary(rows: dict[int, tuple[float, float, float]]) -> pd.DataFrame:
    """A valid summary from (Median, 99%, Max) per payload; the other columns follow from them."""
    payloads = list(rows)
    median = np.array([rows[p][0] for p in payloads], dtype=float)
    p99 = np.array([rows[p][1] for p in payloads], dtype=float)
    maximum = np.array([rows[p][2] for p in payloads], dtype=float)
    return pd.DataFrame({
        s.BYTES: payloads, s.SAMPLES: 100, s.MAX: maximum, s.MIN: median * 0.5, s.MEAN: median, s.MEDIAN: median,
        s.STDEV: median * 0.1, s.MEAN_JITTER: median * 0.05, s.MAX_JITTER: maximum * 0.9, s.P90: (median + p99) / 2,
        s.P99: p99, s.P9999: (p99 + maximum) / 2,
    }).loc[:, list(s.SUMMARY_COLUMNS)]


def scaled(summary: pd.DataFrame, factor: float) -> pd.DataFrame:
    """The same summary with every latency multiplied (a faster or slower copy of a real run)."""
    copy = summary.copy()
    for column in s.SUMMARY_COLUMNS[2:]:
        copy[column] = copy[column] * factor
    return copy


def write_experiment(folder, summaries: dict[str, pd.DataFrame], meta: dict | None):
    for sub, summary in summaries.items():
        files.write_csv(folder / s.summary_csv_name(sub), summary)
    if meta is not None:
        files.write_metadata(folder, meta)
    return folder


@pytest.fixture(scope="session")
def real_summary(fastdds_fixtures) -> pd.DataFrame:
    """The published Fast DDS 1.9.3 inter-process summary, as our summariser computes it."""
    return process.summarise(files.read_raw(fastdds_fixtures / "v193" / "measurements_interprocess.csv"))




# --- Fast-DDS-like sources, built for real with colcon --------------------------------------------
PACKAGE_XML = """<?xml version="1.0"?>
<package format="3">
  <name>{name}</name>
  <version>{version}</version>
  <description>test source</description>
  <maintainer email="m@example.org">m</maintainer>
  <license>Apache 2.0</license>
  <buildtool_depend>cmake</buildtool_depend>
  <export><build_type>cmake</build_type></export>
</package>
"""


def make_source(folder: Path, name: str = "fastrtps", cmake_version: str = "2.9.1",
                xml_version: str | None = "2.9.1", body: str = "int participant() { return 0; }\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\n"
        f'project({name} VERSION "{cmake_version}" LANGUAGES CXX)\n'
        f"add_library({name} SHARED participant.cpp)\ninstall(TARGETS {name})\n")
    if xml_version is not None:
        (folder / "package.xml").write_text(PACKAGE_XML.format(name=name, version=xml_version))
    (folder / "participant.cpp").write_text(body)
    return folder


BROKEN = "int participant() { return missing_symbol; }\n"


# --- a stand-in Fast DDS 2.9.1: the system's libfastrtps installed by a source of its own -----------
# with a CMake package that names that copy: the real harness builds against it and loads it from the
# workspace, as it does a real Fast DDS's (tests/fastdds/test_kept_installs.py, tests/bisect/
# test_bisect_end_to_end.py). `linked`: a C source of a small library of the stand-in that its
# package links into whatever uses Fast DDS, before libfastrtps (what a commit changes to be measured).
STAND_IN_FASTDDS_CMAKE = """cmake_minimum_required(VERSION 3.16)
project(fastrtps VERSION "2.9.1" LANGUAGES {languages})
include(CMakePackageConfigHelpers)
{linked_library}install(FILES "{library}" DESTINATION lib RENAME libfastrtps.so.2.9)
install(FILES note.txt DESTINATION share/fastrtps)
file(WRITE "${{CMAKE_CURRENT_BINARY_DIR}}/fastrtps-config.cmake" [=[
get_filename_component(_prefix "${{CMAKE_CURRENT_LIST_DIR}}/../../.." ABSOLUTE)
find_package(fastcdr REQUIRED)
find_package(foonathan_memory REQUIRED)
if(NOT TARGET fastrtps)
  add_library(fastrtps SHARED IMPORTED)
  set_target_properties(fastrtps PROPERTIES IMPORTED_LOCATION "${{_prefix}}/lib/libfastrtps.so.2.9"
    IMPORTED_SONAME libfastrtps.so.2.9 INTERFACE_LINK_LIBRARIES{interface_links})
endif()
]=])
write_basic_package_version_file("${{CMAKE_CURRENT_BINARY_DIR}}/fastrtps-config-version.cmake" VERSION 2.9.1
                                 COMPATIBILITY SameMajorVersion)
install(FILES "${{CMAKE_CURRENT_BINARY_DIR}}/fastrtps-config.cmake"
              "${{CMAKE_CURRENT_BINARY_DIR}}/fastrtps-config-version.cmake" DESTINATION share/fastrtps/cmake)
"""


def system_fastrtps() -> Path | None:
    """The system's libfastrtps.so.2.x (Debian's Fast DDS 2.9), what a stand-in installs as its own."""
    listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    match = re.search(r"libfastrtps\.so\.2\.\d+ \(.*?\) => (\S+)", listing)
    return Path(match.group(1)).resolve() if match else None


def stand_in_fastdds_cmake(library: Path, linked: str | None = None) -> str:
    """CMakeLists.txt of a stand-in Fast DDS 2.9.1 installing `library` (system_fastrtps) and note.txt;
    with `linked` (a C source file's name, e.g. send_delay.c), also the library standin_<its stem>
    built from it, which the package links (no-as-needed) into the harness before libfastrtps."""
    if linked is None:
        return STAND_IN_FASTDDS_CMAKE.format(languages="CXX", linked_library="", library=library,
                                             interface_links=' "fastcdr;foonathan_memory"')
    target = f"standin_{Path(linked).stem}"
    built = (f"add_library({target} SHARED {linked})\ntarget_link_libraries({target} PRIVATE dl)\n"
             f"install(TARGETS {target})\n")
    links = f'\n    "-Wl,--no-as-needed;${{_prefix}}/lib/lib{target}.so;-Wl,--as-needed;fastcdr;foonathan_memory"'
    return STAND_IN_FASTDDS_CMAKE.format(languages="C", linked_library=built, library=library, interface_links=links)


# --- a workspace whose latency tests look like Fast DDS' (the upstream engine) ---------------------
# The shapes of Fast DDS' profiles: a participant on the builtin transports, an intra-process-only
# one (their intraprocess_*.xml), one on a UDPv4 transport whitelisted to another address, a TCPv4
# one, and a shared-memory one.
PROFILES = """<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <library_settings><intraprocess_delivery>FULL</intraprocess_delivery></library_settings>
  <profiles>
    <transport_descriptors>
      <transport_descriptor><transport_id>udp</transport_id><type>UDPv4</type>
        <interfaceWhiteList><address>192.168.1.20</address></interfaceWhiteList></transport_descriptor>
      <transport_descriptor><transport_id>tcp</transport_id><type>TCPv4</type>
        <listening_ports><port>7400</port></listening_ports></transport_descriptor>
      <transport_descriptor><transport_id>shm</transport_id><type>SHM</type></transport_descriptor>
    </transport_descriptors>
    <participant profile_name="builtin_profile">
      <domainId>231</domainId>
      <rtps><builtin><discovery_config><leaseDuration><sec>DURATION_INFINITY</sec></leaseDuration>
        </discovery_config></builtin><name>builtin</name></rtps>
    </participant>
    <participant profile_name="intraprocess_only_profile">
      <rtps><builtin><discovery_config>
        <ignoreParticipantFlags>FILTER_DIFFERENT_PROCESS | FILTER_DIFFERENT_HOST</ignoreParticipantFlags>
      </discovery_config></builtin></rtps>
    </participant>
    <participant profile_name="udp_profile">
      <rtps><useBuiltinTransports>false</useBuiltinTransports>
        <userTransports><transport_id>udp</transport_id></userTransports>
        <builtin><metatrafficMulticastLocatorList><locator><udpv4><address>239.255.0.1</address></udpv4></locator>
        </metatrafficMulticastLocatorList></builtin></rtps>
    </participant>
    <participant profile_name="tcp_profile">
      <rtps><useBuiltinTransports>false</useBuiltinTransports>
        <userTransports><transport_id>tcp</transport_id></userTransports></rtps>
    </participant>
    <participant profile_name="shm_profile">
      <rtps><useBuiltinTransports>false</useBuiltinTransports>
        <userTransports><transport_id>shm</transport_id></userTransports></rtps>
    </participant>
    <publisher profile_name="pub_publisher_profile"><qos><reliability><kind>RELIABLE</kind></reliability></qos>
    </publisher>
  </profiles>
</dds>
"""

LATENCY_CMAKE = textwrap.dedent("""\
    cmake_minimum_required(VERSION 3.16)
    project(fastrtps VERSION 2.9.1 LANGUAGES NONE)
    enable_testing()
    set(LATENCY_DIR ${CMAKE_CURRENT_SOURCE_DIR}/test/performance/latency)
    foreach(name intraprocess_best_effort interprocess_best_effort_udp interprocess_reliable_udp)
      add_test(NAME performance.latency.${name} COMMAND python3 ${LATENCY_DIR}/latency_tests.py
               --xml_file ${LATENCY_DIR}/xml/${name}.xml --demands_file ${LATENCY_DIR}/payloads_demands.csv)
      set_property(TEST performance.latency.${name} APPEND PROPERTY ENVIRONMENT "LATENCY_TEST_BIN=/bin/true")
    endforeach()
    add_test(NAME performance.latency.interprocess_best_effort_udp.security COMMAND python3
             ${LATENCY_DIR}/latency_tests.py --xml_file ${LATENCY_DIR}/xml/interprocess_best_effort_udp.xml --security)
    set_property(TEST performance.latency.interprocess_best_effort_udp.security APPEND PROPERTY ENVIRONMENT
                 "CERTS_PATH=${CMAKE_CURRENT_SOURCE_DIR}/test/certs")
    add_test(NAME performance.latency.intraprocess_best_effort.data_sharing COMMAND python3
             ${LATENCY_DIR}/latency_tests.py --xml_file ${LATENCY_DIR}/xml/intraprocess_best_effort.xml)
    add_test(NAME unittest.other COMMAND true)
    install(CODE "message(STATUS nothing)")
    """)

# What their latency_tests.py does, in short: the CSV is named after the XML profile file, written
# into the working folder, with the publisher's command line printed first. FAIL_WITH makes a test fail.
LATENCY_SCRIPT = textwrap.dedent("""\
    import os, sys
    xml = sys.argv[sys.argv.index("--xml_file") + 1]
    suffix = "_".join(os.path.basename(xml).split(".")[0].split("_")[1:])
    kind = os.path.basename(xml).split("_")[0]
    name = f"./measurements_{kind}_{suffix}{'_security' if '--security' in sys.argv else ''}.csv"
    interprocess = os.path.basename(xml).startswith("interprocess")
    print(f"{'Publisher' if interprocess else 'Executable'} command: LatencyTest "
          f"{'publisher' if interprocess else 'both'} --export_raw_data {name}", flush=True)
    if "--security" in sys.argv and not os.path.isfile(os.path.join(os.environ["CERTS_PATH"], "mainpubkey.pem")):
        print("CERTS_PATH does NOT specify a directory", flush=True)
        sys.exit(1)
    if os.path.basename(xml) in os.environ.get("FAIL_WITH", ""):
        print("Error: publisher lost its subscriber", flush=True)
        sys.exit(3)
    if os.path.basename(xml) in os.environ.get("WRITE_NOTHING", ""):
        sys.exit(0)
    if os.path.isfile(os.environ.get("LATENCY_TEST_BIN", "")):  # their script starts it by role
        import subprocess
        roles = ["publisher", "subscriber"] if interprocess else ["both"]
        for role in roles:
            subprocess.run([os.environ["LATENCY_TEST_BIN"], role, "--domain", "3"], check=True)
    with open(name, "w") as csv:
        csv.write("Sample,Payload [Bytes],Latency [us]\\n")
        for i in range(4):
            csv.write(f"{i + 1},{16 if i < 2 else 16384},{1.23456 + i}\\n")
    """)


# Stands in for their LatencyTest binary: records the CPUs it may run on, per role, in its folder.
FAKE_LATENCY_TEST = textwrap.dedent("""\
    #!{python}
    import os, sys
    with open(os.path.join(os.path.dirname(sys.argv[0]), "affinity_" + sys.argv[1]), "w") as out:
        out.write(",".join(map(str, sorted(os.sched_getaffinity(0)))) + " " + " ".join(sys.argv[2:]))
    """)


LATENCY_NAMES = ("intraprocess_best_effort", "interprocess_best_effort_udp", "interprocess_reliable_udp")


def latency_cmake(scheme: str = "{name}", project: str = "fastrtps VERSION 2.9.1") -> str:
    """LATENCY_CMAKE with its tests (and their XML files) named by `scheme`, as Fast DDS names them:
    "{name}" (2.9), "latency_{name}_profile" (2.10 to 3.3.0) or "{name}_profile" (3.3.1 on)."""
    text = LATENCY_CMAKE.replace("project(fastrtps VERSION 2.9.1", f"project({project}")
    return re.sub(r"\b(" + "|".join(LATENCY_NAMES) + r")\b", lambda m: scheme.format(name=m.group(1)), text)


def make_workspace(root: Path, scheme: str = "{name}", package: str = "fastrtps", version: str = "2.9.1") -> Path:
    """A workspace with a built `fastrtps` (or `package`) whose latency tests look like Fast DDS' ones,
    named by `scheme` (latency_cmake), and the record a finished `perfgate build` leaves."""
    source = root / "src" / "fastdds"
    latency = source / "test" / "performance" / "latency"
    (latency / "xml").mkdir(parents=True)
    (source / "CMakeLists.txt").write_text(latency_cmake(scheme, f"{package} VERSION {version}"))
    (latency / "latency_tests.py").write_text(LATENCY_SCRIPT)
    (latency / "payloads_demands.csv").write_text("16;16384;\n")
    for name in LATENCY_NAMES:
        (latency / "xml" / f"{scheme.format(name=name)}.xml").write_text(PROFILES)
    # the latency tests' CTestTestfile.cmake sits in the build folder of their CMakeLists.txt
    build_dir = root / "build" / package
    done = subprocess.run(["colcon", "--log-base", str(root / "log"), "build", *colcon.colcon_paths(root)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    work_dir = build_dir / "test" / "performance" / "latency"
    work_dir.mkdir(parents=True)
    latency_test = work_dir / upstream.LATENCY_TEST
    latency_test.write_text(FAKE_LATENCY_TEST.format(python=sys.executable))
    latency_test.chmod(0o755)
    (build_dir / "CTestTestfile.cmake").replace(work_dir / "CTestTestfile.cmake")
    (build_dir / "CTestTestfile.cmake").write_text('subdirs("test/performance/latency")\n')
    harness = root / "install" / "bin" / "perfgate-latency"
    harness.parent.mkdir(parents=True, exist_ok=True)
    harness.write_text("")
    record = {"status": s.BUILD_OK, "workspace": str(root), "prefix": str(root / "install"), "harness": str(harness),
              "fastdds": {"package": package, "version": version, "commit": "abc123", "kind": "git"},
              "cmake_args": colcon.cmake_arguments(ccache=False)}
    build_record.record_path(root).write_text(json.dumps(record))
    return work_dir


# --- processes a stopped build may leave -----------------------------------------------------------
def processes_working_in(folder: Path) -> dict[int, str]:
    """Live (not zombie) processes whose working folder is inside `folder`, with their command lines:
    cmake, make, colcon and the compilers of a build there."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "cwd")).is_relative_to(folder) and \
                        (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
    return found


def terminal_signals() -> None:
    """In the child before exec: SIGINT and SIGTERM as a terminal's process has them. A test runner
    started as a background job has SIGINT ignored, which every child inherits and Python keeps: the
    build then never sees the SIGINT and finishes, exit 0: the SIGINT variant's exit 0 in 1 run of 7,
    reproduced by starting the build with SIGINT ignored (it built to the end, exit 0, 42 s later)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
