"""ci/Jenkinsfile: Groovy's own parser reads it, and its outline holds the gate's stages and steps.

Debian's `groovy` (ci/debian-test-packages.txt) parses the file to an abstract syntax tree without
running it (unknown methods such as `pipeline` are fine at that stage). A short Groovy program
prints every method call with where it is nested, its line and its literal arguments; the tests
check that outline, run shellcheck on the shell scripts it carries, and check the perfgate options
those scripts pass against the real command line.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT

JENKINSFILE = REPO_ROOT / "ci" / "Jenkinsfile"

OUTLINE_GROOVY = r"""
import groovy.json.JsonOutput
import org.codehaus.groovy.ast.CodeVisitorSupport
import org.codehaus.groovy.ast.expr.*
import org.codehaus.groovy.control.CompilationUnit
import org.codehaus.groovy.control.Phases

class Outline extends CodeVisitorSupport {
    List calls = []
    List path = []

    static Object literal(Expression e) {
        if (e instanceof ConstantExpression) return e.value
        return null
    }

    void visitMethodCallExpression(MethodCallExpression call) {
        def positional = []
        def named = [:]
        def computed = []
        def arguments = call.arguments instanceof TupleExpression ? call.arguments.expressions : [call.arguments]
        arguments.each { argument ->
            if (argument instanceof MapExpression) {
                argument.mapEntryExpressions.each {
                    def key = literal(it.keyExpression)
                    named[key] = literal(it.valueExpression)
                    if (!(it.valueExpression instanceof ConstantExpression)) computed << key
                }
            } else if (!(argument instanceof ClosureExpression)) {
                positional << (argument instanceof ConstantExpression ? argument.value : argument.text)
            }
        }
        def name = call.methodAsString
        calls << [path: new ArrayList(path), name: name, line: call.lineNumber,
                  positional: positional, named: named, computed: computed]
        path << (name == 'stage' && positional ? "stage:" + positional[0] : name)
        super.visitMethodCallExpression(call)
        path.remove(path.size() - 1)
    }
}

