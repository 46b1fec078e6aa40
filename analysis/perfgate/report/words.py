"""report.words: the ids of the files in words a reader knows, for every page a person reads.

The files keep their ids (`interprocess_reliable_tcp_security`, `round_trip`, `system_package`): programs
read them. The pages show the id and, beside it, what it means: the transport as Fast DDS names it, the
reliability, DDS Security, and what the latency is the time of. Pure.
"""
from __future__ import annotations

from .. import schema as s

TRANSPORT_WORDS = {"intraprocess": "intra-process (one process, no transport)", "udpv4": "UDPv4 over loopback",
                   "tcpv4": "TCPv4 over loopback", "shm": "shared memory", "udp": "plain UDP sockets",
                   "tcp": "plain TCP sockets"}
RELIABILITY_WORDS = {"best_effort": "best effort", "reliable": "reliable"}
LATENCY_WORDS = {s.ROUND_TRIP: "round trip (publisher to subscriber and back)",
                 s.HALF_ROUND_TRIP: "half the round trip (as Fast DDS' LatencyTest reports it)"}
SOURCE_WORDS = {s.FASTDDS_SOURCE_SYSTEM: "the system's installed package",
                s.FASTDDS_SOURCE_COLCON: "built from source with colcon"}


def subexperiment_words(name: str) -> str:
    """'TCPv4 over loopback, reliable, DDS Security' for interprocess_reliable_tcp_security; the name
    itself when it is not a sub-experiment's (text of unknown origin stays as it is)."""
    try:
        sub = s.resolve_subexperiment(name)
    except (KeyError, ValueError):
        return name
    parts = [TRANSPORT_WORDS.get(sub.transport, sub.transport), RELIABILITY_WORDS.get(sub.reliability, sub.reliability)]
    if sub.security:
        parts.append("DDS Security")
    if sub.zero_copy:
        parts.append("zero copy (data sharing, loaned samples)")
    if sub.subscribers > 1:
        parts.append(f"{sub.subscribers} subscribers (the round trip to the last)")
    if sub.is_floor:
        parts.append("the machine's floor, no DDS")
    return ", ".join(parts)


def named_subexperiment(name: str) -> str:
    """'interprocess_reliable_tcp (TCPv4 over loopback, reliable)': the id, then its words."""
    words = subexperiment_words(name)
    return name if words == name else f"{name} ({words})"


def latency_words(definition: str | None) -> str:
    return LATENCY_WORDS.get(definition or s.ROUND_TRIP, definition or "")


def source_words(source: str | None) -> str:
    return SOURCE_WORDS.get(source or "", source or "")
