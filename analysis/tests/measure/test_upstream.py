"""The upstream engine: loopback-only copies of Fast DDS' XML profiles, their test list as CMake writes
it, pointing the tests at the copies, ctest's results, the CSV collection and the contract's names,
and a whole `perfgate run --engine upstream` through real colcon and ctest on a small workspace whose
latency tests write CSVs as Fast DDS' latency_tests.py does.

Fast DDS' real LatencyTest runs in the slow test (test_fastdds_source_build.py).
"""
from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from conftest import PROFILES, TESTS_DIR, make_workspace
from perfgate import files
from perfgate import schema as s
from perfgate.errors import InputError
from perfgate.fastdds import record as build_record
from perfgate.measure import upstream_certificates as certificates
from perfgate.measure import upstream_commands as commands
from perfgate.measure import upstream_names as names
from perfgate.measure import upstream_profiles as profiles
from perfgate.measure import upstream_results as results

NS = "{http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles}"

def participant(root: ET.Element, name: str) -> ET.Element:
    return next(p for p in root.iter(f"{NS}participant") if p.get("profile_name") == name)


def addresses(element: ET.Element, path: str) -> list[str]:
    return [a.text for a in element.findall(f"{path}/{NS}locator/*/{NS}address")]


def test_loopback_copies_use_only_127_0_0_1_and_no_multicast():
    text = profiles.loopback_profiles(PROFILES)
    assert "ns0:" not in text and 'xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"' in text
    root = ET.fromstring(text)
    descriptors = {d.findtext(f"{NS}transport_id"): d for d in root.iter(f"{NS}transport_descriptor")}
    builtin = participant(root, "builtin_profile").find(f"{NS}rtps")
    for transport_id in ("udp", "tcp", profiles.LOOPBACK_TRANSPORT_ID):
        whitelist = descriptors[transport_id].findall(f"{NS}interfaceWhiteList/{NS}address")
        assert [a.text for a in whitelist] == ["127.0.0.1"], transport_id
    assert descriptors["tcp"].findtext(f"{NS}listening_ports/{NS}port") == "7400"
    assert descriptors[profiles.LOOPBACK_SHM_ID].findtext(f"{NS}type") == "SHM"

    # the builtin participant: loopback UDP and shared memory instead of every interface
    assert builtin.findtext(f"{NS}useBuiltinTransports") == "false"
    assert [t.text for t in builtin.findall(f"{NS}userTransports/{NS}transport_id")] == [
        profiles.LOOPBACK_TRANSPORT_ID, profiles.LOOPBACK_SHM_ID]
    assert builtin.findtext(f"{NS}builtin/{NS}discovery_config/{NS}leaseDuration/{NS}sec") == "DURATION_INFINITY"
    for rtps in (builtin, participant(root, "udp_profile").find(f"{NS}rtps")):
        assert addresses(rtps, f"{NS}builtin/{NS}metatrafficUnicastLocatorList") == ["127.0.0.1"]
        assert addresses(rtps, f"{NS}builtin/{NS}initialPeersList") == ["127.0.0.1"]
        assert rtps.find(f"{NS}builtin/{NS}metatrafficMulticastLocatorList") is None
        assert not [p for p in rtps.iter(f"{NS}port")]  # Fast DDS fills the well-known ports
    # intra-process only: Fast DDS drops its unicast locators and discovers over multicast, which a
    # loopback transport with TTL 0 keeps on 127.0.0.1 (as its builtin transport does there)
    assert profiles.is_intraprocess_only(root, participant(root, "intraprocess_only_profile").find(f"{NS}rtps"))
    assert not profiles.is_intraprocess_only(root, builtin)
    intra = participant(root, "intraprocess_only_profile").find(f"{NS}rtps")
    assert [t.text for t in intra.findall(f"{NS}userTransports/{NS}transport_id")] == [profiles.LOOPBACK_HOST_ONLY_ID]
    host_only = descriptors[profiles.LOOPBACK_HOST_ONLY_ID]
    assert host_only.findtext(f"{NS}TTL") == "0"
    assert [a.text for a in host_only.findall(f"{NS}interfaceWhiteList/{NS}address")] == ["127.0.0.1"]
    assert intra.find(f"{NS}builtin/{NS}metatrafficUnicastLocatorList") is None
    assert intra.find(f"{NS}builtin/{NS}initialPeersList") is None
    # TCP and shared memory keep their own transports; no UDP discovery added to them
    for name, transport_id in (("tcp_profile", "tcp"), ("shm_profile", "shm")):
        rtps = participant(root, name).find(f"{NS}rtps")
        assert [t.text for t in rtps.findall(f"{NS}userTransports/{NS}transport_id")] == [transport_id]
        assert rtps.find(f"{NS}builtin") is None
    assert root.findtext(f"{NS}profiles/{NS}publisher/{NS}qos/{NS}reliability/{NS}kind") == "RELIABLE"
    assert root.findtext(f"{NS}library_settings/{NS}intraprocess_delivery") == "FULL"
    # a copy of a copy is the copy
    assert profiles.loopback_profiles(text) == text


