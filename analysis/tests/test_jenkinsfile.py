"""ci/Jenkinsfile: Groovy's own parser reads it, and its outline holds the gate's stages and steps.

Debian's `groovy` (ci/debian-packages.txt) parses the file to an abstract syntax tree without
running it (unknown methods such as `pipeline` are fine at that stage). A short Groovy program
prints every method call with where it is nested, its line and its literal arguments; the tests
check that outline, run shellcheck on the shell scripts it carries, and check the perfgate options
those scripts pass against the real command line.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
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
    "post", "always", "success", "junit", "archiveArtifacts",
}
PARAMETERS = {"PLATFORM", "FASTDDS_REPOSITORY", "FASTDDS_REF", "FASTDDS_PREFIX", "SAMPLES", "QUICK", "KEEP_IN_STORE"}


def parse(path: Path) -> subprocess.CompletedProcess:
    groovy = shutil.which("groovy")
    assert groovy, "groovy not found: ci/install-system.sh installs it (ci/debian-packages.txt)"
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
    assert declared["PLATFORM"] == "reference-x64"
    assert declared["FASTDDS_REPOSITORY"] == "https://github.com/eProsima/Fast-DDS.git"
    assert declared["FASTDDS_REF"] == "" and declared["FASTDDS_PREFIX"] == ""


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
    assert junit["named"]["testResults"] == "out/experiment/junit.xml"
    [archive] = find(calls, "archiveArtifacts", "stage:Gate")
    assert archive["path"][-2:] == ["post", "always"]
    assert "out/experiment/**" in archive["named"]["artifacts"].split(", ")
    assert [c["path"][-1] for c in find(calls, "unstable")] == ["script"]
    [history_archive] = find(calls, "archiveArtifacts", "stage:History")
    assert history_archive["named"]["artifacts"] == "out/history_plots/**"


def test_shell_scripts_are_literal_and_pass_shellcheck(calls, tmp_path):
    shellcheck = shutil.which("shellcheck")
    assert shellcheck, "shellcheck not found: ci/install-system.sh installs it"
    shell_steps = find(calls, "sh")
    assert len(shell_steps) == 3
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
    assert {"--output", "--platform", "--samples", "--quick", "--store", "--no-history", "--fastdds-prefix",
            "--workspace"} <= gate_options
    assert sorted(o for o in gate_options if o not in _help("gate")) == []
    [history_script] = stage_scripts(calls, "History")
    history_options = _options(history_script)
    assert history_options == {"--requirements", "--experiments-results", "--plots-directory"}
    assert sorted(o for o in history_options if o not in _help("history")) == []


def test_a_fastdds_ref_is_built_with_colcon_and_the_gate_measures_that_workspace(calls):
    [build_script] = stage_scripts(calls, "Fast DDS")
    assert 'ci/build_fastdds.sh --workspace "${PERFGATE_WORKSPACE:-/var/lib/perfgate/workspace}"' in build_script
    assert '--git-url "$FASTDDS_REPOSITORY" --commit "$FASTDDS_REF"' in build_script
    build_options = _options(build_script)
    assert sorted(o for o in build_options if o not in _help("build")) == []
    # a failed build (3) is left for the gate, which reports it as the JUnit error "build"
    assert '[ "$code" -ne 3 ]' in build_script
    [gate_script] = [s for s in stage_scripts(calls, "Gate") if "ci/gate.sh" in s]
    assert 'args+=(--workspace "${PERFGATE_WORKSPACE:-/var/lib/perfgate/workspace}")' in gate_script
