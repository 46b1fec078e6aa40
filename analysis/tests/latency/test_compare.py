"""compare: threshold rule, the comparison CSVs, failures, missing data and usage errors."""
from __future__ import annotations

import pandas as pd
import pytest

from perfgate import cli, files
from perfgate.latency import compare
from perfgate import schema as s
from conftest import PLATFORM_A, metadata, scaled, tiny_summary, write_experiment

SUB = "interprocess_best_effort"
OTHER = "intraprocess_reliable"


def run_compare(reference, result, plots, *extra) -> int:
    return cli.main(["compare", "--reference", str(reference), "--results", str(result), "--plots-directory",
                     str(plots), *extra])


def test_exactly_at_the_threshold_passes_and_a_thousandth_over_fails():
    reference = tiny_summary({16: (10.0, 7.777, 3.0), 32: (10.0, 7.777, 3.0)})
    result = tiny_summary({16: (11.0, 8.554, 3.3), 32: (11.001, 8.555, 3.301)})
    table = compare.compare_summaries(reference, result, 0.1)
    status = table.set_index([s.CHECK, s.BYTES])[s.STATUS]
    assert status[(s.MEDIAN, 16)] == s.PASSED and status[(s.MEDIAN, 32)] == s.FAILED
    # 7.777 * 1.1 = 8.5547: 8.554 passes, 8.555 fails, and the written Limit reads 8.554
    assert status[(s.P99, 16)] == s.PASSED and status[(s.P99, 32)] == s.FAILED
    assert status[(s.MAX, 16)] == s.PASSED and status[(s.MAX, 32)] == s.FAILED
    limits = table.set_index([s.CHECK, s.BYTES])[s.LIMIT]
    assert files.format_float(limits[(s.P99, 16)]) == "8.554"
    assert files.format_float(limits[(s.MEDIAN, 16)]) == "11.000"
    assert list(table[s.CHECK].unique()) == list(s.COMPARED_MAGNITUDES)


def test_threshold_zero_fails_any_increase_and_passes_equal():
    reference = tiny_summary({16: (10.0, 20.0, 30.0)})
    result = tiny_summary({16: (10.0, 20.001, 29.0)})
    table = compare.compare_summaries(reference, result, 0.0).set_index(s.CHECK)
    assert table.loc[s.MEDIAN, s.STATUS] == s.PASSED
    assert table.loc[s.P99, s.STATUS] == s.FAILED
    assert table.loc[s.MAX, s.STATUS] == s.PASSED
    assert table.loc[s.MAX, s.PERCENT_OVER_REFERENCE] == pytest.approx(-100 / 30)


def test_compare_real_summary_against_a_slower_copy(tmp_path, real_summary, capsys):
    reference = write_experiment(tmp_path / "ref", {SUB: real_summary, OTHER: real_summary},
                                 metadata("v193", "2024-01-01T00:00:00Z"))
    result = write_experiment(tmp_path / "res", {SUB: scaled(real_summary, 1.2), OTHER: real_summary},
                              metadata("pr-42", "2024-01-02T00:00:00Z"))
    plots = tmp_path / "plots"
    assert run_compare(reference, result, plots) == s.EXIT_REGRESSION

    stacked = pd.read_csv(plots / s.comparison_csv_name(SUB))
    assert list(stacked.columns) == [*s.SUMMARY_COLUMNS, s.LABEL]
    assert stacked[s.LABEL].tolist() == ["Reference: v193"] * 11 + ["Result: pr-42"] * 11
    assert stacked[s.MEDIAN].iloc[0] == float(files.format_float(real_summary[s.MEDIAN].iloc[0]))
    assert stacked[s.MEDIAN].iloc[11] == float(files.format_float(real_summary[s.MEDIAN].iloc[0] * 1.2))

    failures = pd.read_csv(plots / s.COMPARISON_FAILURES_FILE)
    assert list(failures.columns) == list(s.COMPARISON_FAILURE_COLUMNS)
    assert len(failures) == 44 and set(failures[s.EXPERIMENT_TYPE]) == {SUB}
    assert failures[s.PERCENT_OVER_REFERENCE].between(19.9, 20.1).all()
    for pair in s.COMPARE_PLOT_PAIRS:
        for sub in (SUB, OTHER):
            assert s.compare_png(plots, sub, pair).read_bytes()[:4] == b"\x89PNG"
    out = capsys.readouterr().out
    assert "44 of 88 comparisons failed in 2 sub-experiments" in out
    assert f"{SUB},Median,16," in out


