"""Issue 28 item 1: the whole gate's A/A false-alarm rate, measured on the gates a results store keeps.

The store is built from a real quick gate of the system Fast DDS against itself (`--baseline-build
system`), stored as the gate stores a run (gate.run.store_files), then copies of it edited: a failed
latency A/B, a failed gross check, a failed throughput A/B, an incomplete A/B, a gate of two different
commits (no A/A) and one whose stored texts are hostile."""
from __future__ import annotations

import json
import math
import shutil

import pandas as pd
import pytest
from scipy import stats

from perfgate import cli
from perfgate import schema as s
from perfgate.gate import run as gate_run
from perfgate.store import experiments as results_store
from perfgate.errors import InputError
from perfgate.store.false_alarms import figures_lines, rate_figures, upper_bound
from gate_inputs import gate_folder, quick_gate

SUB = "intraprocess_best_effort"
HOSTILE = "system\n::error title=x::pwned <img src=x onerror=alert(1)> [link](https://evil.example) @org/team"
HOSTILE_DATE = "=HYPERLINK(\"https://evil.example\")"


# --- pure: the figures ---------------------------------------------------------------------------------
def test_clean_gates_needed_to_show_two_percent_at_95_percent():
    # 0 false alarms: 1 - 0.05^(1/n) <= 0.02 first at n = 149
    assert rate_figures(0, 1, 0.02).more_clean_gates == 148
    assert rate_figures(0, 148, 0.02).more_clean_gates == 1
    assert rate_figures(0, 149, 0.02).more_clean_gates == 0
    assert upper_bound(0, 149) == pytest.approx(1 - 0.05 ** (1 / 149))
    # one false alarm needs more: the smallest n whose one-sided upper bound of 1 in n is <= 2 %
    needed = rate_figures(1, 10, 0.02).more_clean_gates + 10
    assert upper_bound(1, needed) <= 0.02 < upper_bound(1, needed - 1)
    assert needed == 236


def test_the_interval_and_the_test_against_the_budget_are_exact():
    figures = rate_figures(4, 5, 0.02)
    # Clopper-Pearson from the beta quantiles, and P(X >= 4) for Binomial(5, 0.02) summed by hand
    assert figures.low == pytest.approx(stats.beta.ppf(0.025, 4, 2))
    assert figures.high == pytest.approx(stats.beta.ppf(0.975, 5, 1))
    assert figures.p_value == pytest.approx(sum(math.comb(5, i) * 0.02 ** i * 0.98 ** (5 - i) for i in (4, 5)))
    assert figures.contradicts()
    assert not rate_figures(0, 5, 0.02).contradicts() and rate_figures(0, 5, 0.02).p_value == 1.0


# --- a store of real gate outputs ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_aa_gate(tmp_path_factory):
    """The output folder of a real quick A/A gate of the system Fast DDS (one sub-experiment, one payload)."""
    folder = tmp_path_factory.mktemp("aa-gate")
    with pytest.MonkeyPatch.context() as monkeypatch:
        gate_folder(folder, monkeypatch)
        (folder / "requirements").mkdir()
        (folder / "requirements" / "bench.csv").write_text(
            f"Experiment type,Bytes,Median,99%,Max\n{SUB},16,100000,100000,100000\n")
        code = quick_gate(SUB, 16, "--output", "out", "--label", "aa-real", "--baseline-build", "system")
    assert code == s.EXIT_OK
    return folder / "out"


def add(store, label: str, gate_output) -> object:
    return results_store.add_experiment(store, label, gate_run.store_files(gate_output))


def edit_json(path, change) -> None:
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))


def fail_first_testcase(junit) -> None:
    text = junit.read_text()
    start = text.index("<testcase ")
    end = text.index("/>", start)
    junit.write_text(text[:end] + '><failure message="Median 9 us &gt; 0.5 us grossly" type="gross" /></testcase>'
                     + text[end + 2:])


@pytest.fixture
def store(tmp_path, real_aa_gate):
    store = tmp_path / "store"
    add(store, "a-pass", real_aa_gate)

    folder = add(store, "b-latency-ab-failed", real_aa_gate)
    edit_json(folder / "ab" / "verdict.json", lambda r: r.update(status="REGRESSION", exit_code=1))

    folder = add(store, "c-gross-failed", real_aa_gate)
    fail_first_testcase(folder / "junit.xml")

    folder = add(store, "d-throughput-ab-failed", real_aa_gate)
    (folder / "throughput" / "ab").mkdir(parents=True)
    verdict = json.loads((folder / "ab" / "verdict.json").read_text())
    (folder / "throughput" / "ab" / "verdict.json").write_text(json.dumps({**verdict, "kind": "throughput",
                                                                           "status": "REGRESSION"}))

    folder = add(store, "e-incomplete", real_aa_gate)
    edit_json(folder / "ab" / "verdict.json", lambda r: r.update(status="INCOMPLETE", exit_code=3))

    def two_commits(record):  # a real A/B of one commit against another: a regression that is no false alarm
        record.update(status="REGRESSION")
        record["arms"]["baseline"]["fastdds"]["commit"] = "a" * 40
        record["arms"]["candidate"]["fastdds"]["commit"] = "b" * 40

    folder = add(store, "f-not-aa", real_aa_gate)
    edit_json(folder / "ab" / "verdict.json", two_commits)

    def hostile(record):
        record.update(status="REGRESSION")
        for arm in record["arms"].values():
            arm["spec"] = HOSTILE

    folder = add(store, "g-hostile", real_aa_gate)
    edit_json(folder / "ab" / "verdict.json", hostile)
    edit_json(folder / "metadata.json", lambda r: r.update(created_utc=HOSTILE_DATE))
    return store


