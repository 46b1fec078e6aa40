"""The GitHub Actions workflows: actionlint (with shellcheck) passes, and the security rules hold.

actionlint is installed by the test itself when missing: `go install` of a pinned version into
.cache/actionlint/<version>/ (Go and shellcheck come from ci/debian-test-packages.txt). v1.7.7 is the
newest actionlint whose go.mod asks for no more than Debian 12's Go 1.19; later releases need Go
1.24+. Every checker below is also run on a small bad workflow, so that a checker that cannot fail
cannot pass unnoticed.
"""
from __future__ import annotations

import fcntl
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO_ROOT

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
ACTIONLINT_CONFIG = REPO_ROOT / ".github" / "actionlint.yaml"
HISTORY_PAGE = REPO_ROOT / ".github" / "scripts" / "history_page.py"
ACTIONLINT_VERSION = "v1.7.7"
ACTIONLINT_MODULE = "github.com/rhysd/actionlint/cmd/actionlint"
GO_CANDIDATES = ("/usr/local/go/bin/go", "/usr/lib/go/bin/go")
EXPECTED_WORKFLOWS = {"gate.yml", "per-commit.yml", "pull-request.yml", "nightly-history.yml", "tests.yml",
                      "fastdds-compat.yml"}
PINNED_USES = re.compile(r"^\s*(?:-\s+)?uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40})\s+#\s*v\d+(?:\.\d+)*\s*$")
PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")
PR_HEAD_REFERENCES = ("github.event.pull_request.head", "github.head_ref", "refs/pull/")
# This repository's gate workflow, called by a pull-request workflow at a fixed ref: the default branch
# (`@main`, whose content only a reviewed merge changes) or a commit; never `./` (docs/ci.md "Pinning the gate").
GATE_AT_A_FIXED_REF = re.compile(r"^[\w.-]+/[\w.-]+/\.github/workflows/gate\.yml@(?:main|[0-9a-f]{40})$")
OWN_GATE_AT_MAIN = re.compile(r"^\s*uses:\s*perfgate/perfgate/\.github/workflows/gate\.yml@main\s*$")
LABELLED = ("github.event.action == 'labeled'", "github.event.label.name == 'perf-test'")
PULL_REQUEST_ENVIRONMENT = "github.event_name == 'pull_request_target' && 'perfgate-pull-request'"


# --- installing the tools -------------------------------------------------------------------------
def _go() -> str:
    go = shutil.which("go") or next((c for c in GO_CANDIDATES if Path(c).exists()), None)
    assert go, "Go not found: ci/install-system.sh installs golang-go (ci/debian-test-packages.txt)"
    return go


@pytest.fixture(scope="session")
def actionlint() -> Path:
    folder = REPO_ROOT / ".cache" / "actionlint" / ACTIONLINT_VERSION
    binary = folder / "actionlint"
    folder.mkdir(parents=True, exist_ok=True)
    # pytest-xdist workers share the cache: one installs, the others wait for it.
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            staging = folder / "staging"
            environment = {**os.environ, "GOBIN": str(staging), "GOTOOLCHAIN": "local", "GOFLAGS": ""}
            result = subprocess.run([_go(), "install", f"{ACTIONLINT_MODULE}@{ACTIONLINT_VERSION}"],
                                    env=environment, capture_output=True, text=True, timeout=900)
            assert result.returncode == 0, f"go install actionlint failed:\n{result.stderr}"
            (staging / "actionlint").rename(binary)
            staging.rmdir()
    version = subprocess.run([binary, "-version"], capture_output=True, text=True, check=True).stdout
    assert version.splitlines()[0] == ACTIONLINT_VERSION
    return binary


@pytest.fixture(scope="session")
def shellcheck() -> str:
    path = shutil.which("shellcheck")
    assert path, "shellcheck not found: ci/install-system.sh installs it (ci/debian-test-packages.txt)"
    return path