def unit = new CompilationUnit()
unit.addSource(new File(args[0]))
unit.compile(Phases.CONVERSION)
def outline = new Outline()
unit.AST.modules.each { it.statementBlock.visit(outline) }
println JsonOutput.toJson(outline.calls)
"""

# Declarative directives and the steps this pipeline may call; anything else is a typo or a step
# from a plugin the reference Jenkins may lack.
KNOWN_CALLS = {
    "pipeline", "agent", "label", "parameters", "string", "booleanParam", "options",
    "disableConcurrentBuilds", "buildDiscarder", "logRotator", "timeout", "triggers", "cron",
    "stages", "stage", "when", "not", "triggeredBy", "steps", "script", "sh", "unstable", "error",
    "post", "always", "success", "junit", "archiveArtifacts", "withCredentials", "echo",
}
PARAMETERS = {"PLATFORM", "FASTDDS_REPOSITORY", "FASTDDS_REF", "FASTDDS_PREFIX", "BASELINE_REF", "SAMPLES", "QUICK",
              "EXPERIMENTS", "SUBEXPERIMENTS", "KEEP_IN_STORE", "STORE_CREDENTIALS", "AA_GATE", "STRICT_PLATFORM"}


def parse(path: Path) -> subprocess.CompletedProcess:
    groovy = shutil.which("groovy")
    assert groovy, "groovy not found: ci/install-system.sh installs it (ci/debian-test-packages.txt)"
    program = path.parent / "outline.groovy"
    program.write_text(OUTLINE_GROOVY)
    return subprocess.run([groovy, str(program), str(path)], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def calls(tmp_path_factory) -> list[dict]:
    folder = tmp_path_factory.mktemp("jenkinsfile")
    copy = folder / "Jenkinsfile"
    copy.write_text(JENKINSFILE.read_text())
    result = parse(copy)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def find(calls: list[dict], name: str, inside: str | None = None) -> list[dict]:
    return [c for c in calls if c["name"] == name and (inside is None or inside in c["path"])]


def stage_scripts(calls: list[dict], stage: str) -> list[str]:
    return [c["named"]["script"] for c in find(calls, "sh", f"stage:{stage}")]


def test_groovy_parser_rejects_a_broken_pipeline(tmp_path):
    broken = tmp_path / "Jenkinsfile"
    broken.write_text(JENKINSFILE.read_text().replace("stage('Gate') {", "stage('Gate') ", 1))
    result = parse(broken)
    assert result.returncode != 0
    assert "expecting" in result.stderr or "unexpected" in result.stderr


def test_one_declarative_pipeline_with_the_gate_stages(calls):
    assert [c["name"] for c in calls if c["path"] == []] == ["pipeline"]
    sections = [c["name"] for c in calls if c["path"] == ["pipeline"]]
    assert sections == ["agent", "parameters", "options", "triggers", "stages"]
    assert [c["positional"][0] for c in find(calls, "stage")] == ["Fast DDS", "Gate", "History"]


def test_every_call_is_a_known_directive_or_step(calls):
    assert sorted({c["name"] for c in calls} - KNOWN_CALLS) == []


def test_agent_is_the_reference_machine_of_the_platform(calls):
    [label] = find(calls, "label", "agent")
    assert label["positional"][0].startswith("perfgate && ") and "params.PLATFORM" in label["positional"][0]


def test_parameters(calls):
    declared = {c["named"]["name"]: c["named"]["defaultValue"] for c in calls if c["path"] == ["pipeline", "parameters"]}
    assert set(declared) == PARAMETERS
    assert declared["SAMPLES"] == "10000"
    assert declared["SUBEXPERIMENTS"] == ""  # the ten, which the platform's requirements list
    assert declared["PLATFORM"] == "reference-x64"
    assert declared["FASTDDS_REPOSITORY"] == "https://github.com/eProsima/Fast-DDS.git"
    assert declared["FASTDDS_REF"] == "" and declared["FASTDDS_PREFIX"] == ""
    assert declared["BASELINE_REF"] == ""  # no A/B unless asked for
    assert declared["EXPERIMENTS"] == "latency"  # throughput when asked for
    assert declared["STORE_CREDENTIALS"] == "perfgate-store-remote"  # the credential's id, never the URL
    assert declared["AA_GATE"] is True  # the nightly's A/A gate, on by default
    [baseline_ref] = [c for c in calls if c["path"] == ["pipeline", "parameters"] and c["named"]["name"] == "BASELINE_REF"]
    assert "parent" in baseline_ref["named"]["description"] and "merge-base:<ref>" in baseline_ref["named"]["description"]


def test_no_concurrent_builds_and_a_nightly_timer(calls):
    assert [c["path"] for c in find(calls, "disableConcurrentBuilds")] == [["pipeline", "options"]]
    [cron] = find(calls, "cron", "triggers")
    fields = cron["positional"][0].split()
    assert len(fields) == 5 and fields[2:] == ["*", "*", "*"]
    # The timer build only redraws history; every other build runs the gate.
    timer = [c["path"][2] for c in find(calls, "triggeredBy") if c["positional"] == ["TimerTrigger"]]
    negated = [c["path"][2] for c in find(calls, "triggeredBy") if "not" in c["path"]]
    assert timer == ["stage:Fast DDS", "stage:Gate", "stage:History"]
    assert negated == ["stage:Fast DDS", "stage:Gate"]


def test_gate_results_are_published_whatever_the_verdict(calls):
    [junit] = find(calls, "junit", "stage:Gate")
    assert junit["path"][-2:] == ["post", "always"]
    # the gate's JUnit file, the A/B's when BASELINE_REF asked for one, the throughput check's when
    # EXPERIMENTS has throughput
    assert junit["named"]["testResults"].split(", ") == ["out/experiment/junit.xml", "out/experiment/ab/junit.xml",
                                                         "out/experiment/throughput/junit.xml",
                                                         "out/experiment/throughput/ab/junit.xml"]
    assert junit["named"]["allowEmptyResults"] is True
    [archive] = find(calls, "archiveArtifacts", "stage:Gate")
    assert archive["path"][-2:] == ["post", "always"]
    # the whole experiment folder, the A/B's ab/ (report.html, verdict.csv, ...) in it
    assert "out/experiment/**" in archive["named"]["artifacts"].split(", ")
    # a regression, and a store push that failed (the run stays in the agent's store), make the build unstable
    assert [c["path"][-1] for c in find(calls, "unstable", "stage:Gate")] == ["script", "script"]
    [history_archive] = find(calls, "archiveArtifacts", "stage:History")
    assert history_archive["named"]["artifacts"] == "out/history_plots/**"
    # the history and its bisects are published also when a bisect gave no answer (unstable), or when the
    # A/A gates' false alarms contradict the budget (unstable)
    assert history_archive["path"][-2:] == ["post", "always"]
    assert [c["path"][-1] for c in find(calls, "unstable", "stage:History")] == ["script", "script"]
    [bisect_timeout] = [c for c in find(calls, "timeout", "stage:History")]
    assert bisect_timeout["named"] == {"time": 150, "unit": "MINUTES"}


def test_shell_scripts_are_literal_and_pass_shellcheck(calls, tmp_path):
    shellcheck = shutil.which("shellcheck")
    assert shellcheck, "shellcheck not found: ci/install-system.sh installs it"
    shell_steps = find(calls, "sh")
    assert len(shell_steps) == 9
    for index, step in enumerate(shell_steps):
        # A literal script: build parameters reach it as environment variables, never as Groovy
        # interpolation into the shell text.
        assert step["computed"] == [] and isinstance(step["named"]["script"], str)
        script = tmp_path / f"step{index}.sh"
        script.write_text(step["named"]["script"])
        result = subprocess.run([shellcheck, "--shell=bash", str(script)], capture_output=True, text=True)
        assert result.returncode == 0, f"line {step['line']}:\n{result.stdout}"


def _options(script: str) -> set[str]:
    return set(re.findall(r"(--[a-z][a-z-]+)", script))


def _help(command: str) -> str:
    usage = subprocess.run([sys.executable, "-m", "perfgate.cli", command, "--help"], capture_output=True, text=True)
    assert usage.returncode == 0, usage.stderr
    return usage.stdout


def test_perfgate_options_in_the_scripts_exist(calls):
    [gate_script] = [s for s in stage_scripts(calls, "Gate") if "ci/gate.sh" in s]
    gate_options = _options(gate_script)
    assert {"--output", "--platform", "--samples", "--quick", "--history", "--no-history", "--fastdds",
            "--baseline-build", "--experiments", "--subexperiments"} <= gate_options
    assert sorted(o for o in gate_options if o not in _help("gate")) == []
    [_, _, pull_script, history_script, bisect_script, _] = stage_scripts(calls, "History")
    history_options = _options(history_script)
    assert history_options == {"--requirements", "--experiments-results", "--plots-directory", "--baseline"}
    assert sorted(o for o in history_options if o not in _help("history")) == []
    # after the history, one bounded perfgate bisect-events on its events.csv, into the published plots
    bisect_options = _options(bisect_script)
    assert {"--events", "--workspace", "--git-url", "--output", "--max", "--time-budget"} <= bisect_options
    assert sorted(o for o in bisect_options if o not in _help("bisect-events")) == []
    assert bisect_script.count(".venv/bin/perfgate ") == 1 and '"$store/history_plots/events.csv"' in bisect_script
    [push_script] = [s for s in stage_scripts(calls, "Gate") if "store push" in s]
    for script in (push_script, pull_script):
        assert {"--store", "--branch"} == _options(script)
        assert sorted(o for o in _options(script) if o in ("--store", "--branch") and o not in _help("store")) == []


def test_the_store_remote_is_a_credential_bound_for_the_push_and_the_pull_alone(calls):
    """The remote (a URL that may carry a token) was read from the agent's environment, which every
    build's code reads too (the gate runs Fast DDS's and the harness's code): now a Jenkins credential
    (STORE_CREDENTIALS), bound by withCredentials around the push and the pull steps only (issue 23)."""
    bindings = find(calls, "withCredentials")
    assert [c["path"][2] for c in bindings] == ["stage:Gate", "stage:History"]
    for binding in bindings:
        [secret] = [c for c in find(calls, "string") if c["path"][:len(binding["path"]) + 1] == binding["path"] + ["withCredentials"]]
        assert secret["named"]["variable"] == "PERFGATE_STORE_REMOTE"
        assert secret["computed"] == ["credentialsId"] and "params.STORE_CREDENTIALS" in binding["positional"][0]
    bound = [c["named"]["label"] for c in find(calls, "sh", "withCredentials")]
    assert bound == ["perfgate store push", "perfgate store push", "perfgate store pull"]  # the gate's; the A/A's
    for step in find(calls, "sh"):
        if "withCredentials" not in step["path"]:  # the gate, the builds and history never see the remote
            assert "PERFGATE_STORE_REMOTE" not in step["named"]["script"], step["named"]["label"]
            assert "store push" not in step["named"]["script"] and "store pull" not in step["named"]["script"]


@pytest.mark.heavy
def test_the_gate_pushes_the_store_and_the_nightly_history_pulls_it_with_the_baselines(calls, tmp_path):
    from store_scripts import bare_repository, branch_labels, run_script, runner_checkout, stored_experiment

    [push_script] = [s for s in stage_scripts(calls, "Gate") if "store push" in s]
    [_, _, pull_script, history_script, bisect_script, _] = stage_scripts(calls, "History")
    remote = bare_repository(tmp_path / "results.git")
    agent = runner_checkout(tmp_path / "agent-a")
    store = tmp_path / "store-a"
    stored_experiment(store, "run-a")
    environment = {"PLATFORM": "bench", "PERFGATE_STORE": str(store), "PERFGATE_STORE_REMOTE": str(remote),
                   "KEEP_IN_STORE": "true"}
    done = run_script(push_script, agent, environment)
    assert done.returncode == 0, done.stdout + done.stderr
    assert branch_labels(remote, "perfgate-results-bench") == ["run-a"]
    # change requests and KEEP_IN_STORE=false never push
    stored_experiment(store, "run-b")
    for extra in ({"CHANGE_ID": "7"}, {"KEEP_IN_STORE": "false"}):
        assert run_script(push_script, agent, {**environment, **extra}).returncode == 0
        assert branch_labels(remote, "perfgate-results-bench") == ["run-a"]

    # the nightly build of another agent: pull, then history with the platform's and a release baseline
    agent = runner_checkout(tmp_path / "agent-n")
    (agent / "requirements").mkdir()
    (agent / "requirements" / "bench.csv").write_text(
        "Experiment type,Bytes,Median,99%,Max\nintraprocess_best_effort,16,100.000,100.000,100.000\n")
    for name in ("bench", "bench-v3.2"):
        baseline = stored_experiment(tmp_path / "b", name, 0.9)
        shutil.copytree(baseline, agent / "baselines" / name)
    (agent / "baselines" / "bench-notes").mkdir()  # no metadata.json: no baseline
    nightly = {"PLATFORM": "bench", "PERFGATE_STORE": str(tmp_path / "store-n")}
    pulled = run_script(pull_script, agent, {**nightly, "PERFGATE_STORE_REMOTE": str(remote)})  # as withCredentials binds it
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    history = run_script(history_script, agent, nightly)
    assert history.returncode == 0, history.stdout + history.stderr
    assert sorted(p.name for p in (tmp_path / "store-n" / "experiments").iterdir() if p.name[0] != ".") == ["run-a"]
    assert "history: 1 experiments" in history.stdout
    assert "history: reference lines: baseline bench, baseline bench-v3.2" in history.stdout
    assert (agent / "out" / "history_plots" / "history.html").is_file()
    # then bisect-events on the history's events (one run: no event, nothing to bisect), published
    bisect = run_script(bisect_script, agent, {**nightly, "PERFGATE_WORKSPACE": str(tmp_path / "ws"),
                                               "FASTDDS_REPOSITORY": str(remote)})
    assert bisect.returncode == 0, bisect.stdout + bisect.stderr
    assert "0 regression range(s)" in bisect.stdout and not (tmp_path / "ws").exists()


def test_the_nightly_gates_the_agents_build_against_itself_and_counts_the_false_alarms(calls, tmp_path):
    """Issue 28 item 1: the timer build's A/A gate (the agent's last kept build against itself, stored with
    a label that says A/A, pushed with the store) and perfgate false-alarms over the store, its CSV archived
    with the plots. ci/gate.sh is the stand-in that parses the gate's real command line."""
    from store_scripts import (bare_repository, branch_labels, run_gate_step, run_script, runner_checkout,
                               stored_aa_gate)

    [aa_script, push_script, _, _, _, false_alarms_script] = stage_scripts(calls, "History")
    assert [c["named"]["label"] for c in find(calls, "sh", "stage:History")] == [
        "perfgate gate (A/A)", "perfgate store push", "perfgate store pull", "perfgate history",
        "perfgate bisect-events", "perfgate false-alarms"]
    agent = runner_checkout(tmp_path / "agent")
    workspace, store = tmp_path / "ws", tmp_path / "store"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (workspace / "installs" / commit).mkdir(parents=True)
    (workspace / "installs" / "candidate").symlink_to(commit)  # perfgate build --keep-as candidate
    environment = {"PLATFORM": "bench", "PERFGATE_WORKSPACE": str(workspace), "PERFGATE_STORE": str(store),
                   "AA_GATE": "true", "BUILD_NUMBER": "12"}
    done, gate = run_gate_step(aa_script, agent, environment)
    assert done.returncode == 0, done.stderr
    assert gate["fastdds"] == gate["baseline_build"] == str(workspace / "installs" / commit)  # one install: A/A
    assert re.fullmatch(rf"\d{{8}}T\d{{6}}Z_aa_{commit[:12]}_jenkins12", gate["label"])
    assert gate["store"] == str(store) and gate["history"] is True and gate["experiments"] == ["latency", "throughput"]
    done, gate = run_gate_step(aa_script, agent, {**environment, "AA_GATE": "false"})
    assert done.returncode == 0 and gate == {} and "AA_GATE is off" in done.stdout

    stored_aa_gate(store, "aa-1", "PASS")
    remote = bare_repository(tmp_path / "results.git")
    done = run_script(push_script, agent, {**environment, "PERFGATE_STORE_REMOTE": str(remote)})
    assert done.returncode == 0 and done.stdout.startswith("pushed 1 experiment(s)"), done.stdout + done.stderr
    assert branch_labels(remote, "perfgate-results-bench") == ["aa-1"]
    assert _options(false_alarms_script) <= set(re.findall(r"--[a-z][a-z-]+", _help("false-alarms")))
    done = run_script(false_alarms_script, agent, environment)
    assert done.returncode == 0, done.stderr
    assert "n 1 A/A gate(s), k 0 false alarm(s)" in done.stdout
    assert (agent / "out" / "history_plots" / "false_alarms.csv").read_text().splitlines()[1].startswith("aa-1,system,")


