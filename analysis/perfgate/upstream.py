"""The upstream engine: Fast DDS' own latency tests (test/performance/latency), run as the original
specification ran them, collected into an experiment folder with the contract's names.

    perfgate run --engine upstream --workspace WS --output DIR [--subexperiments a,b] [--label L]
                 [--pin-cpus PUB,SUB]

1. The workspace must hold a finished `perfgate build` (performance tests on).
2. Their XML profiles use every network interface (builtin transports) and multicast discovery. The
   engine writes loopback-only copies (every UDPv4/TCPv4 transport limited to 127.0.0.1, unicast
   discovery to 127.0.0.1, no multicast) into WS/perfgate/upstream/xml/, under the same file names,
   since their script names the CSV after the XML file.
3. ctest reads each test's command line from the build's CTestTestfile.cmake, so that is where the
   tests are pointed at the copies (and, for security tests, at certificates generated for this run
   instead of test certificates from the source tree). With --pin-cpus PUB,SUB their LatencyTest is
   started through a launcher that pins the publisher to PUB, the subscriber to SUB and `both` to
   the two, as `perfgate run` pins its harness. CMake writes the file anew when it reconfigures;
   the engine rewrites it before every run.
4. `colcon test --packages-select <fastrtps|fastdds> --ctest-args -R <their test names>`; each test
   writes `measurements_<name>.csv` (half the round trip, in microseconds) into its build folder.
5. Each CSV is validated and written as `measurements_<sub>.csv` (3 decimals); metadata.json says
   `latency_definition: half_round_trip`. A test that failed or wrote no file is an error (exit 3).
"""
from __future__ import annotations

import os
import re
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import __version__
from . import cpu_latency
from . import files
from . import platform_info
from . import scratch
from . import schema as s
from .clock import load_average, utc_now
from .errors import IncompleteError, InputError
from .fastdds_build.colcon import colcon_base, colcon_paths, run_colcon
from .fastdds_build.logs import printable
from .fastdds_build.record import fastdds_metadata, harness_paths, read_record
from .fastdds_build.workspace import STATE_DIR, workspace_lock
from .measure.environment import CHILD_ENV, scrub_environment
from .measure.options import check_output_folder, cpu_pinning_metadata, machine_pin_cpus

TEST_PREFIX = "performance.latency."
# Fast DDS' latency tests (test/performance/latency/CMakeLists.txt) and the contract's name for each.
# Their data-sharing and data-loan variants have no name in the contract and are not run.
TEST_SUBEXPERIMENTS = {
    "intraprocess_best_effort": "intraprocess_best_effort",
    "intraprocess_reliable": "intraprocess_reliable",
    "interprocess_best_effort_udp": "interprocess_best_effort",
    "interprocess_best_effort_udp.security": "interprocess_best_effort_security",
    "interprocess_best_effort_tcp": "interprocess_best_effort_tcp",
    "interprocess_best_effort_tcp.security": "interprocess_best_effort_tcp_security",
    "interprocess_reliable_udp": "interprocess_reliable",
    "interprocess_reliable_udp.security": "interprocess_reliable_security",
    "interprocess_reliable_tcp": "interprocess_reliable_tcp",
    "interprocess_reliable_tcp.security": "interprocess_reliable_tcp_security",
    "interprocess_best_effort_shm": "interprocess_best_effort_shm",
    "interprocess_reliable_shm": "interprocess_reliable_shm",
}
# Their names as Fast DDS 2.9 (Debian's 2.9.1) writes them; other versions name them otherwise (below).
SUBEXPERIMENT_TESTS = {sub: TEST_PREFIX + test for test, sub in TEST_SUBEXPERIMENTS.items()}
# Fast DDS has named the tests of its LATENCY_TEST_LIST three ways: <name> (2.9), latency_<name>_profile
# (2.10 to 3.3.0) and <name>_profile (3.3.1 on, master), each maybe followed by a variant (.security,
# .data_sharing, .data_loans, ...). 2.10 to 3.3.0 define no variant at all, and run their
# "interprocess" tests in one process: their CMake's `MATCHES "^interprocess"`, which adds
# --interprocess and the .security tests, never matches a name that starts with latency_.
_NAME_SCHEMES = (re.compile(r"latency_(\w+)_profile"), re.compile(r"(\w+)_profile"), re.compile(r"(\w+)"))
LATENCY_TEST = "LatencyTest"
LATENCY_TEST_SAMPLES = 10000  # latency_tests.py's default; their CMake passes no other
# LatencyTest's file names for --certs (main_LatencyTest.cpp): one CA, a publisher and a subscriber.
CERT_FILES = {"maincacert.pem": ("ca", None), "mainpubcert.pem": ("cert", "pub"), "mainpubkey.pem": ("key", "pub"),
              "mainsubcert.pem": ("cert", "sub"), "mainsubkey.pem": ("key", "sub")}
