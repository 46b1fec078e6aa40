"""The gate's own A/B table (report.ab_view) marks the tests that passed only at their layout threshold."""
from __future__ import annotations

import json

import ab_inputs
import conftest
import pytest

from perfgate import schema as s
from perfgate.errors import InputError
from perfgate.report import ab_view

INTRA, INTER = ab_inputs.SUBS


def verdict_with_layout(tmp_path):
    """rounds with INTRA +2.5 % (its layout threshold 3.5 %) and INTER +5 % (3 %), decided by `perfgate verdict`."""
    ab = tmp_path / "ab"
    ab_inputs.write_rounds(ab, 16, {INTRA: 0.025, INTER: 0.05}, seed=11)
    layout = tmp_path / "layout.json"
    layout.write_text(json.dumps({"platform": "test", "thresholds": {INTRA: 0.035, INTER: 0.03}}))
    done = conftest.perfgate_in_process("verdict", "--ab-directory", str(ab), "--no-plots",
                                        "--layout-thresholds", str(layout))
    assert done.returncode == s.EXIT_REGRESSION, done.stderr
    return ab


def test_the_gate_ab_table_says_which_passes_are_layout_sized(tmp_path):
    ab = verdict_with_layout(tmp_path)
    shown = ab_view.read_gate_ab(ab, "A/B against the baseline build", "ab/report.html", "Lower bound")
    header, rows = ab_view.table_cells(shown)
    status = {(row[0], row[1]): row[header.index("Status")] for row in rows}
    assert status == {(INTRA, "Median"): "passed (layout-sized)", (INTRA, "90%"): "passed (layout-sized)",
                      (INTER, "Median"): s.FAILED, (INTER, "90%"): s.FAILED}
    html = ab_view.html_section(shown)
    assert html.count('class="text status-passed">passed (layout-sized)</td>') == 2
    assert html.count('class="text status-failed">failed</td>') == 2
    assert sum("| passed (layout-sized) |" in line for line in ab_view.markdown_lines(shown)) == 2
    # without the layout file nothing is layout-sized: both fail plainly
    again = conftest.perfgate_in_process("verdict", "--ab-directory", str(ab), "--no-plots")
    assert again.returncode == s.EXIT_REGRESSION
    header, rows = ab_view.table_cells(ab_view.read_gate_ab(ab, "A/B", "ab/report.html", "Lower bound"))
    assert {row[header.index("Status")] for row in rows} == {s.FAILED}


@pytest.mark.parametrize("entries", ['"intraprocess_best_effort"', '[{"subexperiment": 1, "statistic": "Median"}]',
                                     '[["intraprocess_best_effort", "Median"]]'])
def test_a_malformed_layout_sized_list_is_an_input_error_naming_verdict_json(tmp_path, entries):
    ab = verdict_with_layout(tmp_path)
    record = (ab / s.VERDICT_JSON).read_text()
    start = record.index('"layout_sized"')
    end = record.index('"smallest_detectable_change"')
    (ab / s.VERDICT_JSON).write_text(record[:start] + f'"layout_sized": {entries}, ' + record[end:])
    with pytest.raises(InputError, match="'layout_sized' is not a list of tests") as caught:
        ab_view.read_gate_ab(ab, "A/B", "ab/report.html", "Lower bound")
    assert s.VERDICT_JSON in str(caught.value)