def test_malformed_profiles_are_bad_input():
    with pytest.raises(InputError, match="malformed XML profiles"):
        profiles.loopback_profiles("<dds><profiles>")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("workspace")
    return root, make_workspace(root)


@pytest.mark.compiles
def test_reads_their_test_list_from_the_cmake_test_file(workspace):
    root, work_dir = workspace
    tests = commands.latency_tests((work_dir / "CTestTestfile.cmake").read_text())
    assert sorted(tests) == ["performance.latency.interprocess_best_effort_udp",
                             "performance.latency.interprocess_best_effort_udp.security",
                             "performance.latency.interprocess_reliable_udp",
                             "performance.latency.intraprocess_best_effort",
                             "performance.latency.intraprocess_best_effort.data_sharing"]
    latency = root / "src" / "fastdds" / "test" / "performance" / "latency"
    command = tests["performance.latency.interprocess_reliable_udp"]
    assert (command.script, command.xml) == (str(latency / "latency_tests.py"),
                                             str(latency / "xml" / "interprocess_reliable_udp.xml"))


@pytest.mark.compiles
def test_points_the_tests_at_the_copies_and_the_run_certificates(workspace, tmp_path):
    root, work_dir = workspace
    text = (work_dir / "CTestTestfile.cmake").read_text()
    copies, certs = tmp_path / "copies", tmp_path / "certs"
    latency_test = work_dir / names.LATENCY_TEST
    pointed = commands.point_tests_at(text, copies, certs, latency_test)
    tests = commands.latency_tests(pointed)
    assert {Path(t.xml).parent for t in tests.values()} == {copies}
    assert {Path(t.xml).name for t in tests.values()} == {"intraprocess_best_effort.xml",
                                                          "interprocess_best_effort_udp.xml",
                                                          "interprocess_reliable_udp.xml"}
    assert f"CERTS_PATH={certs}" in pointed and "test/certs" not in pointed
    assert commands.point_tests_at(pointed, copies, certs, latency_test) == pointed
    assert "LATENCY_TEST_BIN=/bin/true" in text and "LATENCY_TEST_BIN=/bin/true" not in pointed
    assert pointed.count(f"LATENCY_TEST_BIN={latency_test}") == text.count("LATENCY_TEST_BIN=")
    # a launcher of an earlier pinned run is replaced by LatencyTest itself
    launcher = tmp_path / commands.PINNED_LAUNCHER
    assert commands.point_tests_at(commands.point_tests_at(text, copies, certs, launcher), copies, certs,
                                   latency_test) == pointed
    latency = root / "src" / "fastdds" / "test" / "performance" / "latency"
    for name, command in tests.items():  # the source's XML is still found behind a copy
        assert commands.original_xml(command, copies) == latency / "xml" / Path(command.xml).name