def run_actionlint(actionlint: Path, shellcheck: str, files: list[Path], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([actionlint, "-no-color", "-shellcheck", shellcheck, "-config-file", str(ACTIONLINT_CONFIG),
                           *map(str, files)], cwd=cwd, capture_output=True, text=True, timeout=300)


# --- reading workflows ----------------------------------------------------------------------------
def load(path: Path) -> dict:
    workflow = yaml.safe_load(path.read_text())
    # YAML 1.1 reads the key `on` as the boolean true.
    if True in workflow:
        workflow["on"] = workflow.pop(True)
    return workflow


def triggers(workflow: dict) -> dict:
    on = workflow["on"]
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    return on


def steps(job: dict) -> list[dict]:
    return job.get("steps", [])


def runs_on_labels(job: dict) -> list[str]:
    runs_on = job.get("runs-on", [])
    return [runs_on] if isinstance(runs_on, str) else list(runs_on)


def called_workflow(job: dict, folder: Path) -> Path | None:
    """The workflow file of this repository a job calls: `./.github/workflows/<name>` or
    `<owner>/<repo>/.github/workflows/<name>@<ref>` (a fixed ref of this repository: the file here is
    what that ref holds once merged), when it exists here."""
    called = str(job.get("uses", ""))
    match = re.fullmatch(r"(?:\./|[\w.-]+/[\w.-]+/)\.github/workflows/([\w.-]+\.ya?ml)(?:@\S+)?", called)
    if match is None or not called.startswith("./") and "@" not in called:
        return None
    path = folder / match.group(1)
    return path if path.is_file() else None


def is_self_hosted(job: dict, folder: Path) -> bool:
    """Runs on a self-hosted runner itself, or calls a reusable workflow of this repository that does."""
    return bool(called_self_hosted_jobs(job, folder))


def called_self_hosted_jobs(job: dict, folder: Path) -> list[dict]:
    called = called_workflow(job, folder)
    if called is None:
        return [job] if "self-hosted" in runs_on_labels(job) else []
    return [j for j in load(called)["jobs"].values() if "self-hosted" in runs_on_labels(j)]


@pytest.fixture(scope="module")
def workflows() -> dict[str, dict]:
    return {path.name: load(path) for path in sorted(WORKFLOWS.glob("*.y*ml"))}


# --- the security rules, as functions that return what breaks them ---------------------------------
def jobs_without_permissions(workflow: dict) -> list[str]:
    return [name for name, job in workflow["jobs"].items() if "permissions" not in job]


def unpinned_uses(text: str) -> list[str]:
    """`uses:` of a remote action or workflow not pinned to a commit with its version in a comment."""
    bad = []
    for line in text.splitlines():
        match = re.match(r"^\s*(?:-\s+)?uses:\s*(\S+)", line)
        if not match or match.group(1).startswith(("./", "docker://")):
            continue
        # this repository's own gate at its default branch: the ref the runner group allows (docs/ci.md)
        if OWN_GATE_AT_MAIN.match(line):
            continue
        if not PINNED_USES.match(line):
            bad.append(line.strip())
    return bad


def target_jobs_checking_out_head(workflow: dict) -> list[str]:
    """pull_request_target jobs that check out the pull request's code (with the base's rights)."""
    if "pull_request_target" not in triggers(workflow):
        return []
    bad = []
    for name, job in workflow["jobs"].items():
        for step in steps(job):
            if not str(step.get("uses", "")).startswith("actions/checkout@"):
                continue
            wanted = " ".join(str(v) for v in (step.get("with") or {}).values())
            if any(reference in wanted for reference in PR_HEAD_REFERENCES):
                bad.append(name)
    return bad


def ungated_self_hosted_jobs(workflow: dict, folder: Path) -> list[str]:
    """Self-hosted jobs reachable from a pull request without a maintainer's label (in the calling job
    and in the job itself) and the approval of the perfgate-pull-request environment, asked for a
    pull_request_target event."""
    if not any(event in triggers(workflow) for event in PULL_REQUEST_EVENTS):
        return []
    bad = []
    for name, job in workflow["jobs"].items():
        for target in called_self_hosted_jobs(job, folder):
            labelled = all(condition in str(target.get("if", "")) and condition in str(job.get("if", ""))
                           for condition in LABELLED)
            labelled = labelled and "github.event_name == 'pull_request_target'" in str(target.get("if", ""))
            environment = target.get("environment")
            environment = environment.get("name") if isinstance(environment, dict) else environment
            if not (labelled and PULL_REQUEST_ENVIRONMENT in str(environment or "")):
                bad.append(name)
    return bad


def pull_request_definitions_reaching_self_hosted(workflow: dict, folder: Path) -> list[str]:
    """Jobs of a `pull_request` workflow that reach a self-hosted runner: GitHub reads that workflow (and
    a `./` reusable workflow it calls) from the pull request's merge commit, so a fork rewrites its
    conditions and environment at will. Only a workflow of the default branch may (pull_request_target)."""
    if "pull_request" not in triggers(workflow):
        return []
    return [name for name, job in workflow["jobs"].items() if is_self_hosted(job, folder)]


def gate_calls_not_at_a_fixed_ref(workflow: dict) -> list[str]:
    """Jobs of a pull-request workflow calling gate.yml other than at a fixed ref of this repository."""
    if not any(event in triggers(workflow) for event in PULL_REQUEST_EVENTS):
        return []
    calls = {name: str(job.get("uses", "")) for name, job in workflow["jobs"].items()}
    return [name for name, called in calls.items()
            if re.search(r"(^|/)gate\.yml(@|$)", called) and not GATE_AT_A_FIXED_REF.match(called)]


def pull_request_jobs_given_more_than_read(workflow: dict, folder: Path) -> list[str]:
    """Self-hosted jobs of a pull-request workflow handed secrets, or a token beyond `contents: read`
    (pull-request code runs there and can read whatever the job holds)."""
    if not any(event in triggers(workflow) for event in PULL_REQUEST_EVENTS):
        return []
    bad = []
    for name, job in workflow["jobs"].items():
        targets = called_self_hosted_jobs(job, folder)
        if targets and ("secrets" in job or job.get("permissions") != {"contents": "read"}
                        or any(target.get("permissions") != {"contents": "read"} for target in targets)):
            bad.append(name)
    return bad


def unchecked_workflow_run_publishers(workflow: dict, trusted: str = ".github/workflows/pull-request.yml") -> list[str]:
    """Jobs of a workflow_run workflow that write (checks, statuses, comments) without checking that
    the run is the trusted workflow of the default branch (its path), of the pull_request_target event,
    and that the commit it publishes on is the one the run measured. Any workflow of any fork can be
    named like the trusted one."""
    if "workflow_run" not in triggers(workflow):
        return []
    bad = []
    for name, job in workflow["jobs"].items():
        writes = [scope for scope, access in (job.get("permissions") or {}).items() if access == "write"]
        if not writes:
            continue
        condition = str(job.get("if", ""))
        compared = [step for step in steps(job) if "run" in step
                    and "${{ github.event.workflow_run.head_sha }}" in (step.get("env") or {}).values()]
        checked = (f"github.event.workflow_run.path == '{trusted}'" in condition
                   and "github.event.workflow_run.event == 'pull_request_target'" in condition and bool(compared))
        if not checked:
            bad.append(name)
    return bad


def step_script(step: dict) -> str | None:
    """What a step runs as a program: its shell script, or the JavaScript of actions/github-script."""
    if "run" in step:
        return step["run"]
    if str(step.get("uses", "")).startswith("actions/github-script@"):
        return (step.get("with") or {}).get("script", "")
    return None


def expressions_in_run_scripts(workflow: dict) -> list[str]:
    """`${{ }}` spliced into shell or JavaScript text (script injection); values must come in through env."""
    return [f"{name}: {step.get('name', step_script(step)[:40])}" for name, job in workflow["jobs"].items()
            for step in steps(job) if step_script(step) is not None and "${{" in step_script(step)]


def checkouts_keeping_credentials(workflow: dict) -> list[str]:
    return [name for name, job in workflow["jobs"].items() for step in steps(job)
            if str(step.get("uses", "")).startswith("actions/checkout@")
            and (step.get("with") or {}).get("persist-credentials") is not False]


# --- actionlint -----------------------------------------------------------------------------------
def test_every_expected_workflow_exists(workflows):
    assert set(workflows) == EXPECTED_WORKFLOWS


def test_actionlint_with_shellcheck_passes_on_every_workflow(actionlint, shellcheck, workflows):
    result = run_actionlint(actionlint, shellcheck, sorted(WORKFLOWS.glob("*.y*ml")), REPO_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


BAD_WORKFLOW = """\
name: bad
on: push
permissions: {}
jobs:
  measure:
    runs-on: [self-hosted, linux, x64, perfgate, reference-x46]
    permissions: {}
    steps:
      - run: echo $unquoted_words
"""


def test_actionlint_reports_shellcheck_findings_and_unknown_runner_labels(actionlint, shellcheck, tmp_path):
    # The same command as above finds a shellcheck warning and a label actionlint.yaml lacks.
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "bad.yml").write_text(BAD_WORKFLOW)
    result = run_actionlint(actionlint, shellcheck, [folder / "bad.yml"], tmp_path)
    assert result.returncode == 1
    assert "SC2086" in result.stdout
    assert 'label "reference-x46" is unknown' in result.stdout
    assert '"perfgate" is unknown' not in result.stdout


def test_actionlint_yaml_declares_every_self_hosted_label(workflows):
    config = yaml.safe_load(ACTIONLINT_CONFIG.read_text())
    declared = set(config["self-hosted-runner"]["labels"])
    github_given = {"self-hosted", "linux", "x64"}
    used = {label for workflow in workflows.values() for job in workflow["jobs"].values()
            if "self-hosted" in runs_on_labels(job) for label in runs_on_labels(job)
            if "${{" not in label} - github_given
    assert used == {"perfgate"}
    assert used <= declared
    # The default platform of every matrix is a declared label too.
    defaults = set(re.findall(r"PERFGATE_PLATFORMS \|\| '\[\"([\w.-]+)\"\]'",
                              "".join(p.read_text() for p in WORKFLOWS.glob("*.yml"))))
    assert defaults == {"reference-x64"} and defaults <= declared


# --- security rules on the real workflows, and each rule failing on a bad one ----------------------
def test_every_job_has_minimal_permissions(workflows):
    for name, workflow in workflows.items():
        assert workflow.get("permissions") == {}, f"{name}: workflow-wide permissions must be empty"
        assert jobs_without_permissions(workflow) == [], name
    bad = yaml.safe_load(BAD_WORKFLOW.replace("    permissions: {}\n", ""))
    assert jobs_without_permissions(bad) == ["measure"]


def test_every_remote_action_is_pinned_to_a_commit(workflows):
    pinned_lines = 0
    for path in sorted(WORKFLOWS.glob("*.yml")):
        assert unpinned_uses(path.read_text()) == [], path.name
        pinned_lines += sum(1 for line in path.read_text().splitlines() if PINNED_USES.match(line))
    # The line scan sees every remote step that the YAML holds.
    remote_steps = [step["uses"] for workflow in workflows.values() for job in workflow["jobs"].values()
                    for step in steps(job) if "uses" in step]
    assert pinned_lines == len(remote_steps) > 0
    assert unpinned_uses("      - uses: actions/checkout@v4\n") == ["- uses: actions/checkout@v4"]
    assert unpinned_uses("      - uses: a/b@3d3c42e5aac5ba805825da76410c181273ba90b1\n") != []  # no version comment
    assert unpinned_uses("    uses: ./.github/workflows/gate.yml\n") == []


def test_no_pull_request_target_job_checks_out_the_pull_request(workflows):
    for name, workflow in workflows.items():
        assert target_jobs_checking_out_head(workflow) == [], name
    bad = {"on": {"pull_request_target": None}, "jobs": {"build": {"steps": [
        {"uses": "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1",
         "with": {"ref": "${{ github.event.pull_request.head.sha }}"}}]}}}
    assert target_jobs_checking_out_head(bad) == ["build"]


# The pull-request workflows as they were before issue 23: `pull_request` (read from the pull request's
# merge commit) calling the local gate.yml, with checks write; and a workflow_run reporter that
# published the JUnit file of any completed run named `pull-request`, a fork's own workflow included.
INSECURE_PULL_REQUEST = """\
on:
  pull_request:
    types: [labeled]
jobs:
  gate:
    if: github.event.label.name == 'perf-test'
    permissions: {contents: read, checks: write}
    uses: ./.github/workflows/gate.yml
    with: {perfgate-ref: "${{ github.event.pull_request.head.sha }}", publish-check: true}
"""
INSECURE_REPORT = """\
on:
  workflow_run:
    workflows: [pull-request]
    types: [completed]
jobs:
  publish:
    if: github.event.workflow_run.event == 'pull_request' && github.event.workflow_run.conclusion != 'skipped'
    runs-on: ubuntu-latest
    permissions: {actions: read, checks: write}
    steps:
      - uses: actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c
        with: {name: perfgate-report, run-id: "${{ github.event.workflow_run.id }}"}
      - uses: mikepenz/action-junit-report@d9f48fc87bc235f7e214acf696ca5abc0a986f16
        with: {report_paths: report/junit.xml, commit: "${{ github.event.workflow_run.head_sha }}"}
"""


def insecure(text: str) -> dict:
    workflow = yaml.safe_load(text)
    workflow["on"] = workflow.pop(True)
    return workflow


def test_no_pull_request_workflow_reaches_a_self_hosted_runner(workflows):
    # a `pull_request` workflow is the pull request's own file: only pull_request_target may reach the runner
    for name, workflow in workflows.items():
        assert pull_request_definitions_reaching_self_hosted(workflow, WORKFLOWS) == [], name
    assert triggers(workflows["pull-request.yml"]) == {"pull_request_target": {"types": ["labeled"], "branches": ["main"]}}
    assert pull_request_definitions_reaching_self_hosted(insecure(INSECURE_PULL_REQUEST), WORKFLOWS) == ["gate"]
    # the gate job itself refuses a pull_request event, whatever a pull request's copy of a caller says
    gate = workflows["gate.yml"]["jobs"]["gate"]
    assert "github.event_name == 'pull_request'" not in gate["if"] and "'pull_request_target'" in gate["if"]


def test_self_hosted_jobs_of_pull_requests_need_a_label_and_an_approval(workflows):
    reached = [name for name, workflow in workflows.items()
               if any(event in triggers(workflow) for event in PULL_REQUEST_EVENTS)
               and any(is_self_hosted(job, WORKFLOWS) for job in workflow["jobs"].values())]
    assert reached == ["pull-request.yml"]
    for name, workflow in workflows.items():
        assert ungated_self_hosted_jobs(workflow, WORKFLOWS) == [], name
    pull_request = workflows["pull-request.yml"]
    assert pull_request["jobs"]["gate"]["if"] == ("github.event.action == 'labeled' "
                                                  "&& github.event.label.name == 'perf-test'")
    assert ungated_self_hosted_jobs(insecure(INSECURE_PULL_REQUEST), WORKFLOWS) == ["gate"]
    bad = {"on": {"pull_request_target": None}, "jobs": {"measure": {"runs-on": ["self-hosted", "perfgate"]}}}
    assert ungated_self_hosted_jobs(bad, WORKFLOWS) == ["measure"]


def test_pull_requests_call_the_gate_at_a_fixed_ref(workflows):
    for name, workflow in workflows.items():
        assert gate_calls_not_at_a_fixed_ref(workflow) == [], name
    assert workflows["pull-request.yml"]["jobs"]["gate"]["uses"] == "perfgate/perfgate/.github/workflows/gate.yml@main"
    # the call is followed to this repository's gate.yml (what @main holds once merged)
    assert is_self_hosted(workflows["pull-request.yml"]["jobs"]["gate"], WORKFLOWS)
    assert gate_calls_not_at_a_fixed_ref(insecure(INSECURE_PULL_REQUEST)) == ["gate"]
    moving = insecure(INSECURE_PULL_REQUEST.replace("./.github/workflows/gate.yml", "o/perfgate/.github/workflows/gate.yml@dev"))
    assert gate_calls_not_at_a_fixed_ref(moving) == ["gate"]
    pinned = insecure(INSECURE_PULL_REQUEST.replace("./.github/workflows/gate.yml", "o/perfgate/.github/workflows/gate.yml@"
                                                    + "3d3c42e5aac5ba805825da76410c181273ba90b1"))
    assert gate_calls_not_at_a_fixed_ref(pinned) == []


def test_the_pull_request_gate_gets_no_secret_and_a_read_only_token(workflows):
    for name, workflow in workflows.items():
        assert pull_request_jobs_given_more_than_read(workflow, WORKFLOWS) == [], name
    job = workflows["pull-request.yml"]["jobs"]["gate"]
    assert "secrets" not in job and job["with"]["keep-in-store"] is False and job["with"]["publish-check"] is False
    assert "secrets." not in yaml.safe_dump(job)
    assert pull_request_jobs_given_more_than_read(insecure(INSECURE_PULL_REQUEST), WORKFLOWS) == ["gate"]
    inherited = insecure(INSECURE_PULL_REQUEST.replace("checks: write", "contents: read") + "    secrets: inherit\n")
    assert pull_request_jobs_given_more_than_read(inherited, WORKFLOWS) == ["gate"]


HEAD = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize("environment, code", [
    ({"PERFGATE_REF": HEAD}, 0),  # perfgate's own pull request, at its labelled head
    ({"PERFGATE_REF": ""}, 2),  # would check out the base
    ({"PERFGATE_REF": "refs/pull/7/merge"}, 2),  # the merge ref
    ({"PERFGATE_REF": "feature"}, 2),  # a branch that can move after the label
    ({"PERFGATE_REF": "fedcba9876543210fedcba9876543210fedcba98"}, 2),  # another commit than labelled
    ({"PERFGATE_REPOSITORY": "o/perfgate", "PERFGATE_REF": "v1", "FASTDDS_REF": HEAD}, 0),  # from Fast DDS
    ({"PERFGATE_REPOSITORY": "o/perfgate", "PERFGATE_REF": HEAD, "FASTDDS_REF": "main"}, 2),
])
def test_the_pull_request_path_measures_the_labelled_head_sha(workflows, tmp_path, environment, code):
    given = workflows["pull-request.yml"]["jobs"]["gate"]["with"]
    assert given["perfgate-ref"] == "${{ github.event.pull_request.head.sha }}"
    job = workflows["gate.yml"]["jobs"]["gate"]
    names = [step.get("id") for step in steps(job)]
    checkout = steps(job)[1]
    assert names[0] == "head" and checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"]["ref"] == "${{ inputs.perfgate-ref }}" and checkout["with"]["persist-credentials"] is False
    step = step_named(job, "head")
    assert step["if"] == "${{ github.event_name == 'pull_request_target' }}"
    assert step["env"]["HEAD_SHA"] == "${{ github.event.pull_request.head.sha }}"
    (tmp_path / "step.sh").write_text(step["run"])
    done = subprocess.run(["bash", "-e", str(tmp_path / "step.sh")], capture_output=True, text=True, env={
        "PATH": os.environ["PATH"], "GITHUB_REPOSITORY": "o/fastdds" if "PERFGATE_REPOSITORY" in environment
        else "o/perfgate", "HEAD_SHA": HEAD, "PERFGATE_REPOSITORY": "", "FASTDDS_REF": "", **environment})
    assert done.returncode == code, done.stdout + done.stderr
    if code:
        assert done.stdout.startswith("::error::a pull request is measured at its labelled head commit:") \
            and HEAD in done.stdout


def test_pull_request_reports_are_published_by_the_trusted_workflow_only(workflows):
    # no workflow_run reporter (any fork's workflow can be named pull-request) unless it checks the run
    for name, workflow in workflows.items():
        assert unchecked_workflow_run_publishers(workflow) == [], name
    assert not any("workflow_run" in triggers(workflow) for workflow in workflows.values())
    assert unchecked_workflow_run_publishers(insecure(INSECURE_REPORT)) == ["publish"]
    # the labelled pull_request_target run publishes itself, on a hosted runner, from its own artifact
    report = workflows["pull-request.yml"]["jobs"]["report"]
    assert report["needs"] == "gate" and all(condition in report["if"] for condition in LABELLED)
    assert "needs.gate.result != 'skipped'" in report["if"]
    assert report["runs-on"] == "ubuntu-latest"
    assert report["permissions"] == {"contents": "read", "checks": "write", "pull-requests": "write"}
    used = [step["uses"].split("@")[0] for step in steps(report) if "uses" in step]
    assert used == ["actions/checkout", "actions/download-artifact", "mikepenz/action-junit-report",
                    "actions/github-script"]
    checkout, download = (step for step in steps(report) if str(step.get("uses", "")).startswith(
        ("actions/checkout@", "actions/download-artifact@")))
    assert set(checkout["with"]) == {"persist-credentials"}  # the default branch: no ref of the pull request
    assert "run-id" not in download["with"]  # this run's artifact only
    reporter = next(step for step in steps(report) if step.get("uses", "").startswith("mikepenz/"))
    assert reporter["with"]["commit"] == "${{ github.event.pull_request.head.sha }}"
    assert reporter["with"]["report_paths"] == "report/**/junit.xml"
    runs = [step["run"] for step in steps(report) if "run" in step]
    assert runs[0] == "ci/install-python.sh" and ".venv/bin/perfgate pr-comment --gate-output report" in runs[1]


def test_no_expression_is_spliced_into_shell_scripts(workflows):
    for name, workflow in workflows.items():
        assert expressions_in_run_scripts(workflow) == [], name
    bad = {"jobs": {"x": {"steps": [{"name": "echo", "run": "echo ${{ github.event.pull_request.title }}"}]}}}
    assert expressions_in_run_scripts(bad) == ["x: echo"]


def test_checkouts_leave_no_token_behind(workflows):
    for name, workflow in workflows.items():
        assert checkouts_keeping_credentials(workflow) == [], name


# --- what each workflow does ------------------------------------------------------------------------
def test_reusable_gate_workflow(workflows, tmp_path):
    gate = workflows["gate.yml"]
    inputs = {"platform", "fastdds-repository", "fastdds-ref", "fastdds-prefix", "samples", "quick"}
    assert inputs <= set(triggers(gate)["workflow_call"]["inputs"])
    assert inputs <= set(triggers(gate)["workflow_dispatch"]["inputs"])
    job = gate["jobs"]["gate"]
    assert runs_on_labels(job) == ["self-hosted", "linux", "x64", "perfgate", "${{ inputs.platform }}"]
    assert job["permissions"] == {"contents": "read"}
    run = next(step for step in steps(job) if step.get("id") == "gate")["run"]
    assert "ci/gate.sh" in run and "--annotations" in run and '"$GITHUB_STEP_SUMMARY"' in run
    uploads = [step["with"]["path"] for step in steps(job) if step.get("uses", "").startswith("actions/upload-artifact@")]
    assert uploads[0] == "out/experiment" and "out/experiment/report.html" in uploads[1]
    publish = gate["jobs"]["publish"]
    assert publish["permissions"] == {"checks": "write"}
    reporter = steps(publish)[-1]
    assert reporter["uses"].startswith("mikepenz/action-junit-report@")
    # The gate's junit.xml as the report artifact lays it out, and the A/B's (tested below).
    assert "report/junit.xml" in published_junit_files(job, publish, tmp_path)


# --- the A/B against a baseline build (docs/ci.md "A/B against the parent / merge base") -------------
AB_REPORT_FILES = ("report.html", "report.md", "junit.xml", "verdict.csv", "verdict.json")


def step_named(job: dict, step_id: str) -> dict:
    [step] = [step for step in steps(job) if step.get("id") == step_id]
    return step


def artifact_layout(paths: list[str]) -> list[str]:
    """Where actions/upload-artifact puts files listed one per line: relative to the folder they
    have in common (so download-artifact's `path: report` gives report/junit.xml, report/ab/...)."""
    root = os.path.commonpath([os.path.dirname(path) for path in paths])
    return [os.path.relpath(path, root) for path in paths]


def published_junit_files(gate_job: dict, publish_job: dict, scratch: Path) -> set[str]:
    """The files of the report artifact that the publish job's report_paths glob picks up (laid out
    in the folder scratch)."""
    [upload] = [step for step in steps(gate_job) if step.get("name", "").startswith("Upload the report")]
    [download] = [step for step in steps(publish_job) if step.get("uses", "").startswith("actions/download-artifact@")]
    assert download["with"]["name"] == upload["with"]["name"]
    folder = download["with"]["path"]
    laid_out = {f"{folder}/{path}" for path in artifact_layout(upload["with"]["path"].split())}
    pattern = steps(publish_job)[-1]["with"]["report_paths"]
    # @actions/glob's `**` matches zero or more folders, as Python's recursive glob does
    return set(glob.glob(pattern, root_dir=_tree(scratch, laid_out), recursive=True))


def _tree(root: Path, paths: set[str]) -> Path:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("")
    return root


def test_gate_takes_a_baseline_ref_for_an_ab(workflows):
    gate = workflows["gate.yml"]
    for trigger in ("workflow_call", "workflow_dispatch"):
        baseline_ref = triggers(gate)[trigger]["inputs"]["baseline-ref"]
        assert baseline_ref["type"] == "string" and baseline_ref["default"] == ""  # empty: no A/B
        assert "parent" in baseline_ref["description"] and "merge-base:<ref>" in baseline_ref["description"]
    job = gate["jobs"]["gate"]
    names = [step.get("id") for step in steps(job)]
    # the baseline first (usually kept from an earlier job: not built again), then the candidate in the
    # same workspace, over the baseline's build tree, then the gate
    assert names.index("baseline") < names.index("build") < names.index("gate")
    baseline = step_named(job, "baseline")
    assert baseline["name"] == "Build the baseline Fast DDS (perfgate build)"
    assert baseline["if"] == "${{ inputs.baseline-ref != '' && inputs.fastdds-ref != '' }}"
    assert baseline["env"]["BASELINE_REF"] == "${{ inputs.baseline-ref }}"
    assert baseline["env"]["FASTDDS_REF"] == "${{ inputs.fastdds-ref }}"
    run = baseline["run"]
    # one perfgate build call: parent and merge-base: are resolved in Python, with no git in the step
    assert run.count("ci/build_fastdds.sh") == 1 and not re.search(r"\bgit\s", run)
    # in the runner's workspace (its own, or ci/runner-env.sh's default, set for the job in the first steps)
    assert "ci/build_fastdds.sh --workspace \"$PERFGATE_WORKSPACE\"" in run and "-baseline" not in run
    assert '--commit "$commit" --keep-as baseline' in run
    assert 'echo "build=$PERFGATE_WORKSPACE/installs/baseline" >> "$GITHUB_OUTPUT"' in run
    # a failed baseline build (3) fails the job with an ::error (and is the workflow's exit code)
    assert 'if [ "$code" -eq 3 ]; then fail ' in run and "::error title=Baseline Fast DDS::" in run
    assert job["outputs"]["exit-code"] == "${{ steps.gate.outputs.exit-code || steps.baseline.outputs.exit-code }}"
    # the candidate's build tells whether it failed (then the gate reports it and nothing is compared)
    candidate = step_named(job, "build")["run"]
    assert 'echo "exit-code=$code" >> "$GITHUB_OUTPUT"' in candidate
    assert 'ci/build_fastdds.sh --workspace "$PERFGATE_WORKSPACE"' in candidate
    assert '--commit "$FASTDDS_REF" --keep-as candidate' in candidate
    gate_step = step_named(job, "gate")
    assert gate_step["env"]["BASELINE_BUILD"] == "${{ steps.baseline.outputs.build }}"
    # the candidate built in the runner's workspace, named explicitly (never the workspace by default)
    assert gate_step["env"]["FASTDDS"] == ("${{ inputs.fastdds-prefix || (inputs.fastdds-ref != '' && 'workspace') "
                                           "|| 'system' }}")
    assert '${BASELINE_BUILD:+--baseline-build "$BASELINE_BUILD"}' in gate_step["run"]
    # fastdds-ref is required, and parent / merge-base: need it built here (no fastdds-prefix)
    checks = step_named(job, "fastdds")
    assert checks["env"]["BASELINE_REF"] == "${{ inputs.baseline-ref }}"
    assert '[ -n "$BASELINE_REF" ] && [ -z "$FASTDDS_REF" ]' in checks["run"]


def test_gate_uploads_and_publishes_the_ab_report(workflows, tmp_path):
    job = workflows["gate.yml"]["jobs"]["gate"]
    [upload] = [step for step in steps(job) if step.get("name", "").startswith("Upload the report")]
    uploaded = upload["with"]["path"].split()
    assert uploaded[:5] == ["out/experiment/report.html", "out/experiment/report.md", "out/experiment/junit.xml",
                            "out/experiment/metadata.json",
                            "out/experiment/platform_files.json"]  # what perfgate pr-comment reads (docs/ci.md)
    assert uploaded[5:-7] == [f"out/experiment/ab/{name}" for name in AB_REPORT_FILES]
    assert uploaded[-7:-5] == ["out/experiment/throughput/junit.xml", "out/experiment/throughput/throughput_checks.csv"]
    assert uploaded[-5:] == [f"out/experiment/throughput/ab/{name}" for name in AB_REPORT_FILES]
    assert artifact_layout(uploaded)[:6] == ["report.html", "report.md", "junit.xml", "metadata.json",
                                             "platform_files.json", "ab/report.html"]
    # one check of the three JUnit files (the gate's, the A/B's, the throughput check's)
    publish = workflows["gate.yml"]["jobs"]["publish"]
    assert published_junit_files(job, publish, tmp_path / "real") == {"report/junit.xml", "report/ab/junit.xml",
                                                                      "report/throughput/junit.xml",
                                                                      "report/throughput/ab/junit.xml"}
    # the layout helper and the glob can tell a wrong pattern
    assert artifact_layout(["out/x/a.xml", "out/x/ab/b.xml"]) == ["a.xml", "ab/b.xml"]
    wrong = {**publish, "steps": [*steps(publish)[:-1], {"with": {"report_paths": "report/*/junit.xml"}}]}
    assert published_junit_files(job, wrong, tmp_path / "wrong") == {"report/ab/junit.xml", "report/throughput/junit.xml"}


def _build_options(script: str) -> set[str]:
    """The options given to ci/build_fastdds.sh (continued lines joined), not git's."""
    joined = re.sub(r"\\\n\s*", " ", script)
    return {option for line in joined.splitlines() if "ci/build_fastdds.sh" in line
            for option in re.findall(r"(--[a-z][a-z-]+)", line.split("ci/build_fastdds.sh", 1)[1].split("||")[0])}


def test_baseline_build_options_exist(workflows):
    run = step_named(workflows["gate.yml"]["jobs"]["gate"], "baseline")["run"]
    used = _build_options(run)
    assert used == {"--workspace", "--git-url", "--commit", "--keep-as"}
    usage = subprocess.run([sys.executable, "-m", "perfgate.cli", "build", "--help"], capture_output=True, text=True)
    assert usage.returncode == 0, usage.stderr
    assert sorted(option for option in used if option not in usage.stdout) == []
    assert _build_options('git fetch --depth 2 origin "$head"\nci/build_fastdds.sh --workspace W \\\n  --commit C || x --y') \
        == {"--workspace", "--commit"}


# A Fast DDS history: main A-B-C, a branch F1-F2 off B, and (on a third branch) M merging F2 into C.
# merge-base(F2, main) = B; the first parent of M is C. The baseline step hands `parent` and
# `merge-base:<ref>` to `perfgate build --commit` (which resolves them: test_build.py); the stand-in
# for ci/build_fastdds.sh records what it is given.
FAKE_BUILD = """#!/usr/bin/env bash
echo "$*" >> "$FAKE_BUILD_CALLS"
if [[ "$*" == *"--keep-as baseline"* ]]; then exit "${FAKE_BASELINE_EXIT:-0}"; fi
exit "${FAKE_CANDIDATE_EXIT:-0}"
"""


def run_baseline_step(script: str, tmp_path: Path, environment: dict[str, str]):
    """Run a baseline script as a runner would; ci/build_fastdds.sh is a stand-in."""
    [result], calls, outputs = run_build_steps([script], tmp_path, environment)
    return result, calls, outputs[0]


def run_build_steps(scripts: list[str], tmp_path: Path, environment: dict[str, str]):
    """Run the scripts of steps one after the other as a runner would (each its own $GITHUB_OUTPUT);
    ci/build_fastdds.sh is a stand-in. (results, the stand-in's calls, each step's outputs)"""
    workspace = tmp_path / "workspace"
    (tmp_path / "ci").mkdir(parents=True)
    (tmp_path / "ci" / "build_fastdds.sh").write_text(FAKE_BUILD)
    (tmp_path / "ci" / "build_fastdds.sh").chmod(0o755)
    (tmp_path / "calls").write_text("")
    results, outputs = [], []
    for index, script in enumerate(scripts):
        (tmp_path / f"script{index}.sh").write_text(script)
        (tmp_path / f"output{index}").write_text("")
        step_environment = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1",
                            "PERFGATE_WORKSPACE": str(workspace), "FAKE_BUILD_CALLS": str(tmp_path / "calls"),
                            "GITHUB_OUTPUT": str(tmp_path / f"output{index}"), **environment}
        # GitHub's `run:` shell on Linux is `bash -e {0}`
        results.append(subprocess.run(["bash", "-e", str(tmp_path / f"script{index}.sh")], cwd=tmp_path,
                                      env=step_environment, capture_output=True, text=True, timeout=120))
        outputs.append((tmp_path / f"output{index}").read_text().splitlines())
    return results, (tmp_path / "calls").read_text().splitlines(), outputs


