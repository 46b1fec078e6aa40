"""Every JUnit file perfgate writes, built with junit-xml (docs/formats.md section 12).

junit-xml builds each <testsuite>: its testcases with `file`, `line` and `classname`, <failure> and
<error> with type, message and text, <system-out>, <properties>, and the suite's counts. perfgate
adds two things junit-xml 1.9 does not write:
- the root's `name` ("perfgate latency", "perfgate ab", ...): its `to_xml_report_string` writes a
  nameless <testsuites>, so the root is built here from the suites junit-xml built, with the totals;
- `time="0"` on a testcase without a duration: junit-xml writes `time` only when it is nonzero, and
  some reporters read a missing time as not-a-number. A check has no duration of its own.
Every name, attribute, message and text is made XML 1.0 text (escape.xml) before it is written: a
control character in a Fast DDS version or a lone surrogate in metadata would make the file
unreadable to every JUnit reader, or stop the writing with an encoding error.

A JUnit file's size is bounded by design, whatever its inputs hold (a reason in check.json, a Fast
DDS version a source set, a label: issue 23): every attribute value takes at most MAX_ATTRIBUTE
bytes as written, every text MAX_TEXT, and all of them together DOCUMENT_BUDGET, in document order;
what does not fit ends in escape.xml.CUT_MARKER (a value no longer than the marker is never cut, so
counts, lines and times stay whole). The file is then at most DOCUMENT_BUDGET plus its markup: the
tags, attribute names and indentation, and a marker per value past the budget (MAX_MARKUP_PER_CASE
bytes per testcase at most): for the 30000 testcases of a requirements file at its cap of 10000
rows, at most 16 MiB + 12 MB.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Iterable

from junit_xml import TestCase, TestSuite

from .escape.xml import CUT_MARKER, clean_tree, cut, written_size
from .escape.xml import text as xml_text

__all__ = ["TestCase", "suite", "document"]
COUNTS = ("tests", "failures", "errors")
# junit-xml writes attributes in alphabetical order; perfgate keeps the order its files always had
# (name first), so that a JUnit file reads, and compares with an older one, as before
SUITE_ORDER = ("name", "tests", "failures", "errors", "skipped", "disabled", "time", "timestamp")
CASE_ORDER = ("name", "classname", "file", "line", "time")
MAX_ATTRIBUTE = 1024  # bytes of one attribute value as written: a name, a path, a failure's message
MAX_TEXT = 8192  # bytes of one element's text: a failure's details, a build's log tail, system-out
DOCUMENT_BUDGET = 16 << 20  # bytes of every attribute value and text of one file together
# A testcase's markup, past the budget: <testcase name= classname= file= line= time=>, one <failure
# type= message=> or <error> and a <system-out>, indented, each value a CUT_MARKER at most
MAX_MARKUP_PER_CASE = 400


def _ordered(element: ET.Element, order: tuple[str, ...]) -> None:
    first = {key: element.attrib[key] for key in order if key in element.attrib}
    element.attrib = {**first, **{k: v for k, v in element.attrib.items() if k not in first}}


def suite(name: str, cases: list[TestCase], properties: dict[str, str] | None = None,
          timestamp: str | None = None) -> ET.Element:
    """One <testsuite> as junit-xml builds it, every testcase timed."""
    element = TestSuite(name, cases, properties=properties or None, timestamp=timestamp or None).build_xml_doc()
    for case in element.iter("testcase"):
        case.attrib.setdefault("time", "0")
        _ordered(case, CASE_ORDER)
    _ordered(element, SUITE_ORDER)
    return clean_tree(element)


def bound(root: ET.Element) -> None:
    """Cut every attribute value and text below `root`, in document order, to its limit and to what is
    left of DOCUMENT_BUDGET (never below the marker's length)."""
    left = DOCUMENT_BUDGET
    for node in root.iter():
        for key, value in list(node.attrib.items()):
            node.attrib[key] = cut(value, max(min(MAX_ATTRIBUTE, left), len(CUT_MARKER)), attribute=True)
            left -= written_size(node.attrib[key], attribute=True)
        if node.text is not None:
            node.text = cut(node.text, max(min(MAX_TEXT, left), len(CUT_MARKER)), attribute=False)
            left -= written_size(node.text, attribute=False)


def document(name: str, suites: Iterable[ET.Element]) -> str:
    """The <testsuites name=...> document with every suite and their totals, as text."""
    suites = list(suites)
    root = ET.Element("testsuites", name=xml_text(name))
    for key in COUNTS:
        root.set(key, str(sum(int(element.get(key, 0)) for element in suites)))
    root.set("time", f"{sum(float(element.get('time', 0)) for element in suites):g}")
    root.extend(suites)
    bound(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
