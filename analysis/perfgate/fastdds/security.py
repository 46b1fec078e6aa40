"""DDS Security files for one run: a CA, one identity per participant, signed governance and permissions.

Generated fresh for every run into a private folder (mode 0700, private keys 0600), so no private key
is ever committed. The layout is what `perfgate-latency --security-dir DIR --security-name NAME`
reads (native/src/endpoints.cpp):

    ca_cert.pem                      identity CA and permissions CA (one CA signs everything)
    <name>_cert.pem, <name>_key.pem  the participant's identity (EC prime256v1, ECDSA-SHA256)
    governance.xml / .p7s            discovery, liveliness, rtps, metadata and data ENCRYPT, join access
                                     control: LatencyTest's protections (governance_xml)
    permissions_<name>.xml / .p7s    publish and subscribe on every topic of the domain

The .p7s files are S/MIME signed text (detached), the same as `openssl smime -sign -text` makes and
Fast DDS' Access-Permissions plugin verifies against the permissions CA.
"""
from __future__ import annotations

import datetime as dt
import os
import re
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import NameOID

from ..errors import InputError

CA_CERT = "ca_cert.pem"
CA_KEY = "ca_key.pem"
GOVERNANCE_XML = "governance.xml"
GOVERNANCE_P7S = "governance.p7s"

# Certificates outlive any run by far, and start an hour back to tolerate clock adjustments.
VALIDITY = dt.timedelta(days=30)
CLOCK_SLACK = dt.timedelta(hours=1)
MAX_DOMAIN_ID = 232  # the highest domain id the RTPS UDP port mapping allows
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
PUBLIC_FILE_MODE = 0o644


def identity_cert_name(participant: str) -> str:
    return f"{participant}_cert.pem"


def identity_key_name(participant: str) -> str:
    return f"{participant}_key.pem"


def permissions_xml_name(participant: str) -> str:
    return f"permissions_{participant}.xml"


def permissions_p7s_name(participant: str) -> str:
    return f"permissions_{participant}.p7s"


def generate_security_files(folder: Path, domain: int, participant_names: list[str]) -> dict:
    """Write the CA, identities, governance and permissions for `participant_names` into `folder`.

    Returns the paths: {"folder", "ca_certificate", "governance", "participants": {name:
    {"certificate", "private_key", "permissions"}}}. Raises InputError for a bad domain or name.
    """
    _check_request(domain, participant_names)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, PRIVATE_DIR_MODE)
    now = dt.datetime.now(dt.timezone.utc)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _ca_certificate(ca_key, now)
    _write(folder / CA_KEY, _key_pem(ca_key), PRIVATE_FILE_MODE)
    _write(folder / CA_CERT, ca_cert.public_bytes(serialization.Encoding.PEM), PUBLIC_FILE_MODE)

    governance = governance_xml(domain).encode()
    _write(folder / GOVERNANCE_XML, governance, PUBLIC_FILE_MODE)
    _write(folder / GOVERNANCE_P7S, _sign(governance, ca_cert, ca_key), PUBLIC_FILE_MODE)

    participants = {}
    for name in participant_names:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _identity_certificate(name, key, ca_cert, ca_key, now)
        permissions = permissions_xml(domain, cert.subject.rfc4514_string(), cert.not_valid_before_utc,
                                      cert.not_valid_after_utc, name).encode()
        _write(folder / identity_key_name(name), _key_pem(key), PRIVATE_FILE_MODE)
        _write(folder / identity_cert_name(name), cert.public_bytes(serialization.Encoding.PEM), PUBLIC_FILE_MODE)
        _write(folder / permissions_xml_name(name), permissions, PUBLIC_FILE_MODE)
        _write(folder / permissions_p7s_name(name), _sign(permissions, ca_cert, ca_key), PUBLIC_FILE_MODE)
        participants[name] = {
            "certificate": folder / identity_cert_name(name),
            "private_key": folder / identity_key_name(name),
            "permissions": folder / permissions_p7s_name(name),
        }
    return {
        "folder": folder,
        "ca_certificate": folder / CA_CERT,
        "governance": folder / GOVERNANCE_P7S,
        "participants": participants,
    }


def governance_xml(domain: int) -> str:
    """What Fast DDS' own LatencyTest protects (its governance_performance_tests.xml since 3.6.2, which
    perfgate.measure.upstream_certificates writes for it): authenticated, access-controlled, discovery,
    liveliness and rtps ENCRYPT, every topic with discovery protection, metadata and data ENCRYPT and
    no liveliness protection. Only the domain and the topic expression differ, so the two engines'
    `*_security` sub-experiments measure the same protections (docs/harness.md "Security")."""
    return governance_document(f"<id>{domain}</id>", topic_expression="*", liveliness_protection=False)