LOOPBACK = "127.0.0.1"
LOOPBACK_TRANSPORT_ID = "perfgate_loopback_udpv4"
LOOPBACK_SHM_ID = "perfgate_shm"
LOOPBACK_HOST_ONLY_ID = "perfgate_loopback_udpv4_ttl0"
PROFILES_NS = "http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"
_EXPORT = re.compile(r"--export_raw_data\s+(\S+\.csv)")


# --- loopback-only XML profiles (pure) ----------------------------------------------------------
def _tag(element: ET.Element) -> str:
    return element.tag.split("}")[-1]


def _child(parent: ET.Element, name: str, ns: str) -> ET.Element:
    found = next((c for c in parent if _tag(c) == name), None)
    return found if found is not None else ET.SubElement(parent, f"{ns}{name}")


def _remove_children(parent: ET.Element, name: str) -> None:
    for child in [c for c in parent if _tag(c) == name]:
        parent.remove(child)


def _locator_list(parent: ET.Element, name: str, ns: str, kind: str = "udpv4") -> None:
    """parent/<name> = exactly one locator, 127.0.0.1 without port (Fast DDS fills the well-known ports)."""
    _remove_children(parent, name)
    locators = ET.SubElement(parent, f"{ns}{name}")
    address = ET.SubElement(ET.SubElement(ET.SubElement(locators, f"{ns}locator"), f"{ns}{kind}"), f"{ns}address")
    address.text = LOOPBACK


def _loopback_descriptor(ns: str, transport_id: str, kind: str, host_only: bool = False) -> ET.Element:
    descriptor = ET.Element(f"{ns}transport_descriptor")
    ET.SubElement(descriptor, f"{ns}transport_id").text = transport_id
    ET.SubElement(descriptor, f"{ns}type").text = kind
    if host_only:  # multicast that never leaves the host, as Fast DDS' builtin transport does here
        ET.SubElement(descriptor, f"{ns}TTL").text = "0"
    if kind == "UDPv4":
        ET.SubElement(ET.SubElement(descriptor, f"{ns}interfaceWhiteList"), f"{ns}address").text = LOOPBACK
    return descriptor


def is_intraprocess_only(root: ET.Element, rtps: ET.Element) -> bool:
    """Whether Fast DDS makes this participant intra-process only (RTPSParticipantImpl: intra-process
    delivery FULL, the default, and ignoreParticipantFlags exactly FILTER_DIFFERENT_HOST |
    FILTER_DIFFERENT_PROCESS). Such a participant drops every unicast locator and discovers its
    peers in the process over multicast alone."""
    delivery = next((e.text for e in root.iter() if _tag(e) == "intraprocess_delivery"), None) or "FULL"
    flags = next((e.text for e in rtps.iter() if _tag(e) == "ignoreParticipantFlags"), None) or ""
    return delivery.strip() == "FULL" and \
        set(re.findall(r"FILTER_[A-Z_]+", flags)) == {"FILTER_DIFFERENT_HOST", "FILTER_DIFFERENT_PROCESS"}