def test_the_baseline_then_the_candidate_in_one_workspace(workflows, tmp_path):
    job = workflows["gate.yml"]["jobs"]["gate"]
    scripts = [step_named(job, "baseline")["run"], step_named(job, "build")["run"]]
    environment = {"BASELINE_REF": "parent", "FASTDDS_REF": "abc123", "FASTDDS_REPOSITORY": "eProsima/Fast-DDS"}
    results, calls, outputs = run_build_steps(scripts, tmp_path / "ok", environment)
    workspace, url = tmp_path / "ok" / "workspace", "https://github.com/eProsima/Fast-DDS.git"
    assert [result.returncode for result in results] == [0, 0]
    assert calls == [f"--workspace {workspace} --git-url {url} --commit parent:abc123 --keep-as baseline",
                     f"--workspace {workspace} --git-url {url} --commit abc123 --keep-as candidate"]
    # the gate gets the baseline's kept install and the workspace, which holds the candidate
    assert outputs == [[f"build={workspace}/installs/baseline"], ["exit-code=0"]]
    # a candidate that does not build is left for the gate (the JUnit error "build")
    results, calls, outputs = run_build_steps(scripts, tmp_path / "failed", {**environment, "FAKE_CANDIDATE_EXIT": "3"})
    assert [result.returncode for result in results] == [0, 0] and outputs[1][-1] == "exit-code=3"


