"""A JUnit file's size is bounded by what perfgate writes, never by how long an untrusted name is
(issue 23): every attribute value and text is cut to its limit with a marker, and the whole file to
a budget plus its markup (perfgate.junit_writer, perfgate.escape.xml.cut)."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import junitparser

from perfgate import cli, junit_writer
from perfgate import schema as s
from perfgate.escape import xml
from perfgate.junit_writer import TestCase as JUnitCase
from conftest import metadata, tiny_summary, write_experiment

SUB = "intraprocess_best_effort"
MiB = 1 << 20
# every character ElementTree escapes, a 4-byte one and a control character: the longest to write
HOSTILE = '"&<>\n\t\U0001F600\x01' * (MiB // 8)




def test_cut_keeps_what_fits_and_cuts_at_the_written_length():
    assert xml.cut("Median[16 B]", 12, attribute=True) == "Median[16 B]"
    assert xml.cut('"' * 10, 20, attribute=True) == '"' * 2 + xml.CUT_MARKER  # &quot; is 6 bytes
    assert xml.cut('"' * 10, 20, attribute=False) == '"' * 10  # not escaped in a text
    assert xml.cut("\U0001F600" * 4, 15, attribute=False) == "\U0001F600" + xml.CUT_MARKER
    assert xml.cut("abcdefghijk", 3, attribute=True) == xml.CUT_MARKER
    for limit in range(len(xml.CUT_MARKER), 80):
        for attribute in (True, False):
            assert xml.written_size(xml.cut(xml.text(HOSTILE[:100]), limit, attribute), attribute) <= limit


def test_a_hostile_megabyte_version_and_label_leave_a_small_readable_junit_file(tmp_path, capsys):
    meta = metadata(HOSTILE, "2026-01-01T00:00:00Z", commit=HOSTILE)
    meta["fastdds"]["version"] = HOSTILE
    experiment = write_experiment(tmp_path / "e", {SUB: tiny_summary({16: (10.0, 20.0, 30.0)})}, meta)
    requirements = tmp_path / "requirements.csv"
    requirements.write_text(f"Experiment type,Bytes,Median,99%,Max\n{SUB},16,5.000,100.000,100.000\n")
    output = tmp_path / "check.xml"
    assert cli.main(["check", "--requirements", str(requirements), "--experiment-directory", str(experiment),
                     "--plots-directory", str(tmp_path / "plots"), "--no-plots", "--junit", str(output)]) \
        == s.EXIT_REGRESSION
    assert "Traceback" not in capsys.readouterr().err
    assert output.stat().st_size < 8 * 1024  # two 1 KiB properties, three testcases
    root = ET.parse(output).getroot()
    properties = {p.get("name"): p.get("value") for p in root.iter("property")}
    for name in ("fastdds.version", "fastdds.commit"):
        assert properties[name].endswith(xml.CUT_MARKER)
        assert properties[name].startswith(xml.text(HOSTILE)[:40])
        assert xml.written_size(properties[name], attribute=True) <= junit_writer.MAX_ATTRIBUTE
    assert root.get("tests") == "3" and root.get("failures") == "1"
    assert [c.get("name") for c in root.iter("testcase")] == ["Median[16 B]", "99%[16 B]", "Max[16 B]"]
    junitparser.JUnitXml.fromfile(str(output))


def test_many_long_testcases_stay_within_the_document_budget_and_keep_their_counts(monkeypatch):
    """250 testcases, each with a 20 KiB hostile name, path, message and text: the per-value limits
    alone would allow 250 x 11 KiB (2.8 MB); the budget (made 256 KiB here, so that the test is quick)
    keeps the file at the budget plus markup."""
    monkeypatch.setattr(junit_writer, "DOCUMENT_BUDGET", 256 * 1024)
    long = HOSTILE[:20 * 1024]
    cases = []
    for number in range(250):
        case = JUnitCase(long, classname=f"latency.{number}", file=long, line=number + 1)
        case.add_failure_info(long, long, "latency_regression")
        cases.append(case)
    document = junit_writer.document("perfgate latency", [junit_writer.suite("latency.x", cases, {"v": HOSTILE})])
    size = len(document.encode("utf-8"))
    assert size <= junit_writer.DOCUMENT_BUDGET + len(cases) * junit_writer.MAX_MARKUP_PER_CASE
    root = ET.fromstring(document.encode("utf-8"))
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("250", "250", "0")
    testcases = root.findall("testsuite/testcase")
    assert [c.get("line") for c in testcases] == [str(n + 1) for n in range(250)]  # never cut: short
    assert testcases[0].get("name").endswith(xml.CUT_MARKER) and len(testcases[0].get("name")) > 100
    assert testcases[-1].get("name") == xml.CUT_MARKER  # past the budget: the marker alone
    assert all(xml.written_size(value, attribute=True) <= junit_writer.MAX_ATTRIBUTE
               for node in root.iter() for value in node.attrib.values())
    assert all(xml.written_size(node.text, attribute=False) <= junit_writer.MAX_TEXT
               for node in root.iter() if node.text is not None)
