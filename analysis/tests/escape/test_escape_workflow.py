"""Untrusted text in a log GitHub Actions reads workflow commands from (issue 23, escape/workflow.py):
a printed label, version, path or message never starts a line of its own, never a `::` command
and never an old-style `##[` one; the `::error` commands perfgate writes escape their data and
properties as the runner reads them back."""
from __future__ import annotations

import json

import pytest

from perfgate import cli
from perfgate import schema as s
from perfgate.escape import workflow
from escape_hostile import BAD_VERSION, FORGED, HOSTILE, command_lines, write_hostile_store


@pytest.mark.parametrize("text", HOSTILE + (BAD_VERSION, "::", " ::x", "::::", "#" * 5 + "[x]"))
def test_log_text_is_one_line_that_no_runner_reads_as_a_command(text):
    printed = workflow.log_text(text)
    assert printed.splitlines() == [printed]  # one line, whatever line break the text had
    assert not command_lines(printed) and not command_lines("prefix: " + printed)
    printed.encode("utf-8")  # a lone surrogate would stop print() with UnicodeEncodeError


def test_log_text_shows_what_it_escaped_and_leaves_ordinary_text_alone():
    assert workflow.log_text(FORGED) == "x\\n::warning title=FORGED::forged"
    assert workflow.log_text("\r::error::a") == "\\r::error::a"
    assert workflow.log_text("  ::add-mask::b") == "  \\x3a:add-mask::b"
    assert workflow.log_text("a##[warning]b") == "a#\\x23[warning]b"
    assert workflow.log_text("a\u2028b\x85c\x01d\udc80") == "a\\u2028b\\x85c\\x01d\\udc80"
    assert workflow.log_text("%0A::error::x") == "%0A::error::x"  # not a command: only a command's data is decoded
    for ordinary in ("nightly-2024-05-01", "pr-12 (candidate) 3.6.2 ü ß 東京", "a\tb", "C:/x y/z: w, v"):
        assert workflow.log_text(ordinary) == ordinary
    assert workflow.log_list(["a", "\n::b"]) == "a, \\n::b"


def test_command_data_and_properties_are_read_back_by_the_runner_as_one_command():
    assert workflow.command_data("a%b\r\nc") == "a%25b%0D%0Ac"
    assert workflow.command_property("x:y,z\n") == "x%3Ay%2Cz%0A"
    assert workflow.command_data("%0A::error::x") == "%250A::error::x"  # decoded back to the text itself
    line = f"::error title={workflow.command_property(FORGED)}::{workflow.command_data(FORGED)}"
    # one line; the properties end at the first `::`, the message is the rest
    assert line.splitlines() == [line]
    assert line.split("::", 2)[1:] == ["error title=x%0A%3A%3Awarning title=FORGED%3A%3Aforged",
                                       "x%0A::warning title=FORGED::forged"]


# --- end to end: the real commands on hostile input ---------------------------------------------------
def printed(capsys) -> str:
    captured = capsys.readouterr()
    return captured.out + captured.err


def test_history_prints_hostile_labels_and_versions_without_a_command(tmp_path, capsys):
    requirements = write_hostile_store(tmp_path)
    assert cli.main(["history", "--requirements", str(requirements), "--experiments-results", str(tmp_path / "store"),
                     "--plots-directory", str(tmp_path / "plots"), "--no-plots"]) == s.EXIT_OK
    out = printed(capsys)
    regressions = [line for line in out.splitlines() if line.startswith("  REGRESSION: ")]
    assert len(regressions) == 7, out  # the event (issue 24), then its 6 change points
    assert command_lines(out) == [], out
    # the label is still there to read, on the REGRESSION line itself
    assert all("#20 x\\n::warning title=FORGED::forged #20" in line for line in regressions)


def test_verdict_prints_hostile_sub_experiment_and_arms_without_a_command(tmp_path, capsys):
    from ab_inputs import SUBS, write_rounds
    write_rounds(tmp_path, 16, {SUBS[1]: 0.05})
    (tmp_path / s.METADATA_FILE).write_text(json.dumps({
        "kind": "ab", "label": FORGED, "samples": 200,
        "arms": {arm: {"spec": f"{FORGED} {arm}", "fastdds": {"version": BAD_VERSION, "commit": "\r::error::c"}}
                 for arm in s.AB_ARMS}}))
    assert cli.main(["verdict", "--ab-directory", str(tmp_path / "."), "--no-plots"]) == s.EXIT_REGRESSION
    out = printed(capsys)
    assert "REGRESSION" in out and command_lines(out) == [], out


