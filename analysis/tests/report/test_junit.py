"""JUnit: structure, names, counts, messages, file/line, properties; read by ElementTree and junitparser."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import junitparser
import pytest

from perfgate import files
from perfgate.latency import junit
from perfgate import schema as s
from perfgate.cli import main

A, B = "interprocess_best_effort", "intraprocess_reliable"
SUMMARY_LINE = "{payload},10000,{high},1.000,{median},{median},1.000,0.500,3.000,{p99},{p99},{high}"


def write_summary(experiment: Path, sub: str, rows: dict[int, tuple[str, str, str]]) -> None:
    lines = [",".join(s.SUMMARY_COLUMNS)]
    lines += [SUMMARY_LINE.format(payload=p, median=m, p99=q, high=x) for p, (m, q, x) in rows.items()]
    (experiment / s.summary_csv_name(sub)).write_text("\n".join(lines) + "\n")


class AnnotatedCase(junitparser.TestCase):
    file = junitparser.Attr()
    line = junitparser.IntAttr()


@pytest.fixture
def checked(tmp_path, monkeypatch):
    """A repository with requirements/, an experiment with one regression, one passing sub-experiment
    and one required payload that was not measured; checked with --junit."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    requirements = repo / "requirements" / "reference.csv"
    requirements.parent.mkdir()
    requirements.write_text(
        "Experiment type,Bytes,Median,99%,Max\n"
        f"{A},16,100.000,200.000,300.000\n"
        f"{A},16384,100.000,200.000,300.000\n"
        f"{B},16,10.000,20.000,30.000\n"
        f"{B},32,10.000,20.000,30.000\n"
    )
    experiment = tmp_path / "experiment"
    experiment.mkdir()
    write_summary(experiment, A, {16: ("99.000", "150.000", "250.000"), 16384: ("105.123", "150.000", "300.000")})
    write_summary(experiment, B, {16: ("5.000", "6.000", "7.000")})
    files.write_metadata(experiment, {"fastdds": {"version": "2.9.1", "commit": "0123abcd"},
                                      "platform": {"id": "ref-x86-01"},
                                      "latency_definition": s.ROUND_TRIP})
    monkeypatch.chdir(tmp_path)
    output = tmp_path / "junit.xml"
    code = main(["check", "--requirements", str(requirements), "--experiment-directory", str(experiment),
                 "--plots-directory", str(tmp_path / "plots"), "--no-plots", "--junit", str(output)])
    assert code == s.EXIT_REGRESSION
    return {"requirements": requirements, "experiment": experiment, "output": output}


def test_junit_structure_names_counts_and_annotations(checked):
    root = ET.parse(checked["output"]).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("12", "1", "3")
    suites = root.findall("testsuite")
    assert [suite.get("name") for suite in suites] == [f"latency.{A}", f"latency.{B}"]
    assert [(x.get("tests"), x.get("failures"), x.get("errors")) for x in suites] == [("6", "1", "0"), ("6", "0", "3")]
    cases = suites[0].findall("testcase")
    assert [c.get("name") for c in cases] == ["Median[16 B]", "Median[16384 B]", "99%[16 B]", "99%[16384 B]",
                                              "Max[16 B]", "Max[16384 B]"]
    assert {c.get("classname") for c in cases} == {f"latency.{A}"}
    assert {c.get("file") for c in root.iter("testcase")} == {"requirements/reference.csv"}
    assert [c.get("line") for c in cases] == ["2", "3"] * 3
    failure = cases[1].find("failure")
    assert failure.get("message") == f"{A} at 16384 B: Median 105.123 us > requirement 100.000 us (+5.12%)"
    assert "requirements/reference.csv:3" in failure.text
    # Max 300.000 equal to its requirement: passed
    assert list(cases[5]) == []
    errors = [(c.get("name"), c.get("line"), c.find("error").get("message")) for c in suites[1].findall("testcase")
              if c.find("error") is not None]
    assert errors == [(f"{name}[32 B]", "5", f"no measurements for {B} at 32 B: no 32 B row in {s.summary_csv_name(B)}")
                      for name in ("Median", "99%", "Max")]
    properties = {p.get("name"): p.get("value") for p in suites[0].find("properties")}
    assert properties == {"fastdds.commit": "0123abcd", "fastdds.version": "2.9.1", "platform.id": "ref-x86-01",
                          "latency_definition": "round_trip"}