def test_csv_names_and_contract_names():
    assert names.expected_csv_name("performance.latency.interprocess_best_effort_udp.security") == \
        "measurements_interprocess_best_effort_udp_security.csv"
    assert results.exported_csv_name("x --export_raw_data ./measurements_intraprocess_reliable.csv --domain 3",
                                      "performance.latency.whatever") == "measurements_intraprocess_reliable.csv"
    assert names.SUBEXPERIMENT_TESTS["interprocess_best_effort"] == "performance.latency.interprocess_best_effort_udp"
    assert names.SUBEXPERIMENT_TESTS["interprocess_reliable_tcp_security"] == \
        "performance.latency.interprocess_reliable_tcp.security"
    assert set(names.SUBEXPERIMENT_TESTS) <= set(s.KNOWN_SUBEXPERIMENTS)
    assert set(s.DEFAULT_SUBEXPERIMENT_NAMES) <= set(names.SUBEXPERIMENT_TESTS)


def test_selection_of_their_tests():
    defined = {names.SUBEXPERIMENT_TESTS[n] for n in ("intraprocess_best_effort", "interprocess_reliable",
                                                         "interprocess_best_effort_shm")}
    assert names.select_tests(None, defined) == (
        ["intraprocess_best_effort", "interprocess_reliable", "interprocess_best_effort_shm"],
        [n for n in s.DEFAULT_SUBEXPERIMENT_NAMES if n not in ("intraprocess_best_effort", "interprocess_reliable")])
    assert names.select_tests(["interprocess_reliable"], defined) == (["interprocess_reliable"], [])
    with pytest.raises(InputError, match="defines no performance.latency.interprocess_best_effort_tcp"):
        names.select_tests(["interprocess_best_effort_tcp"], defined)
    with pytest.raises(InputError, match="no Fast DDS latency test measures floor_udp"):
        names.select_tests(["floor_udp"], defined)
    assert names.test_regex(["interprocess_best_effort"]) == r"^(performance\.latency\.interprocess_best_effort_udp)$"


# --- each Fast DDS version's names for them: CTestTestfile.cmake as CMake writes it -------------------
# Excerpts of test/performance/latency/CTestTestfile.cmake of real builds (SECURITY=ON), one per naming
# scheme: Debian's 2.9.1, 2.14.6 (as 2.10 to 3.3.0) and 3.6.2 (as 3.3.1 on and master); see
# data/ctest/README.md for how each was made.
CTEST_FIXTURES = TESTS_DIR / "data" / "ctest"
THEIR_TESTS = {
    "2.9.1": {"intraprocess_best_effort": "intraprocess_best_effort",
              "intraprocess_reliable": "intraprocess_reliable",
              "interprocess_best_effort": "interprocess_best_effort_udp",
              "interprocess_best_effort_security": "interprocess_best_effort_udp.security",
              "interprocess_reliable": "interprocess_reliable_udp",
              "interprocess_reliable_security": "interprocess_reliable_udp.security",
              "interprocess_best_effort_shm": "interprocess_best_effort_shm",
              "interprocess_reliable_shm": "interprocess_reliable_shm",
              "interprocess_best_effort_zero_copy": "interprocess_best_effort_shm.data_loans_and_sharing",
              "interprocess_reliable_zero_copy": "interprocess_reliable_shm.data_loans_and_sharing"},
    # no variant at all: their CMake's `MATCHES "^interprocess"` never matches latency_...
    "2.14.6": {"intraprocess_best_effort": "latency_intraprocess_best_effort_profile",
               "intraprocess_reliable": "latency_intraprocess_reliable_profile",
               "interprocess_best_effort": "latency_interprocess_best_effort_udp_profile",
               "interprocess_reliable": "latency_interprocess_reliable_udp_profile",
               "interprocess_best_effort_shm": "latency_interprocess_best_effort_shm_profile",
               "interprocess_reliable_shm": "latency_interprocess_reliable_shm_profile"},
    "3.6.2": {"intraprocess_best_effort": "intraprocess_best_effort_profile",
              "intraprocess_reliable": "intraprocess_reliable_profile",
              "interprocess_best_effort": "interprocess_best_effort_udp_profile",
              "interprocess_best_effort_security": "interprocess_best_effort_udp_profile.security",
              "interprocess_reliable": "interprocess_reliable_udp_profile",
              "interprocess_reliable_security": "interprocess_reliable_udp_profile.security",
              "interprocess_best_effort_shm": "interprocess_best_effort_shm_profile",
              "interprocess_reliable_shm": "interprocess_reliable_shm_profile",
              "interprocess_best_effort_zero_copy": "interprocess_best_effort_shm_profile.data_loans_and_sharing",
              "interprocess_reliable_zero_copy": "interprocess_reliable_shm_profile.data_loans_and_sharing"},
}
# What each defines beside those: variants perfgate has no sub-experiment for, listed, never run.
# (<name> is the scheme's spelling of the test: <name> in 2.9, <name>_profile in 3.3.1 on.)
NOT_MAPPED = ["intraprocess_best_effort{p}.data_sharing", "intraprocess_best_effort{p}.data_loans",
              "intraprocess_best_effort{p}.data_loans_and_sharing", "intraprocess_reliable{p}.data_sharing",
              "intraprocess_reliable{p}.data_loans", "intraprocess_reliable{p}.data_loans_and_sharing",
              "interprocess_best_effort_udp{p}.data_loans", "interprocess_best_effort_udp{p}.data_loans.security",
              "interprocess_reliable_udp{p}.data_loans", "interprocess_reliable_udp{p}.data_loans.security",
              "interprocess_best_effort_shm{p}.security", "interprocess_best_effort_shm{p}.data_sharing",
              "interprocess_best_effort_shm{p}.data_loans", "interprocess_best_effort_shm{p}.data_loans.security",
              "interprocess_reliable_shm{p}.security", "interprocess_reliable_shm{p}.data_sharing",
              "interprocess_reliable_shm{p}.data_loans", "interprocess_reliable_shm{p}.data_loans.security"]