def test_a_fastdds_ref_is_built_with_colcon_and_the_gate_measures_that_workspace(calls):
    [build_script] = stage_scripts(calls, "Fast DDS")
    assert ". ci/runner-env.sh" in build_script and 'workspace="$PERFGATE_WORKSPACE"' in build_script
    assert 'ci/build_fastdds.sh --workspace "$workspace" --git-url "$FASTDDS_REPOSITORY" --commit "$FASTDDS_REF" ' \
           '--keep-as candidate' in _joined(build_script)
    # the options of every ci/build_fastdds.sh call (the script's git commands have options of their own)
    build_options = _build_options(build_script)
    assert build_options == {"--workspace", "--git-url", "--commit", "--keep-as"}
    assert sorted(o for o in build_options if o not in _help("build")) == []
    # a failed build (3) is left for the gate, which reports it as the JUnit error "build"
    assert '[ "$code" -ne 3 ]' in build_script
    [gate_script] = [s for s in stage_scripts(calls, "Gate") if "ci/gate.sh" in s]
    assert 'fastdds="${FASTDDS_PREFIX:-${FASTDDS_REF:+workspace}}"' in gate_script


@pytest.mark.parametrize("parameters, expected", [
    ({"QUICK": "true", "FASTDDS_REF": "", "FASTDDS_PREFIX": "", "BASELINE_REF": "", "KEEP_IN_STORE": "true",
      "SUBEXPERIMENTS": ""},
     {"quick": True, "samples": None, "fastdds": "system", "history": True, "subexperiments": None,
      "baseline_build": None}),
    ({"QUICK": "false", "FASTDDS_REF": "abc", "FASTDDS_PREFIX": "", "BASELINE_REF": "parent", "KEEP_IN_STORE": "true",
      "SUBEXPERIMENTS": "intraprocess_best_effort", "CHANGE_ID": "12"},
     {"quick": False, "samples": 5000, "fastdds": "workspace", "history": False,
      "subexperiments": ["intraprocess_best_effort"], "baseline_build": "{ws}/installs/baseline"}),
    ({"QUICK": "false", "FASTDDS_REF": "abc", "FASTDDS_PREFIX": "/opt/fastdds", "BASELINE_REF": "", "KEEP_IN_STORE": "false",
      "SUBEXPERIMENTS": ""},
     {"fastdds": "/opt/fastdds", "history": False, "baseline_build": None}),
])
def test_the_gate_stage_is_one_perfgate_call(calls, tmp_path, parameters, expected):
    from store_scripts import run_gate_step, runner_checkout

    [gate_script] = [s for s in stage_scripts(calls, "Gate") if "ci/gate.sh" in s]
    assert gate_script.count("ci/gate.sh") == 1 and "args" not in gate_script
    workspace = tmp_path / "ws"
    done, parsed = run_gate_step(gate_script, runner_checkout(tmp_path / "agent"), {
        "PLATFORM": "bench", "SAMPLES": "5000", "EXPERIMENTS": "latency", "BUILD_NUMBER": "9",
        "PERFGATE_WORKSPACE": str(workspace), "GATE_EXIT": "3", **parameters})
    assert done.returncode == 3, done.stderr
    assert {name: parsed[name] for name in expected} == {
        name: value.format(ws=workspace) if isinstance(value, str) else value for name, value in expected.items()}
    assert parsed["platform"] == "bench" and parsed["summary_markdown"] == "out/summary.md"
    assert re.fullmatch(r"\d{8}T\d{6}Z_[a-z]+_jenkins9", parsed["label"])


