"""Text in an XML 1.0 document (every JUnit file): only the characters XML 1.0 allows.

XML 1.0 allows tab, line feed, carriage return and every character from U+0020 but the surrogates,
U+FFFE and U+FFFF. Any other (a `\\x01` in a Fast DDS version string, a lone surrogate read from
metadata.json) makes the whole file unreadable to every JUnit reader, so it is shown as the escape
Python writes for it (`\\x01`, `\\uffff`, `\\udc80`) and the rest of the text is kept. Markup
characters (`<`, `&`, quotes) are the XML writer's to escape (ElementTree does), not this module's.
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


def clean_tree(element: ET.Element) -> ET.Element:
    """Every tag, attribute, text and tail below and at `element` made XML 1.0 text, in place."""
    for node in element.iter():
        node.attrib = {text(key): text(value) for key, value in node.attrib.items()}
        if node.text is not None:
            node.text = text(node.text)
        if node.tail is not None:
            node.tail = text(node.tail)
    return element
