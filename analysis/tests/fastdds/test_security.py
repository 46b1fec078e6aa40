"""perfgate.fastdds.security: the DDS Security files of a run, checked with openssl and with real Fast DDS."""
from __future__ import annotations

import stat
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from perfgate.fastdds import security
from perfgate.measure import upstream_certificates as certificates
from perfgate.errors import InputError

NAMES = ["publisher", "subscriber"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict:
    return security.generate_security_files(tmp_path_factory.mktemp("sec") / "private", 42, NAMES)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def openssl(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(["openssl", *arguments], capture_output=True, text=True)


def test_files_exist_with_private_modes(generated):
    folder = generated["folder"]
    assert mode(folder) == 0o700
    expected = {"ca_cert.pem", "ca_key.pem", "governance.xml", "governance.p7s"}
    for name in NAMES:
        expected |= {f"{name}_cert.pem", f"{name}_key.pem", f"permissions_{name}.xml", f"permissions_{name}.p7s"}
    assert {p.name for p in folder.iterdir()} == expected
    for key in folder.glob("*_key.pem"):
        assert mode(key) == 0o600, key
    assert generated["participants"]["subscriber"]["private_key"] == folder / "subscriber_key.pem"
    assert generated["governance"] == folder / "governance.p7s"


def test_identities_are_prime256v1_and_chain_to_the_ca(generated):
    folder = generated["folder"]
    ca = x509.load_pem_x509_certificate((folder / "ca_cert.pem").read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for name in NAMES:
        cert_path = folder / f"{name}_cert.pem"
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey)
        assert cert.public_key().curve.name == "secp256r1"
        assert cert.issuer == ca.subject
        result = openssl("verify", "-CAfile", str(folder / "ca_cert.pem"), str(cert_path))
        assert result.returncode == 0 and "OK" in result.stdout, result.stderr
        key_result = openssl("pkey", "-in", str(folder / f"{name}_key.pem"), "-pubout")
        cert_key = openssl("x509", "-in", str(cert_path), "-pubkey", "-noout")
        assert key_result.stdout == cert_key.stdout, "the private key belongs to the certificate"


def test_signed_documents_verify_against_the_ca(generated, tmp_path):
    folder = generated["folder"]
    for document in ["governance"] + [f"permissions_{name}" for name in NAMES]:
        content = tmp_path / f"{document}.out"
        result = openssl("smime", "-verify", "-in", str(folder / f"{document}.p7s"),
                         "-CAfile", str(folder / "ca_cert.pem"), "-text", "-out", str(content))
        assert result.returncode == 0, result.stderr
        assert content.read_text() == (folder / f"{document}.xml").read_text()


def test_a_tampered_signature_does_not_verify(generated, tmp_path):
    folder = generated["folder"]
    tampered = tmp_path / "governance.p7s"
    tampered.write_text((folder / "governance.p7s").read_text().replace("ENCRYPT", "NONE", 1))
    result = openssl("smime", "-verify", "-in", str(tampered), "-CAfile", str(folder / "ca_cert.pem"),
                     "-out", str(tmp_path / "out"))
    assert result.returncode != 0


def test_governance_encrypts_everything_and_controls_joining(generated):
    root = ET.parse(generated["folder"] / "governance.xml").getroot()
    rule = root.find("domain_access_rules/domain_rule")
    assert rule.findtext("domains/id") == "42"
    assert rule.findtext("enable_join_access_control") == "true"
    assert rule.findtext("allow_unauthenticated_participants") == "false"
    assert rule.findtext("rtps_protection_kind") == "ENCRYPT"
    assert rule.findtext("discovery_protection_kind") == "ENCRYPT"
    assert rule.findtext("liveliness_protection_kind") == "ENCRYPT"
    topic = rule.find("topic_access_rules/topic_rule")
    assert topic.findtext("metadata_protection_kind") == "ENCRYPT"
    assert topic.findtext("data_protection_kind") == "ENCRYPT"
    assert topic.findtext("enable_discovery_protection") == "true"
    assert topic.findtext("enable_liveliness_protection") == "false"


def rule_settings(document: str) -> dict[str, str]:
    """Every setting of a governance's (only) domain rule and topic rule but where they apply."""
    rule = ET.fromstring(document).find("domain_access_rules/domain_rule")
    topic = rule.find("topic_access_rules/topic_rule")
    settings = {f"domain/{e.tag}": e.text for e in rule if e.tag not in ("domains", "topic_access_rules")}
    settings.update({f"topic/{e.tag}": e.text for e in topic if e.tag != "topic_expression"})
    return settings


def test_the_harness_protects_what_latency_test_protects():
    """The `*_security` sub-experiments compare with LatencyTest's: the harness's governance and the one the
    upstream engine writes for LatencyTest (upstream's governance_performance_tests.xml) differ only in
    their domains and topic names, not in any protection or access control."""
    ours = rule_settings(security.governance_xml(3))
    theirs = rule_settings(certificates.performance_governance())
    assert len(ours) == 11
    assert ours == theirs


def test_permissions_name_the_identity_subject(generated):
    folder = generated["folder"]
    for name in NAMES:
        cert = x509.load_pem_x509_certificate((folder / f"{name}_cert.pem").read_bytes())
        grant = ET.parse(folder / f"permissions_{name}.xml").getroot().find("permissions/grant")
        assert grant.findtext("subject_name") == cert.subject.rfc4514_string()
        assert grant.findtext("allow_rule/domains/id") == "42"
        assert grant.findtext("default") == "DENY"


def test_regenerating_replaces_the_files(tmp_path):
    first = security.generate_security_files(tmp_path / "s", 1, ["a"])
    ca_before = first["ca_certificate"].read_bytes()
    second = security.generate_security_files(tmp_path / "s", 1, ["a"])
    assert second["ca_certificate"].read_bytes() != ca_before
    assert mode(second["participants"]["a"]["private_key"]) == 0o600
    assert not list((tmp_path / "s").glob(".*")), "no temporary file left behind"


@pytest.mark.parametrize("domain, names, words", [
    (233, ["a"], "domain"),
    (-1, ["a"], "domain"),
    (0, [], "no participant"),
    (0, ["a/b"], "participant name"),
    (0, ["a", "a"], "repeat"),
])
def test_bad_requests_are_input_errors(tmp_path, domain, names, words):
    with pytest.raises(InputError, match=words):
        security.generate_security_files(tmp_path / "s", domain, names)
    assert not (tmp_path / "s").exists()


@pytest.mark.fastdds
def test_fast_dds_authenticates_and_encrypts_with_them(harness_paths, tmp_path):
    """The real check: two secured participants match and measure, one per process."""
    files = security.generate_security_files(tmp_path / "sec", 77, NAMES)
    common = ["--domain", "77", "--transport", "udpv4", "--security-dir", str(files["folder"]),
              "--discovery-timeout-s", "20"]
    subscriber = subprocess.Popen([str(harness_paths.latency), "--role", "subscriber", *common,
                                   "--security-name", "subscriber"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
    try:
        publisher = subprocess.run([str(harness_paths.latency), "--role", "publisher", *common,
                                    "--security-name", "publisher", "--samples", "50", "--warmup", "5",
                                    "--payloads", "16,4096", "--output", str(tmp_path / "m.csv")],
                                   capture_output=True, text=True, timeout=60)
        assert publisher.returncode == 0, publisher.stderr
        assert subscriber.wait(timeout=30) == 0, subscriber.stderr.read()
    finally:
        subscriber.kill()
        subscriber.wait()
    rows = (tmp_path / "m.csv").read_text().splitlines()
    assert rows[0] == "Sample,Payload [Bytes],Latency [us]"
    assert len(rows) == 1 + 100


@pytest.mark.fastdds
def test_fast_dds_refuses_a_participant_of_another_ca(harness_paths, tmp_path):
    """Join access control: a publisher whose identity comes from a different CA never matches."""
    ours = security.generate_security_files(tmp_path / "ours", 78, NAMES)
    theirs = security.generate_security_files(tmp_path / "theirs", 78, NAMES)
    common = ["--domain", "78", "--transport", "udpv4", "--discovery-timeout-s", "3"]
    subscriber = subprocess.Popen([str(harness_paths.latency), "--role", "subscriber", *common,
                                   "--security-dir", str(ours["folder"]), "--security-name", "subscriber"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        publisher = subprocess.run([str(harness_paths.latency), "--role", "publisher", *common,
                                    "--security-dir", str(theirs["folder"]), "--security-name", "publisher",
                                    "--samples", "10", "--payloads", "16"], capture_output=True, text=True,
                                   timeout=60)
    finally:
        subscriber.kill()
        subscriber.wait()
    assert publisher.returncode == 3
    assert "discovery timeout" in publisher.stderr and "udpv4" in publisher.stderr


@pytest.mark.parametrize("version, words", [
    ("2.9.1", "RTPS protection ENCRYPT only"),
    ("2.10.7", "RTPS protection ENCRYPT only"),
    ("2.11.0", "authentication only"),
    ("2.14.6", "authentication only"),
    ("3.6.1", "authentication only"),
    ("3.6.2", "what the harness's *_security protect"),
    ("3.6.2.0", "what the harness's *_security protect"),
    ("3.10.0", "what the harness's *_security protect"),
    (None, "unknown"),
    ("master", "unknown"),
])
def test_what_latency_test_protects_by_version(version, words):
    """Fast DDS 2.11.0 stopped reading the rtps.* protection properties LatencyTest sets, 3.6.2 gave it a
    governance: the upstream engine's metadata says which of the three a run measured."""
    assert words in certificates.latency_test_protection(version)