def test_result_within_the_threshold_passes_and_no_plots_still_writes_the_csvs(tmp_path, real_summary):
    reference = write_experiment(tmp_path / "ref", {SUB: real_summary}, metadata("a", "2024-01-01T00:00:00Z"))
    result = write_experiment(tmp_path / "res", {SUB: scaled(real_summary, 1.09)}, metadata("b", "2024-01-02T00:00:00Z"))
    plots = tmp_path / "plots"
    assert run_compare(reference, result, plots, "--no_plots", "--fail_threshold", "0.1") == s.EXIT_OK
    assert sorted(p.name for p in plots.iterdir()) == [s.COMPARISON_FAILURES_FILE, s.comparison_csv_name(SUB)]
    assert pd.read_csv(plots / s.COMPARISON_FAILURES_FILE).empty


def test_sub_experiment_missing_in_the_result_is_reported_and_exits_3(tmp_path, real_summary, capsys):
    reference = write_experiment(tmp_path / "ref", {SUB: real_summary, OTHER: real_summary}, None)
    result = write_experiment(tmp_path / "res", {SUB: scaled(real_summary, 1.5),
                                                 "interprocess_reliable": real_summary}, None)
    plots = tmp_path / "plots"
    assert run_compare(reference, result, plots, "--no-plots") == s.EXIT_INCOMPLETE
    err = capsys.readouterr().err
    assert f"error: {OTHER} is in the reference but missing in the result" in err
    assert "note: interprocess_reliable is only in the result; not compared" in err
    # what was compared is still written and reported: the regression too
    assert len(pd.read_csv(plots / s.COMPARISON_FAILURES_FILE)) == 44
    assert not (plots / s.comparison_csv_name(OTHER)).exists()


def test_payload_missing_in_the_result_exits_3(tmp_path, capsys):
    reference = write_experiment(tmp_path / "ref", {SUB: tiny_summary({16: (1, 2, 3), 32: (1, 2, 3)})}, None)
    result = write_experiment(tmp_path / "res", {SUB: tiny_summary({16: (1, 2, 3), 64: (1, 2, 3)})}, None)
    assert run_compare(reference, result, tmp_path / "plots", "--no-plots") == s.EXIT_INCOMPLETE
    err = capsys.readouterr().err
    assert f"error: {SUB}: payload(s) 32 B of the reference are missing in the result" in err
    assert f"note: {SUB}: payload(s) 64 B are only in the result" in err


def test_empty_result_folder_is_a_usage_error(tmp_path, real_summary, capsys):
    reference = write_experiment(tmp_path / "ref", {SUB: real_summary}, None)
    (tmp_path / "res").mkdir()
    plots = tmp_path / "plots"
    assert run_compare(reference, tmp_path / "res", plots) == s.EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"perfgate compare: error: {tmp_path / 'res'}: no summaries") and "\n" not in err
    assert not plots.exists()


def test_different_platforms_are_refused(tmp_path, real_summary, capsys):
    reference = write_experiment(tmp_path / "ref", {SUB: real_summary}, metadata("a", "2024-01-01T00:00:00Z"))
    result = write_experiment(tmp_path / "res", {SUB: real_summary},
                              metadata("b", "2024-01-02T00:00:00Z", platform=dict(PLATFORM_A, id="laptop")))
    assert run_compare(reference, result, tmp_path / "plots") == s.EXIT_USAGE
    err = capsys.readouterr().err
    assert "platform ids differ" in err and str(tmp_path / "ref") in err and str(tmp_path / "res") in err
    assert not (tmp_path / "plots").exists()


def test_malformed_result_summary_writes_nothing(tmp_path, real_summary, capsys):
    reference = write_experiment(tmp_path / "ref", {SUB: real_summary, OTHER: real_summary}, None)
    result = write_experiment(tmp_path / "res", {SUB: real_summary, OTHER: real_summary}, None)
    broken = result / s.summary_csv_name(OTHER)
    broken.write_text(broken.read_text().replace("Median", "Medain"))
    assert run_compare(reference, result, tmp_path / "plots") == s.EXIT_USAGE
    assert "missing column(s) 'Median'" in capsys.readouterr().err
    assert not (tmp_path / "plots").exists()