def _joined(script: str) -> str:
    """The script with its continued lines joined (one space where the break was)."""
    return re.sub(r"\s*\\\n\s*", " ", script)


def _build_options(script: str) -> set[str]:
    """The options given to ci/build_fastdds.sh (continued lines joined), not git's."""
    return {option for line in _joined(script).splitlines() if "ci/build_fastdds.sh" in line
            for option in _options(line.split("ci/build_fastdds.sh", 1)[1].split("||")[0])}


# --- the A/B against a baseline build (docs/ci.md "A/B against the parent / merge base") -------------
BASELINE_BUILD = '${BASELINE_REF:+--baseline-build "$PERFGATE_WORKSPACE/installs/baseline"}'
BASELINE_CALL = 'ci/build_fastdds.sh --workspace "$workspace" --git-url "$FASTDDS_REPOSITORY" --commit "$commit" ' \
                '--keep-as baseline'


def test_the_baseline_is_built_first_in_the_same_workspace_and_decides_the_gate(calls):
    [build_script] = stage_scripts(calls, "Fast DDS")
    joined = _joined(build_script)
    # the baseline first (usually kept from an earlier build: not built again), then the candidate over
    # its build tree; a failed baseline fails (3) before the candidate is built
    assert BASELINE_CALL in joined and "-baseline" not in joined
    assert joined.index(BASELINE_CALL) < joined.index('--commit "$FASTDDS_REF"')
    assert 'if [ -n "$BASELINE_REF" ]; then' in build_script
    [gate_script] = [s for s in stage_scripts(calls, "Gate") if "ci/gate.sh" in s]
    assert BASELINE_BUILD in gate_script


