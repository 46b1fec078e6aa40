"""README step 1 end to end: the quick gate over every sub-experiment on the real Fast DDS, checked
against the committed requirements of the quick run's machine class (requirements/vm-2core-x64.csv)
and decided by an A/B of the system Fast DDS against itself.

ci/quickstart.sh installs, then runs exactly this command from the repository root. On that noisy
class the requirements let about 5 % of unchanged runs fail (requirements/README.md), and the A/A
verdict at most 2 % (docs/verdict.md), so the verdict may be PASS or REGRESSION; what must hold is
that the gate finishes (never exit 2 or 3), checks every requirement row, decides all 20 A/B tests,
and writes its reports.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from perfgate import files
from perfgate import schema as s
from conftest import REPO_ROOT

PLATFORM = "vm-2core-x64"
QUICKSTART = REPO_ROOT / "ci" / "quickstart.sh"


def quickstart_gate_command() -> list[str]:
    """The `perfgate gate` line of ci/quickstart.sh, so that this test runs what the README runs."""
    line = next(line for line in QUICKSTART.read_text().splitlines() if line.startswith("exec "))
    assert line.startswith("exec .venv/bin/perfgate gate --quick --baseline-build system --output ")
    return [str(Path(sys.executable).with_name("perfgate")), "gate", "--quick", "--baseline-build", "system"]


@pytest.mark.fastdds
def test_the_quick_gate_checks_every_requirement_on_real_fastdds(tmp_path, harness_paths):
    output = tmp_path / "gate"
    environment = {**os.environ, s.PLATFORM_ENV: PLATFORM, "GITHUB_ACTIONS": "true"}
    completed = subprocess.run([*quickstart_gate_command(), "--output", str(output)], cwd=REPO_ROOT,
                               env=environment, capture_output=True, text=True, timeout=1200)
    assert completed.returncode in (s.EXIT_OK, s.EXIT_REGRESSION), completed.stdout[-3000:] + completed.stderr[-3000:]
    assert "Traceback" not in completed.stderr

    requirements = files.read_requirements(REPO_ROOT / s.REQUIREMENTS_DIR / f"{PLATFORM}.csv")
    assert sorted(set(requirements[s.EXPERIMENT_TYPE])) == sorted(s.DEFAULT_SUBEXPERIMENT_NAMES)

    # every requirement row became a testcase per check, and no result is missing
    suites = ET.parse(output / s.JUNIT_FILE).getroot().findall("testsuite")
    assert sorted(suite.get("name") for suite in suites) == sorted(f"latency.{sub}" for sub in s.DEFAULT_SUBEXPERIMENT_NAMES)
    cases = [case for suite in suites for case in suite.findall("testcase")]
    assert len(cases) == len(requirements) * len(s.CHECKED_MAGNITUDES) == 330
    assert not [case for case in cases if case.find("error") is not None]
    failures = [case for case in cases if case.find("failure") is not None]

    # the A/B of the system Fast DDS against itself: every test decided, the quick rounds in place (curtailed:
    # each sub-experiment measured until its tests were decided, at most its planned rounds; docs/verdict.md)
    ab_record = json.loads((output / s.AB_DIR / s.VERDICT_JSON).read_text())
    assert ab_record["status"] in ("PASS", "REGRESSION") and ab_record["tests"] == 20
    # 11 quick rounds: Holm over 20 tests at the A/B's 1.5 % of the gate's budget needs 2^-n <= 0.015 / 20
    assert ab_record["alpha"] == 0.015
    # 1.5 x 11 = 17 (rounded up) for the sub-experiments whose layout bound is above +2 % (docs/verdict.md)
    layout = json.loads((REPO_ROOT / s.REQUIREMENTS_DIR / f"{PLATFORM}_layout.json").read_text())["thresholds"]
    assert ab_record["planned_rounds"] == {sub: 17 if layout.get(sub, 0) > 0.02 else 11
                                           for sub in s.DEFAULT_SUBEXPERIMENT_NAMES}
    assert ab_record["too_few_rounds"] == {} and ab_record["undecided"] == []
    assert 1 <= len(ab_record["rounds"]) <= 17
    assert all(1 <= used["rounds"] <= len(ab_record["rounds"]) for used in ab_record["rounds_used"])
    assert all(used["rounds"] == ab_record["stopped"].get(used["subexperiment"], used["rounds"])
               for used in ab_record["rounds_used"])
    assert ab_record["cpu_pinning"]["requested"] == "auto"
    verdict_rows = (output / s.AB_DIR / s.VERDICT_CSV).read_text().splitlines()
    assert len(verdict_rows) == 21
    assert (completed.returncode == s.EXIT_REGRESSION) == (bool(failures) or ab_record["status"] == "REGRESSION")

    # no run of its own (issue 28 item 6): the checks see the A/B's candidate samples of the ten, pooled,
    # 100 round trips per payload and round the sub-experiment was measured; no floor (never part of an A/B)
    rounds_used = {used["subexperiment"]: used["rounds"] for used in ab_record["rounds_used"]}
    for sub in s.DEFAULT_SUBEXPERIMENT_NAMES:
        summary = files.read_summary(output / s.summary_csv_name(sub))
        assert summary[s.BYTES].tolist() == list(s.PAYLOADS)
        assert (summary[s.SAMPLES] == 100 * rounds_used[sub]).all()
    assert not any((output / s.summary_csv_name(sub)).exists() for sub in s.FLOOR_SUBEXPERIMENT_NAMES)
    metadata = files.read_metadata(output)
    assert metadata["fastdds"]["version"] == "2.9.1"
    assert all(entry["outcome"] == s.OUTCOME_OK for entry in metadata["subexperiments"].values())

    # one annotation per failed check (at most ten), each on its requirement's line of the CSV
    annotations = [line for line in completed.stdout.splitlines() if line.startswith("::error file=")]
    assert len(annotations) == min(10, len(failures))
    ab_annotations = [line for line in completed.stdout.splitlines() if line.startswith("::error title=perfgate A/B")]
    assert len(ab_annotations) == len(ab_record["failed"])
    lines = set(requirements["line"])
    for annotation in annotations:
        match = re.match(r"::error file=requirements/vm-2core-x64\.csv,line=(\d+),", annotation)
        assert match and int(match.group(1)) in lines, annotation

    # it ends with the verdict and the path of the HTML report (README step 1)
    last_lines = completed.stdout.strip().splitlines()[-2:]
    assert re.match(r"perfgate gate: (PASS|REGRESSION)", last_lines[0]), last_lines
    assert last_lines[1] == f"perfgate gate: report {(output / s.REPORT_HTML).resolve()}"
    page = (output / s.REPORT_HTML).read_text()
    assert f'href="{s.AB_DIR}/{s.REPORT_HTML}"' in page and "A/B against the baseline build" in page
    assert (output / s.AB_DIR / s.REPORT_HTML).is_file()
    assert page.count("data:image/") >= 11 * len(s.DEFAULT_SUBEXPERIMENT_NAMES)
    assert (output / s.REPORT_MARKDOWN).stat().st_size < 1 << 20