@pytest.mark.parametrize("baseline_ref, candidate, form, expected", [
    ("parent", "M", "parent:{M}", "C"),  # the first parent
    ("merge-base:main", "F2", "merge-base:{F2},main", "B"),
    ("merge-base:{C}", "F2", "merge-base:{F2},{C}", "B"),
    ("{A}", "M", "{A}", "A"),  # a commit of its own: given as is
])
def test_baseline_step_builds_the_parent_or_merge_base(workflows, fastdds_history, tmp_path, baseline_ref, candidate,
                                                       form, expected):
    from perfgate.fastdds.git import fetch_git

    origin, commits = fastdds_history
    script = step_named(workflows["gate.yml"]["jobs"]["gate"], "baseline")["run"]
    result, calls, output = run_baseline_step(script, tmp_path, {
        "BASELINE_REF": baseline_ref.format(**commits), "FASTDDS_REF": commits[candidate],
        "FASTDDS_REPOSITORY": "eProsima/Fast-DDS"})
    assert result.returncode == 0, result.stdout + result.stderr
    workspace = tmp_path / "workspace"
    assert calls == [f"--workspace {workspace} --git-url https://github.com/eProsima/Fast-DDS.git "
                     f"--commit {form.format(**commits)} --keep-as baseline"]
    assert output == [f"build={workspace}/installs/baseline"]
    # and perfgate build resolves that --commit to the baseline meant
    assert fetch_git(f"file://{origin}", form.format(**commits), tmp_path / "resolved") == commits[expected]