NOT_MAPPED_BY_VERSION = {"2.9.1": [n.format(p="") for n in NOT_MAPPED], "2.14.6": [],
                         "3.6.2": [n.format(p="_profile") for n in NOT_MAPPED]}


@pytest.mark.parametrize("version", sorted(THEIR_TESTS))
def test_finds_each_versions_latency_tests_by_their_real_names(version):
    text = (CTEST_FIXTURES / f"fastdds-{version}.CTestTestfile.cmake").read_text()
    tests = commands.latency_tests(text)
    expected = {sub: names.TEST_PREFIX + name for sub, name in THEIR_TESTS[version].items()}
    assert names.subexperiment_tests(tests) == expected
    assert names.unmapped_tests(tests) == sorted(names.TEST_PREFIX + n for n in NOT_MAPPED_BY_VERSION[version])
    assert len(expected) + len(names.unmapped_tests(tests)) == len(tests)  # every test mapped or listed
    subs, lacking = names.select_tests(None, set(tests))
    # zero copy runs only when named, as with the harness
    assert sorted(subs) == sorted(sub for sub in expected if not sub.endswith("_zero_copy"))
    assert lacking == [sub for sub in s.DEFAULT_SUBEXPERIMENT_NAMES if sub not in expected]
    assert names.select_tests(list(expected), set(tests)) == (list(expected), [])
    # ctest selects exactly those, and each still finds its XML profile and script
    regex = re.compile(names.test_regex(list(expected), expected))
    assert sorted(name for name in tests if regex.match(name)) == sorted(expected.values())
    for test in expected.values():
        command = tests[test]
        assert command.script.endswith("/test/performance/latency/latency_tests.py")
        assert Path(command.xml).name == test[len(names.TEST_PREFIX):].split(".")[0] + ".xml"


def test_names_of_every_scheme_map_to_one_key():
    for name in ("interprocess_reliable_udp.security", "latency_interprocess_reliable_udp_profile.security",
                 "interprocess_reliable_udp_profile.security"):
        assert names.test_key(names.TEST_PREFIX + name) == "interprocess_reliable_udp.security"
    assert names.test_key("performance.latency.intraprocess_best_effort_profile.data_loans_and_sharing") == \
        "intraprocess_best_effort.data_loans_and_sharing"
    assert names.test_key("performance.throughput.interprocess_best_effort_udp") is None
    # shared memory with data sharing and loans is perfgate's zero copy, in every scheme that has it
    for name in ("interprocess_reliable_shm.data_loans_and_sharing",
                 "interprocess_reliable_shm_profile.data_loans_and_sharing"):
        assert names.subexperiment_tests({names.TEST_PREFIX + name}) == {
            "interprocess_reliable_zero_copy": names.TEST_PREFIX + name}
    assert s.KNOWN_SUBEXPERIMENTS["interprocess_reliable_zero_copy"].transport == "shm"
    # variants without a perfgate name are not measured, and listed
    other = {"performance.latency.interprocess_best_effort_shm_profile.security",
             "performance.latency.intraprocess_best_effort_profile.data_sharing",
             "performance.latency.interprocess_reliable_udp_profile.data_loans_and_sharing"}
    assert names.subexperiment_tests(other) == {}
    assert names.unmapped_tests(other | {"performance.throughput.x"}) == sorted(other)


