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
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Iterable

from junit_xml import TestCase, TestSuite

from .escape.xml import clean_tree
from .escape.xml import text as xml_text

__all__ = ["TestCase", "suite", "document"]
COUNTS = ("tests", "failures", "errors")
# junit-xml writes attributes in alphabetical order; perfgate keeps the order its files always had
# (name first), so that a JUnit file reads, and compares with an older one, as before
SUITE_ORDER = ("name", "tests", "failures", "errors", "skipped", "disabled", "time", "timestamp")
CASE_ORDER = ("name", "classname", "file", "line", "time")


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


def document(name: str, suites: Iterable[ET.Element]) -> str:
    """The <testsuites name=...> document with every suite and their totals, as text."""
    suites = list(suites)
    root = ET.Element("testsuites", name=xml_text(name))
    for key in COUNTS:
        root.set(key, str(sum(int(element.get(key, 0)) for element in suites)))
    root.set("time", f"{sum(float(element.get('time', 0)) for element in suites):g}")
    root.extend(suites)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
