"""DDS domains and ports: a domain no other run holds and no other participant uses, leased while in use."""
from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import tempfile
from pathlib import Path
from typing import Iterator


from ..errors import IncompleteError

# RTPS well-known ports (DDSI-RTPS 9.6.1.1): PB + DG*domain + offset (+ PG*participant for unicast).
RTPS_PORT_BASE = 7400
RTPS_DOMAIN_GAIN = 250
RTPS_PARTICIPANT_GAIN = 2
RTPS_OFFSETS_MULTICAST = (0, 1)  # d0 metatraffic, d2 user traffic
RTPS_OFFSETS_UNICAST = (10, 11)  # d1 metatraffic, d3 user traffic
PROBED_PARTICIPANTS = 4
# The run's own TCP port sits in its domain's block of 250 ports, beyond any port RTPS gives to the
# first 90 participants of that domain: holding the domain's lock reserves it too.
OWN_PORT_OFFSET = 200
MAX_DOMAIN = (65535 - RTPS_PORT_BASE - OWN_PORT_OFFSET) // RTPS_DOMAIN_GAIN  # 231: own port < 65536
LOCK_DIR = Path(tempfile.gettempdir()) / "perfgate-domains"


# --- domains and ports --------------------------------------------------------------------------
def rtps_ports(domain: int, participants: int = PROBED_PARTICIPANTS) -> list[int]:
    """The well-known RTPS ports of a domain's first participants (multicast and unicast)."""
    base = RTPS_PORT_BASE + RTPS_DOMAIN_GAIN * domain
    ports = [base + offset for offset in RTPS_OFFSETS_MULTICAST]
    for participant in range(participants):
        ports.extend(base + offset + RTPS_PARTICIPANT_GAIN * participant for offset in RTPS_OFFSETS_UNICAST)
    return ports


def own_port(domain: int) -> int:
    """The TCP (or floor) port of a run in this domain."""
    return RTPS_PORT_BASE + RTPS_DOMAIN_GAIN * domain + OWN_PORT_OFFSET


def port_is_free(port: int, kind: int) -> bool:
    # No SO_REUSEADDR: the bind fails while any socket (even a reusing one, even TIME_WAIT) holds it.
    with socket.socket(socket.AF_INET, kind) as probe:
        try:
            probe.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def domain_is_free(domain: int) -> bool:
    return all(port_is_free(p, socket.SOCK_DGRAM) for p in rtps_ports(domain)) and all(
        port_is_free(own_port(domain), kind) for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM)
    )


@contextlib.contextmanager
def lease_domain(lock_dir: Path = LOCK_DIR) -> Iterator[int]:
    """A domain no other perfgate run holds and no other participant uses, locked while in use.

    flock locks vanish with the process that holds them, so a killed run never blocks a domain.
    """
    lock_dir.mkdir(mode=0o777, parents=True, exist_ok=True)
    for domain in range(1, MAX_DOMAIN + 1):
        handle = os.open(lock_dir / f"domain-{domain}.lock", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            continue
        try:
            if domain_is_free(domain):
                yield domain
                return
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            os.close(handle)
    raise IncompleteError(f"no free DDS domain: every domain 1..{MAX_DOMAIN} is locked or its RTPS ports are in use")