# A Fast DDS history: main A-B-C, a branch F1-F2 off B, and (on a third branch) M merging F2 into C.
# merge-base(F2, main) = B; the first parent of M is C. The stage hands `parent` and `merge-base:<ref>`
# to `perfgate build --commit` (which resolves them: test_build.py); the stand-in for
# ci/build_fastdds.sh records what it is given.
FAKE_BUILD = """#!/usr/bin/env bash
echo "$*" >> "$FAKE_BUILD_CALLS"
if [[ "$*" == *"--keep-as baseline"* ]]; then exit "${FAKE_BASELINE_EXIT:-0}"; fi
exit "${FAKE_CANDIDATE_EXIT:-0}"
"""


def run_fastdds_stage(script: str, folder: Path, origin: Path, candidate: str | None, environment: dict[str, str]):
    """The Fast DDS stage's script on an agent; ci/build_fastdds.sh is a stand-in that records its calls."""
    workspace = folder / "workspace"
    (folder / "ci").mkdir(parents=True)
    (folder / "ci" / "build_fastdds.sh").write_text(FAKE_BUILD)
    (folder / "ci" / "build_fastdds.sh").chmod(0o755)
    shutil.copy(REPO_ROOT / "ci" / "runner-env.sh", folder / "ci" / "runner-env.sh")
    (folder / "script.sh").write_text(script)
    (folder / "calls").write_text("")
    environment = {"PATH": os.environ["PATH"], "HOME": str(folder), "GIT_CONFIG_NOSYSTEM": "1",
                   "PERFGATE_WORKSPACE": str(workspace), "FAKE_BUILD_CALLS": str(folder / "calls"),
                   "FASTDDS_REPOSITORY": f"file://{origin}", "FASTDDS_REF": candidate or "", "FASTDDS_PREFIX": "",
                   **environment}
    result = subprocess.run(["bash", str(folder / "script.sh")], cwd=folder, env=environment, capture_output=True,
                            text=True, timeout=120)
    return result, (folder / "calls").read_text().splitlines()


