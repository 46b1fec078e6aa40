"""The GitHub Actions workflows: actionlint (with shellcheck) passes, and the security rules hold.

actionlint is installed by the test itself when missing: `go install` of a pinned version into
.cache/actionlint/<version>/ (Go and shellcheck come from ci/debian-packages.txt). v1.7.7 is the
newest actionlint whose go.mod asks for no more than Debian 12's Go 1.19; later releases need Go
1.24+. Every checker below is also run on a small bad workflow, so that a checker that cannot fail
cannot pass unnoticed.
"""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO_ROOT / ".github" / "workflows"
ACTIONLINT_CONFIG = REPO_ROOT / ".github" / "actionlint.yaml"
HISTORY_PAGE = REPO_ROOT / ".github" / "scripts" / "history_page.py"
ACTIONLINT_VERSION = "v1.7.7"
ACTIONLINT_MODULE = "github.com/rhysd/actionlint/cmd/actionlint"
GO_CANDIDATES = ("/usr/local/go/bin/go", "/usr/lib/go/bin/go")
EXPECTED_WORKFLOWS = {"gate.yml", "per-commit.yml", "pull-request.yml", "pull-request-report.yml",
                      "nightly-history.yml", "tests.yml"}
PINNED_USES = re.compile(r"^\s*(?:-\s+)?uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40})\s+#\s*v\d+(?:\.\d+)*\s*$")
PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")
PR_HEAD_REFERENCES = ("github.event.pull_request.head", "github.head_ref", "refs/pull/")


# --- installing the tools -------------------------------------------------------------------------
def _go() -> str:
    go = shutil.which("go") or next((c for c in GO_CANDIDATES if Path(c).exists()), None)
    assert go, "Go not found: ci/install-system.sh installs golang-go (ci/debian-packages.txt)"
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
    assert path, "shellcheck not found: ci/install-system.sh installs it (ci/debian-packages.txt)"
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


def is_self_hosted(job: dict, folder: Path) -> bool:
    """Runs on a self-hosted runner itself, or calls a local reusable workflow that does."""
    if "self-hosted" in runs_on_labels(job):
        return True
    called = job.get("uses", "")
    if called.startswith("./.github/workflows/"):
        return any(is_self_hosted(j, folder) for j in load(folder / Path(called).name)["jobs"].values())
    return False


def called_self_hosted_jobs(job: dict, folder: Path) -> list[dict]:
    called = job.get("uses", "")
    if not called.startswith("./.github/workflows/"):
        return [job] if "self-hosted" in runs_on_labels(job) else []
    return [j for j in load(folder / Path(called).name)["jobs"].values() if "self-hosted" in runs_on_labels(j)]


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
    """Self-hosted jobs reachable from a pull request without a maintainer's label and an approval."""
    if not any(event in triggers(workflow) for event in PULL_REQUEST_EVENTS):
        return []
    bad = []
    for name, job in workflow["jobs"].items():
        for target in called_self_hosted_jobs(job, folder):
            gate = str(target.get("if", ""))
            labelled = "github.event.label.name == 'perf-test'" in gate and "github.event.action == 'labeled'" in gate
            environment = target.get("environment")
            environment = environment.get("name") if isinstance(environment, dict) else environment
            approved = "perfgate-pull-request" in str(environment or "") and "pull_request" in str(environment or "")
            if not (labelled and approved):
                bad.append(name)
    return bad


def expressions_in_run_scripts(workflow: dict) -> list[str]:
    """`${{ }}` spliced into shell text (script injection); values must come in through env."""
    return [f"{name}: {step.get('name', step['run'][:40])}" for name, job in workflow["jobs"].items()
            for step in steps(job) if "run" in step and "${{" in step["run"]]


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


def test_self_hosted_jobs_of_pull_requests_need_a_label_and_an_approval(workflows):
    reached = [name for name, workflow in workflows.items()
               if "pull_request" in triggers(workflow)
               and any(is_self_hosted(job, WORKFLOWS) for job in workflow["jobs"].values())]
    assert reached == ["pull-request.yml"]
    for name, workflow in workflows.items():
        assert ungated_self_hosted_jobs(workflow, WORKFLOWS) == [], name
    pull_request = workflows["pull-request.yml"]
    assert triggers(pull_request) == {"pull_request": {"types": ["labeled"]}}
    assert pull_request["jobs"]["gate"]["if"] == "github.event.label.name == 'perf-test'"
    bad = {"on": {"pull_request": None}, "jobs": {"measure": {"runs-on": ["self-hosted", "perfgate"]}}}
    assert ungated_self_hosted_jobs(bad, WORKFLOWS) == ["measure"]


def test_the_fork_report_workflow_only_reads_artifacts(workflows):
    report = workflows["pull-request-report.yml"]
    assert set(triggers(report)) == {"workflow_run"}
    for job in report["jobs"].values():
        assert not any("run" in step for step in steps(job))
        uses = [step["uses"].split("@")[0] for step in steps(job)]
        assert uses == ["actions/download-artifact", "mikepenz/action-junit-report"]
        assert job["permissions"] == {"actions": "read", "checks": "write"}
        assert "self-hosted" not in runs_on_labels(job)


def test_no_expression_is_spliced_into_shell_scripts(workflows):
    for name, workflow in workflows.items():
        assert expressions_in_run_scripts(workflow) == [], name
    bad = {"jobs": {"x": {"steps": [{"name": "echo", "run": "echo ${{ github.event.pull_request.title }}"}]}}}
    assert expressions_in_run_scripts(bad) == ["x: echo"]


def test_checkouts_leave_no_token_behind(workflows):
    for name, workflow in workflows.items():
        assert checkouts_keeping_credentials(workflow) == [], name


# --- what each workflow does ------------------------------------------------------------------------
def test_reusable_gate_workflow(workflows):
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
    assert reporter["with"]["report_paths"] == "report/junit.xml"


def test_gate_options_used_by_the_workflow_exist(workflows):
    run = next(step for step in steps(workflows["gate.yml"]["jobs"]["gate"]) if step.get("id") == "gate")["run"]
    used = set(re.findall(r"(--[a-z][a-z-]+)", run))
    assert {"--output", "--platform", "--samples", "--label", "--fastdds-prefix", "--store", "--no-history", "--quick"} <= used
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


def test_nightly_history_is_published(workflows):
    nightly = workflows["nightly-history.yml"]
    cron = triggers(nightly)["schedule"][0]["cron"]
    assert len(cron.split()) == 5
    history = nightly["jobs"]["history"]
    assert "perfgate history" in steps(history)[1]["run"]
    assert "self-hosted" in runs_on_labels(history)
    deploy = nightly["jobs"]["deploy"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert steps(deploy)[0]["uses"].startswith("actions/deploy-pages@")


def test_project_tests_run_on_a_hosted_runner(workflows):
    job = workflows["tests.yml"]["jobs"]["test"]
    assert job["runs-on"] == "ubuntu-latest" and job["container"] == "debian:12"
    assert steps(job)[-1]["run"] == ".ci/run"


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