@pytest.mark.fastdds
def test_false_alarms_counts_the_whole_gate_of_every_aa_gate(store, tmp_path, capsys):
    csv_path, summary = tmp_path / "aa.csv", tmp_path / "summary.md"
    code = cli.main(["false-alarms", "--store", str(store), "--output", str(csv_path),
                     "--summary-markdown", str(summary)])
    out = capsys.readouterr().out
    assert code == s.EXIT_REGRESSION, out  # 4 of 5 is far above 2 %: the data contradict the budget
    assert "6 A/A gate(s)" in out and "1 other stored run(s) not A/A; 1 incomplete, not counted" in out
    assert "n 5 A/A gate(s), k 4 false alarm(s)" in out
    interval = stats.binomtest(4, 5).proportion_ci(method="exact")
    assert f"95% Clopper-Pearson interval {interval.low:.2%} to {interval.high:.2%}" in out
    p_value = sum(math.comb(5, i) * 0.02 ** i * 0.98 ** (5 - i) for i in (4, 5))
    assert f"the data contradict the 2% budget (p {p_value:.3g} <= 0.05)" in out
    assert "FALSE ALARM: b-latency-ab-failed (system, 2026" in out and ": latency A/B" in out
    assert "c-gross-failed (system" in out and "): gross checks" in out
    assert "d-throughput-ab-failed (system" in out and "): throughput A/B" in out
    assert "f-not-aa" not in out and "e-incomplete" not in out

    table = pd.read_csv(csv_path, keep_default_na=False)
    assert list(table.columns) == ["Label", "Fast DDS commit", "Date", "Status", "Failed parts", "Incomplete parts"]
    rows = {row["Label"]: row for row in table.to_dict("records")}
    assert sorted(rows) == ["a-pass", "b-latency-ab-failed", "c-gross-failed", "d-throughput-ab-failed",
                            "e-incomplete", "g-hostile"]
    assert [rows[label]["Status"] for label in sorted(rows)] == ["PASS", "false alarm", "false alarm", "false alarm",
                                                                  "INCOMPLETE", "false alarm"]
    assert rows["b-latency-ab-failed"]["Failed parts"] == "latency A/B"
    assert rows["c-gross-failed"]["Failed parts"] == "gross checks"
    assert rows["d-throughput-ab-failed"]["Failed parts"] == "throughput A/B"
    assert rows["e-incomplete"]["Incomplete parts"] == "latency A/B" and rows["e-incomplete"]["Failed parts"] == ""
    assert rows["a-pass"]["Fast DDS commit"] == "system"
    assert rows["a-pass"]["Date"].startswith("20")
    assert rows["g-hostile"]["Date"] == "'" + HOSTILE_DATE  # a spreadsheet reads no formula

    # untrusted texts: no workflow command, no line of their own on the console; nothing live in Markdown
    assert not any(line.lstrip().startswith("::") for line in out.splitlines())
    assert "FALSE ALARM: g-hostile (system\\n::error title=x::pwned <img" in out  # the break shown, not made
    markdown = summary.read_text()
    assert "**5** A/A gates, **4** false alarm(s), 1 incomplete" in markdown
    assert "<img" not in markdown and "](https" not in markdown and "://evil" not in markdown
    assert "\n::" not in markdown and "@org/team" not in markdown


@pytest.mark.fastdds
def test_false_alarms_without_an_aa_gate_is_missing_data(tmp_path, real_aa_gate, capsys):
    store = tmp_path / "store"
    folder = add(store, "not-aa", real_aa_gate)
    edit_json(folder / "ab" / "verdict.json",
              lambda r: r["arms"]["candidate"]["fastdds"].update(commit="c" * 40))
    assert cli.main(["false-alarms", "--store", str(store), "--output", str(tmp_path / "aa.csv")]) == s.EXIT_INCOMPLETE
    captured = capsys.readouterr()
    assert "0 A/A gate(s)" in captured.out and "1 other stored run(s) not A/A" in captured.out
    assert "no A/A gate that decided" in captured.err and len(captured.err.splitlines()) == 1
    assert not (tmp_path / "aa.csv").exists()
    # only incomplete A/A gates: still nothing decided
    edit_json(folder / "ab" / "verdict.json", lambda r: (r["arms"]["candidate"]["fastdds"].update(commit=None),
                                                         r.update(status="INCOMPLETE")))
    assert cli.main(["false-alarms", "--store", str(store)]) == s.EXIT_INCOMPLETE
    assert "1 incomplete, not counted" in capsys.readouterr().out


