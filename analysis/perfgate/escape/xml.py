"""Text in an XML 1.0 document (every JUnit file): only the characters XML 1.0 allows.

XML 1.0 allows tab, line feed, carriage return and every character from U+0020 but the surrogates,
U+FFFE and U+FFFF. Any other (a `\\x01` in a Fast DDS version string, a lone surrogate read from
metadata.json) makes the whole file unreadable to every JUnit reader, so it is shown as the escape
Python writes for it (`\\x01`, `\\uffff`, `\\udc80`) and the rest of the text is kept. Markup
characters (`<`, `&`, quotes) are the XML writer's to escape (ElementTree does), not this module's.

`cut` shortens a text to at most a number of bytes as the writer will write it (each character at
its escaped length: `"` in an attribute is `&quot;`, six bytes), ending in CUT_MARKER: a JUnit file's
size is bounded by what perfgate writes into it, never by how long an untrusted name is.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _shown(match: re.Match) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def text(value) -> str:
    """`value` as text XML 1.0 can hold."""
    return _NOT_XML.sub(_shown, str(value))


CUT_MARKER = "...[cut]"
# ElementTree's escapes (xml.etree.ElementTree._escape_attrib and _escape_cdata)
_ATTRIBUTE_ESCAPES = {"&": 5, "<": 4, ">": 4, '"': 6, "\n": 5, "\r": 5, "\t": 5}
_TEXT_ESCAPES = {"&": 5, "<": 4, ">": 4}


def written_size(value: str, attribute: bool) -> int:
    """The bytes `value` (XML 1.0 text) takes in the file: UTF-8, markup characters escaped."""
    escapes = _ATTRIBUTE_ESCAPES if attribute else _TEXT_ESCAPES
    return len(value.encode("utf-8")) + sum((size - 1) * value.count(c) for c, size in escapes.items())


def cut(value: str, limit: int, attribute: bool) -> str:
    """`value` (XML 1.0 text) whole if it takes at most `limit` bytes written, else its longest
    beginning that fits with CUT_MARKER after it (the marker alone when `limit` leaves no room)."""
    if written_size(value, attribute) <= limit:
        return value
    escapes = _ATTRIBUTE_ESCAPES if attribute else _TEXT_ESCAPES
    room = limit - len(CUT_MARKER)
    end = 0
    for end, character in enumerate(value[:max(room, 0) + 1]):  # every character takes a byte at least
        room -= escapes.get(character) or len(character.encode("utf-8"))
        if room < 0:
            break
    return value[:end] + CUT_MARKER


def clean_tree(element: ET.Element) -> ET.Element:
    """Every tag, attribute, text and tail below and at `element` made XML 1.0 text, in place."""
    for node in element.iter():
        node.attrib = {text(key): text(value) for key, value in node.attrib.items()}
        if node.text is not None:
            node.text = text(node.text)
        if node.tail is not None:
            node.tail = text(node.tail)
    return element
