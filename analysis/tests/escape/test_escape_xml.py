"""Untrusted text in JUnit (issue 23, escape/xml.py): a control character, a non-character or a lone
surrogate in metadata (a Fast DDS version, a label) never makes `check --junit`, `perfgate junit`,
the A/B's or a failed build's JUnit unreadable, nor stops them with a traceback."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import junitparser
import pytest

from perfgate import cli
from perfgate import junit_writer
from perfgate import schema as s
from perfgate.escape import xml
from perfgate.junit_writer import TestCase as JUnitCase
from conftest import metadata, tiny_summary, write_experiment
from escape_hostile import BAD_VERSION, FORGED, HOSTILE

SUB = "intraprocess_best_effort"


@pytest.mark.parametrize("text", HOSTILE + (BAD_VERSION, "\x00\x08\x0b\x0c\x0e\x1f", "\ud800\udbff\udc00\udfff"))
def test_text_is_what_xml_1_0_holds_and_shows_what_it_replaced(text):
    cleaned = xml.text(text)
    element = ET.Element("e", value=cleaned)
    element.text = cleaned
    read = ET.fromstring(ET.tostring(element, encoding="utf-8"))  # the parser refuses any character XML forbids
    newlines = cleaned.replace("\r\n", "\n").replace("\r", "\n")  # XML's own line-end handling
    assert read.text == newlines and read.get("value") in (cleaned, newlines)


def test_allowed_characters_stay_and_forbidden_ones_are_shown():
    assert xml.text("a\tb\nc\rd <&> \"' ü \U0001f600") == "a\tb\nc\rd <&> \"' ü \U0001f600"
    assert xml.text("3.6\x01\x1b\uffff\ufffe\udc80") == "3.6\\x01\\x1b\\uffff\\ufffe\\udc80"


def test_a_suite_with_forbidden_characters_everywhere_is_a_readable_document():
    case = JUnitCase(f"case {BAD_VERSION}", classname="c\x01", file="f\udc80.csv", line=3)
    case.add_failure_info(message=f"m {BAD_VERSION}", output=f"o {FORGED}\x02", failure_type="t\uffff")
    document = junit_writer.document("perfgate \x03", [junit_writer.suite(
        "s\x04", [case], {"fastdds.version": BAD_VERSION, "label\x05": "\udc80"})])
    root = ET.fromstring(document.encode("utf-8"))
    assert root.find("testsuite/properties/property[@name='fastdds.version']").get("value") == xml.text(BAD_VERSION)


# --- end to end ---------------------------------------------------------------------------------------
def checked_experiment(tmp_path):
    meta = metadata(f"{FORGED} \udc80 \x01", "2026-01-01T00:00:00Z", commit="c0ffee\uffff")
    meta["fastdds"]["version"] = BAD_VERSION
    experiment = write_experiment(tmp_path / "e", {SUB: tiny_summary({16: (10.0, 20.0, 30.0)})}, meta)
    requirements = tmp_path / "requirements.csv"
    requirements.write_text(f"Experiment type,Bytes,Median,99%,Max\n{SUB},16,5.000,100.000,100.000\n")
    return experiment, requirements


def read_junit(path):
    root = ET.parse(path).getroot()  # raises on any character XML 1.0 forbids
    suites = junitparser.JUnitXml.fromfile(str(path))
    properties = {p.name: p.value for suite in suites for p in suite.properties()}
    return root, properties


def test_check_junit_and_perfgate_junit_write_readable_files_for_a_hostile_version(tmp_path, capsys):
    experiment, requirements = checked_experiment(tmp_path)
    output = tmp_path / "check.xml"
    assert cli.main(["check", "--requirements", str(requirements), "--experiment-directory", str(experiment),
                     "--plots-directory", str(tmp_path / "plots"), "--no-plots", "--junit", str(output)]) \
        == s.EXIT_REGRESSION
    root, properties = read_junit(output)
    assert properties["fastdds.version"] == "3.6.2\\x01\\x0b\\uffff\\ufffe\\udc80\n::error title=FORGED::version"
    assert len(root.findall(".//failure")) == 1
    again = tmp_path / "again.xml"
    assert cli.main(["junit", "--experiment-directory", str(experiment), "--output", str(again)]) == s.EXIT_REGRESSION
    assert "Traceback" not in capsys.readouterr().err
    read_junit(again)
    assert again.read_text(encoding="utf-8") == output.read_text(encoding="utf-8")


def test_the_ab_verdicts_junit_is_readable_with_hostile_sub_experiment_names(tmp_path):
    from ab_inputs import SUBS, write_rounds
    write_rounds(tmp_path, 16, {SUBS[1]: 0.05})
    (tmp_path / s.METADATA_FILE).write_text(json.dumps({
        "kind": "ab", "label": FORGED + "\x01", "samples": 200,
        "arms": {arm: {"spec": f"{arm}\x02\udc80", "fastdds": {"version": BAD_VERSION}} for arm in s.AB_ARMS}}))
    assert cli.main(["verdict", "--ab-directory", str(tmp_path), "--no-plots"]) == s.EXIT_REGRESSION
    root, _ = read_junit(tmp_path / s.JUNIT_FILE)
    assert len(root.findall(".//failure")) == 2


def test_a_failed_builds_junit_is_readable_with_a_hostile_version_and_error(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / s.BUILD_RECORD_FILE).write_text(json.dumps({
        "status": s.BUILD_FAILED, "workspace": str(workspace), "error": f"failed\x01\udc80 {FORGED}",
        "log": str(workspace / "build.log"), "log_tail": "", "fastdds": {"version": BAD_VERSION, "commit": "\x02"}}))
    assert cli.main(["gate", "--workspace", str(workspace), "--output", str(tmp_path / "out")]) == s.EXIT_INCOMPLETE
    _, properties = read_junit(tmp_path / "out" / s.JUNIT_FILE)
    assert properties["fastdds.commit"] == "\\x02"
