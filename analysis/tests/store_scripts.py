"""Running a CI script's store steps (gate.yml, nightly-history.yml, ci/Jenkinsfile) as a runner would,
with the real perfgate and a real bare git repository: only ci/install-python.sh is a stand-in (it
would install into the checkout's .venv), and .venv/bin/perfgate runs this interpreter's perfgate."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT, metadata, tiny_summary, write_experiment
from perfgate import schema as s


def runner_checkout(folder: Path) -> Path:
    """A checkout as the step sees it: ci/install-python.sh (a no-op), the real ci/runner-env.sh and
    .venv/bin/perfgate."""
    (folder / "ci").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "ci" / "runner-env.sh", folder / "ci" / "runner-env.sh")
    (folder / "ci" / "install-python.sh").write_text("#!/usr/bin/env bash\n")
    (folder / "ci" / "install-python.sh").chmod(0o755)
    (folder / ".venv" / "bin").mkdir(parents=True)
    perfgate = folder / ".venv" / "bin" / "perfgate"
    perfgate.write_text(f'#!/usr/bin/env bash\nexec {sys.executable} -m perfgate.cli "$@"\n')
    perfgate.chmod(0o755)
    return folder


def run_script(script: str, checkout: Path, environment: dict[str, str]) -> subprocess.CompletedProcess:
    """`bash -e` (GitHub's `run:` shell; the Jenkins scripts set -euo pipefail themselves) in the checkout."""
    path = checkout / "step.sh"
    path.write_text(script)
    step_environment = {"PATH": os.environ["PATH"], "HOME": str(checkout), "PYTHONPATH": os.pathsep.join(sys.path),
                        "GIT_CONFIG_NOSYSTEM": "1", **environment}
    return subprocess.run(["bash", "-e", str(path)], cwd=checkout, env=step_environment, capture_output=True,
                          text=True, timeout=300)


def stored_experiment(store: Path, label: str, median: float = 1.0) -> Path:
    """A valid stored experiment (metadata of platform A, one summary at 16 B) in STORE/experiments/<label>/."""
    folder = store / s.STORE_EXPERIMENTS_DIR / label
    folder.mkdir(parents=True)
    return write_experiment(folder, {"intraprocess_best_effort": tiny_summary({16: (median, 2 * median, 3 * median)})},
                            metadata(label, "2026-01-01T00:00:00+00:00"))


def stored_aa_gate(store: Path, label: str, status: str) -> Path:
    """stored_experiment with what an A/A gate keeps: ab/verdict.json of the system Fast DDS against itself
    (`status` PASS, REGRESSION or INCOMPLETE) and a junit.xml whose one check passed."""
    folder = stored_experiment(store, label)
    arm = {"spec": s.FASTDDS_SYSTEM_SPEC, "fastdds": {"version": "2.9.1", "commit": None}, "injected_echo_delay_ns": {}}
    (folder / s.AB_DIR).mkdir()
    (folder / s.AB_DIR / s.VERDICT_JSON).write_text(json.dumps({"status": status,
                                                                "arms": {"baseline": arm, "candidate": arm}}))
    failed = "failed" if status == "REGRESSION" else "passed"
    (folder / s.AB_DIR / s.VERDICT_CSV).write_text(
        "Experiment type,Statistic,Rounds,Ratio,Lower bound,p-value,Adjusted p-value,Status\n"
        f"intraprocess_best_effort,Median,16,1.000,0.990,0.5,1,{failed}\n"
        "intraprocess_best_effort,90%,16,1.000,0.990,0.5,1,passed\n")
    (folder / s.JUNIT_FILE).write_text('<testsuites><testsuite name="latency.intraprocess_best_effort">'
                                       '<testcase name="Median[16 B]" /></testsuite></testsuites>')
    return folder


def bare_repository(folder: Path) -> Path:
    subprocess.run(["git", "init", "--quiet", "--bare", str(folder)], check=True)
    return folder


def branch_labels(repository: Path, branch: str) -> list[str]:
    listing = subprocess.run(["git", f"--git-dir={repository}", "ls-tree", "-r", "--name-only", branch],
                             capture_output=True, text=True, check=True).stdout.split()
    return sorted({path.split("/")[1] for path in listing})


# ci/gate.sh's stand-in: the arguments a CI step gives the gate, parsed by the real command line
# (a usage error fails as the gate would) and written as JSON to $GATE_ARGUMENTS; exit $GATE_EXIT.
PARSING_GATE = """#!/usr/bin/env bash
set -euo pipefail
python3 - "$@" <<'PY'
import json, os, sys
from perfgate.cli import parse_arguments
parsed = vars(parse_arguments(["gate", *sys.argv[1:]]))
parsed.pop("handler")
json.dump(parsed, open(os.environ["GATE_ARGUMENTS"], "w"))
PY
exit "${GATE_EXIT:-0}"
"""


def run_gate_step(script: str, checkout: Path, environment: dict[str, str]) -> tuple[subprocess.CompletedProcess, dict]:
    """A CI step that calls ci/gate.sh, run with the stand-in: (the step's result, the gate's parsed options)."""
    (checkout / "ci" / "gate.sh").write_text(PARSING_GATE.replace("python3", sys.executable))
    (checkout / "ci" / "gate.sh").chmod(0o755)
    arguments = checkout / "gate-arguments.json"
    arguments.unlink(missing_ok=True)
    done = run_script(script, checkout, {"GATE_ARGUMENTS": str(arguments), **environment})
    return done, json.loads(arguments.read_text()) if arguments.exists() else {}