def test_a_baseline_that_cannot_be_fetched_or_built_fails_the_job(workflows, tmp_path):
    script = step_named(workflows["gate.yml"]["jobs"]["gate"], "baseline")["run"]
    result, calls, output = run_baseline_step(script, tmp_path, {
        "BASELINE_REF": "merge-base:no-such-branch", "FASTDDS_REF": "abc123", "FASTDDS_REPOSITORY": "eProsima/Fast-DDS",
        "FAKE_BASELINE_EXIT": "3"})
    assert result.returncode == 3
    assert ("::error title=Baseline Fast DDS::the baseline merge-base:abc123,no-such-branch could not be fetched or "
            "built; see the log above") in result.stdout
    assert len(calls) == 1 and output == ["exit-code=3"]
    # a usage error of perfgate build (2, e.g. a malformed baseline-ref) ends the step with that code,
    # and the workflow's exit-code output says so (the gate step never runs to set it)
    (tmp_path / "usage").mkdir()
    result, calls, output = run_baseline_step(script, tmp_path / "usage", {
        "BASELINE_REF": "parent", "FASTDDS_REF": "abc123", "FASTDDS_REPOSITORY": "eProsima/Fast-DDS",
        "FAKE_BASELINE_EXIT": "2"})
    assert result.returncode == 2 and len(calls) == 1 and output == ["exit-code=2"]