def test_a_failed_builds_gate_prints_its_one_annotation_and_no_forged_one(tmp_path, capsys, monkeypatch):
    """The gate on a workspace whose build failed: the Fast DDS version and the error come from the
    build record (a source sets its own version): printed, annotated and reported, never a command."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / s.BUILD_RECORD_FILE).write_text(json.dumps({
        "status": s.BUILD_FAILED, "workspace": str(workspace), "error": f"cmake failed\n{FORGED}",
        "log": str(workspace / "log" / "x.log"), "log_tail": "##[error]tail", "started_utc": "2026-01-01T00:00:00Z",
        "fastdds": {"version": BAD_VERSION, "commit": "::error::abc", "package": "fastdds"}}))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert cli.main(["gate", "--workspace", str(workspace), "--output", str(tmp_path / "out"),
                     "--label", "::notice::a label ##[warning]x"]) == s.EXIT_INCOMPLETE
    out = printed(capsys)
    assert command_lines(out) == [line for line in out.splitlines() if line.startswith("::error title=Fast DDS build")]
    assert len(command_lines(out)) == 1, out


def test_check_junit_and_compare_print_hostile_paths_and_labels_without_a_command(tmp_path, capsys):
    from conftest import metadata, tiny_summary, write_experiment
    sub = "intraprocess_best_effort"
    folder = tmp_path / "x\n::warning title=FORGED::path ##[warning]p"  # paths from the command line
    folder.mkdir()
    experiment = write_experiment(folder / "e", {sub: tiny_summary({16: (10.0, 20.0, 30.0)})},
                                  metadata("\r::error::result label", "2026-01-01T00:00:00Z"))
    reference = write_experiment(folder / "r", {sub: tiny_summary({16: (5.0, 10.0, 15.0)})},
                                 metadata("  ::notice::reference label", "2026-01-01T00:00:00Z"))
    requirements = folder / "requirements.csv"  # 32 B required, not measured: a line naming the file
    requirements.write_text(f"Experiment type,Bytes,Median,99%,Max\n{sub},16,5.000,100.000,100.000\n"
                            f"{sub},32,5.000,100.000,100.000\n")
    junit = folder / "junit.xml"
    assert cli.main(["check", "--requirements", str(requirements), "--experiment-directory", str(experiment),
                     "--no-plots", "--plots-directory", str(folder / "plots"), "--junit", str(junit)]) \
        == s.EXIT_REGRESSION
    assert cli.main(["junit", "--experiment-directory", str(experiment), "--output", str(junit)]) == s.EXIT_REGRESSION
    assert cli.main(["compare", "--reference", str(reference), "--results", str(experiment), "--no-plots",
                     "--plots-directory", str(folder / "cmp")]) == s.EXIT_REGRESSION
    assert cli.main(["check", "--requirements", str(folder / "missing.csv"), "--experiment-directory",
                     str(experiment), "--no-plots", "--plots-directory", str(folder / "plots")]) == s.EXIT_USAGE
    out = printed(capsys)
    assert "FORGED" in out and "result label" in out and "reference label" in out
    assert command_lines(out) == [], out


@pytest.mark.fastdds
def test_the_gate_prints_a_hostile_requirements_path_without_a_command(tmp_path, capsys, monkeypatch):
    """The whole gate on the real Fast DDS: its requirements path (a pull request's) and its output folder
    hostile; only its own `::error` command starts with `::`."""
    monkeypatch.chdir(tmp_path)
    for name in (s.PLATFORM_ENV, s.PIN_CPUS_ENV, s.WORKSPACE_ENV, s.STORE_ENV, "GITHUB_WORKSPACE", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    sub = "intraprocess_best_effort"
    folder = tmp_path / "pr\n::warning title=FORGED::requirements ##[warning]x"
    folder.mkdir()
    requirements = folder / "bench.csv"  # a tight Median at 16 B: one failed check, one ::error of the gate's own
    requirements.write_text(f"Experiment type,Bytes,Median,99%,Max\n{sub},16,0.001,100000.000,100000.000\n")
    code = cli.main(["gate", "--output", str(folder / "out"), "--platform", "bench", "--quick", "--subexperiments", sub,
                     "--payloads", "16", "--label", "hostile-path", "--requirements", str(requirements)])
    out = printed(capsys)
    assert code == s.EXIT_REGRESSION, out
    own = [line for line in out.splitlines() if line.startswith("::error file=")]
    assert len(own) == 1 and "FORGED" in own[0] and "%0A" in own[0], out
    assert command_lines(out) == own, out
