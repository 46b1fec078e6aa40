"""Loopback-only copies of Fast DDS' XML profiles for the upstream engine (pure): the same QoS, no
network interface but 127.0.0.1, no multicast that leaves the host."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ..errors import InputError

LOOPBACK = "127.0.0.1"
LOOPBACK_TRANSPORT_ID = "perfgate_loopback_udpv4"
LOOPBACK_SHM_ID = "perfgate_shm"
LOOPBACK_HOST_ONLY_ID = "perfgate_loopback_udpv4_ttl0"
PROFILES_NS = "http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"


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
