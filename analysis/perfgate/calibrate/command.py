"""calibrate.command: `perfgate calibrate` (commands/calibrate.py), the steps in order.

1. The runner checks, one line each (runner_checks); with --require-tuned a `fix` stops here (exit 2).
2. The measured steps (plan.MEASURED_STEPS), run by run: a run already complete is skipped, one that did not
   finish is measured again (resume); before each run a progress line with the time left; a run that does not
   fit in what is left of --time-budget is not started: the calibration stops, incomplete (exit 3), and the
   next call with the same arguments goes on. A run whose command fails stops the calibration with that
   command's exit code (a missing result is never a pass).
3. The derived files (derive), each skipped when every file it writes is there (each is written atomically).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .. import outputs
from .. import schema as s
from ..ab.layout_file import PLATFORM_NAME
from ..errors import InputError
from ..escape.workflow import log_text
from ..fastdds import kept, layouts
from . import derive, measure, plan as p, resume, runner_checks

PREFIX = "perfgate calibrate:"


def command_calibrate(*, platform, output_directory, fastdds=None, workspace=None, time_budget=None, quick=False,
                      require_tuned=False, subexperiments=None, steps=None) -> int:
    if not PLATFORM_NAME.fullmatch(platform):
        raise InputError(f"--platform {platform!r} is not a platform name (letters, digits, '.', '_', '-')")
    outputs.require_paths(output_directory=output_directory, fastdds=fastdds, workspace=workspace)
    for given, option in ((fastdds, "--fastdds"), (workspace, "--workspace")):
        if given is not None and not Path(given).is_dir():
            raise InputError(f"{option}: not a folder", Path(given))
    output = outputs.require_writable(Path(output_directory), "calibration folder", folder=True)
    plan = p.make_plan(platform=platform, quick=quick, fastdds=fastdds, workspace=workspace,
                       subexperiments=subexperiments, steps=steps,
                       layout_variants=layout_variants(Path(workspace)) if workspace is not None else ())
    findings = runner_checks.read_findings()
    for finding in findings:
        print(f"{PREFIX} runner {log_text(finding.line())}")
    to_fix = [f for f in findings if f.status == runner_checks.FIX]
    if to_fix and require_tuned:
        raise InputError(f"the runner is not tuned ({len(to_fix)} setting(s) to fix, listed above): fix them or "
                         "calibrate without --require-tuned")
    output.mkdir(parents=True, exist_ok=True)
    going_on = resume.require_same_arguments(output, plan.arguments())
    budget = resume.Budget(time_budget)
    print(f"{PREFIX} {'going on with' if going_on else 'starting'} the {'quick ' if quick else ''}calibration of "
          f"{log_text(platform)} into {log_text(output)} with {log_text(plan.fastdds_spec)} Fast DDS: "
          f"measuring {', '.join(plan.measured) or 'nothing'}; deriving {', '.join(plan.derived)}")
    if "topology" in plan.measured and plan.fastdds_spec != "system":
        print(f"{PREFIX} note: perfgate topology measures the system Fast DDS (it takes no other build): the "
              "topology targets are the system's", file=sys.stderr)
    for step in plan.measured:
        code = _measure_step(plan, output, step, budget)
        if code != s.EXIT_OK:
            return code
    for step in plan.derived:
        if all((output / name).is_file() for name in p.output_files(plan.platform, step)):
            print(f"{PREFIX} {step}: done before, skipped")
            continue
        print(f"{PREFIX} {step}: deriving")
        derive.derive(plan, output, step)
    print(f"{PREFIX} done: {', '.join(name for step in plan.derived for name in p.output_files(plan.platform, step))}"
          f" in {log_text(output)}")
    return s.EXIT_OK


def layout_variants(workspace: Path) -> tuple[str, ...]:
    """The layout variants `perfgate build --layouts` kept for the workspace's commit, in seed order; none
    when it was built without."""
    install = kept.install_of(workspace)
    try:
        record = json.loads((install / s.BUILD_RECORD_FILE).read_text())
    except (OSError, ValueError):
        return ()
    count = (record.get("layouts") or {}).get("count") if isinstance(record, dict) else None
    if not isinstance(count, int) or isinstance(count, bool) or count < 2:
        return ()
    return tuple(str(folder) for folder in layouts.layout_folders(install, count, "--workspace"))


def _measure_step(plan: p.Plan, output: Path, step: str, budget: resume.Budget) -> int:
    names = p.unit_names(step, plan.counts)
    taken = []
    for number, name in enumerate(names, 1):
        where = f"{step} {number}/{len(names)}"
        if resume.done_path(output, step, name).is_dir():
            print(f"{PREFIX} [{where}] {name}: measured before, skipped")
            seconds = resume.seconds_taken(output, step, name)
            taken += [seconds] if seconds is not None else []
            continue
        estimate = max(taken) if taken else None
        if not budget.allows(estimate):
            print(f"{PREFIX} [{where}] time budget reached ({resume.duration_text(budget.left())} left, a run takes "
                  f"about {resume.duration_text(estimate)}): stopped, what was measured is kept; call again with the "
                  f"same arguments to go on", file=sys.stderr)
            return s.EXIT_INCOMPLETE
        left = budget.left()
        print(f"{PREFIX} [{where}] {name}: measuring ("
              + (f"{resume.duration_text(left)} of the time budget left" if left is not None else "no time budget")
              + (f", about {resume.duration_text(estimate)} a run)" if estimate else ")"), flush=True)
        folder = resume.start_partial(output, step, name)
        command, arguments = measure.argv(plan, step, name, folder)
        started = time.monotonic()
        code = measure.run_command(command, arguments)
        # an A/A that fails is a false alarm, counted by the detection summary, and a layout A/B that fails is
        # layout moving, what it measures; any other failure stops
        if code not in ((s.EXIT_OK, s.EXIT_REGRESSION) if step in ("aa", "layout_ab") else (s.EXIT_OK,)):
            print(f"{PREFIX} [{where}] {name}: perfgate {command.NAME} ended with exit code {code}: the calibration "
                  f"stops (its folder stays in {log_text(folder)}; the next call measures it again)", file=sys.stderr)
            return code
        taken.append(time.monotonic() - started)
        resume.finish(output, step, name, taken[-1])
    return s.EXIT_OK
