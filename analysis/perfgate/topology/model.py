"""The topology file (the ros2-performance benchmark's format) parsed into a typed, validated model.

A topology is a JSON object whose `nodes` lists nodes: `node_name`, `publishers` (each `topic_name`,
`msg_type`, `period_ms`, and `msg_size` for `vector`) and `subscribers` (each `topic_name`, `msg_type`).
Fields the model does not use (`msg_passing_type`, comments, ...) are ignored; a field it uses that is
missing or wrong is an InputError (exit 2) naming the file, the node and the field. The file is
untrusted: names are restricted to what a DDS topic and a CSV cell carry safely (letters, digits,
underscores, as ROS names), sizes and counts are bounded, and nothing in it is ever run.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, one_line
from ..files import no_repeated_keys

MAX_FILE_BYTES = 1 << 20
MAX_NODES = 200
MAX_ENDPOINTS = 2000
MAX_MESSAGE_BYTES = 4 << 20  # 4 MiB: 16 times the heaviest standard type (250kb)
MIN_PERIOD_MS = 0.1
MAX_PERIOD_MS = 3_600_000.0
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
# The benchmark's message types and their sizes in bytes, as its latency_all table reports them;
# the sized types are decimal: 1kb is 1000 bytes, 250kb 250000 (docs/formats.md).
FIXED_SIZES = {"int64": 8, "3float32": 12, "4int32": 16, "4float32": 16, "9float32": 36, "12float32": 48}
SIZED_TYPE = re.compile(r"([0-9]{1,7})(b|kb|mb)")
SIZED_UNITS = {"b": 1, "kb": 1000, "mb": 1000_000}
VECTOR = "vector"


@dataclass(frozen=True)
class Publisher:
    topic: str
    msg_type: str
    period_ms: float
    size_bytes: int

    @property
    def frequency_hz(self) -> float:
        return 1000.0 / self.period_ms


@dataclass(frozen=True)
class Subscriber:
    topic: str
    msg_type: str


@dataclass(frozen=True)
class Node:
    name: str
    publishers: tuple[Publisher, ...]
    subscribers: tuple[Subscriber, ...]


@dataclass(frozen=True)
class Subscription:
    """One subscriber of one topic: a row of latency_all.csv."""
    node: str
    publisher: Publisher
    index: int  # its place in Topology.subscriptions(): the harness's number for it


@dataclass(frozen=True)
class Topology:
    nodes: tuple[Node, ...]

    def publisher_of(self, topic: str) -> Publisher:
        return next(p for node in self.nodes for p in node.publishers if p.topic == topic)

    def subscriptions(self) -> tuple[Subscription, ...]:
        """Every (node, topic) subscription, in the file's order."""
        pairs = [(node.name, sub.topic) for node in self.nodes for sub in node.subscribers]
        return tuple(Subscription(name, self.publisher_of(topic), index) for index, (name, topic) in enumerate(pairs))

    def subscribers_of(self, topic: str) -> int:
        return sum(1 for node in self.nodes for sub in node.subscribers if sub.topic == topic)

    def as_json(self) -> dict:
        """The model in the topology format (what was understood, never the raw input)."""
        def publisher(p: Publisher) -> dict:
            entry = {"topic_name": p.topic, "msg_type": p.msg_type, "period_ms": p.period_ms}
            return entry | ({"msg_size": p.size_bytes} if p.msg_type == VECTOR else {})
        return {"nodes": [{"node_name": n.name, "publishers": [publisher(p) for p in n.publishers],
                           "subscribers": [{"topic_name": s.topic, "msg_type": s.msg_type} for s in n.subscribers]}
                          for n in self.nodes]}


def message_size(msg_type: str, msg_size: object, where: str) -> int:
    """The payload in bytes of a message type; ValueError naming `where` and the field."""
    if msg_type in FIXED_SIZES:
        return FIXED_SIZES[msg_type]
    if msg_type == VECTOR:
        if isinstance(msg_size, bool) or not isinstance(msg_size, int) or not 0 <= msg_size <= MAX_MESSAGE_BYTES:
            raise ValueError(f"{where}: msg_size must be a whole number of bytes from 0 to {MAX_MESSAGE_BYTES} "
                             f"for msg_type vector, got {_shown(msg_size)}")
        return msg_size
    sized = SIZED_TYPE.fullmatch(msg_type)
    if sized and int(sized[1]) * SIZED_UNITS[sized[2]] <= MAX_MESSAGE_BYTES:
        return int(sized[1]) * SIZED_UNITS[sized[2]]
    known = ", ".join(list(FIXED_SIZES) + [VECTOR, "<N>b", "<N>kb", "<N>mb"])
    raise ValueError(f"{where}: msg_type {_shown(msg_type)} is not one of {known} (at most {MAX_MESSAGE_BYTES} bytes)")


def _shown(value: object) -> str:
    return one_line(repr(value))[:80]


def _name(entry: dict, field: str, where: str) -> str:
    value = entry.get(field)
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise ValueError(f"{where}: {field} must be a letter then up to 63 letters, digits or underscores, "
                         f"got {_shown(value)}")
    return value


def _objects(entry: dict, field: str, where: str) -> list[dict]:
    value = entry.get(field, [])
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ValueError(f"{where}: {field} must be a list of objects")
    return value


