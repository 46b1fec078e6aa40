"""`perfgate gate` end to end on the real Fast DDS, its usage errors, and `perfgate promote-baseline`."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from conftest import live_processes_of
from perfgate.latency import check, process
from perfgate import cli, files, report
from perfgate.gate import run as gate_module
from perfgate.gate import plan as gate_plan
from perfgate.gate.request import DEFAULT_FAIL_THRESHOLD, GateRequest
from perfgate import schema as s

GATED = ["intraprocess_best_effort", "interprocess_reliable"]  # intra-process and UDPv4
PAYLOADS = [16, 1024]
GENEROUS_US = 100000.0  # no machine is this slow: only the deliberately tight row can fail
TIGHT = ("interprocess_reliable", 1024, s.MEDIAN)


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A fresh working folder (requirements/ and baselines/ are looked up there), no CI environment."""
    monkeypatch.chdir(tmp_path)
    for name in (s.PLATFORM_ENV, s.PIN_CPUS_ENV, s.WORKSPACE_ENV, s.STORE_ENV, "GITHUB_ACTIONS", "GITHUB_WORKSPACE", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def write_requirements(path: Path, subs, payloads, tight: dict | None = None) -> dict[tuple[str, int], int]:
    """Requirements for subs x payloads; returns each row's line in the file."""
    tight = tight or {}
    rows = [{s.EXPERIMENT_TYPE: sub, s.BYTES: payload,
             **{m: tight.get((sub, payload, m), GENEROUS_US) for m in s.CHECKED_MAGNITUDES}}
            for sub in subs for payload in payloads]
    files.write_csv(path, pd.DataFrame(rows, columns=list(s.REQUIREMENT_COLUMNS)))
    return {(row[s.EXPERIMENT_TYPE], row[s.BYTES]): number for number, row in enumerate(rows, start=2)}


def gate(*arguments: str) -> int:
    return cli.main(["gate", *arguments])


def gate_arguments(output: str, label: str, subs=GATED, payloads=PAYLOADS) -> list[str]:
    return ["--output", output, "--platform", "bench", "--quick", "--subexperiments", ",".join(subs),
            "--payloads", ",".join(map(str, payloads)), "--label", label]


def one_error_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "Traceback" not in text
    return lines[0]


# --- usage errors, found before anything is measured ----------------------------------------------
def test_a_platform_without_requirements_file_is_a_usage_error_that_says_how_to_make_one(workspace, capsys):
    assert gate("--output", "out", "--platform", "bench-7") == s.EXIT_USAGE
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith("perfgate gate: error: requirements/bench-7.csv: no requirements for platform 'bench-7'")
    assert "perfgate determine-requirements" in line and "--output-file requirements/bench-7.csv" in line
    assert not (workspace / "out").exists()


def test_the_platform_defaults_to_the_environment_then_local(workspace, monkeypatch, capsys):
    monkeypatch.setenv(s.PLATFORM_ENV, "rig-2")
    assert gate("--output", "out") == s.EXIT_USAGE
    assert "requirements/rig-2.csv: no requirements for platform 'rig-2'" in capsys.readouterr().err
    monkeypatch.delenv(s.PLATFORM_ENV)
    assert gate("--output", "out") == s.EXIT_USAGE
    assert "requirements/local.csv: no requirements for platform 'local'" in capsys.readouterr().err


@pytest.mark.parametrize("arguments, variables, message", [
    (["--workspace", "ws", "--fastdds", "system"], {}, "--workspace and --fastdds both name the Fast DDS to measure: give one"),
    (["--fastdds", "workspace"], {}, "--fastdds workspace: $PERFGATE_WORKSPACE is not set; give the workspace with --workspace"),
    ([], {s.WORKSPACE_ENV: "runner-ws"}, "runner-ws/perfgate-build.json: no build record (perfgate-build.json): build "
     "the workspace first with `perfgate build --workspace runner-ws` (the workspace chosen by $PERFGATE_WORKSPACE; "
     "--fastdds system measures the system's Fast DDS)"),
    (["--history"], {}, "--history: no results store; give --store or set $PERFGATE_STORE"),
    (["--store", " "], {s.STORE_ENV: "store"}, "--store is empty; give a path, or --no-history"),
])
def test_the_fast_dds_and_the_store_the_environment_gives_are_refused_before_measuring_when_unusable(
        workspace, capsys, monkeypatch, arguments, variables, message):
    write_requirements(workspace / "requirements" / "bench.csv", GATED, PAYLOADS)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert gate(*gate_arguments("out", "x"), *arguments) == s.EXIT_USAGE
    assert one_error_line(capsys.readouterr().err) == f"perfgate gate: error: {message}"
    assert not (workspace / "out").exists() and not (workspace / "store").exists()


def test_requirements_that_do_not_cover_a_requested_payload_stop_the_gate_before_measuring(workspace, capsys):
    write_requirements(workspace / "requirements" / "bench.csv", GATED, [16])
    assert gate(*gate_arguments("out", "first")) == s.EXIT_USAGE
    line = one_error_line(capsys.readouterr().err)
    assert "requirements/bench.csv: the requirements do not cover intraprocess_best_effort at 1024 B" in line
    assert not (workspace / "out").exists()


def test_a_damaged_stored_experiment_is_skipped_with_a_warning_not_a_blockade(workspace, fastdds_fixtures):
    # issue 23: one damaged folder (a crafted pull, a copy cut short) made every later gate of the runner
    # refuse before measuring; the gate now skips it, as history does, and warns
    write_requirements(workspace / "requirements" / "bench.csv", GATED, PAYLOADS)
    stored = workspace / "store" / s.STORE_EXPERIMENTS_DIR
    for name in ("older", "damaged"):
        (stored / name).mkdir(parents=True)
        shutil.copy(fastdds_fixtures / "v193" / "summary_intraprocess.csv", stored / name / s.summary_csv_name(GATED[0]))
    bad = stored / "damaged" / s.summary_csv_name(GATED[0])
    bad.write_text(bad.read_text().replace("\n16,", "\n-16,", 1))
    from datetime import datetime, timezone
    plan = gate_plan.plan_gate(GateRequest(output=str(workspace / "out"), quick=True, payloads=PAYLOADS,
                                           subexperiments=GATED, platform="bench", store="store", label="first"),
                               environment={}, this_platform_id=None, now=datetime.now(timezone.utc))
    assert plan.store == Path("store") and len(plan.warnings) == 1
    assert plan.warnings[0].startswith("the results store's store/experiments/damaged/"
                                       f"{s.summary_csv_name(GATED[0])}:2: ")
    assert plan.warnings[0].endswith("; experiment damaged skipped (perfgate store check lists them)")
    assert sorted(p.name for p in stored.iterdir() if not p.name.startswith(".")) == ["damaged", "older"]


def test_a_label_already_in_the_store_stops_the_gate_before_measuring(workspace, fastdds_fixtures, capsys):
    write_requirements(workspace / "requirements" / "bench.csv", GATED, PAYLOADS)
    stored = workspace / "store" / s.STORE_EXPERIMENTS_DIR / "first"
    stored.mkdir(parents=True)
    shutil.copy(fastdds_fixtures / "v193" / "summary_intraprocess.csv", stored / s.summary_csv_name(GATED[0]))
    assert gate(*gate_arguments("out", "first"), "--store", "store") == s.EXIT_USAGE
    line = one_error_line(capsys.readouterr().err)
    assert "store/experiments/first: the results store already has an experiment labelled 'first'" in line
    assert not (workspace / "out").exists()


def test_a_baseline_of_another_latency_definition_stops_the_gate_before_measuring(workspace, fastdds_fixtures,
                                                                                   capsys):
    write_requirements(workspace / "requirements" / "bench.csv", GATED, PAYLOADS)
    make_experiment(workspace / "published", fastdds_fixtures, {"intraprocess_best_effort": "intraprocess"})
    files.write_metadata(workspace / "published", {**files.read_metadata(workspace / "published"),
                                                   "latency_definition": s.HALF_ROUND_TRIP})
    assert cli.main(["promote-baseline", "--experiment", "published", "--platform", "bench"]) == s.EXIT_OK
    capsys.readouterr()
    assert gate(*gate_arguments("out", "first")) == s.EXIT_USAGE
    line = one_error_line(capsys.readouterr().err)
    assert "baselines/bench: baseline records latency definition 'half_round_trip'" in line
    assert not (workspace / "out").exists()


@pytest.mark.parametrize("extra, message", [
    (["--baseline-build", "no-such-build"], "--baseline: not 'system' and not a folder"),
    (["--baseline-build", "system", "--baseline", "baselines/bench"], "--baseline-build and --baseline are two ways"),
    (["--layouts", "12"], "--layouts is for the A/B of a gate with --baseline-build"),
    (["--baseline-build", "system", "--layouts", "12"], "--baseline: --layouts 12 needs an install `perfgate build "
                                                        "--layouts 12` kept, not the system's Fast DDS"),
    (["--baseline-build", "system", "--layouts", "100"], "--layouts must be from 0 to 64, got 100"),
])
def test_a_bad_baseline_build_stops_the_gate_before_measuring(workspace, capsys, extra, message):
    write_requirements(workspace / "requirements" / "bench.csv", GATED, PAYLOADS)
    assert gate(*gate_arguments("out", "first"), *extra) == s.EXIT_USAGE
    assert message in one_error_line(capsys.readouterr().err)
    assert not (workspace / "out").exists()


def test_failed_ab_tests_become_annotations_naming_sub_experiment_and_statistic(tmp_path):
    record = {"failed": [{"subexperiment": "interprocess_reliable", "statistic": "90%", "ratio": 1.0612,
                          "lower_bound": 1.0321, "adjusted_p_value": 0.0049, "rounds": 16}]}
    (tmp_path / s.VERDICT_JSON).write_text(json.dumps(record))
    assert gate_module.ab_annotations(tmp_path) == [
        "::error title=perfgate A/B%3A interprocess_reliable 90%25::interprocess_reliable 90%25: candidate 1.061x "
        "the baseline (lower bound 1.032x), Holm-adjusted p 0.0049, 16 rounds"]
    assert gate_module.ab_annotations(tmp_path / "none") == []


def test_bad_input_found_after_measuring_is_recorded_and_wins_the_exit_code(workspace, fastdds_fixtures):
    experiment = make_experiment(workspace / "experiment", fastdds_fixtures,
                                 {"intraprocess_best_effort": "intraprocess"})
    (experiment / s.check_csv_name("intraprocess_best_effort")).unlink()  # not checked yet
    requirements = workspace / "requirements.csv"
    write_requirements(requirements, ["interprocess_reliable"], [16, 32])  # does not cover the measured sub
    steps = gate_module.Steps()
    code = steps.call("check", None, lambda: check.command_check(
        requirements=str(requirements), experiment_directory=str(experiment),
        plots_directory=str(experiment / s.PLOTS_DIR), print_summaries=False, junit=None, no_plots=True))
    assert code == s.EXIT_USAGE
    assert len(steps.errors) == 1 and steps.codes == {"check": s.EXIT_USAGE}
    summary = experiment / s.summary_csv_name("intraprocess_best_effort")
    assert steps.errors[0].startswith(f"check: {summary}: sub-experiment 'intraprocess_best_effort' is not in the "
                                      f"requirements")
    verdict = report.verdict(report.load(experiment, requirements, step_errors=steps.errors))
    assert verdict.status == report.INCOMPLETE
    assert gate_module.final_exit_code(verdict, steps.codes) == s.EXIT_USAGE


# --- the whole gate on the real Fast DDS ----------------------------------------------------------
def junit_cases(path: Path) -> dict[tuple[str, str], ET.Element]:
    root = ET.parse(path).getroot()
    return {(suite.get("name"), case.get("name")): case
            for suite in root.iter("testsuite") for case in suite.iter("testcase")}


@pytest.mark.fastdds
def test_the_gate_passes_then_catches_a_too_tight_requirement_on_the_real_fastdds(workspace, capsys, monkeypatch):
    requirements = workspace / "requirements" / "bench.csv"
    write_requirements(requirements, GATED, PAYLOADS)
    step_summary = workspace / "step_summary.md"

    # 1. everything generous, no baseline yet: PASS, kept in the runner's store ($PERFGATE_STORE), history drawn
    monkeypatch.setenv(s.STORE_ENV, "store")
    code = gate(*gate_arguments("runs/first", "first"), "--summary-markdown", str(step_summary))
    monkeypatch.delenv(s.STORE_ENV)
    output = capsys.readouterr().out
    assert code == s.EXIT_OK, output
    first = workspace / "runs" / "first"
    assert output.splitlines()[0] == "perfgate gate: Fast DDS: the system's Fast DDS, chosen by default"
    assert "results store store (from $PERFGATE_STORE)" in output.splitlines()[1]
    assert "Measured: the system's Fast DDS, chosen by default" in (first / s.REPORT_MARKDOWN).read_text()
    assert "<dt>measured</dt><dd>the system&#x27;s Fast DDS, chosen by default</dd>" in (first / s.REPORT_HTML).read_text()
    assert output.splitlines()[-2].startswith("perfgate gate: PASS: all 12 checks passed, no baseline comparison")
    assert output.splitlines()[-1] == f"perfgate gate: report {first.resolve() / s.REPORT_HTML}"
    assert "::error" not in output
    markdown = (first / s.REPORT_MARKDOWN).read_text()
    assert markdown.splitlines()[0] == "## perfgate latency gate: **PASS**"
    assert "no baseline for platform 'bench'" in markdown
    assert step_summary.read_text() == markdown
    metadata = files.read_metadata(first)
    assert metadata["samples"] == 200 and metadata["label"] == "first"
    for sub in GATED:
        summary = files.read_summary(first / s.summary_csv_name(sub))
        assert list(summary[s.BYTES]) == PAYLOADS and set(summary[s.SAMPLES]) == {200}
    junit = junit_cases(first / s.JUNIT_FILE)
    assert len(junit) == 12 and not any(case.find("failure") is not None for case in junit.values())
    stored = workspace / "store" / s.STORE_EXPERIMENTS_DIR / "first"
    kept = [s.METADATA_FILE, s.JUNIT_FILE] + [name(sub) for sub in GATED
                                              for name in (s.summary_csv_name, s.check_csv_name, s.stored_raw_name)]
    assert sorted(p.name for p in stored.iterdir()) == sorted(kept)  # raw data gzip'd, no plots
    # the stored run re-processes to the very summaries the gate wrote (docs/history.md "Keeping raw samples")
    copy = workspace / "reprocessed"
    shutil.copytree(stored, copy)
    for sub in GATED:
        (copy / s.summary_csv_name(sub)).unlink()
    assert cli.main(["process", "--experiment-directory", str(copy), "--no-plots"]) == s.EXIT_OK
    for sub in GATED:
        assert (copy / s.summary_csv_name(sub)).read_bytes() == (first / s.summary_csv_name(sub)).read_bytes()
    capsys.readouterr()
    assert s.history_magnitude_png(workspace / "store" / s.STORE_HISTORY_DIR, GATED[0], s.MEDIAN).is_file()
    page = (first / s.REPORT_HTML).read_text()
    pngs = list((first / s.PLOTS_DIR).rglob("*.png"))
    assert len(pngs) == 2 * 2 * 2 + 4 + 2 * 3  # histograms and series, comparisons, check plots
    assert page.count('src="data:image/png;base64,') == len(pngs)

    # 2. it becomes the baseline
    assert cli.main(["promote-baseline", "--experiment", "runs/first", "--platform", "bench"]) == s.EXIT_OK
    capsys.readouterr()

    # 3. one requirement far too tight: exit 1, JUnit failure and annotation on that requirement's line
    lines = write_requirements(requirements, GATED, PAYLOADS, {TIGHT: 0.001})
    tight_line = lines[TIGHT[:2]]
    code = gate(*gate_arguments("runs/second", "second"), "--store", "store", "--annotations")
    output = capsys.readouterr().out
    second = workspace / "runs" / "second"
    verdict_line = output.splitlines()[-2]
    # the tight check fails; the quick baseline comparison may flag noise too, but it is a regression either way
    assert code == s.EXIT_REGRESSION, output
    assert verdict_line.startswith("perfgate gate: REGRESSION: 1 of 12 checks failed, ")
    annotations = [line for line in output.splitlines() if line.startswith("::error")]
    assert len(annotations) == 1
    assert annotations[0].startswith(f"::error file=requirements/bench.csv,line={tight_line},"
                                     f"title=Latency regression%3A interprocess_reliable Median[1024 B]::")
    assert "requirement 0.001 us" in annotations[0]
    cases = junit_cases(second / s.JUNIT_FILE)
    tight_case = ("latency.interprocess_reliable", "Median[1024 B]")
    assert cases[tight_case].find("failure") is not None
    assert cases[tight_case].get("file") == "requirements/bench.csv"
    assert cases[tight_case].get("line") == str(tight_line)
    others = [case for key, case in cases.items() if key != tight_case]
    assert len(others) == 11 and not any(c.find("failure") is not None for c in others)
    # compared with the promoted baseline, and the run is in the history beside the first
    comparison_dir = second / s.PLOTS_DIR / s.BASELINE_COMPARISON_DIR
    assert all((comparison_dir / s.comparison_csv_name(sub)).is_file() for sub in GATED)
    markdown = (second / s.REPORT_MARKDOWN).read_text()
    assert markdown.splitlines()[0] == "## perfgate latency gate: **REGRESSION**"
    assert "| interprocess_reliable | Median[1024 B] |" in markdown.split("### Failed checks (1)")[1].split("###")[0]
    # the stored experiments; dot entries are not experiments (the history's summary index, docs/formats.md)
    stored = (workspace / "store" / s.STORE_EXPERIMENTS_DIR).iterdir()
    assert sorted(p.name for p in stored if not p.name.startswith(".")) == ["first", "second"]


@pytest.mark.fastdds
@pytest.mark.heavy
def test_a_gate_decided_by_an_ab_stores_its_verdict_and_the_history_marks_it_on_the_real_fastdds(workspace, capsys):
    # the A/B runs before the run is added to the store, so the stored run keeps the verdict
    sub = GATED[0]
    write_requirements(workspace / "requirements" / "bench.csv", [sub], [16])
    code = gate(*gate_arguments("out", "ab-run", subs=[sub], payloads=[16]), "--baseline-build", "system",
                "--store", "store")
    output = capsys.readouterr().out
    assert code in (s.EXIT_OK, s.EXIT_REGRESSION), output
    stored = workspace / "store" / s.STORE_EXPERIMENTS_DIR / "ab-run"
    for name in (s.VERDICT_CSV, s.VERDICT_JSON):
        assert (stored / s.AB_DIR / name).read_bytes() == (workspace / "out" / s.AB_DIR / name).read_bytes()
    assert not (stored / s.AB_DIR / s.AB_ROUNDS_DIR).exists()  # the rounds stay in the experiment folder
    # the gate's A/B keeps idle CPUs awake, as `perfgate ab` does, unless --cpu-latency says otherwise
    assert files.read_metadata(workspace / "out" / s.AB_DIR)["cpu_latency"]["requested"] == "awake"
    assert (stored / s.stored_raw_name(sub)).is_file()
    record = json.loads((stored / s.AB_DIR / s.VERDICT_JSON).read_text())
    outcome = ("regression" if record["failed"] else "improvement" if record["improved"]
               else "incomplete" if record["too_few_rounds"] else "passed")
    page = (workspace / "store" / s.STORE_HISTORY_DIR / "history.html").read_text()
    assert f'"name":"A/B {outcome} (1)"' in page and '"x":[0]' in page


@pytest.mark.fastdds
@pytest.mark.parametrize("payloads", [None, [16, 1024]])
def test_a_quick_gate_narrowed_to_two_sub_experiments_passes_on_the_real_fastdds(workspace, capsys, monkeypatch,
                                                                                payloads):
    """Issue 22: `PERFGATE_PLATFORM=... perfgate gate --quick --subexperiments a,b [--payloads ...]` against the
    platform's requirements of all ten sub-experiments: the rows of the other eight (and other payloads)
    are not asked for: listed once, no testcase, PASS (it was exit 3, 'without measurements')."""
    write_requirements(workspace / "requirements" / "bench.csv", s.DEFAULT_SUBEXPERIMENT_NAMES, s.PAYLOADS)
    monkeypatch.setenv(s.PLATFORM_ENV, "bench")
    subs = ["intraprocess_best_effort", "interprocess_best_effort"]
    measured = payloads or list(s.PAYLOADS)
    code = gate("--quick", "--subexperiments", ",".join(subs), *(["--payloads", "16,1024"] if payloads else []),
                "--output", "out", "--no-history", "--summary-markdown", "summary.md")
    captured = capsys.readouterr()
    assert code == s.EXIT_OK, captured.out + captured.err
    checks = len(subs) * len(measured) * len(s.CHECKED_MAGNITUDES)
    assert captured.out.splitlines()[-2] == f"perfgate gate: PASS: all {checks} checks passed, no baseline comparison"
    not_asked = len(s.DEFAULT_SUBEXPERIMENT_NAMES) * len(s.PAYLOADS) - len(subs) * len(measured)
    assert captured.out.count(f"note: {not_asked} requirement row(s) name results this run was not asked for") == 1
    # the JUnit holds the testcases of what was measured, and nothing else: a check reports no failures
    root = ET.parse(workspace / "out" / s.JUNIT_FILE).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == (str(checks), "0", "0")
    assert sorted(suite.get("name") for suite in root.iter("testsuite")) == sorted(f"latency.{sub}" for sub in subs)
    assert {case.get("name") for case in root.iter("testcase")} == {
        f"{m}[{p} B]" for m in s.CHECKED_MAGNITUDES for p in measured}
    markdown = (workspace / "out" / s.REPORT_MARKDOWN).read_text()
    assert markdown.splitlines()[0] == "## perfgate latency gate: **PASS**"
    assert f"### Not asked for ({not_asked} requirement rows, not checked)" in markdown
    assert "| intraprocess_reliable | " in markdown and "### Missing data" not in markdown
    assert (workspace / "summary.md").read_text() == markdown
    assert f"Not asked for ({not_asked} requirement rows, not checked)" in (workspace / "out" / s.REPORT_HTML).read_text()


@pytest.mark.fastdds
def test_rows_not_asked_for_are_listed_and_a_regression_still_fails_the_gate(workspace, capsys, monkeypatch):
    # the requirements also list a sub-experiment this run was not asked for (--subexperiments): not checked,
    # not missing (issue 22: it used to make the gate INCOMPLETE); the regression of what was asked fails it
    requirements = workspace / "requirements" / "bench.csv"
    write_requirements(requirements, ["intraprocess_best_effort", "intraprocess_reliable"], [16],
                       {("intraprocess_best_effort", 16, s.MEDIAN): 0.001})  # Median <= 99% <= Max, or refused
    # a runner's workspace and store, set runner-wide: --fastdds system and --no-history win over both
    monkeypatch.setenv(s.WORKSPACE_ENV, str(workspace / "runner-ws"))
    monkeypatch.setenv(s.STORE_ENV, str(workspace / "runner-store"))
    code = gate(*gate_arguments("out", "partial", subs=["intraprocess_best_effort"], payloads=[16]),
                "--fastdds", "system", "--no-history")
    captured = capsys.readouterr()
    assert code == s.EXIT_REGRESSION, captured.out + captured.err
    assert captured.out.splitlines()[0] == "perfgate gate: Fast DDS: the system's Fast DDS, chosen by --fastdds system"
    assert "not added to a results store" in captured.out.splitlines()[1]
    assert not (workspace / "runner-store").exists()
    metadata = files.read_metadata(workspace / "out")
    assert metadata["fastdds"]["source"] == s.FASTDDS_SOURCE_SYSTEM
    assert captured.out.count("intraprocess_reliable (16 B)") == 1  # listed once on the console
    assert ("note: 1 requirement row(s) name results this run was not asked for (--subexperiments, --payloads): "
            "not checked: intraprocess_reliable (16 B)") in captured.out
    assert captured.out.splitlines()[-2].startswith("perfgate gate: REGRESSION: 1 of 3 checks failed, no baseline")
    markdown = (workspace / "out" / s.REPORT_MARKDOWN).read_text()
    assert markdown.splitlines()[0] == "## perfgate latency gate: **REGRESSION**"
    assert "### Failed checks (1)" in markdown and "### Missing data" not in markdown
    assert "### Not asked for (1 requirement rows, not checked)" in markdown
    assert "| intraprocess_reliable | 16 B |" in markdown
    junit = junit_cases(workspace / "out" / s.JUNIT_FILE)
    assert not [key for key in junit if key[0] == "latency.intraprocess_reliable"]
    assert junit[("latency.intraprocess_best_effort", "Median[16 B]")].find("failure") is not None


# --- promote-baseline -----------------------------------------------------------------------------
def test_the_platforms_stored_baseline_from_another_machine_is_not_compared_and_said_so(workspace, fastdds_fixtures):
    # baselines/<platform>/ measured on another machine (platform id "abc"): a newcomer's first gate still runs
    write_requirements(workspace / "requirements" / "bench.csv", GATED, PAYLOADS)
    make_experiment(workspace / "published", fastdds_fixtures, {"intraprocess_best_effort": "intraprocess"})
    assert cli.main(["promote-baseline", "--experiment", "published", "--platform", "bench"]) == s.EXIT_OK
    plan = plan_for(workspace, baseline=None, this_platform_id="this-machine")
    assert plan.baseline is None
    assert plan.baseline_note == ("baseline baselines/bench was measured on platform id abc, this machine is "
                                  "this-machine: not compared")
    # the same baseline named explicitly is a usage error: the user asked for that comparison
    with pytest.raises(gate_module.InputError, match="measured on platform id abc, this machine is this-machine"):
        plan_for(workspace, baseline="baselines/bench", this_platform_id="this-machine")
    # on the machine it was measured on, it is compared
    assert plan_for(workspace, baseline=None, this_platform_id="abc").baseline == Path("baselines/bench")


def test_pinned_cpus_are_checked_before_measuring_and_passed_to_the_run(workspace):
    write_requirements(workspace / "requirements" / "bench.csv", GATED, PAYLOADS)
    cpu = min(os.sched_getaffinity(0))
    assert plan_for(workspace, baseline=None, this_platform_id="abc", pin_cpus=f"{cpu},{cpu}").pin_cpus == f"{cpu},{cpu}"
    with pytest.raises(gate_module.InputError, match="--pin-cpus: CPU 4096 is not available"):
        plan_for(workspace, baseline=None, this_platform_id="abc", pin_cpus="4096")
    assert not (workspace / "out").exists()


def plan_for(workspace: Path, baseline: str | None, this_platform_id: str, pin_cpus: str | None = None):
    from datetime import datetime, timezone

    return gate_plan.plan_gate(GateRequest(output=str(workspace / "out"), quick=True, payloads=PAYLOADS,
                                           subexperiments=GATED, platform="bench", baseline=baseline, label="first",
                                           pin_cpus=pin_cpus),
                               environment={}, this_platform_id=this_platform_id, now=datetime.now(timezone.utc))


def make_experiment(folder: Path, fastdds_fixtures: Path, subs: dict[str, str], outcome=s.OUTCOME_OK) -> Path:
    """An experiment folder from the published 1.9.3 measurements (raw, summary, a check report, metadata)."""
    folder.mkdir(parents=True)
    for sub, variant in subs.items():
        raw = files.read_raw(fastdds_fixtures / "v193" / f"measurements_{variant}.csv")
        raw = raw[raw[s.PAYLOAD].isin([16, 32])]
        files.write_csv(folder / s.raw_csv_name(sub), raw)
        files.write_csv(folder / s.summary_csv_name(sub), process.summarise(raw))
        (folder / s.check_csv_name(sub)).write_text(",".join(s.CHECK_COLUMNS) + "\n")
    files.write_metadata(folder, {"label": folder.name, "platform": {"id": "abc"},
                                  "subexperiments": {sub: {"outcome": outcome} for sub in subs}})
    return folder


def test_promote_baseline_keeps_summaries_and_metadata_and_replaces_the_old_one_whole(workspace, fastdds_fixtures,
                                                                                     capsys):
    both = {"intraprocess_best_effort": "intraprocess", "interprocess_best_effort": "interprocess"}
    make_experiment(workspace / "one", fastdds_fixtures, both)
    assert cli.main(["promote-baseline", "--experiment", "one", "--platform", "bench"]) == s.EXIT_OK
    target = workspace / "baselines" / "bench"
    assert sorted(p.name for p in target.iterdir()) == sorted([s.METADATA_FILE, *map(s.summary_csv_name, both)])
    assert (target / s.summary_csv_name("interprocess_best_effort")).read_bytes() == \
        (workspace / "one" / s.summary_csv_name("interprocess_best_effort")).read_bytes()
    assert "baseline of 'bench' is now 'one'" in capsys.readouterr().out

    # a newer experiment with one sub-experiment replaces the baseline as a whole: nothing of the old stays
    make_experiment(workspace / "two", fastdds_fixtures, {"intraprocess_best_effort": "intraprocess"})
    assert cli.main(["promote-baseline", "--experiment", "two", "--platform", "bench",
                     "--baselines_dir", "baselines"]) == s.EXIT_OK
    assert sorted(p.name for p in target.iterdir()) == sorted([s.METADATA_FILE,
                                                               s.summary_csv_name("intraprocess_best_effort")])
    assert json.loads((target / s.METADATA_FILE).read_text())["label"] == "two"
    assert [p.name for p in (workspace / "baselines").iterdir()] == ["bench"]  # no temporary folders left


def test_promote_baseline_refuses_an_incomplete_experiment_and_keeps_the_old_baseline(workspace, fastdds_fixtures,
                                                                                       capsys):
    make_experiment(workspace / "good", fastdds_fixtures, {"intraprocess_best_effort": "intraprocess"})
    assert cli.main(["promote-baseline", "--experiment", "good", "--platform", "bench"]) == s.EXIT_OK
    before = {p.name: p.read_bytes() for p in (workspace / "baselines" / "bench").iterdir()}
    make_experiment(workspace / "bad", fastdds_fixtures, {"interprocess_best_effort": "interprocess"},
                    s.OUTCOME_INCOMPLETE)
    capsys.readouterr()
    assert cli.main(["promote-baseline", "--experiment", "bad", "--platform", "bench"]) == s.EXIT_USAGE
    line = one_error_line(capsys.readouterr().err)
    assert line == ("perfgate promote-baseline: error: bad: the experiment is incomplete, a baseline must be complete: "
                    "interprocess_best_effort (incomplete)")
    assert {p.name: p.read_bytes() for p in (workspace / "baselines" / "bench").iterdir()} == before
    assert [p.name for p in (workspace / "baselines").iterdir()] == ["bench"]


def test_promote_baseline_refuses_a_folder_without_metadata_or_a_bad_platform_name(workspace, fastdds_fixtures, capsys):
    folder = make_experiment(workspace / "old-tooling", fastdds_fixtures, {"intraprocess_best_effort": "intraprocess"})
    (folder / s.METADATA_FILE).unlink()
    assert cli.main(["promote-baseline", "--experiment", "old-tooling", "--platform", "bench"]) == s.EXIT_USAGE
    assert "old-tooling: no metadata.json" in one_error_line(capsys.readouterr().err)
    make_experiment(workspace / "fine", fastdds_fixtures, {"intraprocess_best_effort": "intraprocess"})
    assert cli.main(["promote-baseline", "--experiment", "fine", "--platform", "../elsewhere"]) == s.EXIT_USAGE
    assert "platform name '../elsewhere'" in one_error_line(capsys.readouterr().err)
    assert not (workspace / "baselines").exists() and not (workspace / "elsewhere").exists()


@pytest.mark.parametrize("value, message", [
    ("4096", "--pin-cpus: CPU 4096 is not available"),
    # no option parser sees the variable: an empty item (a CPU lost in a script) is refused here too
    ("0,", "--pin-cpus '0,' has an empty item"), (",0", "--pin-cpus ',0' has an empty item"),
    ("0,,1", "--pin-cpus '0,,1' has an empty item"),
])
def test_the_machine_wide_pinning_comes_from_the_environment(workspace, monkeypatch, capsys, value, message):
    # an impossible CPU in $PERFGATE_PIN_CPUS proves the gate read it: refused before anything is measured
    write_requirements(workspace / "requirements" / "bench.csv", GATED, PAYLOADS)
    monkeypatch.setenv(s.PIN_CPUS_ENV, value)
    assert gate(*gate_arguments("out", "first")) == s.EXIT_USAGE
    assert message in one_error_line(capsys.readouterr().err)
    assert not (workspace / "out").exists()


@pytest.mark.fastdds
@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_gate_still_writes_its_reports_marked_incomplete(workspace, signal_number):
    """A cancelled CI job (SIGTERM) or Ctrl-C during the measurement: report.md, report.html and the
    JUnit file say what was measured and that the run was interrupted; exit 3; nothing left running."""
    write_requirements(workspace / "requirements" / "bench.csv", GATED, PAYLOADS)
    arguments = gate_arguments("out", "cut", GATED, PAYLOADS)
    arguments[arguments.index("--quick")] = "--samples"
    arguments.insert(arguments.index("--samples") + 1, "200000")  # long enough to be cut short
    # SIGINT at its default in the gate: a test runner started in the background (`cmd &` in a
    # script) passes SIGINT on ignored, and a program started so rightly keeps ignoring it.
    gate_process = subprocess.Popen([sys.executable, "-m", "perfgate.cli", "gate", *arguments, "--store", "store"],
                                    cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120  # for the measurement to start on a loaded machine
    while time.monotonic() < deadline and gate_process.poll() is None:
        metadata = workspace / "out" / s.METADATA_FILE
        if metadata.exists() and live_processes_of(files.read_metadata(metadata.parent)["run_id"]):
            break
        time.sleep(0.1)
    assert gate_process.poll() is None, gate_process.communicate()
    run_id = files.read_metadata(workspace / "out")["run_id"]
    gate_process.send_signal(signal_number)
    stdout, stderr = gate_process.communicate(timeout=120)
    assert gate_process.returncode == s.EXIT_INCOMPLETE, stdout + stderr
    assert "run: interrupted (SIGINT or SIGTERM)" in stderr
    assert "INCOMPLETE" in stdout.splitlines()[-2]
    assert "interrupted" in (workspace / "out" / s.REPORT_MARKDOWN).read_text()
    assert "interrupted" in (workspace / "out" / s.REPORT_HTML).read_text()
    suites = ET.parse(workspace / "out" / s.JUNIT_FILE).getroot()
    assert int(suites.get("errors")) > 0  # what was not measured is an error, never a pass
    assert files.read_metadata(workspace / "out")["interrupted"] is True
    assert not (workspace / "store" / s.STORE_EXPERIMENTS_DIR / "cut").exists()  # never in the history
    assert live_processes_of(run_id) == []


@pytest.mark.fastdds
@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT])
def test_a_gate_stopped_while_drawing_the_history_ends_its_workers_and_still_reports(workspace, signal_number):
    """Stopped while its plot workers draw (here the history's, the longest plotting step): no worker
    outlives the gate, no temporary or empty PNG is left, the reports are written, exit 3."""
    from history_synthetic import write_store
    from perfgate.measure.platform_info import this_machine

    write_requirements(workspace / "requirements" / "bench.csv", GATED, PAYLOADS)
    write_store(workspace / "store", 30, 20)  # 30 earlier runs: enough history plots to stop the gate among them
    for metadata_path in (workspace / "store" / s.STORE_EXPERIMENTS_DIR).glob(f"*/{s.METADATA_FILE}"):
        record = json.loads(metadata_path.read_text())
        record["platform"]["id"] = this_machine().id
        metadata_path.write_text(json.dumps(record))
    history_plots = workspace / "store" / s.STORE_HISTORY_DIR
    gate_process = subprocess.Popen([sys.executable, "-m", "perfgate.cli", "gate", *gate_arguments("out", "drawn"),
                                     "--store", "store"], cwd=workspace, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True,
                                    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 600  # a quick run of two sub-experiments, then the history, on a loaded machine
    while time.monotonic() < deadline and gate_process.poll() is None and not list(history_plots.rglob("*.png")):
        time.sleep(0.01)
    assert gate_process.poll() is None, gate_process.communicate()
    group = [int(p.name) for p in Path("/proc").glob("[0-9]*") if process_group(int(p.name)) == gate_process.pid]
    assert len(group) > 1  # the gate and its plot workers
    gate_process.send_signal(signal_number)
    stdout, stderr = gate_process.communicate(timeout=120)
    assert gate_process.returncode == s.EXIT_INCOMPLETE, stdout + stderr
    assert "history: interrupted (SIGINT or SIGTERM)" in stderr and "Traceback" not in stderr
    assert "interrupted" in (workspace / "out" / s.REPORT_MARKDOWN).read_text()
    assert "interrupted" in (workspace / "out" / s.REPORT_HTML).read_text()
    ET.parse(workspace / "out" / s.JUNIT_FILE)
    assert [pid for pid in group if process_group(pid) == gate_process.pid] == []
    left = [p for p in workspace.rglob("*") if p.is_file() and (".tmp" in p.name or p.suffix == ".png"
                                                                 and p.stat().st_size == 0)]
    assert left == []


def process_group(pid: int) -> int | None:
    """The process group of a live (not zombie) process; None for a dead one."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else int(fields[2])


def test_requirements_derived_on_another_platform_are_applied_with_a_warning(tmp_path):
    requirements = tmp_path / "req.csv"
    other = {"platform": {"id": "aaaaaaaaaaaaaaaa", "cpu_model": "Xeon"}}
    warning = gate_plan.requirements_platform_warning(requirements, other, "bbbbbbbbbbbbbbbb")
    assert warning == (f"{requirements} was derived on platform id aaaaaaaaaaaaaaaa, this machine is "
                       "bbbbbbbbbbbbbbbb: its limits may not fit this machine")
    assert gate_plan.requirements_platform_warning(requirements, other, "aaaaaaaaaaaaaaaa") is None
    assert gate_plan.requirements_platform_warning(requirements, None, "bbbbbbbbbbbbbbbb") is None  # no provenance


def test_the_warning_reaches_the_reports_of_a_gate(workspace, fastdds_fixtures, capsys):
    sub = "intraprocess_best_effort"
    write_requirements(workspace / "requirements" / "bench.csv", [sub], [16, 32])
    (workspace / "requirements" / "bench_provenance.json").write_text(
        json.dumps({"platform": {"id": "aaaaaaaaaaaaaaaa"}}))
    plan = gate_plan.plan_gate(GateRequest(output="out", quick=True, payloads=[16, 32], subexperiments=[sub],
                                           platform="bench", label="x"),
                               environment={}, this_platform_id="bbbbbbbbbbbbbbbb",
                               now=gate_module.datetime.now(gate_module.timezone.utc))
    assert plan.warnings == ("requirements/bench.csv was derived on platform id aaaaaaaaaaaaaaaa, this machine is "
                             "bbbbbbbbbbbbbbbb: its limits may not fit this machine",)
    experiment = make_experiment(workspace / "out", fastdds_fixtures, {sub: "intraprocess"})
    assert check.command_check(requirements="requirements/bench.csv", experiment_directory=str(experiment),
                               plots_directory=str(experiment / "plots"), no_plots=True) == s.EXIT_OK
    results = report.load(experiment, workspace / "requirements" / "bench.csv", warnings=list(plan.warnings))
    assert f"- :warning: {plan.warnings[0]}" in report.markdown_summary(results)
    assert f'<ul class="warnings"><li>{plan.warnings[0]}</li></ul>' in report.html_page(results, {})


# --- the platform's throughput and resource requirements, wherever --requirements points (issue 22) ----
def plan_with(workspace: Path, **given) -> gate_plan.GatePlan:
    return gate_plan.plan_gate(GateRequest(output="out", quick=True, payloads=[16], subexperiments=[GATED[0]],
                                           platform="bench", label="x", history=False, **given),
                               environment={}, this_platform_id=None, now=gate_module.datetime.now(gate_module.timezone.utc))


THROUGHPUT_HEADER = "Experiment type,Bytes,Demand,Recovery time,Subscription throughput\n"


def test_the_platforms_throughput_and_resource_requirements_are_found_when_requirements_point_elsewhere(workspace):
    # the platform's files in requirements/, and a copy of its latency requirements elsewhere (to edit one row)
    write_requirements(workspace / "requirements" / "bench.csv", [GATED[0]], [16])
    (workspace / "requirements" / "bench_throughput.csv").write_text(
        THROUGHPUT_HEADER + f"throughput_{GATED[0]},16,100,5,1.0\n")
    (workspace / "requirements" / "bench_resources.json").write_text(
        '{"platform": "bench", "resources": {"cpu[%]": 200.0}}\n')
    copy = workspace / "elsewhere" / "copy.csv"
    copy.parent.mkdir()
    shutil.copy(workspace / "requirements" / "bench.csv", copy)
    plan = plan_with(workspace, requirements=str(copy), experiments=["latency", "throughput", "resources"])
    assert plan.requirements == copy
    assert plan.throughput_requirements == Path("requirements/bench_throughput.csv")
    assert plan.throughput_table[s.EXPERIMENT_TYPE].tolist() == [f"throughput_{GATED[0]}"]
    assert plan.resources_requirements == Path("requirements/bench_resources.json")
    # --throughput-requirements names another file, which must exist
    other = workspace / "elsewhere" / "tp.csv"
    other.write_text(THROUGHPUT_HEADER + f"throughput_{GATED[0]},16,1000,5,2.0\n")
    plan = plan_with(workspace, requirements=str(copy), experiments=["latency", "throughput"],
                     throughput_requirements=str(other))
    assert plan.throughput_requirements == other and plan.throughput_table["Demand"].tolist() == [1000]
    with pytest.raises(gate_plan.InputError, match="throughput requirements file not found"):
        plan_with(workspace, requirements=str(copy), experiments=["latency", "throughput"],
                  throughput_requirements=str(workspace / "absent.csv"))
    with pytest.raises(gate_plan.InputError, match="--throughput-requirements is for a gate that measures throughput"):
        plan_with(workspace, requirements=str(copy), throughput_requirements=str(other))


def test_the_throughput_requirements_option_reaches_the_gate_and_its_errors_are_one_line(workspace, capsys):
    write_requirements(workspace / "requirements" / "bench.csv", [GATED[0]], [16])
    code = gate("--output", "out", "--platform", "bench", "--quick", "--subexperiments", GATED[0], "--payloads", "16",
                "--no-history", "--experiments", "latency,throughput", "--throughput-requirements", "nothing.csv")
    assert code == s.EXIT_USAGE
    assert one_error_line(capsys.readouterr().err) == \
        "perfgate gate: error: nothing.csv: throughput requirements file not found"
    assert not (workspace / "out").exists()


def test_a_gate_of_the_floor_alone_is_refused_before_measuring(workspace, capsys):
    write_requirements(workspace / "requirements" / "bench.csv", [GATED[0]], [16])
    assert gate("--output", "out", "--platform", "bench", "--quick", "--subexperiments", "floor_udp",
                "--no-history") == s.EXIT_USAGE
    assert "names only the machine's floor, which is never checked" in one_error_line(capsys.readouterr().err)
    assert not (workspace / "out").exists()


def test_a_narrowed_gate_that_measured_nothing_writes_errors_for_what_it_asked_for_only(workspace):
    # interrupted before the first summary: every row it asked for is an <error>, the rest no testcase
    requirements = workspace / "requirements" / "bench.csv"
    write_requirements(requirements, GATED, PAYLOADS)
    plan = gate_plan.GatePlan(output=workspace / "out", platform="bench", requirements=requirements, samples=200,
                              payloads=[16], subexperiments=[GATED[0], "floor_udp"], label="x", baseline=None,
                              baseline_note="", store=None)
    gate_module.write_unmeasured_junit(plan)
    cases = junit_cases(workspace / "out" / s.JUNIT_FILE)
    assert sorted(cases) == sorted((f"latency.{GATED[0]}", f"{m}[16 B]") for m in s.CHECKED_MAGNITUDES)
    assert all(case.find("error") is not None for case in cases.values())


def test_the_gates_command_line_is_one_typed_request():
    """Every option of `perfgate gate` is a field of GateRequest and nothing else is: the parsed command
    line becomes one object (gate.run.command_gate), whose defaults are the parser's."""
    import dataclasses

    parsed = vars(cli.parse_arguments(["gate", "--output", "out"]))
    assert parsed.pop("command") == "gate" and parsed.pop("handler") == "perfgate.gate.run:command_gate"
    request = GateRequest(**parsed)
    assert {field.name for field in dataclasses.fields(GateRequest)} == set(parsed)
    assert request == GateRequest(output="out") and request.fail_threshold == DEFAULT_FAIL_THRESHOLD
    with pytest.raises(TypeError):  # an option the request does not know fails at once, not deep in a run
        GateRequest(output="out", fastdds_prefx="x")