def test_how_many_processes_their_script_started():
    assert results.latency_test_processes("Publisher command: LatencyTest publisher\nSubscriber command: x") == 2
    assert results.latency_test_processes("Executable command: LatencyTest both --samples 10000") == 1
    assert results.latency_test_processes("") is None


@pytest.fixture(scope="module", params=[("{name}_profile", "fastdds", "3.6.2"),
                                        ("latency_{name}_profile", "fastrtps", "2.14.6")],
                ids=["3.x", "2.14"])
def schemed_workspace(request, tmp_path_factory) -> tuple[Path, str]:
    scheme, package, version = request.param
    root = tmp_path_factory.mktemp("schemed")
    make_workspace(root, scheme, package, version)
    return root, scheme


@pytest.mark.compiles
def test_run_upstream_finds_the_tests_of_later_naming_schemes(schemed_workspace, tmp_path):
    root, scheme = schemed_workspace
    done = perfgate("run", "--engine", "upstream", "--workspace", str(root), "--output", str(tmp_path / "e"))
    assert done.returncode == s.EXIT_OK, done.stderr
    assert sorted(files.raw_files(tmp_path / "e")) == ["interprocess_best_effort", "interprocess_best_effort_security",
                                                        "interprocess_reliable", "intraprocess_best_effort"]
    entries = files.read_metadata(tmp_path / "e")["subexperiments"]
    assert entries["interprocess_reliable"]["test"] == \
        names.TEST_PREFIX + scheme.format(name="interprocess_reliable_udp")
    assert entries["interprocess_best_effort_security"]["test"] == \
        names.TEST_PREFIX + scheme.format(name="interprocess_best_effort_udp") + ".security"
    assert entries["intraprocess_best_effort"]["latency_test_processes"] == 1
    # 2.10 to 3.3.0 run their "interprocess" tests in one process: said in the metadata and on stderr
    one_process = scheme.startswith("latency_")
    assert entries["interprocess_reliable"]["latency_test_processes"] == (1 if one_process else 2)
    assert ("ran publisher and subscriber in one process" in done.stderr) == one_process


@pytest.mark.compiles
def test_run_upstream_names_what_ctest_defines_when_no_name_is_known(tmp_path):
    root = tmp_path / "ws"
    work_dir = root / "build" / "fastdds" / "test" / "performance" / "latency"
    work_dir.mkdir(parents=True)
    (work_dir / "CTestTestfile.cmake").write_text(
        'add_test([=[performance.latency.p2p_best_effort_v4]=] "/usr/bin/python3" "/s/latency_tests.py")\n'
        'add_test([=[performance.latency.p2p_reliable_v4]=] "/usr/bin/python3" "/s/latency_tests.py")\n')
    harness = root / "install" / "bin" / "perfgate-latency"
    harness.parent.mkdir(parents=True)
    harness.write_text("")
    build_record.record_path(root).write_text(json.dumps({
        "status": s.BUILD_OK, "workspace": str(root), "prefix": str(root / "install"), "harness": str(harness),
        "fastdds": {"package": "fastdds", "version": "3.9.0", "commit": "abc123", "kind": "git"}}))
    done = perfgate("run", "--engine", "upstream", "--workspace", str(root), "--output", str(tmp_path / "e"))
    assert done.returncode == s.EXIT_INCOMPLETE
    assert "defines no latency test the upstream engine knows" in done.stderr
    assert "ctest defines: performance.latency.p2p_best_effort_v4, performance.latency.p2p_reliable_v4" in done.stderr


