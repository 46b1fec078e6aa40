"""Issue 45: every A/B test says the arms' values in us, the threshold it was held to and why it failed or
passed (ab.explain), in verdict.csv and on the A/B's pages; the heatmap colours only what the rounds can tell
from noise; the pages name sub-experiments in words."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from ab_inputs import PAYLOADS, SUBS, curtailed_copy, stored_rounds, write_rounds
from perfgate import cli
from perfgate import schema as s
from perfgate.ab import report as ab_report
from perfgate.ab import verdict as v
from perfgate.ab.rounds import read_rounds
from perfgate.report import words


def geometric_mean(values) -> float:
    return math.exp(sum(math.log(x) for x in values) / len(values))


def test_verdict_csv_gives_values_threshold_count_and_reason(tmp_path):
    write_rounds(tmp_path, 16, {SUBS[1]: 0.05})
    assert cli.main(["verdict", "--ab-directory", str(tmp_path), "--no-plots"]) == s.EXIT_REGRESSION
    table = pd.read_csv(tmp_path / s.VERDICT_CSV, dtype=str)
    assert tuple(table.columns) == v.VERDICT_COLUMNS + v.EXPLAINED_COLUMNS
    rows = {(r[s.EXPERIMENT_TYPE], r[v.STATISTIC]): r for _, r in table.iterrows()}
    slower = rows[(SUBS[1], s.MEDIAN)]
    assert slower[v.THRESHOLD] == "0.0100"
    # the rounds' medians are 60 us x (1 + payload / 16 KiB) x a machine state of sd 5 %: the geometric
    # mean over the payloads, median over the rounds, within that state of it
    expected = geometric_mean([60.0 * (1 + p / 16384) for p in PAYLOADS])
    baseline, candidate = float(slower[v.BASELINE_MEDIAN]), float(slower[v.CANDIDATE_MEDIAN])
    assert baseline == pytest.approx(expected, rel=0.06)
    assert candidate / baseline == pytest.approx(1.05, abs=0.01)
    above = int(slower[v.ABOVE])
    assert 14 <= above <= 16
    assert slower[v.REASON] == f"{above} of 16 rounds above +1.0%: slower beyond chance"
    unchanged = rows[(SUBS[0], s.MEDIAN)]
    assert float(unchanged[v.CANDIDATE_MEDIAN]) / float(unchanged[v.BASELINE_MEDIAN]) == pytest.approx(1, abs=0.01)
    assert float(unchanged[v.BASELINE_MEDIAN]) == pytest.approx(
        geometric_mean([2.0 * (1 + p / 16384) for p in PAYLOADS]), rel=0.06)
    assert unchanged[v.REASON] == (f"{int(unchanged[v.ABOVE])} of 16 rounds above +1.0%: not enough to fail "
                                   f"(Holm p {float(unchanged[v.ADJUSTED_P]):.2g} > 0.02)")
    assert int(unchanged[v.ABOVE]) <= 8


def test_too_few_rounds_say_the_test_could_never_fail(tmp_path):
    write_rounds(tmp_path, 3, {SUBS[1]: 0.05})
    assert cli.main(["verdict", "--ab-directory", str(tmp_path), "--no-plots"]) == s.EXIT_INCOMPLETE
    table = pd.read_csv(tmp_path / s.VERDICT_CSV, dtype=str)
    needed = v.rounds_needed(4, v.DEFAULT_ALPHA)
    assert set(table[v.REASON].str.split(": ", n=1).str[1]) == {f"too few rounds to ever fail (a test needs {needed})"}
    # three rounds of a 5 % slow-down are above the threshold, and still cannot fail: the reason says why
    assert table.loc[table[s.EXPERIMENT_TYPE] == SUBS[1], v.ABOVE].tolist() == ["3", "3"]


def test_a_curtailed_test_says_it_stopped_early_because_it_could_no_longer_fail(tmp_path):
    used = curtailed_copy(stored_rounds() / "aa", tmp_path / "ab")
    stopped = {sub: n for sub, n in used.items() if n < len(read_rounds(stored_rounds() / "aa").round_names)}
    assert stopped  # the stored A/A is decided before its last round in some sub-experiment
    assert cli.main(["verdict", "--ab-directory", str(tmp_path / "ab"), "--no-plots"]) == s.EXIT_OK
    table = pd.read_csv(tmp_path / "ab" / s.VERDICT_CSV, dtype=str)
    planned = len(read_rounds(stored_rounds() / "aa").round_names)
    for _, row in table[table[s.EXPERIMENT_TYPE].isin(stopped)].iterrows():
        assert row[v.ROUNDS] == str(stopped[row[s.EXPERIMENT_TYPE]])
        assert row[v.REASON].endswith(f"stopped early, its {planned} planned rounds could no longer make it fail")


def test_the_ab_pages_show_values_threshold_reason_and_words(tmp_path):
    write_rounds(tmp_path, 16, {SUBS[1]: 0.05})
    cli.main(["verdict", "--ab-directory", str(tmp_path), "--no-plots"])
    markdown = (tmp_path / s.REPORT_MARKDOWN).read_text()
    header = next(line for line in markdown.splitlines() if line.startswith("| Sub-experiment"))
    assert [cell.strip() for cell in header.strip("|").split("|")] == [
        "Sub-experiment", "Statistic", "Baseline [us]", "Candidate [us]", "Change", "Threshold", "Lower bound",
        "p (Holm)", "Rounds", "Status", "Reason"]
    first = next(line for line in markdown.splitlines() if line.startswith(f"| {SUBS[1]} | Median"))
    cells = [cell.strip() for cell in first.strip("|").split("|")]
    assert float(cells[3]) / float(cells[2]) == pytest.approx(1.05, abs=0.01) and cells[5] == "+1.0 %"
    assert cells[-1].endswith("slower beyond chance")
    assert "each arm's round-trip latency in us" in markdown
    page = (tmp_path / s.REPORT_HTML).read_text()
    assert "<li>interprocess_best_effort (UDPv4 over loopback, best effort)</li>" in page
    assert "<li>intraprocess_best_effort (intra-process (one process, no transport), best effort)</li>" in page


def test_the_heatmap_colours_only_what_the_rounds_tell_from_noise(tmp_path):
    write_rounds(tmp_path, 16, {SUBS[1]: 0.05, SUBS[0]: -0.2})
    rounds = read_rounds(tmp_path)
    decision = v.decide(v.log_ratios(rounds.table), order=rounds.subexperiments)
    changes, slower, faster = ab_report.heatmap_frame(decision, rounds.subexperiments)
    assert slower == {(SUBS[1], p) for p in PAYLOADS}
    assert faster == {(SUBS[0], p) for p in PAYLOADS}
    write_rounds(tmp_path / "aa", 4, {})
    rounds = read_rounds(tmp_path / "aa")
    decision = v.decide(v.log_ratios(rounds.table), order=rounds.subexperiments)
    changes, slower, faster = ab_report.heatmap_frame(decision, rounds.subexperiments)
    assert slower == set() and faster == set()  # an A/A's few rounds: every cell grey, whatever its size


@pytest.mark.parametrize("name, said", [
    ("interprocess_reliable_tcp_security", "TCPv4 over loopback, reliable, DDS Security"),
    ("intraprocess_reliable", "intra-process (one process, no transport), reliable"),
    ("interprocess_best_effort_1to4", "UDPv4 over loopback, best effort, 4 subscribers (the round trip to the last)"),
    ("interprocess_reliable_zero_copy", "shared memory, reliable, zero copy (data sharing, loaned samples)"),
    ("not_a_sub<b>", "not_a_sub<b>"),
])
def test_sub_experiments_are_named_in_words(name, said):
    assert words.subexperiment_words(name) == said
