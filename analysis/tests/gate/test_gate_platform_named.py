"""The gate's plan records whether a platform was named (--platform, $PERFGATE_PLATFORM) or the
default `local` was taken: its reports show the platform's name, or say that none was named."""
from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd
import pytest

from perfgate import files
from perfgate import schema as s
from perfgate.gate import plan as gate_plan
from perfgate.gate.request import GateRequest


@pytest.mark.parametrize("platform, environment, name, named", [
    ("vm-2core-x64", {}, "vm-2core-x64", True),
    (None, {s.PLATFORM_ENV: "vm-2core-x64"}, "vm-2core-x64", True),
    (None, {}, gate_plan.DEFAULT_PLATFORM, False),
])
def test_the_plan_says_whether_a_platform_was_named(tmp_path, monkeypatch, platform, environment, name, named):
    monkeypatch.chdir(tmp_path)  # requirements/<platform>.csv is looked up here
    rows = [{s.EXPERIMENT_TYPE: "intraprocess_best_effort", s.BYTES: 16, **{m: 1000.0 for m in s.CHECKED_MAGNITUDES}}]
    for platform_file in ("vm-2core-x64", gate_plan.DEFAULT_PLATFORM):
        files.write_csv(s.requirements_csv(tmp_path / s.REQUIREMENTS_DIR, platform_file),
                        pd.DataFrame(rows, columns=list(s.REQUIREMENT_COLUMNS)))
    request = GateRequest(output=str(tmp_path / "out"), quick=True, payloads=[16], platform=platform,
                          subexperiments=["intraprocess_best_effort"], label="first", baseline=None)
    plan = gate_plan.plan_gate(request, environment=environment, this_platform_id="f00dfeedf00dfeed",
                               now=datetime.now(timezone.utc))
    assert (plan.platform, plan.platform_named) == (name, named)