def test_gate_options_used_by_the_workflow_exist(workflows):
    step = next(step for step in steps(workflows["gate.yml"]["jobs"]["gate"]) if step.get("id") == "gate")
    used = set(re.findall(r"(--[a-z][a-z-]+)", step["run"] + " ".join(step["env"].values())))
    assert {"--output", "--platform", "--samples", "--label", "--fastdds", "--history", "--no-history", "--quick",
            "--baseline-build", "--experiments", "--subexperiments"} <= used
    usage = subprocess.run([sys.executable, "-m", "perfgate.cli", "gate", "--help"], capture_output=True, text=True)
    assert usage.returncode == 0, usage.stderr
    assert sorted(option for option in used if option not in usage.stdout) == []


def test_per_commit_runs_queue_without_cancelling(workflows):
    per_commit = workflows["per-commit.yml"]
    assert triggers(per_commit)["repository_dispatch"] == {"types": ["fastdds-commit"]}
    assert triggers(per_commit)["push"]["branches"] == ["main"]
    job = per_commit["jobs"]["gate"]
    assert job["concurrency"]["cancel-in-progress"] is False
    group = job["concurrency"]["group"]
    assert "matrix.platform" in group and "github.event.client_payload.fastdds_ref" in group
    assert job["with"]["keep-in-store"] is True and job["with"]["publish-check"] is True
    assert workflows["pull-request.yml"]["jobs"]["gate"]["with"]["keep-in-store"] is False


def test_per_commit_measures_throughput_too_and_the_rest_latency_by_default(workflows):
    assert workflows["per-commit.yml"]["jobs"]["gate"]["with"]["experiments"] == "latency,throughput"
    gate = workflows["gate.yml"]
    assert triggers(gate)["workflow_call"]["inputs"]["experiments"]["default"] == "latency"
    assert "experiments" not in triggers(gate)["workflow_dispatch"]["inputs"]  # at most 10 there
    step = next(step for step in steps(gate["jobs"]["gate"]) if step.get("id") == "gate")
    assert step["env"]["EXPERIMENTS"] == "${{ inputs.experiments || 'latency' }}"
    assert '--experiments "$EXPERIMENTS"' in step["run"]


def test_per_commit_measures_each_commit_against_its_first_parent(workflows):
    given = workflows["per-commit.yml"]["jobs"]["gate"]["with"]
    # the parent of the commit itself (perfgate build finds it), never the push's previous head
    assert given["baseline-ref"] == ("${{ github.event.client_payload.fastdds_ref "
                                     "&& !github.event.client_payload.fastdds_prefix && 'parent' || '' }}")
    assert "github.event.before" not in str(given)
    # a commit announced without a prefix is built (and so is its parent), not the push's prefix
    assert given["fastdds-prefix"] == ("${{ github.event.client_payload.fastdds_prefix || "
                                       "(!github.event.client_payload.fastdds_ref && vars.PERFGATE_FASTDDS_PREFIX) || '' }}")


def test_pull_requests_of_perfgate_have_no_fastdds_baseline(workflows):
    # A perfgate pull request measures one Fast DDS with the pull request's perfgate: the base's sha
    # is a perfgate commit, never a Fast DDS baseline.
    given = workflows["pull-request.yml"]["jobs"]["gate"]["with"]
    assert "baseline-ref" not in given and "fastdds-ref" not in given