@pytest.mark.fastdds
@pytest.mark.parametrize("path, text, problem", [
    ("ab/verdict.json", '{"status": "PASS", "arms": ', "malformed JSON"),
    ("ab/verdict.json", '{"status": "MAYBE", "arms": {}}', "'status' is 'MAYBE'"),
    ("ab/verdict.json", '{"status": "PASS", "arms": {"baseline": 7, "candidate": {}}}', "'arms.baseline' is 7"),
    ("metadata.json", '{"platform": 5}', "'platform' is 5"),
    ("junit.xml", "<testsuites><testsuite", "malformed JUnit XML"),
])
def test_a_malformed_stored_file_is_one_line_naming_it(tmp_path, real_aa_gate, capsys, path, text, problem):
    store = tmp_path / "store"
    add(store, "a-pass", real_aa_gate)
    folder = add(store, "b-bad", real_aa_gate)
    (folder / path).write_text(text)
    assert cli.main(["false-alarms", "--store", str(store), "--output", str(tmp_path / "aa.csv")]) == s.EXIT_USAGE
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and str(folder / path) in err and problem in err, err
    assert not (tmp_path / "aa.csv").exists()  # nothing half-written


@pytest.mark.fastdds
def test_a_malformed_metadata_of_a_run_that_is_no_aa_gate_is_bad_input_too(tmp_path, real_aa_gate, capsys):
    store = tmp_path / "store"
    add(store, "a-pass", real_aa_gate)
    folder = add(store, "b-not-aa", real_aa_gate)
    edit_json(folder / "ab" / "verdict.json", lambda r: r["arms"]["candidate"]["fastdds"].update(commit="c" * 40))
    (folder / "metadata.json").write_text('{"created_utc": 7}')
    assert cli.main(["false-alarms", "--store", str(store)]) == s.EXIT_USAGE
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and str(folder / "metadata.json") in err and "'created_utc' is 7" in err


def test_no_store_is_bad_input(tmp_path, capsys):
    assert cli.main(["false-alarms", "--store", str(tmp_path / "nothing")]) == s.EXIT_USAGE
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "not a results store" in err


def test_an_empty_store_has_no_aa_gate(tmp_path, capsys):
    (tmp_path / "store" / "experiments").mkdir(parents=True)
    assert cli.main(["false-alarms", "--store", str(tmp_path / "store")]) == s.EXIT_INCOMPLETE
    assert "0 A/A gate(s)" in capsys.readouterr().out


@pytest.mark.fastdds
def test_platform_keeps_the_runs_of_that_machine_only(tmp_path, real_aa_gate, capsys):
    store = tmp_path / "store"
    add(store, "a-pass", real_aa_gate)
    folder = add(store, "b-other-machine", real_aa_gate)
    edit_json(folder / "ab" / "verdict.json", lambda r: r.update(status="REGRESSION"))
    edit_json(folder / "metadata.json", lambda r: r["platform"].update(id="0123456789abcdef"))
    this = json.loads((real_aa_gate / "metadata.json").read_text())["platform"]["id"]
    assert cli.main(["false-alarms", "--store", str(store), "--platform", this]) == s.EXIT_OK
    assert "n 1 A/A gate(s), k 0 false alarm(s)" in capsys.readouterr().out
    assert cli.main(["false-alarms", "--store", str(store), "--platform", "0123456789abcdef"]) == s.EXIT_REGRESSION
    assert "n 1 A/A gate(s), k 1 false alarm(s)" in capsys.readouterr().out
    shutil.rmtree(folder)


# --- issue 44 item 4: a budget far below what scipy's root finding resolves --------------------------------
@pytest.mark.parametrize("budget", [1e-9, 1e-12, 1e-15])
def test_a_tiny_budget_gets_the_exact_number_of_clean_gates(budget):
    """0 false alarms: the one-sided upper bound is 1 - 0.05**(1/n), so n = ceil(log(0.05) / log(1 - budget));
    it gave a traceback (scipy's integers) or a wrong count (its root finding stops near 1e-12) before."""
    figures = rate_figures(0, 1, budget)
    needed = figures.more_clean_gates + 1
    assert upper_bound(0, needed) <= budget < upper_bound(0, needed - 1)
    assert needed == pytest.approx(math.log(0.05) / math.log1p(-budget), rel=1e-6)


def test_a_budget_no_count_of_gates_could_show_is_refused_and_a_tiny_one_is_printed_as_it_is():
    # InputError: the command's one line and exit 2, before its CSV is written
    with pytest.raises(InputError, match=r"--budget 1e-300: no number of gates a float counts"):
        rate_figures(0, 1, 1e-300)
    lines = " ".join(figures_lines(rate_figures(0, 1, 1e-12), 1e-12))
    assert "the data do not contradict the 1e-10% budget" in lines and "<= 1e-10% at 95%" in lines
    assert " 0% " not in lines  # the budget was printed rounded, as 0%