# --- collecting one test's result ----------------------------------------------------------------------
def write_csv(path: Path, rows: list[str]) -> None:
    path.write_text("Sample,Payload [Bytes],Latency [us]\n" + "".join(r + "\n" for r in rows))


def test_collects_a_passed_tests_csv(tmp_path):
    started = time.time() - 1
    write_csv(tmp_path / "measurements_interprocess_reliable_udp.csv", ["1,16,3.25", "2,16,3.5", "3,64,4.0", "4,64,4.5"])
    result = results.collect("interprocess_reliable", results.TestOutcome(True, "", 2.5), tmp_path, started)
    assert (result.outcome, result.error, result.counts) == (s.OUTCOME_OK, None, {16: 2, 64: 2})
    assert result.frame[s.LATENCY].tolist() == [3.25, 3.5, 4.0, 4.5]


def test_a_failed_test_or_a_missing_file_is_an_error(tmp_path):
    started = time.time() - 1
    failed = results.collect("intraprocess_reliable", results.TestOutcome(False, "a\nError: peer lost\n", 1.0),
                              tmp_path, started)
    assert failed.outcome == s.OUTCOME_INCOMPLETE
    assert failed.error == "performance.latency.intraprocess_reliable failed: a | Error: peer lost"
    silent = results.collect("intraprocess_reliable", results.TestOutcome(True, "", 1.0), tmp_path, started)
    assert silent.error == (f"performance.latency.intraprocess_reliable passed but wrote no "
                            f"measurements_intraprocess_reliable.csv in {tmp_path}")
    not_run = results.collect("intraprocess_reliable", None, tmp_path, started)
    assert not_run.outcome == s.OUTCOME_FAILED_TO_START


def test_an_old_or_malformed_csv_is_not_collected(tmp_path):
    old = tmp_path / "measurements_intraprocess_reliable.csv"
    write_csv(old, ["1,16,3.0", "2,16,3.0"])
    os.utime(old, (time.time() - 3600,) * 2)
    stale = results.collect("intraprocess_reliable", results.TestOutcome(True, "", 1.0), tmp_path, time.time() - 1)
    assert stale.outcome == s.OUTCOME_INCOMPLETE and "wrote no" in stale.error
    write_csv(old, ["1,16,-3.0", "2,16,3.0"])
    malformed = results.collect("intraprocess_reliable", results.TestOutcome(True, "", 1.0), tmp_path,
                                 time.time() - 1)
    assert malformed.outcome == s.OUTCOME_INCOMPLETE
    assert "wrote a malformed CSV" in malformed.error and "is negative" in malformed.error


def test_certificates_for_latency_test(tmp_path):
    folder = certificates.generate_certificates(tmp_path / "certs")
    ca = x509.load_pem_x509_certificate((folder / "maincacert.pem").read_bytes())
    for who in ("pub", "sub"):
        cert = x509.load_pem_x509_certificate((folder / f"main{who}cert.pem").read_bytes())
        assert cert.issuer == ca.subject
        ca.public_key().verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))
        assert stat.S_IMODE((folder / f"main{who}key.pem").stat().st_mode) == 0o600


def test_access_control_documents_for_latency_test_of_3_6(tmp_path):
    # Fast DDS 3.6.2's LatencyTest turns on Access-Permissions with these two files from CERTS_PATH
    folder = certificates.generate_certificates(tmp_path / "certs")
    for name in (certificates.GOVERNANCE_FILE, certificates.PERMISSIONS_FILE):
        verified = subprocess.run(["openssl", "smime", "-verify", "-text", "-in", str(folder / name), "-CAfile",
                                   str(folder / "maincacert.pem")], capture_output=True, text=True)
        assert verified.returncode == 0, verified.stderr  # signed by the identity CA, as Fast DDS checks
        document = ET.fromstring(verified.stdout)
        ranges = [(r.findtext("min"), r.findtext("max")) for r in document.iter("id_range")]
        assert ranges and set(ranges) == {("0", "230")}  # latency_tests.py's domain: its pid modulo 230
    governance = ET.fromstring(certificates.performance_governance())
    assert [e.text for e in governance.iter("topic_expression")] == ["LatencyTest_*"]
    assert {e.tag: e.text for e in governance.iter() if e.tag.endswith("protection_kind")} == {
        "discovery_protection_kind": "ENCRYPT", "liveliness_protection_kind": "ENCRYPT",
        "rtps_protection_kind": "ENCRYPT", "metadata_protection_kind": "ENCRYPT", "data_protection_kind": "ENCRYPT"}
    permissions = (folder / certificates.PERMISSIONS_FILE).read_text()
    for who in ("pub", "sub"):
        subject = x509.load_pem_x509_certificate((folder / f"main{who}cert.pem").read_bytes()).subject
        assert subject.rfc4514_string() in permissions