def _msg_type(entry: dict, where: str) -> str:
    value = entry.get("msg_type")
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}: msg_type is missing or not a string")
    return value


def _period(entry: dict, where: str) -> float:
    value = entry.get("period_ms")
    # an int is compared as it is: math.isfinite(10**400) raises OverflowError rather than answer
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or (isinstance(value, float) and not math.isfinite(value)) or not MIN_PERIOD_MS <= value <= MAX_PERIOD_MS:
        raise ValueError(f"{where}: period_ms must be a number from {MIN_PERIOD_MS:g} to {MAX_PERIOD_MS:g}, "
                         f"got {_shown(value)}")
    return float(value)


def _node(entry: object, position: int) -> Node:
    if not isinstance(entry, dict):
        raise ValueError(f"node {position + 1}: not an object")
    name = _name(entry, "node_name", f"node {position + 1}")
    publishers = []
    for number, item in enumerate(_objects(entry, "publishers", f"node {name}"), 1):
        where = f"node {name}, publisher {number}"
        topic = _name(item, "topic_name", where)
        where = f"node {name}, publisher {topic}"
        msg_type = _msg_type(item, where)
        publishers.append(Publisher(topic, msg_type, _period(item, where),
                                    message_size(msg_type, item.get("msg_size"), where)))
    subscribers = []
    for number, item in enumerate(_objects(entry, "subscribers", f"node {name}"), 1):
        topic = _name(item, "topic_name", f"node {name}, subscriber {number}")
        subscribers.append(Subscriber(topic, _msg_type(item, f"node {name}, subscriber {topic}")))
    return Node(name, tuple(publishers), tuple(subscribers))


def topology_from_json(document: object) -> Topology:
    """The validated model of a parsed JSON document; ValueError with the one line that says what is wrong."""
    if not isinstance(document, dict) or not isinstance(document.get("nodes"), list) or not document["nodes"]:
        raise ValueError("the topology must be an object with a non-empty list `nodes`")
    if len(document["nodes"]) > MAX_NODES:
        raise ValueError(f"{len(document['nodes'])} nodes, at most {MAX_NODES}")
    nodes = tuple(_node(entry, position) for position, entry in enumerate(document["nodes"]))
    seen: set[str] = set()
    for node in nodes:
        if node.name in seen:
            raise ValueError(f"node {node.name}: node_name names a second node")
        seen.add(node.name)
    if sum(len(n.publishers) + len(n.subscribers) for n in nodes) > MAX_ENDPOINTS:
        raise ValueError(f"more than {MAX_ENDPOINTS} publishers and subscribers")
    publishers: dict[str, tuple[str, Publisher]] = {}
    for node in nodes:
        for publisher in node.publishers:
            if publisher.topic in publishers:
                raise ValueError(f"node {node.name}, publisher {publisher.topic}: topic_name is already published "
                                 f"by node {publishers[publisher.topic][0]} (one publisher per topic)")
            publishers[publisher.topic] = (node.name, publisher)
    for node in nodes:
        topics = [sub.topic for sub in node.subscribers]
        for sub in node.subscribers:
            if sub.topic not in publishers:
                raise ValueError(f"node {node.name}, subscriber {sub.topic}: topic_name is published by no node")
            if sub.msg_type != publishers[sub.topic][1].msg_type:
                raise ValueError(f"node {node.name}, subscriber {sub.topic}: msg_type {_shown(sub.msg_type)} is not "
                                 f"the publisher's {_shown(publishers[sub.topic][1].msg_type)}")
            if topics.count(sub.topic) > 1:
                raise ValueError(f"node {node.name}, subscriber {sub.topic}: topic_name is subscribed twice")
    if not any(node.subscribers for node in nodes):
        raise ValueError("no node subscribes to anything: there would be no latency to measure")
    return Topology(nodes)


def read_json_text(path: Path, what: str, max_bytes: int) -> tuple[str, object]:
    """The text of a small JSON file from outside (a topology, a performance target) and its document:
    read up to `max_bytes`, a key given twice refused (what a reviewer reads is what is used);
    InputError (exit 2) naming the file and, where the parser knows it, the line."""
    if path.exists() and not path.is_file():  # a FIFO blocks the open, a device never ends
        raise InputError(f"{what} is not a regular file", path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as error:
        raise InputError(f"cannot read {what}: {error.strerror or error}", path) from None
    if len(raw) > max_bytes:
        raise InputError(f"{what} is over {max_bytes} bytes", path)
    try:
        text = raw.decode("utf-8")
        return text, json.loads(text, object_pairs_hook=no_repeated_keys(text, path))
    except RecursionError:
        raise InputError("not JSON this program reads: nested too deeply", path) from None
    except (UnicodeDecodeError, ValueError) as error:
        raise InputError(f"not JSON: {getattr(error, 'msg', error)}", path, getattr(error, "lineno", None)) from None


def read_topology(path: Path | str) -> Topology:
    """The topology file's model; InputError (exit 2) naming the file, the node and the field."""
    path = Path(path)
    _, document = read_json_text(path, "the topology file", MAX_FILE_BYTES)
    try:
        return topology_from_json(document)
    except ValueError as error:
        raise InputError(str(error), path) from None