def test_junitparser_reads_the_same_results(checked):
    document = junitparser.JUnitXml.fromfile(str(checked["output"]))
    suites = {suite.name: suite for suite in document}
    assert list(suites) == [f"latency.{A}", f"latency.{B}"]
    assert (document.tests, document.failures, document.errors) == (12, 1, 3)
    outcomes = {}
    for suite in document:
        for case in suite:
            kinds = [type(result).__name__ for result in case.result]
            outcomes[(suite.name, case.name)] = (kinds, case.classname)
    assert outcomes[(f"latency.{A}", "Median[16384 B]")] == (["Failure"], f"latency.{A}")
    assert outcomes[(f"latency.{B}", "Max[32 B]")] == (["Error"], f"latency.{B}")
    assert sum(kinds == [] for kinds, _ in outcomes.values()) == 8
    case = next(c for c in suites[f"latency.{A}"] if c.name == "Median[16384 B]")
    assert case.result[0].message == f"{A} at 16384 B: Median 105.123 us > requirement 100.000 us (+5.12%)"
    annotated = AnnotatedCase.fromelem(case)  # junitparser's way to read attributes it does not know
    assert (annotated.file, annotated.line) == ("requirements/reference.csv", 3)


def test_junit_command_rebuilds_the_same_file_from_the_check_reports(checked, tmp_path):
    again = tmp_path / "again.xml"
    assert main(["junit", "--experiment-directory", str(checked["experiment"]), "--output", str(again)]) \
        == s.EXIT_REGRESSION
    assert again.read_text() == checked["output"].read_text()


def test_junit_command_with_explicit_requirements_and_no_check_record(checked, tmp_path, capsys):
    (checked["experiment"] / s.CHECK_RECORD_FILE).unlink()
    assert main(["junit", "--experiment-directory", str(checked["experiment"]), "--output", str(tmp_path / "j.xml")]) \
        == s.EXIT_USAGE
    assert "give --requirements, or run `perfgate check` first" in capsys.readouterr().err
    assert main(["junit", "--experiment_directory", str(checked["experiment"]), "--output", str(tmp_path / "j.xml"),
                 "--requirements", str(checked["requirements"])]) == s.EXIT_REGRESSION
    root = ET.parse(tmp_path / "j.xml").getroot()
    # without the record the reason is generic, but the missing results are still errors
    messages = [e.get("message") for e in root.iter("error")]
    assert messages == [f"no measurements for {B} at 32 B: no check result in {s.check_csv_name(B)}"] * 3
    assert (root.get("failures"), root.get("errors")) == ("1", "3")


def test_properties_are_unknown_without_metadata_and_all_passing_exits_0(tmp_path):
    requirements = tmp_path / "req.csv"
    requirements.write_text(f"Experiment type,Bytes,Median,99%,Max\n{A},16,100,200,300\n")
    experiment = tmp_path / "experiment"
    experiment.mkdir()
    write_summary(experiment, A, {16: ("100.000", "200.000", "300.000")})
    assert main(["check", "--requirements", str(requirements), "--experiment-directory", str(experiment),
                 "--plots-directory", str(tmp_path / "p"), "--no-plots"]) == s.EXIT_OK
    output = tmp_path / "out" / "junit.xml"
    assert main(["junit", "--experiment-directory", str(experiment), "--output", str(output)]) == s.EXIT_OK
    root = ET.parse(output).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "0", "0")
    assert {p.get("value") for p in root.iter("property")} == {"unknown"}


def test_annotation_path_is_relative_to_the_repository_then_the_working_folder(tmp_path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    inside = tmp_path / "repo" / "requirements" / "x.csv"
    assert junit.annotation_path(inside) == "requirements/x.csv"
    outside = tmp_path / "elsewhere" / "x.csv"
    assert junit.annotation_path(outside, working_dir=tmp_path) == "elsewhere/x.csv"
    assert junit.annotation_path(outside, working_dir=tmp_path / "repo") == outside.resolve().as_posix()


def test_check_report_rows_outside_the_requirements_are_bad_input(checked, tmp_path, capsys):
    other = tmp_path / "other.csv"
    other.write_text(f"Experiment type,Bytes,Median,99%,Max\n{A},16,100,200,300\n")
    code = main(["junit", "--experiment-directory", str(checked["experiment"]), "--output", str(tmp_path / "j.xml"),
                 "--requirements", str(other)])
    assert code == s.EXIT_USAGE
    report = checked["experiment"] / s.check_csv_name(A)
    assert capsys.readouterr().err.startswith(f"perfgate junit: error: {report}:3: {A} at 16384 B is not in the "
                                              f"requirements ({other})")
    assert not (tmp_path / "j.xml").exists()