# --- the whole engine, through colcon test and ctest ----------------------------------------------------
def perfgate(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfgate.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **env})


@pytest.mark.compiles
def test_run_upstream_collects_their_csvs_with_contract_names(workspace, tmp_path):
    root, work_dir = workspace
    output = tmp_path / "experiment"
    done = perfgate("run", "--engine", "upstream", "--workspace", str(root), "--output", str(output),
                    "--subexperiments", "intraprocess_best_effort,interprocess_best_effort,interprocess_reliable",
                    "--label", "upstream-1", FAIL_WITH="interprocess_reliable_udp.xml")
    assert done.returncode == s.EXIT_INCOMPLETE, done.stderr
    assert sorted(p.name for p in output.iterdir()) == [
        "measurements_interprocess_best_effort.csv", "measurements_intraprocess_best_effort.csv", s.METADATA_FILE]
    text = (output / "measurements_interprocess_best_effort.csv").read_text()
    assert text == ("Sample,Payload [Bytes],Latency [us]\n1,16,1.235\n2,16,2.235\n3,16384,3.235\n4,16384,4.235\n")
    metadata = files.read_metadata(output)
    assert metadata["latency_definition"] == s.HALF_ROUND_TRIP
    assert metadata["label"] == "upstream-1"
    assert metadata["payloads"] == [16, 16384] and metadata["samples"] == 2
    assert metadata["fastdds"]["commit"] == "abc123" and metadata["fastdds"]["version"] == "2.9.1"
    assert metadata["harness"]["name"] == "LatencyTest"
    entries = metadata["subexperiments"]
    assert entries["interprocess_best_effort"]["outcome"] == s.OUTCOME_OK
    assert entries["interprocess_best_effort"]["measured_samples"] == {"16": 2, "16384": 2}
    assert entries["interprocess_reliable"]["outcome"] == s.OUTCOME_INCOMPLETE
    assert "performance.latency.interprocess_reliable_udp failed: " in entries["interprocess_reliable"]["error"]
    assert "publisher lost its subscriber" in entries["interprocess_reliable"]["error"]
    assert "perfgate run: error: interprocess_reliable: performance.latency.interprocess_reliable_udp failed" in \
        done.stderr
    # ctest ran them with the loopback-only copies
    copies = root / "perfgate" / "upstream" / "xml"
    for command in commands.latency_tests((work_dir / "CTestTestfile.cmake").read_text()).values():
        assert Path(command.xml).parent == copies
    assert "<address>127.0.0.1</address>" in (copies / "intraprocess_best_effort.xml").read_text()
    assert "192.168.1.20" not in (copies / "intraprocess_best_effort.xml").read_text()


@pytest.mark.compiles
def test_run_upstream_reports_a_test_that_wrote_nothing(workspace, tmp_path):
    root, _ = workspace
    output = tmp_path / "experiment"
    done = perfgate("run", "--engine", "upstream", "--workspace", str(root), "--output", str(output),
                    "--subexperiments", "intraprocess_best_effort", WRITE_NOTHING="intraprocess_best_effort.xml")
    assert done.returncode == s.EXIT_INCOMPLETE
    entry = files.read_metadata(output)["subexperiments"]["intraprocess_best_effort"]
    assert entry["error"].startswith("performance.latency.intraprocess_best_effort passed but wrote no "
                                     "measurements_intraprocess_best_effort.csv")
    assert not (output / "measurements_intraprocess_best_effort.csv").exists()


