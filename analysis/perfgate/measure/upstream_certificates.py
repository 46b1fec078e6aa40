"""Certificates and access-control documents for the upstream engine's security tests, generated for
the run and named as LatencyTest wants them (perfgate.fastdds.security's identities)."""
from __future__ import annotations

import os
from pathlib import Path

from .. import files

# LatencyTest's file names for --certs (main_LatencyTest.cpp): one CA, a publisher and a subscriber.
CERT_FILES = {"maincacert.pem": ("ca", None), "mainpubcert.pem": ("cert", "pub"), "mainpubkey.pem": ("key", "pub"),
              "mainsubcert.pem": ("cert", "sub"), "mainsubkey.pem": ("key", "sub")}
# LatencyTest of Fast DDS 3.6.2 and master also turns on Access-Permissions, with these two
# documents from its CERTS_PATH, signed by the identity CA (their test/certs/*_performance_tests.xml).
GOVERNANCE_FILE = "governance_performance_tests.smime"
PERMISSIONS_FILE = "permissions_performance_tests.smime"
LATENCY_TEST_DOMAINS = (0, 230)  # latency_tests.py picks its pid modulo 230
# What LatencyTest's --security protects, by the Fast DDS version it is part of (docs/harness.md
# "Security against LatencyTest"): the rtps.* protection properties it set were read up to 2.10 only
# (Fast DDS #2577 removed them in 2.11.0), and 3.6.2 (#6277) moved it to a governance.
GOVERNANCE_SINCE = (3, 6, 2)
PROPERTIES_IGNORED_SINCE = (2, 11, 0)


def latency_test_protection(version: str | None) -> str:
    """What a security test of this Fast DDS version's LatencyTest protects, for the run's metadata."""
    numbers = [int(part) for part in (version or "").split(".")[:3] if part.isdigit()]
    if len(numbers) < 3:
        return f"unknown (Fast DDS version {version!r})"
    if tuple(numbers) >= GOVERNANCE_SINCE:
        return ("Access-Permissions with its governance_performance_tests: discovery, liveliness and RTPS "
                "ENCRYPT, LatencyTest_* topics metadata and data ENCRYPT (what the harness's *_security protect)")
    if tuple(numbers) >= PROPERTIES_IGNORED_SINCE:
        return ("authentication only: PKI-DH and AES-GCM-GMAC loaded, nothing protected (Fast DDS ignores the "
                "rtps.* protection properties LatencyTest sets, and no governance asks for any)")
    return ("RTPS protection ENCRYPT only (its participant property; the endpoints' submessage and payload "
            "properties are set only without --xml_file, and ctest passes one)")


def performance_governance(domains: tuple[int, int] = LATENCY_TEST_DOMAINS) -> str:
    """The protections of upstream's governance_performance_tests.xml for LatencyTest's topics:
    discovery, liveliness and rtps ENCRYPT; LatencyTest_* with discovery protection, read and write
    access control, metadata and data ENCRYPT, no liveliness protection."""
    from ..fastdds import security

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
    """CA, publisher and subscriber identities (perfgate.fastdds.security's), under LatencyTest's file names,
    and the signed governance and permissions LatencyTest asks for where it uses access control."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    from ..fastdds import security

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