def test_the_fast_dds_stage_calls_perfgate_build_and_no_git(calls):
    [script] = stage_scripts(calls, "Fast DDS")
    # the candidate's build and the baseline's: parent and merge-base: are resolved by perfgate build
    assert script.count("ci/build_fastdds.sh") == 2 and not re.search(r"\bgit\s", script)


@pytest.mark.parametrize("baseline_ref, candidate, form, expected", [
    ("parent", "M", "parent:{M}", "C"),  # the first parent
    ("merge-base:main", "F2", "merge-base:{F2},main", "B"),
    ("{A}", "M", "{A}", "A"),  # a commit of its own: given as is
])
def test_the_fast_dds_stage_builds_the_parent_or_merge_base(calls, fastdds_history, tmp_path, baseline_ref,
                                                            candidate, form, expected):
    from perfgate.fastdds.git import fetch_git

    origin, commits = fastdds_history
    [script] = stage_scripts(calls, "Fast DDS")
    result, built = run_fastdds_stage(script, tmp_path, origin, commits[candidate],
                                      {"BASELINE_REF": baseline_ref.format(**commits)})
    assert result.returncode == 0, result.stdout + result.stderr
    workspace = tmp_path / "workspace"
    assert built == [f"--workspace {workspace} --git-url file://{origin} --commit {form.format(**commits)} "
                     "--keep-as baseline",
                     f"--workspace {workspace} --git-url file://{origin} --commit {commits[candidate]} --keep-as candidate"]
    # and perfgate build resolves that --commit to the baseline meant
    assert fetch_git(f"file://{origin}", form.format(**commits), tmp_path / "resolved") == commits[expected]


