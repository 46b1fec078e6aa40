"""The gate's A/B table and the PR comment say the rounds each test used "of" the rounds planned for its
sub-experiment (verdict.json's planned_rounds: one number, or one per sub-experiment)."""
from __future__ import annotations

import json

import ab_inputs
import conftest
import pytest

from perfgate import schema as s
from perfgate.ab import curtail
from perfgate.errors import InputError
from perfgate.report import ab_view
from perfgate.report.comment import read_ab

INTRA, INTER = ab_inputs.SUBS


def decided(tmp_path, planned) -> object:
    ab = tmp_path / "ab"
    ab_inputs.write_rounds(ab, 16, {INTER: 0.05}, seed=3)
    curtail.write_record(ab, planned, {}, 0.01, 0.02)
    done = conftest.perfgate_in_process("verdict", "--ab-directory", str(ab), "--no-plots")
    assert done.returncode == s.EXIT_REGRESSION, done.stderr
    return ab


@pytest.mark.parametrize("planned, shown", [({INTRA: 16, INTER: 24}, {INTRA: "16 of 16", INTER: "16 of 24"}),
                                            (16, {INTRA: "16 of 16", INTER: "16 of 16"})])
def test_rounds_of_planned_per_sub_experiment(tmp_path, planned, shown):
    ab = decided(tmp_path, planned)
    assert json.loads((ab / s.VERDICT_JSON).read_text())["planned_rounds"] == planned
    gate_ab = ab_view.read_gate_ab(ab, "A/B against the baseline build", "ab/report.html", "Lower bound")
    header, rows = ab_view.table_cells(gate_ab)
    assert {row[0]: row[header.index(ab_view.ROUND_COLUMN)] for row in rows} == shown
    markdown = "\n".join(ab_view.markdown_lines(gate_ab))
    assert f"| {shown[INTER]} |" in markdown


def test_without_a_plan_the_rounds_are_a_number(tmp_path):
    ab = tmp_path / "ab"
    ab_inputs.write_rounds(ab, 12, {}, seed=4)
    assert conftest.perfgate_in_process("verdict", "--ab-directory", str(ab), "--no-plots").returncode == s.EXIT_OK
    header, rows = ab_view.table_cells(ab_view.read_gate_ab(ab, "A/B", "ab/report.html", "Lower bound"))
    assert {row[header.index(ab_view.ROUND_COLUMN)] for row in rows} == {"12"}


@pytest.mark.parametrize("planned", ['"16"', "0", "true", '{"intraprocess_best_effort": 1001}', "[16]"])
def test_a_malformed_plan_is_an_input_error_naming_verdict_json(tmp_path, planned):
    ab = decided(tmp_path, 16)
    record = json.loads((ab / s.VERDICT_JSON).read_text())
    record["planned_rounds"] = json.loads(planned)
    (ab / s.VERDICT_JSON).write_text(json.dumps(record))
    with pytest.raises(InputError, match="'planned_rounds' is neither") as caught:
        read_ab(ab, "Lower bound")
    assert s.VERDICT_JSON in str(caught.value)
