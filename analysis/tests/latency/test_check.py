"""check: reports, comparison as written, missing data, uncovered data, plots and printed output."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfgate.latency import check
from perfgate import files
from perfgate import schema as s
from perfgate.cli import main

A, B = "interprocess_best_effort", "interprocess_reliable"


def summary(rows: dict[int, tuple[float, float, float]]) -> pd.DataFrame:
    """A summary with the given (Median, 99%, Max) per payload; the other columns are consistent filler."""
    frame = pd.DataFrame([
        {s.BYTES: payload, s.SAMPLES: 10000, s.MAX: high, s.MIN: median / 2, s.MEAN: median, s.MEDIAN: median,
         s.STDEV: 1.0, s.MEAN_JITTER: 0.5, s.MAX_JITTER: high / 2, s.P90: (median + p99) / 2, s.P99: p99, s.P9999: high}
        for payload, (median, p99, high) in rows.items()
    ])
    return frame.loc[:, list(s.SUMMARY_COLUMNS)]


def write_summary(experiment: Path, sub: str, rows: dict[int, tuple[float, float, float]]) -> Path:
    path = experiment / s.summary_csv_name(sub)
    files.write_csv(path, summary(rows))
    return path


def write_requirements(path: Path, rows: list[tuple[str, int, float, float, float]]) -> Path:
    lines = [",".join(s.REQUIREMENT_COLUMNS)] + [f"{sub},{payload},{m:.3f},{p:.3f},{x:.3f}" for sub, payload, m, p, x in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def run_check(tmp_path: Path, *extra: str) -> int:
    return main(["check", "--requirements", str(tmp_path / "requirements.csv"), "--experiment-directory",
                 str(tmp_path / "experiment"), "--plots-directory", str(tmp_path / "plots"), *extra])


@pytest.fixture
def experiment(tmp_path) -> Path:
    folder = tmp_path / "experiment"
    folder.mkdir()
    return folder


def test_equal_to_the_requirement_passes_and_one_thousandth_above_fails(tmp_path, experiment):
    write_summary(experiment, A, {16: (25.0, 50.001, 200.0)})
    write_requirements(tmp_path / "requirements.csv", [(A, 16, 25.0, 50.0, 250.0)])
    assert run_check(tmp_path, "--no-plots") == s.EXIT_REGRESSION
    text = (experiment / s.check_csv_name(A)).read_text()
    assert text == (
        "Check,Bytes,Requirement,Experiment,Difference,Percentage over requirement,Status\n"
        "Median,16,25.000,25.000,0.000,0.000,passed\n"
        "99%,16,50.000,50.001,0.001,0.002,failed\n"
        "Max,16,250.000,200.000,50.000,-20.000,passed\n"
    )


def test_values_are_compared_as_written_with_three_decimals():
    # 100.0004 is written 100.000: equal to the requirement, so it passes; 100.0006 is written 100.001
    requirements = pd.DataFrame({s.EXPERIMENT_TYPE: [A, A], s.BYTES: [16, 32], s.MEDIAN: [100.0, 100.0],
                                 s.P99: [200.0, 200.0], s.MAX: [300.0, 300.0], "line": [2, 3]})
    report = check.check_summary(summary({16: (100.0004, 1.0, 1.0), 32: (100.0006, 1.0, 1.0)}), requirements, A)
    medians = report[report[s.CHECK] == s.MEDIAN]
    assert medians[s.STATUS].tolist() == [s.PASSED, s.FAILED]
    assert medians[s.EXPERIMENT].tolist() == [100.0, 100.001]
    assert medians[s.DIFFERENCE].tolist() == [0.0, 0.001]


def test_every_comparison_judges_the_value_as_written_not_as_value_times_1000():
    # 0.0055 is a hair below 0.0055 in binary: written 0.005, while 0.0055 * 1000 rounds up to 6
    assert files.format_float(0.0055) == "0.005"
    assert files.thousandths([0.0055, 0.0025, float("nan")]).tolist()[:2] == [5.0, 3.0]
    assert np.isnan(files.thousandths([float("nan")])[0])
    # so 0.0055 against a requirement of 0.005 passes, in check and in everything using its rule
    assert check.is_over([0.0055, 0.0056], [0.005, 0.005]).tolist() == [False, True]


def test_rows_are_median_then_99_then_max_in_the_requirements_payload_order(tmp_path, experiment):
    write_summary(experiment, A, {16: (10, 20, 30), 32: (11, 21, 31), 64: (12, 22, 32)})
    write_requirements(tmp_path / "requirements.csv",
                       [(A, 64, 20, 30, 40), (A, 16, 20, 30, 40), (A, 32, 20, 30, 40)])
    assert run_check(tmp_path, "--no-plots") == s.EXIT_OK
    report = files.read_check_report(experiment / s.check_csv_name(A))
    assert report[s.CHECK].tolist() == [s.MEDIAN] * 3 + [s.P99] * 3 + [s.MAX] * 3
    assert report[s.BYTES].tolist() == [64, 16, 32] * 3
    assert report[s.EXPERIMENT].tolist() == [12, 10, 11, 22, 20, 21, 32, 30, 31]
    assert report[s.PERCENT_OVER].tolist() == [-40.0, -50.0, -45.0, -26.667, -33.333, -30.0, -20.0, -25.0, -22.5]
    assert set(report[s.STATUS]) == {s.PASSED}


def test_no_negative_zero_in_reports(tmp_path, experiment):
    # 99999.999 against 100000.000 is -0.000001 %, which a plain %.3f writes as -0.000
    write_summary(experiment, A, {16: (99999.999, 99999.999, 99999.999)})
    write_requirements(tmp_path / "requirements.csv", [(A, 16, 100000.0, 100000.0, 100000.0)])
    assert run_check(tmp_path, "--no-plots") == s.EXIT_OK
    text = (experiment / s.check_csv_name(A)).read_text()
    assert "-0.000" not in text
    assert "Median,16,100000.000,99999.999,0.001,0.000,passed" in text


def test_missing_payload_and_subexperiment_exit_3_and_the_rest_is_still_checked(tmp_path, experiment, capsys):
    write_summary(experiment, A, {16: (10, 20, 30)})
    write_requirements(tmp_path / "requirements.csv",
                       [(A, 16, 20, 30, 40), (A, 32, 20, 30, 40), (B, 16, 20, 30, 40), (B, 32, 20, 30, 40)])
    assert run_check(tmp_path) == s.EXIT_INCOMPLETE
    report = files.read_check_report(experiment / s.check_csv_name(A))
    assert report[s.BYTES].tolist() == [16, 16, 16] and set(report[s.STATUS]) == {s.PASSED}
    assert not (experiment / s.check_csv_name(B)).exists()
    assert sorted(p.name for p in (tmp_path / "plots" / A).glob("*.png")) == ["check_99.png", "check_max.png",
                                                                           "check_median.png"]
    record = json.loads((experiment / s.CHECK_RECORD_FILE).read_text())
    assert record["requirements"] == str((tmp_path / "requirements.csv").resolve())
    assert [(m["subexperiment"], m["bytes"], m["line"]) for m in record["missing"]] == [(A, 32, 3), (B, 16, 4), (B, 32, 5)]
    output = capsys.readouterr()
    requirements = tmp_path / "requirements.csv"
    assert output.err.splitlines() == [
        f"perfgate check: error: {requirements}:3: no measurements for {A} (32 B): "
        f"no 32 B row in {s.summary_csv_name(A)}",
        f"perfgate check: error: {requirements}:4: no measurements for {B} (16, 32 B): "
        f"no {s.summary_csv_name(B)} in the experiment folder",
    ]
    assert f"{A}: 3 checks, 0 failed" in output.out


def test_regression_and_missing_data_exit_1_and_both_are_reported(tmp_path, experiment, capsys):
    # a proven regression outranks missing data (perfgate.outcome, issue 44); the missing row is still an error
    write_summary(experiment, A, {16: (25, 30, 30)})
    write_requirements(tmp_path / "requirements.csv", [(A, 16, 20, 30, 40), (B, 16, 20, 30, 40)])
    assert run_check(tmp_path, "--no-plots", "--junit", str(tmp_path / "junit.xml")) == s.EXIT_REGRESSION
    output = capsys.readouterr()
    assert "FAILED Median[16 B]: Median 25.000 us > requirement 20.000 us (+25.00%)" in output.out
    assert f"no measurements for {B} (16 B)" in output.err
    junit = (tmp_path / "junit.xml").read_text()
    assert 'failures="1" errors="3"' in junit


def test_uncovered_measured_payload_is_bad_input_and_nothing_is_written(tmp_path, experiment, capsys):
    path = write_summary(experiment, A, {16: (10, 20, 30), 32: (10, 20, 30)})
    write_requirements(tmp_path / "requirements.csv", [(A, 16, 20, 30, 40)])
    before = sorted(tmp_path.rglob("*"))
    assert run_check(tmp_path, "--junit", str(tmp_path / "junit.xml")) == s.EXIT_USAGE
    assert capsys.readouterr().err == (f"perfgate check: error: {path}:3: payload 32 B of {A} is not in the "
                                       f"requirements ({tmp_path / 'requirements.csv'})\n")
    assert sorted(tmp_path.rglob("*")) == before


def test_uncovered_measured_subexperiment_is_bad_input(tmp_path, experiment, capsys):
    write_summary(experiment, A, {16: (10, 20, 30)})
    path = write_summary(experiment, B, {16: (10, 20, 30)})
    write_requirements(tmp_path / "requirements.csv", [(A, 16, 20, 30, 40)])
    assert run_check(tmp_path) == s.EXIT_USAGE
    assert capsys.readouterr().err == (f"perfgate check: error: {path}: sub-experiment {B!r} is not in the "
                                       f"requirements ({tmp_path / 'requirements.csv'})\n")
    assert not (experiment / s.check_csv_name(A)).exists()


def test_floor_subexperiments_without_requirements_are_not_checked_and_not_errors(tmp_path, experiment, capsys):
    write_summary(experiment, A, {16: (10, 20, 30)})
    write_summary(experiment, "floor_udp", {16: (5, 6, 7)})
    write_requirements(tmp_path / "requirements.csv", [(A, 16, 20, 30, 40)])
    assert run_check(tmp_path, "--no-plots") == s.EXIT_OK
    assert "floor_udp: not checked (a floor sub-experiment without requirements)" in capsys.readouterr().out
    assert not (experiment / s.check_csv_name("floor_udp")).exists()
    assert json.loads((experiment / s.CHECK_RECORD_FILE).read_text())["not_checked"] == ["floor_udp"]


def test_zero_requirement_is_bad_input(tmp_path, experiment, capsys):
    write_summary(experiment, A, {16: (10, 20, 30)})
    write_requirements(tmp_path / "requirements.csv", [(A, 16, 0.0, 30, 40)])
    assert run_check(tmp_path) == s.EXIT_USAGE
    assert capsys.readouterr().err.startswith(f"perfgate check: error: {tmp_path / 'requirements.csv'}:2: "
                                              f"Median requirement of {A} at 16 B is 0.000 us")


def test_print_summaries_prints_each_report_as_a_table(tmp_path, experiment, capsys):
    write_summary(experiment, A, {16: (10, 20, 30)})
    write_summary(experiment, B, {16: (10, 20, 45.5)})
    write_requirements(tmp_path / "requirements.csv", [(B, 16, 20, 30, 40), (A, 16, 20, 30, 40)])
    assert run_check(tmp_path, "--print_summaries", "--no_plots") == s.EXIT_REGRESSION
    out = capsys.readouterr().out
    # in the requirements' order: B first
    assert out.index(f"{B}\n") < out.index(f"{A}\n")
    table = out[out.index(f"{B}\n"):out.index(f"{A}\n")].splitlines()
    assert table[1].split() == ["Check", "Bytes", "Requirement", "Experiment", "Difference", "Percentage", "over",
                                "requirement", "Status"]
    assert table[4].split() == ["Max", "16", "40.000", "45.500", "5.500", "13.750", "failed"]
    assert "FAILED Max[16 B]: Max 45.500 us > requirement 40.000 us (+13.75%)" in out


def test_check_plots_mark_failed_points(tmp_path, experiment):
    from perfgate.plotting import check_plots
    from perfgate.plotting.common import FAILED_COLOUR

    write_summary(experiment, A, {16: (10, 20, 30), 32: (30, 30, 30)})
    write_requirements(tmp_path / "requirements.csv", [(A, 16, 20, 30, 40), (A, 32, 20, 30, 40)])
    assert run_check(tmp_path) == s.EXIT_REGRESSION
    for magnitude in s.CHECKED_MAGNITUDES:
        path = s.check_png(tmp_path / "plots", A, magnitude)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
    report = files.read_check_report(experiment / s.check_csv_name(A))
    axes = check_plots.check_figure(report, A, s.MEDIAN).axes[0]
    red = [line for line in axes.lines if line.get_color() == FAILED_COLOUR]
    assert len(red) == 1 and red[0].get_xdata().tolist() == [32] and red[0].get_ydata().tolist() == [30.0]
    assert [text.get_text() for text in axes.texts] == ["+50.00%"]
    assert axes.get_title() == f"{A}: Median against requirement (1 of 2 failed)"


# --- rows the run was not asked for (docs/formats.md section 6; perfgate.latency.requested) -----------------
def narrowed(experiment: Path, subs: list[str], payloads: list[int]) -> None:
    """The metadata.json of a run given --subexperiments and --payloads, as `perfgate run` writes it."""
    files.write_metadata(experiment, {"requested_subexperiments": subs, "payloads": payloads})


def junit_testcases(path: Path) -> dict[tuple[str, str], str]:
    """(suite, testcase) -> 'passed', 'failure' or 'error'."""
    import xml.etree.ElementTree as ET

    cases = {}
    for suite in ET.parse(path).getroot().iter("testsuite"):
        for case in suite.iter("testcase"):
            state = "failure" if case.find("failure") is not None else "error" if case.find("error") is not None \
                else "passed"
            cases[(suite.get("name"), case.get("name"))] = state
    return cases


def test_rows_of_what_a_narrowed_run_was_not_asked_for_are_listed_not_checked(tmp_path, experiment, capsys):
    # asked for A at 16 B only: A at 32 B and all of B are not asked for: no testcase, no error, exit 0
    write_summary(experiment, A, {16: (10, 20, 30)})
    narrowed(experiment, [A, "floor_udp"], [16])
    write_requirements(tmp_path / "requirements.csv",
                       [(A, 16, 20, 30, 40), (A, 32, 20, 30, 40), (B, 16, 20, 30, 40), (B, 32, 20, 30, 40)])
    assert run_check(tmp_path, "--no-plots", "--junit", str(tmp_path / "junit.xml")) == s.EXIT_OK
    output = capsys.readouterr()
    assert output.err == ""
    assert (f"note: 3 requirement row(s) name results this run was not asked for (--subexperiments, --payloads): "
            f"not checked: {A} (32 B); {B} (16 to 32 B, 2 payloads)") in output.out
    assert "3 checks in 1 sub-experiment(s): 0 failed; 0 required payload result(s) without measurements" in output.out
    assert junit_testcases(tmp_path / "junit.xml") == {
        (f"latency.{A}", f"{m}[16 B]"): "passed" for m in s.CHECKED_MAGNITUDES}
    assert json.loads((experiment / s.CHECK_RECORD_FILE).read_text())["missing"] == []
    # `perfgate junit` finds the same from the folder's metadata
    assert main(["junit", "--experiment-directory", str(experiment), "--output", str(tmp_path / "again.xml")]) == 0
    assert junit_testcases(tmp_path / "again.xml") == junit_testcases(tmp_path / "junit.xml")


def test_a_row_asked_for_and_missing_is_still_an_error_in_a_narrowed_run(tmp_path, experiment, capsys):
    # asked for A and B at 16 B: B has no summary (its run failed), which is missing data (exit 3)
    write_summary(experiment, A, {16: (10, 20, 30)})
    narrowed(experiment, [A, B], [16])
    write_requirements(tmp_path / "requirements.csv", [(A, 16, 20, 30, 40), (A, 32, 20, 30, 40), (B, 16, 20, 30, 40)])
    assert run_check(tmp_path, "--no-plots", "--junit", str(tmp_path / "junit.xml")) == s.EXIT_INCOMPLETE
    output = capsys.readouterr()
    assert f"no measurements for {B} (16 B)" in output.err and f"{A} (32 B)" not in output.err
    assert f"not checked: {A} (32 B)" in output.out
    cases = junit_testcases(tmp_path / "junit.xml")
    assert cases[(f"latency.{B}", "Median[16 B]")] == "error"
    assert (f"latency.{A}", "Median[32 B]") not in cases and len(cases) == 6


def test_measured_rows_are_checked_whatever_the_metadata_says(tmp_path, experiment):
    # a summary the metadata does not list is still checked: a measured result never goes unseen
    write_summary(experiment, A, {16: (25, 30, 30)})
    narrowed(experiment, [B], [16])
    write_requirements(tmp_path / "requirements.csv", [(A, 16, 20, 30, 40), (B, 16, 20, 30, 40)])
    # B was asked for and is missing, A failed: the regression outranks the missing data (issue 44)
    assert run_check(tmp_path, "--no-plots") == s.EXIT_REGRESSION
    assert files.read_check_report(experiment / s.check_csv_name(A))[s.STATUS].tolist()[0] == s.FAILED


def test_a_run_asked_for_nothing_the_requirements_name_is_no_pass(tmp_path, experiment, capsys):
    write_summary(experiment, "floor_udp", {16: (10, 20, 30)})
    narrowed(experiment, ["floor_udp"], [16])
    write_requirements(tmp_path / "requirements.csv", [(A, 16, 20, 30, 40)])
    assert run_check(tmp_path, "--no-plots") == s.EXIT_USAGE
    assert "no requirement row names a result this run was asked for (1 row(s) name others): nothing to check" \
        in capsys.readouterr().err
    assert not (experiment / s.CHECK_RECORD_FILE).exists()


@pytest.mark.parametrize("metadata, message", [
    ({"requested_subexperiments": A, "payloads": [16]}, "'requested_subexperiments' is"),
    ({"requested_subexperiments": [A], "payloads": ["16"]}, "'payloads' is ['16']; expected a list of whole numbers"),
    ({"requested_subexperiments": ["no_such_sub"], "payloads": [16]}, "names 'no_such_sub', which is no sub-experiment"),
])
def test_what_a_run_asked_for_is_read_strictly(tmp_path, experiment, capsys, metadata, message):
    # read loosely, a bad field would make every row "not asked for": a pass of a run that measured nothing
    write_summary(experiment, A, {16: (10, 20, 30)})
    files.write_metadata(experiment, metadata)
    write_requirements(tmp_path / "requirements.csv", [(A, 16, 20, 30, 40), (B, 16, 20, 30, 40)])
    assert run_check(tmp_path, "--no-plots") == s.EXIT_USAGE
    err = capsys.readouterr().err
    assert message in err and str(experiment / s.METADATA_FILE) in err and len(err.splitlines()) == 1
    assert not (experiment / s.check_csv_name(A)).exists()