def test_the_fast_dds_stage_without_an_ab_or_after_a_failed_build(calls, fastdds_history, tmp_path):
    origin, commits = fastdds_history
    [script] = stage_scripts(calls, "Fast DDS")
    # no BASELINE_REF: today's single build
    result, built = run_fastdds_stage(script, tmp_path / "none", origin, commits["M"], {"BASELINE_REF": ""})
    assert result.returncode == 0 and built == [
        f"--workspace {tmp_path / 'none' / 'workspace'} --git-url file://{origin} --commit {commits['M']} "
        "--keep-as candidate"]
    # the candidate did not build (after its baseline): left for the gate (JUnit error "build")
    result, built = run_fastdds_stage(script, tmp_path / "failed", origin, commits["M"],
                                      {"BASELINE_REF": "parent", "FAKE_CANDIDATE_EXIT": "3"})
    assert result.returncode == 0 and len(built) == 2 and built[1].endswith("--keep-as candidate")
    # the baseline could not be fetched or built: the build fails (3) before the candidate, nothing to compare with
    result, built = run_fastdds_stage(script, tmp_path / "baseline", origin, commits["M"],
                                      {"BASELINE_REF": "parent", "FAKE_BASELINE_EXIT": "3"})
    assert result.returncode == 3 and len(built) == 1 and built[0].endswith("--keep-as baseline")
    assert f"baseline Fast DDS: parent:{commits['M']} could not be fetched or built" in result.stderr