def loopback_profiles(text: str) -> str:
    """Fast DDS XML profiles limited to loopback: the same QoS, no network interface but 127.0.0.1.

    - every UDPv4/TCPv4 transport descriptor: interfaceWhiteList = 127.0.0.1 only;
    - a participant on the builtin transports (every interface, multicast) gets a loopback UDPv4
      transport and a shared-memory one instead (the builtin pair, minus the network); an
      intra-process-only one (see is_intraprocess_only) a loopback UDPv4 transport with TTL 0, as
      its builtin one, whose multicast discovery then stays on 127.0.0.1;
    - any other participant with a UDPv4 transport discovers over unicast 127.0.0.1 (metatraffic
      unicast locator and initial peers, ports left to Fast DDS), with no multicast locator at all.
    """
    try:
        root = ET.fromstring(text)
    except ET.ParseError as error:
        raise InputError(f"malformed XML profiles: {error}") from None
    ns = root.tag[: root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    profiles = next((e for e in root.iter() if _tag(e) == "profiles"), None)
    if profiles is None:
        raise InputError("XML profiles without <profiles>")
    descriptors = {}
    for descriptor in (e for e in root.iter() if _tag(e) == "transport_descriptor"):
        kind = (descriptor.findtext(f"{ns}type") or "").strip()
        descriptors[(descriptor.findtext(f"{ns}transport_id") or "").strip()] = kind
        if kind in ("UDPv4", "TCPv4"):
            _remove_children(descriptor, "interfaceWhiteList")
            ET.SubElement(ET.SubElement(descriptor, f"{ns}interfaceWhiteList"), f"{ns}address").text = LOOPBACK
    own = {LOOPBACK_TRANSPORT_ID: ("UDPv4", False), LOOPBACK_SHM_ID: ("SHM", False),
           LOOPBACK_HOST_ONLY_ID: ("UDPv4", True)}

    def use_own(rtps: ET.Element, transport_ids: list[str]) -> list[str]:
        for transport_id in transport_ids:
            if transport_id not in descriptors:
                holder = next((e for e in profiles if _tag(e) == "transport_descriptors"), None)
                if holder is None:
                    holder = ET.Element(f"{ns}transport_descriptors")
                    profiles.insert(0, holder)
                holder.append(_loopback_descriptor(ns, transport_id, *own[transport_id]))
                descriptors[transport_id] = own[transport_id][0]
        for name in ("userTransports", "useBuiltinTransports"):
            _remove_children(rtps, name)
        user_transports = ET.SubElement(rtps, f"{ns}userTransports")
        for transport_id in transport_ids:
            ET.SubElement(user_transports, f"{ns}transport_id").text = transport_id
        ET.SubElement(rtps, f"{ns}useBuiltinTransports").text = "false"
        return transport_ids

    for participant in (e for e in profiles if _tag(e) == "participant"):
        rtps = _child(participant, "rtps", ns)
        intraprocess_only = is_intraprocess_only(root, rtps)
        builtin_flag = (rtps.findtext(f"{ns}useBuiltinTransports") or "true").strip().lower()
        users = [(t.text or "").strip() for u in rtps if _tag(u) == "userTransports" for t in u]
        if builtin_flag != "false" or not users:
            users = use_own(rtps, [LOOPBACK_HOST_ONLY_ID] if intraprocess_only
                            else [LOOPBACK_TRANSPORT_ID, LOOPBACK_SHM_ID])
        if not intraprocess_only and any(descriptors.get(u) == "UDPv4" for u in users):
            builtin = _child(rtps, "builtin", ns)
            for name in ("metatrafficMulticastLocatorList", "metatrafficUnicastLocatorList", "initialPeersList"):
                _remove_children(builtin, name)
            _locator_list(builtin, "metatrafficUnicastLocatorList", ns)
            _locator_list(builtin, "initialPeersList", ns)
            _remove_children(rtps, "defaultMulticastLocatorList")
    ET.register_namespace("", ns.strip("{}"))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# --- their test list (CTestTestfile.cmake) ------------------------------------------------------
_ARGUMENT = re.compile(r'"((?:[^"\\]|\\.)*)"|\[(=*)\[(.*?)\]\2\]|([^\s()"]+)', re.DOTALL)


def cmake_arguments(text: str) -> list[str]:
    """The arguments of one CMake command's parentheses (quoted, bracket or bare)."""
    values = []
    for match in _ARGUMENT.finditer(text):
        quoted, _, bracket, bare = match.groups()
        values.append(re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bracket if bracket is not None else bare)
    return values


@dataclass(frozen=True)
class LatencyTestCommand:
    name: str  # performance.latency.<...>
    script: str  # their latency_tests.py
    xml: str | None  # --xml_file


def latency_tests(ctest_file_text: str) -> dict[str, LatencyTestCommand]:
    tests = {}
    for match in re.finditer(r"^add_test\((.*)\)\s*$", ctest_file_text, re.MULTILINE):
        args = cmake_arguments(match.group(1))
        if not args or not args[0].startswith(TEST_PREFIX):
            continue
        xml = args[args.index("--xml_file") + 1] if "--xml_file" in args[:-1] else None
        script = next((a for a in args if a.endswith(".py")), "")
        tests[args[0]] = LatencyTestCommand(args[0], script, xml)
    return tests


def test_key(test: str) -> str | None:
    """`<name>[.<variant>]` (TEST_SUBEXPERIMENTS' key) of a test named in any of the schemes, or None."""
    if not test.startswith(TEST_PREFIX):
        return None
    base, dot, variant = test[len(TEST_PREFIX):].partition(".")
    for scheme in _NAME_SCHEMES:
        match = scheme.fullmatch(base)
        if match:
            return match.group(1) + dot + variant
    return None


def subexperiment_tests(defined) -> dict[str, str]:
    """sub-experiment -> the test measuring it, among the test names a build defines (any scheme)."""
    found: dict[str, str] = {}
    for test in sorted(defined):
        sub = TEST_SUBEXPERIMENTS.get(test_key(test) or "")
        if sub is not None:
            found.setdefault(sub, test)
    return found


def original_xml(command: LatencyTestCommand, copies_dir: Path) -> Path | None:
    """The source tree's XML of a test, also when the test file already points at our copy."""
    if command.xml is None:
        return None
    xml = Path(command.xml)
    return Path(command.script).parent / "xml" / xml.name if xml.parent == copies_dir else xml


def point_tests_at(ctest_file_text: str, copies_dir: Path, certs_dir: Path | None, latency_test: Path) -> str:
    """The test file with every --xml_file in copies_dir (same file name), CERTS_PATH at certs_dir and
    LATENCY_TEST_BIN (the program latency_tests.py starts) at latency_test."""
    text = re.sub(r'("--xml_file"\s+")[^"]*/([^"/]+\.xml")',
                  lambda m: f"{m.group(1)}{copies_dir.as_posix()}/{m.group(2)}", ctest_file_text)
    if certs_dir is not None:
        text = re.sub(r"CERTS_PATH=[^;\"]*", lambda m: f"CERTS_PATH={certs_dir.as_posix()}", text)
    return re.sub(r"LATENCY_TEST_BIN=[^;\"]*", lambda m: f"LATENCY_TEST_BIN={latency_test.as_posix()}", text)


# --- CPU pinning: LatencyTest started through a launcher that pins it by its role ---------------
PINNED_LAUNCHER = "LatencyTest-pinned"


def pinned_launcher(latency_test: Path, pin: tuple[int, int], python: str) -> str:
    """A script that pins itself, then becomes LatencyTest. latency_tests.py starts every LatencyTest
    as `$LATENCY_TEST_BIN <publisher|subscriber|both> ...`: the publisher gets pin[0], the subscriber
    pin[1] and `both` (intra-process) the two, as perfgate's harness is pinned by `perfgate run`."""
    publisher, subscriber = pin
    program = repr(latency_test.as_posix())
    return (f"#!{python} -S\n"
            "# Written by perfgate.upstream for one run: LatencyTest pinned to CPUs by its role.\n"
            "import os, sys\n"
            f"CPUS = {{'publisher': {{{publisher}}}, 'subscriber': {{{subscriber}}}}}\n"
            "role = sys.argv[1] if len(sys.argv) > 1 else ''\n"
            f"os.sched_setaffinity(0, CPUS.get(role, {{{publisher}, {subscriber}}}))\n"
            f"os.execv({program}, [{program}] + sys.argv[1:])\n")


def write_pinned_launcher(folder: Path, latency_test: Path, pin: tuple[int, int]) -> Path:
    launcher = folder / PINNED_LAUNCHER
    files.write_text(launcher, pinned_launcher(latency_test, pin, sys.executable))
    launcher.chmod(0o755)
    return launcher


def expected_csv_name(test: str) -> str:
    """latency_tests.py's file name: `measurements_` + the test's name after `performance.latency.`."""
    return f"{s.RAW_PREFIX}{test[len(TEST_PREFIX):].replace('.', '_')}.csv"


def exported_csv_name(output: str, test: str) -> str:
    """The CSV a test's publisher was told to write (its command line is in the output), else the rule."""
    match = _EXPORT.search(output or "")
    return Path(match.group(1)).name if match else expected_csv_name(test)


# --- ctest's results ----------------------------------------------------------------------------
# LatencyTest records (end - start) / 2 - overhead, the overhead being one clock read that it measures
# and prints as "Overhead 0.0235 ns" (the value is in microseconds, whatever the label says).
_CLOCK_OVERHEAD = re.compile(r"^Overhead ([0-9.eE+-]+) ns", re.MULTILINE)


def clock_overhead_us(output: str) -> float | None:
    """What LatencyTest subtracted from every half round trip, from its printed output."""
    match = _CLOCK_OVERHEAD.search(output or "")
    return float(match.group(1)) if match else None


@dataclass(frozen=True)
class TestOutcome:
    passed: bool
    output: str
    duration_s: float


def read_ctest_junit(path: Path) -> dict[str, TestOutcome]:
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as error:
        raise IncompleteError(f"ctest wrote no readable results: {error}", path) from None
    outcomes = {}
    for case in root.iter("testcase"):
        output = "".join(o.text or "" for o in case.iter("system-out"))
        outcomes[case.get("name", "")] = TestOutcome(case.get("status") == "run" and case.find("failure") is None,
                                                     output, float(case.get("time") or 0))
    return outcomes


# --- selection ----------------------------------------------------------------------------------
def select_tests(requested: list[str] | None, defined: set[str]) -> tuple[list[str], list[str]]:
    """(sub-experiments to run, contract sub-experiments this Fast DDS has no test for).

    Requested names must exist in their test list (InputError); by default every sub-experiment of
    the contract and the extras that their tests cover."""
    measured_by = subexperiment_tests(defined)
    available = [sub for sub in SUBEXPERIMENT_TESTS if sub in measured_by]
    if requested:
        unknown = [n for n in requested if n not in SUBEXPERIMENT_TESTS]
        if unknown:
            raise InputError(f"no Fast DDS latency test measures {', '.join(unknown)} "
                             f"(the upstream engine knows: {', '.join(SUBEXPERIMENT_TESTS)})")
        undefined = [n for n in requested if n not in available]
        if undefined:
            raise InputError(f"this Fast DDS defines no {', '.join(SUBEXPERIMENT_TESTS[n] for n in undefined)} "
                             "(nor by its later names latency_<name>_profile, <name>_profile; see its "
                             "test/performance/latency/CMakeLists.txt)")
        return list(dict.fromkeys(requested)), []
    ordered = [sub for sub in s.DEFAULT_SUBEXPERIMENT_NAMES + tuple(SUBEXPERIMENT_TESTS) if sub in available]
    lacking = [sub for sub in s.DEFAULT_SUBEXPERIMENT_NAMES if sub not in available]
    return list(dict.fromkeys(ordered)), lacking


def test_regex(subs: list[str], tests: dict[str, str] | None = None) -> str:
    """ctest's -R for these sub-experiments; tests: sub-experiment -> test name (default: 2.9's names)."""
    tests = tests or SUBEXPERIMENT_TESTS
    return "^(" + "|".join(re.escape(tests[sub]) for sub in subs) + ")$"


# --- collecting one test's CSV ------------------------------------------------------------------
@dataclass
class Collected:
    sub: str
    test: str
    outcome: str
    error: str | None
    frame: pd.DataFrame | None = None
    csv: str | None = None
    duration_s: float = 0.0
    counts: dict[int, int] = field(default_factory=dict)
    clock_overhead_us: float | None = None
    processes: int | None = None


def latency_test_processes(output: str) -> int | None:
    """How many LatencyTest processes latency_tests.py started, by what it printed: "Publisher
    command:" and "Subscriber command:" (two, --interprocess), or "Executable command:" (one, `both`)."""
    if "Publisher command:" in (output or ""):
        return 2
    return 1 if "Executable command:" in (output or "") else None


def collect(sub: str, outcome: TestOutcome | None, work_dir: Path, started: float, test: str | None = None) -> Collected:
    """One test's result: its CSV validated, or why there is none. test: the build's name for the
    sub-experiment's test (default: 2.9's)."""
    test = test or SUBEXPERIMENT_TESTS[sub]
    if outcome is None:
        return Collected(sub, test, s.OUTCOME_FAILED_TO_START, f"ctest did not run {test}")
    csv = work_dir / exported_csv_name(outcome.output, test)
    problem = None if outcome.passed else f"{test} failed: {_last_lines(outcome.output)}"
    frame, counts = None, {}
    if not csv.is_file() or csv.stat().st_mtime < started:
        problem = problem or f"{test} passed but wrote no {csv.name} in {work_dir}"
    else:
        try:
            frame = files.read_raw(csv)
            counts = {int(p): int(n) for p, n in frame.groupby(s.PAYLOAD, sort=False).size().items()}
        except InputError as error:
            problem = problem or f"{test} wrote a malformed CSV: {error}"
    outcome_name = s.OUTCOME_OK if problem is None else s.OUTCOME_INCOMPLETE
    return Collected(sub, test, outcome_name, problem, frame, str(csv), outcome.duration_s, counts,
                     clock_overhead_us(outcome.output), latency_test_processes(outcome.output))


# ctest's JUnit stands for an escape character it cannot write: Fast DDS' coloured log lines
_CTEST_ESCAPE = re.compile(r"\[NON-XML-CHAR-0x1B\](?:\[[0-9;]*m)?")


def _last_lines(output: str, lines: int = 5) -> str:
    text = printable(_CTEST_ESCAPE.sub("", output or ""))
    kept = [line for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept) if kept else "no output"


# --- security: certificates for this run, named as LatencyTest wants them -----------------------
# LatencyTest of Fast DDS 3.6.2 and master also turns on Access-Permissions, with these two
# documents from its CERTS_PATH, signed by the identity CA (their test/certs/*_performance_tests.xml).
GOVERNANCE_FILE = "governance_performance_tests.smime"
PERMISSIONS_FILE = "permissions_performance_tests.smime"
LATENCY_TEST_DOMAINS = (0, 230)  # latency_tests.py picks its pid modulo 230


def performance_governance(domains: tuple[int, int] = LATENCY_TEST_DOMAINS) -> str:
    """The protections of upstream's governance_performance_tests.xml for LatencyTest's topics:
    discovery, liveliness and rtps ENCRYPT; LatencyTest_* with discovery protection, read and write
    access control, metadata and data ENCRYPT, no liveliness protection."""
    from . import security

    return security.governance_document(f"<id_range><min>{domains[0]}</min><max>{domains[1]}</max></id_range>",
                                        topic_expression="LatencyTest_*", liveliness_protection=False)


def performance_permissions(subjects: dict[str, str], not_before: str, not_after: str,
                            domains: tuple[int, int] = LATENCY_TEST_DOMAINS) -> str:
    """One grant per identity (name -> subject): publish and subscribe LatencyTest_*, else DENY."""
    from xml.sax.saxutils import escape

    grants = "".join(f"""
    <grant name="perfgate_{escape(name)}">
      <subject_name>{escape(subject)}</subject_name>
      <validity><not_before>{not_before}</not_before><not_after>{not_after}</not_after></validity>
      <allow_rule>
        <domains><id_range><min>{domains[0]}</min><max>{domains[1]}</max></id_range></domains>
        <publish><topics><topic>LatencyTest_*</topic></topics></publish>
        <subscribe><topics><topic>LatencyTest_*</topic></topics></subscribe>
      </allow_rule>
      <default>DENY</default>
    </grant>""" for name, subject in subjects.items())
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
     xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_permissions.xsd">
  <permissions>{grants}
  </permissions>
</dds>
"""


def generate_certificates(folder: Path) -> Path:
    """CA, publisher and subscriber identities (perfgate.security's), under LatencyTest's file names,
    and the signed governance and permissions LatencyTest asks for where it uses access control."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    from . import security

    paths = security.generate_security_files(folder, 0, ["pub", "sub"])
    sources = {"ca": lambda _: paths["ca_certificate"],
               "cert": lambda who: paths["participants"][who]["certificate"],
               "key": lambda who: paths["participants"][who]["private_key"]}
    for name, (kind, who) in CERT_FILES.items():
        os.link(sources[kind](who), folder / name)
    ca_cert = x509.load_pem_x509_certificate(paths["ca_certificate"].read_bytes())
    ca_key = serialization.load_pem_private_key((folder / security.CA_KEY).read_bytes(), password=None)
    certs = {who: x509.load_pem_x509_certificate(paths["participants"][who]["certificate"].read_bytes())
             for who in ("pub", "sub")}
    window = [f"{moment:%Y-%m-%dT%H:%M:%S}" for moment in (certs["pub"].not_valid_before_utc,
                                                          certs["pub"].not_valid_after_utc)]
    documents = {GOVERNANCE_FILE: performance_governance(),
                 PERMISSIONS_FILE: performance_permissions(
                     {who: cert.subject.rfc4514_string() for who, cert in certs.items()}, *window)}
    for name, document in documents.items():
        files.write_text(folder / name, security._sign(document.encode(), ca_cert, ca_key).decode())
    return folder


# --- metadata -----------------------------------------------------------------------------------
def initial_metadata(label: str, record: dict, subs: list[str], platform: dict, copies_dir: Path) -> dict:
    return {
        s.META_LABEL: label,
        s.META_CREATED: utc_now(),
        s.META_FASTDDS: fastdds_metadata(record),
        s.META_HARNESS: {
            "name": LATENCY_TEST,
            "engine": s.ENGINE_UPSTREAM,
            "version": (record.get("fastdds") or {}).get("version"),
            "command": "colcon test --packages-select <package> --ctest-args -R <tests>",
            "xml_profiles": f"loopback-only copies in {copies_dir}",
            "security": "PKI-DH and AES-GCM-GMAC (LatencyTest's settings), and where LatencyTest asks for it "
                        "(3.6.2, master) Access-Permissions with governance and permissions as upstream's "
                        "*_performance_tests documents; certificates and documents generated for the run",
            "domain": "chosen by latency_tests.py (its pid modulo 230)",
        },
        s.META_LATENCY_DEFINITION: s.HALF_ROUND_TRIP,
        s.META_SAMPLES: LATENCY_TEST_SAMPLES,
        s.META_PAYLOADS: [],
        "requested_subexperiments": subs,
        s.META_SUBEXPERIMENTS: {},
        s.META_PLATFORM: platform,
        "load_average": {"before": load_average(), "after": None},
        "perfgate_version": __version__,
        "finished_utc": None,
    }


def metadata_entry(result: Collected) -> dict:
    return {
        s.META_OUTCOME: result.outcome,
        "error": result.error,
        "test": result.test,
        "csv": result.csv,
        "duration_s": round(result.duration_s, 3),
        "measured_samples": {str(p): n for p, n in result.counts.items()},
        # each latency of this CSV is (end - start) / 2 minus this: add it back for the half round trip
        "clock_overhead_subtracted_us": result.clock_overhead_us,
        # 1 for their "interprocess" tests of 2.10 to 3.3.0, which start LatencyTest as `both`
        "latency_test_processes": result.processes,
    }


# --- the command --------------------------------------------------------------------------------
def check_options(workspace, samples, payloads, harness_options: dict) -> None:
    """Their tests run as they are: options of perfgate's harness cannot change them (InputError)."""
    if workspace is None:
        raise InputError("--engine upstream needs --workspace: a workspace made by `perfgate build`")
    if samples not in (None, s.DEFAULT_SAMPLES) or (payloads is not None and list(payloads) != list(s.PAYLOADS)):
        raise InputError(f"the upstream engine runs Fast DDS' tests as they are ({LATENCY_TEST_SAMPLES} samples, "
                         "payloads from their payloads_demands.csv): --samples and --payloads do not apply")
    given = [name for name, value in harness_options.items() if value is not None]
    if given:
        raise InputError(f"{', '.join(given)}: only for --engine {s.ENGINE_HARNESS}")


def command_upstream(*, output, workspace, subexperiments=None, label=None, samples=None, payloads=None,
                     pin_cpus=None, harness_options: dict | None = None, cpu_latency_request=None) -> int:
    check_options(workspace, samples, payloads, harness_options or {})
    pin = machine_pin_cpus(pin_cpus)
    awake_request = cpu_latency.parse_request(cpu_latency_request)
    output, workspace = Path(output), Path(workspace).resolve()
    check_output_folder(output)
    record = read_record(workspace)
    harness_paths(record, workspace)  # IncompleteError for a failed build
    package = record["fastdds"]["package"]
    work_dir = workspace / "build" / package / "test" / "performance" / "latency"
    ctest_file = work_dir / "CTestTestfile.cmake"
    if not ctest_file.is_file():
        raise IncompleteError("the build has no performance tests (PERFORMANCE_TESTS=ON)", ctest_file)
    tests = latency_tests(ctest_file.read_text())
    measured_by = subexperiment_tests(tests)
    subs, lacking = select_tests(subexperiments, set(tests))
    if not subs:
        raise IncompleteError("this Fast DDS defines no latency test the upstream engine knows by any of its "
                              "names (<name>, latency_<name>_profile, <name>_profile); ctest defines: "
                              f"{', '.join(sorted(tests)) or f'no {TEST_PREFIX}* test'}", ctest_file)
    if lacking:
        print(f"perfgate run: note: this Fast DDS has no latency test for {', '.join(lacking)}", file=sys.stderr)
    environment, ignored = scrub_environment(os.environ)
    for name in ignored:
        print(f"perfgate run: warning: ignoring {name} (Fast DDS configuration from the environment)", file=sys.stderr)

    copies_dir = workspace / STATE_DIR / "upstream" / "xml"
    output.mkdir(parents=True, exist_ok=True)
    metadata = initial_metadata(label or output.name, record, subs, platform_info.this_machine(), copies_dir)
    metadata["environment"] = {"ignored": ignored}
    metadata["cpu_pinning"] = cpu_pinning_metadata(pin, pin_cpus)
    files.write_metadata(output, metadata)
    # the certificates' private keys in RAM (perfgate.scratch), never on disk, even if perfgate is killed
    with workspace_lock(workspace), scratch.scratch_folder("upstream") as private:
        write_loopback_copies(tests, copies_dir)
        certs = generate_certificates(private / "certs") if any("security" in sub for sub in subs) else None
        latency_test = work_dir / LATENCY_TEST
        if pin is not None:
            # beside the XML copies, not in /tmp, which may be mounted noexec
            latency_test = write_pinned_launcher(copies_dir.parent, latency_test, pin)
        files.write_text(ctest_file, point_tests_at(ctest_file.read_text(), copies_dir, certs, latency_test))
        for stale in work_dir.glob(f"{s.RAW_PREFIX}*.csv"):
            stale.unlink()  # a previous run's: never collected as this run's
        started = time.time() - 1
        with cpu_latency.hold_awake(awake_request) as awake:
            metadata["cpu_latency"] = awake
            cpu_latency.warn("perfgate run", awake)
            outcomes = run_ctest(workspace, package, subs, environment, measured_by)
    results = [collect(sub, outcomes.get(measured_by[sub]), work_dir, started, measured_by[sub]) for sub in subs]
    for result in results:
        if result.sub.startswith("interprocess") and result.processes == 1:
            print(f"perfgate run: note: {result.test} ran publisher and subscriber in one process (its CMake "
                  "gives this name no --interprocess)", file=sys.stderr)
    return write_experiment(output, metadata, results)


def write_loopback_copies(tests: dict[str, LatencyTestCommand], copies_dir: Path) -> None:
    for command in tests.values():
        original = original_xml(command, copies_dir)
        if original is None:
            continue
        if not original.is_file():
            raise IncompleteError(f"{command.name}: its XML profiles are missing", original)
        try:
            files.write_text(copies_dir / original.name, loopback_profiles(original.read_text()))
        except InputError as error:
            raise InputError(error.message, original) from None


def run_ctest(workspace: Path, package: str, subs: list[str], environment: dict[str, str],
              tests: dict[str, str] | None = None) -> dict[str, TestOutcome]:
    junit = workspace / STATE_DIR / "upstream" / "ctest-junit.xml"
    junit.unlink(missing_ok=True)
    command = colcon_base(workspace) + ["test"] + colcon_paths(workspace) + [
        "--packages-select", package, "--event-handlers", "console_direct-",
        "--ctest-args", "-R", test_regex(subs, tests), "--output-junit", str(junit)]
    print(f"perfgate run: {' '.join(command)}", flush=True)
    code, _ = run_colcon(command, {**environment, **CHILD_ENV}, workspace / STATE_DIR / "colcon-test.log")
    if not junit.is_file():
        raise IncompleteError(f"colcon test ended (exit {code}) without ctest results; see its log",
                              workspace / STATE_DIR / "colcon-test.log")
    return read_ctest_junit(junit)


def write_experiment(output: Path, metadata: dict, results: list[Collected]) -> int:
    failures = []
    payloads: list[int] = []
    for result in results:
        if result.frame is not None:
            files.write_csv(output / s.raw_csv_name(result.sub), result.frame)
            payloads += [p for p in result.counts if p not in payloads]
        metadata[s.META_SUBEXPERIMENTS][result.sub] = metadata_entry(result)
        median = (f", median {result.frame[s.LATENCY].median():.3f} us (half round trip)"
                  if result.frame is not None else "")
        print(f"{result.sub} ({result.test}): {result.outcome}{median}", flush=True)
        if result.outcome != s.OUTCOME_OK:
            failures.append(result.sub)
            print(f"perfgate run: error: {result.sub}: {result.error}", file=sys.stderr, flush=True)
    metadata[s.META_PAYLOADS] = payloads
    counts = {n for result in results for n in result.counts.values()}
    if len(counts) == 1:  # their tests' sample count, as measured
        metadata[s.META_SAMPLES] = counts.pop()
    metadata["load_average"]["after"] = load_average()
    metadata["finished_utc"] = utc_now()
    files.write_metadata(output, metadata)
    if failures:
        print(f"perfgate run: {len(failures)} of {len(results)} Fast DDS latency tests did not deliver: "
              f"{', '.join(failures)}", file=sys.stderr)
        return s.EXIT_INCOMPLETE
    return s.EXIT_OK