def test_nightly_history_is_published(workflows):
    nightly = workflows["nightly-history.yml"]
    cron = triggers(nightly)["schedule"][0]["cron"]
    assert len(cron.split()) == 5
    history = nightly["jobs"]["history"]
    [redraw] = [step for step in steps(history) if step.get("name") == "Redraw the history plots"]
    assert "perfgate history" in redraw["run"] and '"${baselines[@]}"' in redraw["run"]
    # then one bounded perfgate bisect-events on the events the history wrote (issue 25)
    names = [step.get("name") for step in steps(history)]
    bisect = steps(history)[names.index("Bisect new regression events")]
    assert names.index("Bisect new regression events") == names.index("Redraw the history plots") + 1
    assert bisect["run"].count(".venv/bin/perfgate ") == 1 and "perfgate bisect-events" in bisect["run"]
    assert "--max" in bisect["run"] and "--time-budget" in bisect["run"] and bisect["timeout-minutes"] <= 180
    assert "history_plots/events.csv" in bisect["run"] and "history_plots/bisect" in bisect["run"]
    assert "self-hosted" in runs_on_labels(history)
    deploy = nightly["jobs"]["deploy"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert steps(deploy)[0]["uses"].startswith("actions/deploy-pages@")


def test_project_tests_run_on_a_hosted_runner(workflows):
    job = workflows["tests.yml"]["jobs"]["test"]
    assert job["runs-on"] == "ubuntu-latest" and job["container"] == "debian:12"
    assert steps(job)[-1]["run"] == ".ci/run"


def test_fastdds_compatibility_matrix_builds_2x_3x_and_master_on_hosted_runners(workflows):
    workflow = workflows["fastdds-compat.yml"]
    assert set(triggers(workflow)) == {"schedule", "workflow_dispatch"}  # a matrix, never a pull request's gate
    job = workflow["jobs"]["build"]
    assert job["runs-on"] == "ubuntu-latest" and job["container"] == "debian:12"
    assert job["strategy"]["fail-fast"] is False
    refs = job["strategy"]["matrix"]["fastdds-ref"]
    assert {ref[:3] for ref in refs} >= {"v2.", "v3."} and "master" in refs
    build = next(step for step in steps(job) if "ci/build_fastdds.sh" in step.get("run", ""))
    assert build["env"]["FASTDDS_REF"] == "${{ matrix.fastdds-ref }}"
    assert set(re.findall(r"(--[a-z][a-z-]+)", build["run"])) <= {"--workspace", "--git-url", "--commit", "--junit"}
    # then both engines on that workspace: every sub-experiment the version defines
    runs = [line for step in steps(job) for line in step.get("run", "").replace("\\\n", " ").splitlines()
            if "perfgate run" in line]
    harness = [line for line in runs if "--engine" not in line]
    assert any("--subexperiments" not in line for line in harness)  # the ten and the floors
    named = {sub for line in harness for listed in re.findall(r"--subexperiments\s+(\S+)", line)
             for sub in listed.split(",")}
    assert named == {"interprocess_best_effort_shm", "interprocess_reliable_shm",
                     "interprocess_best_effort_zero_copy", "interprocess_reliable_zero_copy"}
    assert any("--engine upstream" in line and "--subexperiments" not in line for line in runs)
    assert all('--workspace "$RUNNER_TEMP/ws"' in line for line in runs)


# --- the history page ---------------------------------------------------------------------------------
PNG = bytes.fromhex("89504e470d0a1a0a")


def test_history_page_lists_every_platform_and_plot(tmp_path):
    site = tmp_path / "site"
    for platform in ("reference-x64", "reference-arm64"):
        sub = site / f"perfgate-history-{platform}" / "intraprocess_reliable"
        sub.mkdir(parents=True)
        for name in ("history_max", "history_min", "history_99", "history_median",
                     "1024_bytes_median", "16_bytes_median", "16384_bytes_99"):
            (sub / f"{name}.png").write_bytes(PNG)
    result = subprocess.run([sys.executable, HISTORY_PAGE, site], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    page = (site / "index.html").read_text()
    assert page.index('id="reference-arm64"') < page.index('id="reference-x64"')
    overview = re.findall(r'<img src="perfgate-history-reference-x64/intraprocess_reliable/(\w+)\.png"', page)
    assert overview == ["history_median", "history_99", "history_min", "history_max"]
    links = re.findall(r'<a href="perfgate-history-reference-x64/intraprocess_reliable/(\w+)\.png"', page)
    assert links == ["16_bytes_median", "1024_bytes_median", "16384_bytes_99"]


def test_history_page_refuses_an_empty_site(tmp_path):
    (tmp_path / "perfgate-history-reference-x64").mkdir()
    result = subprocess.run([sys.executable, HISTORY_PAGE, tmp_path], capture_output=True, text=True)
    assert result.returncode == 3 and "no perfgate-history-" in result.stderr
    assert not (tmp_path / "index.html").exists()
    missing = subprocess.run([sys.executable, HISTORY_PAGE, tmp_path / "nowhere"], capture_output=True, text=True)
    assert missing.returncode == 2 and "not a folder" in missing.stderr


# --- the store that outlives its runner (docs/history.md) -------------------------------------------
def test_the_gate_pushes_the_store_and_the_nightly_pulls_it_before_history(workflows, tmp_path):
    from store_scripts import (bare_repository, branch_labels, run_script, runner_checkout,
                               stored_experiment)

    gate = workflows["gate.yml"]
    declared = triggers(gate)["workflow_call"]["secrets"]["PERFGATE_STORE_REMOTE"]
    assert declared["required"] is False
    # per-commit runs hand the secret to the gate; pull requests never do (their results are never stored)
    assert workflows["per-commit.yml"]["jobs"]["gate"]["secrets"] == {
        "PERFGATE_STORE_REMOTE": "${{ secrets.PERFGATE_STORE_REMOTE }}"}
    assert "secrets" not in workflows["pull-request.yml"]["jobs"]["gate"]
    job_steps = steps(gate["jobs"]["gate"])
    ids = [step.get("id") for step in job_steps]
    assert ids.index("store") == ids.index("gate") + 1  # right after the gate, whatever its verdict
    push_step = step_named(gate["jobs"]["gate"], "store")
    assert push_step["if"] == "${{ !cancelled() && inputs.keep-in-store }}"
    assert push_step["env"]["PERFGATE_STORE_REMOTE"] == "${{ secrets.PERFGATE_STORE_REMOTE }}"
    nightly = steps(workflows["nightly-history.yml"]["jobs"]["history"])
    names = [step.get("name") for step in nightly]
    pull_step = nightly[names.index("Pull the results store")]
    assert names.index("Pull the results store") + 1 == names.index("Redraw the history plots")
    assert pull_step["env"]["PERFGATE_STORE_REMOTE"] == "${{ secrets.PERFGATE_STORE_REMOTE }}"

    # run the steps as the runners would: two runners of one platform push, a third pulls before history
    remote = bare_repository(tmp_path / "results.git")
    for runner, label in (("a", "run-a"), ("b", "run-b")):
        checkout = runner_checkout(tmp_path / f"checkout-{runner}")
        store = tmp_path / f"store-{runner}"
        stored_experiment(store, label)
        done = run_script(push_step["run"], checkout, {"PLATFORM": "reference-x64", "PERFGATE_STORE": str(store),
                                                       "PERFGATE_STORE_REMOTE": str(remote)})
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.startswith(f"pushed 1 experiment(s) to {remote} branch perfgate-results-reference-x64")
    assert branch_labels(remote, "perfgate-results-reference-x64") == ["run-a", "run-b"]
    checkout = runner_checkout(tmp_path / "checkout-nightly")
    environment = tmp_path / "github_env"
    environment.write_text("")
    store = tmp_path / "store-nightly"
    done = run_script(pull_step["run"], checkout, {"PLATFORM": "reference-x64", "PERFGATE_STORE": str(store),
                                                   "PERFGATE_STORE_REMOTE": str(remote), "GITHUB_ENV": str(environment)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in (store / "experiments").iterdir()) == ["run-a", "run-b"]
    assert environment.read_text() == f"PERFGATE_STORE={store}\n"  # the redraw step's store

    # no remote configured: both steps say so and succeed, nothing pushed or pulled
    done = run_script(push_step["run"], checkout, {"PLATFORM": "reference-x64", "PERFGATE_STORE": str(store),
                                                   "PERFGATE_STORE_REMOTE": ""})
    assert done.returncode == 0 and "stays on this runner only" in done.stdout
    done = run_script(pull_step["run"], checkout, {"PLATFORM": "reference-x64", "PERFGATE_STORE": str(tmp_path / "x"),
                                                   "PERFGATE_STORE_REMOTE": "", "GITHUB_ENV": str(environment)})
    assert done.returncode == 0 and not (tmp_path / "x").exists()
    # a push that fails (the remote is gone) fails the step with perfgate's exit code and git's message
    done = run_script(push_step["run"], checkout, {"PLATFORM": "reference-x64", "PERFGATE_STORE": str(store),
                                                   "PERFGATE_STORE_REMOTE": str(tmp_path / "gone.git")})
    assert done.returncode == 2 and "does not appear to be a git repository" in done.stderr


def test_the_gate_takes_sub_experiments_and_per_commit_measures_what_the_requirements_list():
    """gate.yml passes `subexperiments` to the gate; per-commit leaves it empty (the ten), and each
    platform's requirements list exactly those: a row the run does not measure is missing data (exit
    3), so a platform file with zero copy or one-to-many rows would make every default gate incomplete."""
    from perfgate import files
    from perfgate import schema as s

    workflow = yaml.safe_load((REPO_ROOT / ".github/workflows/per-commit.yml").read_text())
    [job] = [job for job in workflow["jobs"].values() if "uses" in job]
    assert not job["with"].get("subexperiments")
    platforms = [path for path in sorted((REPO_ROOT / "requirements").glob("*.csv")) if "_" not in path.stem]
    assert platforms
    for path in platforms:
        listed = set(files.read_requirements(path)[s.EXPERIMENT_TYPE])
        assert listed == set(s.DEFAULT_SUBEXPERIMENT_NAMES), path.name
    gate_yml = yaml.safe_load((REPO_ROOT / ".github/workflows/gate.yml").read_text())
    [gate_step] = [step for step in steps(gate_yml["jobs"]["gate"]) if step.get("id") == "gate"]
    assert '${SUBEXPERIMENTS:+--subexperiments "$SUBEXPERIMENTS"}' in gate_step["run"]
    assert gate_step["env"]["SUBEXPERIMENTS"] == "${{ inputs.subexperiments }}"


# --- the gate step: one perfgate call (docs/ci.md) ----------------------------------------------------
def github_expression(text: str, context: dict) -> str:
    """An env value of a step as GitHub computes it, for the expressions these steps use (`a && 'x' || b`,
    `!=`, format(), inputs.* and steps.*.outputs.*): Python's and/or pick values the same way (an empty
    string, false, 0 and null are falsy), and an env value is the result as a string."""
    inner = re.fullmatch(r"\$\{\{(.*)\}\}", text.strip(), re.S)
    if inner is None:
        return text
    python = re.sub(r"\b((?:inputs|steps)(?:\.[A-Za-z0-9_-]+)+)", lambda m: f"context[{m.group(1)!r}]", inner.group(1))
    python = python.replace("&&", " and ").replace("||", " or ")
    value = eval(python, {"format": lambda pattern, *values: pattern.format(*values), "context": context})
    return {True: "true", False: "false", None: ""}.get(value, value) if isinstance(value, (bool, type(None))) \
        else str(value)


GATE_CASES = [
    # quick, the system's Fast DDS, a pull request: nothing stored
    ({"inputs.quick": True, "inputs.samples": 10000, "inputs.fastdds-prefix": "", "inputs.fastdds-ref": "",
      "inputs.keep-in-store": False, "inputs.experiments": "", "inputs.subexperiments": "",
      "inputs.strict-platform": False, "steps.baseline.outputs.build": ""},
     {"quick": True, "samples": None, "fastdds": "system", "history": False, "experiments": ["latency"],
      "subexperiments": None, "baseline_build": None, "strict_platform": False}),
    # a commit built here with its parent as the A/B baseline, kept in the store, two sub-experiments
    ({"inputs.quick": False, "inputs.samples": 5000, "inputs.fastdds-prefix": "", "inputs.fastdds-ref": "abc123",
      "inputs.keep-in-store": True, "inputs.experiments": "latency,throughput",
      "inputs.subexperiments": "intraprocess_best_effort,interprocess_reliable", "inputs.strict-platform": True,
      "steps.baseline.outputs.build": "/ws/installs/baseline"},
     {"quick": False, "samples": 5000, "fastdds": "workspace", "history": True,
      "experiments": ["latency", "throughput"], "subexperiments": ["intraprocess_best_effort", "interprocess_reliable"],
      "baseline_build": "/ws/installs/baseline", "strict_platform": True}),
    # a prefix given: measured whatever fastdds-ref says
    ({"inputs.quick": False, "inputs.samples": 10000, "inputs.fastdds-prefix": "/opt/fastdds", "inputs.fastdds-ref": "v2",
      "inputs.keep-in-store": False, "inputs.experiments": "latency", "inputs.subexperiments": "",
      "inputs.strict-platform": False, "steps.baseline.outputs.build": ""},
     {"quick": False, "samples": 10000, "fastdds": "/opt/fastdds", "history": False, "subexperiments": None}),
]


@pytest.mark.parametrize("context, expected", GATE_CASES)
def test_the_gate_step_is_one_perfgate_call_naming_its_fastdds_and_store(workflows, tmp_path, context, expected):
    from store_scripts import run_gate_step, runner_checkout

    step = step_named(workflows["gate.yml"]["jobs"]["gate"], "gate")
    assert step["run"].count("ci/gate.sh") == 1 and "if " not in step["run"] and "args" not in step["run"]
    environment = {name: github_expression(value, {**context, "inputs.platform": "reference-x64",
                                                                   "steps.fastdds.outputs.name": "abc123"})
                   for name, value in step["env"].items()}
    summary, output = tmp_path / "summary.md", tmp_path / "github_output"
    done, parsed = run_gate_step(step["run"], runner_checkout(tmp_path / "checkout"), {
        **environment, "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output), "GITHUB_RUN_ID": "7",
        "GITHUB_RUN_ATTEMPT": "1", "GATE_EXIT": "1"})
    assert done.returncode == 1, done.stderr  # the gate's exit code is the step's, and its output
    assert output.read_text() == "exit-code=1\n"
    assert {name: parsed[name] for name in expected} == expected
    assert parsed["output"] == "out/experiment" and parsed["platform"] == "reference-x64"
    assert parsed["annotations"] and parsed["summary_markdown"] == str(summary)
    assert re.fullmatch(r"\d{8}T\d{6}Z_abc123_run7\.1", parsed["label"])
    assert parsed["workspace"] is None and parsed["fastdds_prefix"] is None and parsed["store"] is None


def test_the_runners_paths_are_written_once(workflows, tmp_path):
    """/var/lib/perfgate is named in ci/runner-env.sh only; the gate job sets the runner's workspace and
    store for every step from it, a runner's own values first."""
    ci_files = [*sorted((REPO_ROOT / ".github" / "workflows").glob("*.yml")), REPO_ROOT / "ci" / "Jenkinsfile"]
    assert [path.name for path in ci_files if "/var/lib/perfgate" in path.read_text()] == []
    assert (REPO_ROOT / "ci" / "runner-env.sh").read_text().count("/var/lib/perfgate") == 2
    from store_scripts import run_script, runner_checkout

    [paths_step] = [step for step in steps(workflows["gate.yml"]["jobs"]["gate"])
                    if step.get("name") == "The runner's workspace and results store"]
    checkout = runner_checkout(tmp_path / "checkout")
    for own, expected in (({}, ["PERFGATE_WORKSPACE=/var/lib/perfgate/workspace", "PERFGATE_STORE=/var/lib/perfgate/store"]),
                          ({"PERFGATE_WORKSPACE": "/srv/ws", "PERFGATE_STORE": "/srv/store"},
                           ["PERFGATE_WORKSPACE=/srv/ws", "PERFGATE_STORE=/srv/store"])):
        environment = tmp_path / "github_env"
        environment.write_text("")
        done = run_script(paths_step["run"], checkout, {"GITHUB_ENV": str(environment), **own})
        assert done.returncode == 0, done.stderr
        assert environment.read_text().splitlines() == expected


# --- the sticky comment's script (actions/github-script), run by Node against a recording GitHub API -----
COMMENT_HARNESS = """
const calls = [];
const existing = JSON.parse(process.env.EXISTING);
const listComments = () => {};
const github = {
  paginate: async (method, params) => { calls.push(['list', params.issue_number]); return existing; },
  rest: { issues: {
    listComments,
    updateComment: async (p) => { calls.push(['update', p.comment_id, p.body]); },
    createComment: async (p) => { calls.push(['create', p.issue_number, p.body]); },
  } },
};
const context = { repo: { owner: 'o', repo: 'perfgate' } };
(async () => {
  try {
    await (async function (require, github, context) { SCRIPT })(require, github, context);
    console.log(JSON.stringify(calls));
  } catch (error) { console.log(JSON.stringify({ error: error.message })); }
})();
"""


def run_comment_script(script: str, tmp_path: Path, body: str, existing: list[dict]):
    node = shutil.which("node")
    assert node, "node not found: ci/install-system.sh installs nodejs (ci/debian-test-packages.txt)"
    (tmp_path / "comment.md").write_text(body)
    harness = tmp_path / "harness.js"
    harness.write_text(COMMENT_HARNESS.replace("SCRIPT", script))
    done = subprocess.run([node, str(harness)], capture_output=True, text=True, timeout=60, env={
        "PATH": os.environ["PATH"], "RUNNER_TEMP": str(tmp_path), "PLATFORM": "reference-x64",
        "PULL_REQUEST": "7", "EXISTING": json.dumps(existing)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_comment_is_updated_in_place_and_only_ours(workflows, tmp_path):
    [post] = [step for step in steps(workflows["pull-request.yml"]["jobs"]["report"])
              if str(step.get("uses", "")).startswith("actions/github-script@")]
    assert post["env"] == {"PLATFORM": "${{ matrix.platform }}", "PULL_REQUEST": "${{ github.event.pull_request.number }}"}
    script = post["with"]["script"]
    body = "<!-- perfgate:reference-x64 -->\n## perfgate on reference-x64: **PASS**\n"
    bot, user = {"login": "github-actions[bot]"}, {"login": "mallory"}
    # none yet: created on the pull request
    assert run_comment_script(script, tmp_path, body, []) == [["list", 7], ["create", 7, body]]
    # ours is updated in place; a user's comment carrying the marker, and ours of another platform, are not
    existing = [{"id": 1, "user": user, "body": "<!-- perfgate:reference-x64 -->\nfake"},
                {"id": 2, "user": bot, "body": "<!-- perfgate:reference-arm64 -->\n..."},
                {"id": 3, "user": bot, "body": "<!-- perfgate:reference-x64 -->\nold"}]
    assert run_comment_script(script, tmp_path, body, existing) == [["list", 7], ["update", 3, body]]
    assert run_comment_script(script, tmp_path, body, existing[:2]) == [["list", 7], ["create", 7, body]]
    # a body without this platform's marker first is never posted
    assert run_comment_script(script, tmp_path, "## no marker\n", []) == {
        "error": "the comment does not start with <!-- perfgate:reference-x64 -->"}


# Issue 44 item 4: an input echoed into a log line raw, with a line feed in it, forged a workflow command of
# its own (`::error::`, `::add-mask::`, `##[...]`): each input is written as one line's data.
FORGED = "v1\n::error title=forged::pwned\n##[warning]forged too %0A"


@pytest.mark.parametrize("step_id, environment", [
    ("head", {"PERFGATE_REF": FORGED}),
    ("fastdds", {"FASTDDS_PREFIX": FORGED}),
    ("fastdds", {"BASELINE_REF": FORGED}),
    ("fastdds", {"FASTDDS_REF": FORGED, "FASTDDS_REPOSITORY": FORGED}),
    ("baseline", {"BASELINE_REF": FORGED, "FASTDDS_REF": "abc123", "FAKE_BASELINE_EXIT": "3"}),
])
def test_inputs_in_log_lines_cannot_forge_workflow_commands(workflows, tmp_path, step_id, environment):
    script = step_named(workflows["gate.yml"]["jobs"]["gate"], step_id)["run"]
    given = {"GITHUB_REPOSITORY": "o/perfgate", "HEAD_SHA": HEAD, "PERFGATE_REPOSITORY": "", "FASTDDS_REF": "",
             "FASTDDS_PREFIX": "", "BASELINE_REF": "", "FASTDDS_REPOSITORY": "eProsima/Fast-DDS", **environment}
    [done], _, _ = run_build_steps([script], tmp_path, given)
    lines = done.stdout.splitlines()
    assert lines, done.stderr
    # every line perfgate's script printed is its own: no line of the input's starts a command
    assert not [line for line in lines if line.lstrip().startswith("::") and "forged" in line.split("::")[1]]
    assert not any("##[" in line for line in lines)
    shown = [line for line in lines if "v1%0A" in line]
    assert shown and all("%0A::error title=forged::pwned%0A#%23[warning]forged too %250A" in line for line in shown)