def test_a_change_request_is_refused_before_anything_of_its_checkout_runs(calls, fastdds_history, tmp_path):
    """A multibranch job would run a pull request's ci/ scripts, CMake and C++ on the reference agent (its
    store, workspace and environment): the first stage refuses it (exit 2, which fails the build and skips
    the Gate stage) before sourcing ci/runner-env.sh or building anything (docs/ci.md "Threat model")."""
    origin, commits = fastdds_history
    [script] = stage_scripts(calls, "Fast DDS")
    assert script.index('if [ -n "${CHANGE_ID:-}" ]') < script.index(". ci/runner-env.sh")
    result, built = run_fastdds_stage(script, tmp_path / "cr", origin, commits["M"], {"CHANGE_ID": "12"})
    assert result.returncode == 2 and built == []
    assert result.stderr.startswith("change request 12 refused: pull requests never run on the reference agent")


def test_the_fast_dds_stage_refuses_a_baseline_it_cannot_find(calls, fastdds_history, tmp_path):
    origin, commits = fastdds_history
    [script] = stage_scripts(calls, "Fast DDS")
    # a baseline needs a commit to compare: usage error (2) before anything is built
    result, built = run_fastdds_stage(script, tmp_path / "no-ref", origin, None, {"BASELINE_REF": "parent"})
    assert result.returncode == 2 and built == [] and "needs FASTDDS_REF" in result.stderr
    # parent and merge-base: are relative to a FASTDDS_REF built here, not to one with a prefix
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    result, built = run_fastdds_stage(script, tmp_path / "prefix-run", origin, commits["M"],
                                      {"BASELINE_REF": "merge-base:main", "FASTDDS_PREFIX": str(prefix)})
    assert result.returncode == 2 and built == [] and "no FASTDDS_PREFIX" in result.stderr
    # a baseline that cannot be fetched: perfgate build says why (exit 3), and so does the stage
    result, built = run_fastdds_stage(script, tmp_path / "unknown", origin, commits["F2"],
                                      {"BASELINE_REF": "merge-base:no-such-branch", "FAKE_BASELINE_EXIT": "3"})
    assert result.returncode == 3 and built == [
        f"--workspace {tmp_path / 'unknown' / 'workspace'} --git-url file://{origin} "
        f"--commit merge-base:{commits['F2']},no-such-branch --keep-as baseline"]
    assert f"baseline Fast DDS: merge-base:{commits['F2']},no-such-branch could not be fetched" in result.stderr