@pytest.mark.compiles
def test_run_upstream_by_default_runs_every_test_with_a_contract_name(workspace, tmp_path):
    root, _ = workspace
    done = perfgate("run", "--engine", "upstream", "--workspace", str(root), "--output", str(tmp_path / "e"))
    assert done.returncode == s.EXIT_OK, done.stderr
    # the security test found the certificates generated for the run under CERTS_PATH
    assert sorted(files.raw_files(tmp_path / "e")) == ["interprocess_best_effort", "interprocess_best_effort_security",
                                                        "interprocess_reliable", "intraprocess_best_effort"]
    assert "note: this Fast DDS has no latency test for intraprocess_reliable" in done.stderr
    # a variant perfgate has no name for is listed, not silently left out
    assert ("perfgate run: note: not run, no sub-experiment measures what they measure: "
            "performance.latency.intraprocess_best_effort.data_sharing\n") in done.stderr


@pytest.mark.compiles
def test_run_upstream_pins_latency_test_by_role(workspace, tmp_path):
    root, work_dir = workspace
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs to tell the publisher's from the subscriber's")
    publisher, subscriber = cpus[-1], cpus[0]  # reversed, so that no default order can pass
    for stale in work_dir.glob("affinity_*"):
        stale.unlink()
    done = perfgate("run", "--engine", "upstream", "--workspace", str(root), "--output", str(tmp_path / "pinned"),
                    "--subexperiments", "intraprocess_best_effort,interprocess_best_effort",
                    "--pin-cpus", f"{publisher},{subscriber}")
    assert done.returncode == s.EXIT_OK, done.stderr
    recorded = {p.name: p.read_text() for p in work_dir.glob("affinity_*")}
    assert recorded == {"affinity_publisher": f"{publisher} --domain 3", "affinity_subscriber": f"{subscriber} --domain 3",
                        "affinity_both": f"{','.join(map(str, sorted({publisher, subscriber})))} --domain 3"}
    assert files.read_metadata(tmp_path / "pinned")["cpu_pinning"] == {
        "pinned": True, "publisher_cpu": publisher, "subscriber_cpu": subscriber,
        "requested": f"{publisher},{subscriber}"}
    # the next run, not pinned, starts LatencyTest itself again, on every CPU
    done = perfgate("run", "--engine", "upstream", "--workspace", str(root), "--output", str(tmp_path / "free"),
                    "--subexperiments", "interprocess_best_effort", "--pin-cpus", "none")
    assert done.returncode == s.EXIT_OK, done.stderr
    assert (work_dir / "affinity_publisher").read_text() == f"{','.join(map(str, cpus))} --domain 3"
    assert files.read_metadata(tmp_path / "free")["cpu_pinning"]["pinned"] is False


@pytest.mark.parametrize("args, message", [
    (["--samples", "500"], "--samples and --payloads do not apply"),
    (["--payloads", "16,32"], "--samples and --payloads do not apply"),
    (["--warmup", "5"], "--warmup: only for --engine harness"),
    (["--pin-cpus", "0,4096"], "--pin-cpus: CPU 4096 is not available to this process"),
    (["--subexperiments", "interprocess_best_effort_tcp"], "defines no performance.latency.interprocess_best_effort_tcp"),
])
@pytest.mark.compiles
def test_run_upstream_usage_errors(workspace, tmp_path, args, message):
    root, _ = workspace
    done = perfgate("run", "--engine", "upstream", "--workspace", str(root), "--output", str(tmp_path / "e"), *args)
    assert done.returncode == s.EXIT_USAGE
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "e").exists()


def test_the_clock_overhead_latencytest_subtracts_is_read_from_its_real_output(fastdds_fixtures):
    # Fast DDS 1.9.3's LatencyTest console output, as published beside its measurements
    output = (fastdds_fixtures / "v193" / "publisher_interprocess.out").read_text(errors="replace")
    assert results.clock_overhead_us(output) == 0.0191508
    assert results.clock_overhead_us("no such line") is None