def governance_document(domains: str, *, topic_expression: str, liveliness_protection: bool) -> str:
    """A governance with discovery, liveliness and rtps ENCRYPT and join access control; topics
    matching `topic_expression` get discovery protection, read and write access control, metadata
    and data ENCRYPT, and liveliness protection as asked. `domains`: the <domains> content."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
     xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_governance.xsd">
  <domain_access_rules>
    <domain_rule>
      <domains>{domains}</domains>
      <allow_unauthenticated_participants>false</allow_unauthenticated_participants>
      <enable_join_access_control>true</enable_join_access_control>
      <discovery_protection_kind>ENCRYPT</discovery_protection_kind>
      <liveliness_protection_kind>ENCRYPT</liveliness_protection_kind>
      <rtps_protection_kind>ENCRYPT</rtps_protection_kind>
      <topic_access_rules>
        <topic_rule>
          <topic_expression>{topic_expression}</topic_expression>
          <enable_discovery_protection>true</enable_discovery_protection>
          <enable_liveliness_protection>{str(liveliness_protection).lower()}</enable_liveliness_protection>
          <enable_read_access_control>true</enable_read_access_control>
          <enable_write_access_control>true</enable_write_access_control>
          <metadata_protection_kind>ENCRYPT</metadata_protection_kind>
          <data_protection_kind>ENCRYPT</data_protection_kind>
        </topic_rule>
      </topic_access_rules>
    </domain_rule>
  </domain_access_rules>
</dds>
"""


def permissions_xml(domain: int, subject: str, not_before: dt.datetime, not_after: dt.datetime,
                    participant: str) -> str:
    """One grant for the identity `subject`: publish and subscribe on every topic of `domain`."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
     xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_permissions.xsd">
  <permissions>
    <grant name="perfgate_{escape(participant)}">
      <subject_name>{escape(subject)}</subject_name>
      <validity>
        <not_before>{_xml_time(not_before)}</not_before>
        <not_after>{_xml_time(not_after)}</not_after>
      </validity>
      <allow_rule>
        <domains>
          <id>{domain}</id>
        </domains>
        <publish>
          <topics>
            <topic>*</topic>
          </topics>
        </publish>
        <subscribe>
          <topics>
            <topic>*</topic>
          </topics>
        </subscribe>
      </allow_rule>
      <default>DENY</default>
    </grant>
  </permissions>
</dds>
"""


def _check_request(domain: int, participant_names: list[str]) -> None:
    if isinstance(domain, bool) or not isinstance(domain, int) or not 0 <= domain <= MAX_DOMAIN_ID:
        raise InputError(f"DDS domain must be an integer from 0 to {MAX_DOMAIN_ID}, got {domain!r}")
    if not participant_names:
        raise InputError("no participant names to generate security identities for")
    for name in participant_names:
        if not isinstance(name, str) or not _NAME.match(name) or name == "ca":
            raise InputError(f"participant name {name!r} must be letters, digits, '_', '.' or '-' (and not 'ca')")
    if len(set(participant_names)) != len(participant_names):
        raise InputError(f"participant names repeat: {participant_names}")


def _ca_certificate(key: ec.EllipticCurvePrivateKey, now: dt.datetime) -> x509.Certificate:
    name = x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "perfgate"),
        x509.NameAttribute(NameOID.COMMON_NAME, "perfgate run CA"),
    ])
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SLACK)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )


def _identity_certificate(participant: str, key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate,
                          ca_key: ec.EllipticCurvePrivateKey, now: dt.datetime) -> x509.Certificate:
    subject = x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "perfgate"),
        x509.NameAttribute(NameOID.COMMON_NAME, participant),
    ])
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SLACK)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
        key_agreement=not cert_sign, key_cert_sign=cert_sign, crl_sign=cert_sign, encipher_only=False,
        decipher_only=False,
    )


def _sign(document: bytes, ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey) -> bytes:
    return (
        pkcs7.PKCS7SignatureBuilder()
        .set_data(document)
        .add_signer(ca_cert, ca_key, hashes.SHA256())
        .sign(serialization.Encoding.SMIME, [pkcs7.PKCS7Options.DetachedSignature, pkcs7.PKCS7Options.Text])
    )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _xml_time(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def _write(path: Path, content: bytes, mode: int) -> None:
    """Atomic write with the mode set before any byte lands, so a key is never readable by others."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(handle, mode)
        with os.fdopen(handle, "wb") as file:
            file.write(content)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
