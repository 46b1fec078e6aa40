"""The gate knows which machine it is on (issue 42, item 2): each platform file's machines read from its
provenance (gate.platform_files), a gate judged by another machine's files says so in every output,
--strict-platform refuses it before measuring (exit 3), --platform auto picks the platform whose files
carry this machine's id, and --requirements-directory says where the platforms' files are."""
from __future__ import annotations

import html
import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest

from perfgate import cli, files, report
from perfgate import schema as s
from perfgate.gate import plan as gate_plan
from perfgate.gate import platform_files
from perfgate.gate.request import GateRequest
from perfgate.latency import check
from perfgate.measure.platform_info import this_machine

REPO = Path(__file__).resolve().parents[3]
SUB = "intraprocess_best_effort"
OTHER = {"id": "0123456789abcdef", "cpu_model": "Other CPU <b>@here</b>"}
FAR = {"id": "fedcba9876543210", "cpu_model": "Far CPU"}


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A fresh working folder, no CI or platform environment."""
    monkeypatch.chdir(tmp_path)
    for name in (s.PLATFORM_ENV, s.STRICT_PLATFORM_ENV, s.PIN_CPUS_ENV, s.WORKSPACE_ENV, s.STORE_ENV,
                 "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def write_platform(folder: Path, platform: str, machine: dict, payloads=(16,), requirement_us: float = 100000.0) -> Path:
    """requirements <platform>.csv for SUB at `payloads`, its provenance naming `machine`."""
    rows = [{s.EXPERIMENT_TYPE: SUB, s.BYTES: p, **{m: requirement_us for m in s.CHECKED_MAGNITUDES}} for p in payloads]
    path = s.requirements_csv(folder, platform)
    files.write_csv(path, pd.DataFrame(rows, columns=list(s.REQUIREMENT_COLUMNS)))
    s.requirements_provenance_json(path).write_text(json.dumps({"platform": machine}))
    return path


def plan(workspace: Path, **given) -> gate_plan.GatePlan:
    me = this_machine()
    request = GateRequest(output=str(workspace / "out"), quick=True, payloads=[16], subexperiments=[SUB],
                          label="x", history=False, **given)
    return gate_plan.plan_gate(request, environment={}, this_platform_id=me.id, this_cpu_model=me.cpu_model,
                               now=datetime.now(timezone.utc))


# --- which machines each file was derived on --------------------------------------------------------
def test_every_file_of_a_platform_says_its_machines_through_its_provenance(tmp_path):
    write_platform(tmp_path, "rig", OTHER)
    (tmp_path / "rig_gross.json").write_text(json.dumps({"margins": {}, "sources": [
        {"ab_directory": "a", "platform": FAR}, {"ab_directory": "b", "platform": None}]}))
    (tmp_path / "rig_layout.json").write_text(json.dumps({"provenance": {"ab_directories": [
        {"platform": OTHER}, {"platform": FAR}]}}))
    (tmp_path / "rig_throughput.csv").write_text("x\n")
    (tmp_path / "rig_throughput_provenance.json").write_text(json.dumps({"platforms": [FAR]}))
    (tmp_path / "rig_resources.json").write_text("{}")  # its provenance missing: nothing recorded
    (tmp_path / "rig_topology_light.json").write_text("{}")
    (tmp_path / "rig_topology_light_provenance.json").write_text(json.dumps({"platform": {"id": 7}}))  # not an id
    found = {d.path.name: d.machines for d in platform_files.derived_on(tmp_path, "rig")}
    assert found == {"rig.csv": {OTHER["id"]: OTHER["cpu_model"]}, "rig_gross.json": {FAR["id"]: "Far CPU"},
                     "rig_layout.json": {OTHER["id"]: OTHER["cpu_model"], FAR["id"]: "Far CPU"},
                     "rig_throughput.csv": {FAR["id"]: "Far CPU"}, "rig_resources.json": {},
                     "rig_topology_light.json": {}}


def test_the_reference_platforms_files_name_their_machines():
    found = {d.path.name: d.machines for d in platform_files.derived_on(REPO / s.REQUIREMENTS_DIR, "vm-2core-x64")}
    assert found["vm-2core-x64.csv"] == {"1be1a6597d2e960e": "AMD EPYC"}
    assert found["vm-2core-x64_layout.json"] == {"250c2fdbb0308ad0": "Intel(R) Xeon(R) Processor"}
    assert found["vm-2core-x64_resources.json"] == found["vm-2core-x64_topology_light.json"] == {
        "1be1a6597d2e960e": "AMD EPYC"}


def test_determine_throughput_requirements_records_the_machines_of_its_runs(tmp_path):
    from throughput_inputs import write_experiment
    for run in ("run1", "run2"):
        write_experiment(tmp_path / "runs" / run, f"throughput_{SUB}", "16,100,5,1000,100000.0,1000,100000.0\n")
        files.write_metadata(tmp_path / "runs" / run, {"label": run, "platform": OTHER})
    output = tmp_path / "req" / "rig_throughput.csv"
    output.parent.mkdir()
    assert cli.main(["determine-throughput-requirements", "--experiments-results", str(tmp_path / "runs"),
                     "--output-file", str(output)]) == s.EXIT_OK
    assert platform_files.file_machines(output) == {OTHER["id"]: OTHER["cpu_model"]}


# --- the plan: the mismatch in one line, --strict-platform, --platform auto, --requirements-directory ----
def test_a_plan_judged_by_another_machines_requirements_says_which_files_and_machines(workspace):
    path = write_platform(workspace / "requirements", "rig", OTHER)
    me = this_machine()
    assert plan(workspace, platform="rig").platform_mismatch == (
        f"thresholds derived on another machine: {path.relative_to(workspace)} on {OTHER['id']} ({OTHER['cpu_model']}); "
        f"this machine is {me.id} ({me.cpu_model})")
    write_platform(workspace / "requirements", "rig", {"id": me.id, "cpu_model": me.cpu_model})
    assert plan(workspace, platform="rig").platform_mismatch is None


def test_strict_platform_exits_3_before_measuring(workspace, monkeypatch, capsys):
    write_platform(workspace / "requirements", "rig", OTHER)
    arguments = ["gate", "--output", "out", "--platform", "rig", "--quick", "--subexperiments", SUB,
                 "--payloads", "16", "--no-history"]
    assert cli.main([*arguments, "--strict-platform"]) == s.EXIT_INCOMPLETE
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(errors) == 1 and "--strict-platform: thresholds derived on another machine: " in errors[0]
    assert OTHER["id"] in errors[0] and "never a pass" in errors[0] and "Traceback" not in errors[0]
    assert not (workspace / "out").exists()  # nothing measured, nothing written
    monkeypatch.setenv(s.STRICT_PLATFORM_ENV, "1")  # a reference runner's setting
    assert cli.main(arguments) == s.EXIT_INCOMPLETE and not (workspace / "out").exists()
    monkeypatch.setenv(s.STRICT_PLATFORM_ENV, "yes")
    assert cli.main(arguments) == s.EXIT_USAGE
    assert "$PERFGATE_STRICT_PLATFORM is 'yes'" in capsys.readouterr().err


def test_platform_auto_picks_the_platform_carrying_this_machine(workspace):
    me = this_machine()
    folder = workspace / "platforms"
    write_platform(folder, "elsewhere", OTHER)
    write_platform(folder, "here", {"id": me.id, "cpu_model": me.cpu_model})
    chosen = plan(workspace, platform="auto", requirements_directory=str(folder))
    assert (chosen.platform, chosen.platform_named, chosen.requirements) == ("here", True, folder / "here.csv")
    assert chosen.platform_note == f"--platform auto: here, whose files in {folder} carry this machine's platform id {me.id}"
    assert chosen.platform_mismatch is None


def test_platform_auto_says_when_no_platform_carries_this_machine_and_judges_as_local(workspace, capsys):
    folder = workspace / "platforms"
    write_platform(folder, "elsewhere", OTHER)
    assert cli.main(["gate", "--output", "out", "--platform", "auto", "--requirements-directory", str(folder),
                     "--quick", "--no-history"]) == s.EXIT_USAGE  # local has no requirements there: as today
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(errors) == 1 and f"{folder}/local.csv: no requirements for platform 'local'" in errors[0]
    write_platform(folder, "local", FAR)
    chosen = plan(workspace, platform="auto", requirements_directory=str(folder))
    assert (chosen.platform, chosen.platform_named) == ("local", False)
    assert chosen.platform_note == (f"--platform auto: no platform in {folder} carries this machine's platform id "
                                    f"{this_machine().id}: the gate judges as platform 'local' ({folder}/local.csv)")


def test_platform_auto_prefers_a_calibration_of_this_machine_and_refuses_a_tie(workspace, capsys):
    me = {"id": this_machine().id}
    folder = workspace / "platforms"
    # "two" mixes machines (its requirements another's, its layout this one's); "one" is this machine's alone
    write_platform(folder, "one", me)
    write_platform(folder, "two", OTHER)
    (folder / "two_layout.json").write_text(json.dumps({"provenance": {"ab_directories": [{"platform": me}]}}))
    assert plan(workspace, platform="auto", requirements_directory=str(folder)).platform == "one"
    # without "one", the mixed set is the only one that carries this machine
    (folder / "one.csv").rename(folder / "one.csv.off")
    assert plan(workspace, platform="auto", requirements_directory=str(folder)).platform == "two"
    (folder / "one.csv.off").rename(folder / "one.csv")
    write_platform(folder, "three", me)  # two calibrations of this machine: which one is no guess
    assert cli.main(["gate", "--output", "out", "--platform", "auto", "--requirements-directory", str(folder),
                     "--quick", "--no-history"]) == s.EXIT_USAGE
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(errors) == 1 and "the files of 2 platforms carry this machine's platform id" in errors[0]
    assert "(one, three); name one with --platform" in errors[0] and not (workspace / "out").exists()


def test_the_requirements_directory_is_honoured(workspace, capsys):
    write_platform(workspace / "requirements", "rig", OTHER, payloads=(32,))  # would not cover 16 B
    write_platform(workspace / "elsewhere", "rig", OTHER)
    chosen = plan(workspace, platform="rig", requirements_directory=str(workspace / "elsewhere"))
    assert chosen.requirements == workspace / "elsewhere" / "rig.csv"
    assert cli.main(["gate", "--output", "out", "--platform", "rig", "--requirements-directory", "nowhere"]) == 2
    assert "nowhere: --requirements-directory: no such folder" in capsys.readouterr().err


# --- every output says it ----------------------------------------------------------------------------
def test_the_mismatch_is_in_the_headline_report_md_html_step_summary_and_pr_comment(workspace, fastdds_fixtures,
                                                                                   capsys):
    requirements = write_platform(workspace / "requirements", "rig", OTHER)
    line = plan(workspace, platform="rig").platform_mismatch  # planned before the folder is measured
    experiment = workspace / "out"
    experiment.mkdir()
    raw = files.read_raw(fastdds_fixtures / "v193" / "measurements_intraprocess.csv")
    from perfgate.latency import process
    files.write_csv(experiment / s.summary_csv_name(SUB), process.summarise(raw[raw[s.PAYLOAD] == 16]))
    files.write_metadata(experiment, {"label": "x", "subexperiments": {SUB: {"outcome": s.OUTCOME_OK}}})
    assert check.command_check(requirements=str(requirements), experiment_directory=str(experiment),
                               plots_directory=None, junit=str(experiment / s.JUNIT_FILE), no_plots=True) == 0
    results = report.load(experiment, requirements, platform_mismatch=line)
    report.write_reports(results, workspace / "summary.md")
    headline = report.verdict(results).headline()
    assert headline.startswith("PASS: all 3 checks passed") and headline.endswith(f"; {line}")
    markdown = (experiment / s.REPORT_MARKDOWN).read_text()
    assert markdown.splitlines()[2] == report._md(headline) and "Other CPU <b>" not in markdown  # escaped
    assert (workspace / "summary.md").read_text() == markdown
    assert report._e(headline) in (experiment / s.REPORT_HTML).read_text()
    assert "<b>@here" not in (experiment / s.REPORT_HTML).read_text()
    assert cli.main(["pr-comment", "--gate-output", str(experiment), "--platform", "rig",
                     "--report-url", "https://example.org/r"]) == s.EXIT_OK
    comment = capsys.readouterr().out
    assert "<b>" not in comment and "@here" not in comment  # inert: no HTML, no mention
    assert f":warning: {line}" in html.unescape(comment).replace("\u200b", "")  # as GitHub shows it
    results = report.load(experiment, requirements)  # the same gate on its own machine: nothing said
    report.write_reports(results)
    assert "another machine" not in report.verdict(results).headline()
    assert cli.main(["pr-comment", "--gate-output", str(experiment), "--platform", "rig",
                     "--report-url", "https://example.org/r"]) == s.EXIT_OK
    assert "another machine" not in capsys.readouterr().out


@pytest.mark.fastdds
def test_a_real_gate_on_another_machines_requirements_says_so_in_its_headline(workspace, harness_paths, capsys):
    write_platform(workspace / "requirements", "rig", OTHER)
    code = cli.main(["gate", "--output", "out", "--platform", "rig", "--samples", "50", "--subexperiments", SUB,
                     "--payloads", "16", "--no-history", "--summary-markdown", "summary.md"])
    captured = capsys.readouterr()
    assert code == s.EXIT_OK, captured.out + captured.err
    headline = captured.out.splitlines()[-2]
    assert headline.startswith("perfgate gate: PASS: ") and "; thresholds derived on another machine: " in headline
    assert f"requirements/rig.csv on {OTHER['id']}" in headline and this_machine().id in headline
    assert "thresholds derived on another machine" in (workspace / "summary.md").read_text()
    assert json.loads((workspace / "out" / s.PLATFORM_FILES_JSON).read_text())["platform_mismatch"] in headline
