"""nightly-history.yml's A/A gate (issue 28 item 1): the runner's build gated against itself, stored with
a label that says A/A and pushed, then `perfgate false-alarms` over the store into the step summary.
The steps run as a runner would: ci/gate.sh is the stand-in that parses the gate's real command line
(store_scripts), perfgate false-alarms the real one."""
from __future__ import annotations

import re

import pytest
import yaml

from conftest import REPO_ROOT
from perfgate import schema as s
from store_scripts import (bare_repository, branch_labels, run_gate_step, run_script, runner_checkout,
                           stored_aa_gate, stored_experiment)

NIGHTLY = REPO_ROOT / ".github" / "workflows" / "nightly-history.yml"
AA_STEP, PUSH_STEP, FALSE_ALARMS_STEP = ("A/A gate of the runner's build", "Push the A/A gate to the results store",
                                         "False alarms of the whole gate")


@pytest.fixture(scope="module")
def nightly() -> dict:
    workflow = yaml.safe_load(NIGHTLY.read_text())
    return {**workflow, "on": workflow.get("on", workflow.get(True))}  # YAML 1.1 reads `on` as true


def job_steps(nightly: dict) -> list[dict]:
    return nightly["jobs"]["history"]["steps"]


def step(nightly: dict, name: str) -> dict:
    [found] = [entry for entry in job_steps(nightly) if entry.get("name") == name]
    return found


def test_the_aa_gate_is_on_by_default_and_never_holds_back_the_history(nightly):
    given = nightly["on"]["workflow_dispatch"]["inputs"]["aa-gate"]
    assert given["type"] == "boolean" and given["default"] is True
    names = [entry.get("name") for entry in job_steps(nightly)]
    # measured first, stored and pushed, then the pull and the history (which draws it), the count last
    assert names.index(AA_STEP) + 1 == names.index(PUSH_STEP) < names.index("Pull the results store")
    assert names.index("Bisect new regression events") < names.index(FALSE_ALARMS_STEP) < \
        names.index("Upload the history plots")
    aa = step(nightly, AA_STEP)
    assert aa["if"] == "${{ github.event_name == 'schedule' || inputs.aa-gate }}"
    assert aa["continue-on-error"] is True and aa["timeout-minutes"] <= 60
    assert step(nightly, FALSE_ALARMS_STEP)["continue-on-error"] is True
    assert nightly["jobs"]["history"]["timeout-minutes"] >= 150 + 60  # the bisects and the A/A gate fit
    for name in (AA_STEP, FALSE_ALARMS_STEP):  # one perfgate command per step
        script = step(nightly, name)["run"]
        assert script.count("ci/gate.sh ") + script.count(".venv/bin/perfgate ") == 1


@pytest.mark.parametrize("kept", [True, False])
def test_the_aa_gate_gates_one_build_against_itself_into_the_store(nightly, tmp_path, kept):
    checkout = runner_checkout(tmp_path / "checkout")
    workspace, store = tmp_path / "workspace", tmp_path / "store"
    commit = "0123456789abcdef0123456789abcdef01234567"
    if kept:  # perfgate build --keep-as candidate: a link to the commit's kept install
        (workspace / "installs" / commit).mkdir(parents=True)
        (workspace / "installs" / "candidate").symlink_to(commit)
    done, gate = run_gate_step(step(nightly, AA_STEP)["run"], checkout, {
        "PLATFORM": "reference-x64", "PERFGATE_WORKSPACE": str(workspace), "PERFGATE_STORE": str(store),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "GITHUB_RUN_ID": "7", "GITHUB_RUN_ATTEMPT": "1"})
    assert done.returncode == 0, done.stderr
    expected = str(workspace / "installs" / commit) if kept else "system"
    assert gate["fastdds"] == gate["baseline_build"] == expected  # the very same install: an A/A gate
    assert re.fullmatch(rf"\d{{8}}T\d{{6}}Z_aa_{commit[:12] if kept else 'system'}_run7\.1", gate["label"])
    assert gate["store"] == str(store) and gate["history"] is True and gate["platform"] == "reference-x64"
    assert gate["experiments"] == ["latency", "throughput"] and gate["quick"] is False


def test_the_aa_gate_is_pushed_with_the_store(nightly, tmp_path):
    checkout = runner_checkout(tmp_path / "checkout")
    store = tmp_path / "store"
    stored_experiment(store, "20261127T031700Z_aa_system_run7.1")
    remote = bare_repository(tmp_path / "results.git")
    script = step(nightly, PUSH_STEP)["run"]
    done = run_script(script, checkout, {"PLATFORM": "reference-x64", "PERFGATE_STORE": str(store),
                                         "PERFGATE_STORE_REMOTE": str(remote)})
    assert done.returncode == 0, done.stderr
    assert branch_labels(remote, "perfgate-results-reference-x64") == ["20261127T031700Z_aa_system_run7.1"]
    done = run_script(script, checkout, {"PLATFORM": "reference-x64", "PERFGATE_STORE": str(store),
                                         "PERFGATE_STORE_REMOTE": ""})
    assert done.returncode == 0 and "stays on this runner only" in done.stdout


def test_false_alarms_go_to_the_step_summary_and_the_published_csv(nightly, tmp_path):
    checkout = runner_checkout(tmp_path / "checkout")
    store, summary = tmp_path / "store", tmp_path / "summary.md"
    (store / "history_plots").mkdir(parents=True)  # the redraw's
    script = step(nightly, FALSE_ALARMS_STEP)["run"]
    environment = {"PERFGATE_STORE": str(store), "GITHUB_STEP_SUMMARY": str(summary)}
    stored_experiment(store, "not-aa")
    done = run_script(script, checkout, environment)
    assert done.returncode == s.EXIT_INCOMPLETE and "no A/A gate that decided" in done.stderr
    assert "No decided A/A gate in the store" in summary.read_text()

    stored_aa_gate(store, "aa-1", "PASS")
    stored_aa_gate(store, "aa-2", "REGRESSION")
    summary.write_text("")
    done = run_script(script, checkout, environment)
    assert done.returncode == s.EXIT_REGRESSION, done.stderr  # 1 of 2 contradicts 2 %: the step says so
    assert "**2** A/A gates, **1** false alarm(s)" in summary.read_text()
    assert "| aa-2 | system |" in summary.read_text()
    rows = (store / "history_plots" / "false_alarms.csv").read_text().splitlines()
    assert rows[1:] == ["aa-1,system,2026-01-01T00:00:00+00:00,PASS,,",
                        "aa-2,system,2026-01-01T00:00:00+00:00,false alarm,latency A/B,"]
