"""bisect.driver: `perfgate bisect`, the thin part around bisect.search: each commit built with
`perfgate build` into the workspace (kept installs and ccache: a commit built before costs seconds),
each step an ordinary `perfgate ab` folder under <output>/steps/, decided with the A/B's verdict, at
the A/B's layout thresholds (--layout-thresholds, else the platform's requirements file, read once
before anything is built): a move the size code layout alone makes is no step's regression.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import claims, outputs
from .. import schema as s
from ..ab import curtail, latency as ab_latency, layout_file
from ..ab import verdict as v
from ..ab.rounds import read_rounds
from ..errors import InputError, PerfgateError
from ..escape.workflow import log_text
from ..fastdds import build, colcon, kept
from ..fastdds.git import check_git_url
from . import commits as history, report
from . import messages, search
from . import names as bisect_names

GOOD_NAME = "bisect-good"  # WS/installs/bisect-good: good's install, kept while the search measures against it


@dataclass
class Request:
    workspace: Path
    url: str
    output: Path
    ab_options: dict  # rounds, samples, quick, subexperiments, payloads, pin_cpus, cpu_latency_request
    threshold: float
    alpha: float
    jobs: int | None
    fastcdr_url: str | None = None
    layout: dict[str, float] = field(default_factory=dict)  # the requested sub-experiments' layout thresholds
    layout_read: layout_file.LayoutThresholds | None = None  # their file as read once: every A/B decides at it
    commits: list[history.Commit] = field(default_factory=list)
    installs: dict[int, Path | None] = field(default_factory=dict)
    count: int = 0  # A/Bs so far


def _installed(request: Request, index: int) -> Path | search.Unbuilt:
    """The kept install of commits[index], built now unless kept; Unbuilt (why) when it cannot be built."""
    commit = request.commits[index]
    folder = kept.installs_dir(request.workspace) / commit.sha
    if isinstance(request.installs.get(index), search.Unbuilt):
        return request.installs[index]  # its build failed before
    if index not in request.installs or not folder.is_dir():  # never built, or pruned since: built (again)
        print(f"perfgate bisect: building {commit.short} {log_text(commit.subject)}", flush=True)
        try:
            build.command_build(workspace=request.workspace, git_url=request.url, commit=commit.sha,
                                jobs=request.jobs, keep_as=GOOD_NAME if index == 0 else None,
                                fastcdr_url=request.fastcdr_url)
        except PerfgateError as error:
            # The options every build shares were checked before the search (_check_build_options), so
            # an InputError here is this commit's source: no Fast DDS (no CMakeLists.txt, another
            # project), a Fast CDR it needs that is not there. Skipped like a failed build, as
            # `git bisect skip` does, rather than ending the search
            request.installs[index] = search.Unbuilt(index, " / ".join(messages.message_lines(error)))
            messages.print_lines(f"perfgate bisect: build of {commit.short} failed, skipped: ", error)
            return request.installs[index]
        if not folder.is_dir():
            raise search.Stop(f"the build of {commit.sha} was not kept in {folder}: an A/B needs both installs")
        request.installs[index] = folder
    return request.installs[index]


def _check_build_options(workspace: Path) -> None:
    """What `perfgate build` refuses as usage (exit 2) whatever the commit, checked once before the
    search: after it, a build's InputError is the commit's (skipped)."""
    kept.check_workspace(workspace)
    kept.check_options(kept.DEFAULT_KEEP, GOOD_NAME)
    kept.check_name(workspace, GOOD_NAME, kept.DEFAULT_KEEP)
    outputs.require_writable(workspace, "workspace", folder=True)
    colcon.check_tools(ccache=True)


def _measured(folder: Path, threshold: float, alpha: float, code: int,
              layout: dict[str, float] | None = None) -> search.Measured:
    """A step's A/B as the search reads it: the verdict's tests at max(threshold, each sub-experiment's
    layout threshold), as `perfgate ab` decided the same folder."""
    rounds = read_rounds(folder)
    # the A/B's own decision: a sub-experiment the curtailed A/B stopped measuring once its tests were
    # decided has few rounds, and that is no reason to measure the step again
    planned, stopped = curtail.read_record(folder, rounds.subexperiments, len(rounds.round_names))
    decision = curtail.decide_curtailed(v.log_ratios(rounds.table), planned=planned, stopped=stopped,
                                        threshold=threshold, alpha=alpha, order=rounds.subexperiments,
                                        layout=layout)
    table = decision.table
    rows = [(search.Test(row[s.EXPERIMENT_TYPE], row[v.STATISTIC]), row) for _, row in table.iterrows()]
    return search.Measured(
        ratios={test: float(row[v.RATIO]) for test, row in rows},
        lower_bounds={test: float(row[v.LOWER_BOUND]) for test, row in rows},
        failed=frozenset(test for test, row in rows if row[s.STATUS] == s.FAILED),
        layout_sized=frozenset(test for test, row in rows if row[v.LAYOUT_SIZED]),
        thresholds={test: float(row[v.THRESHOLD]) for test, row in rows},
        incomplete=bool(decision.too_few_rounds) or code == s.EXIT_INCOMPLETE,
        rounds=int(table[v.ROUNDS].min()) if len(table) else 0, folder=str(folder))


def measure(request: Request, commit: int, against: int, tests: list[search.Test] | None,
            rounds: int | None) -> tuple[search.Measured | search.Unbuilt, float]:
    """Build both, then the A/B of commits[commit] against commits[against] (search.Measure)."""
    started = time.monotonic()
    baseline = _installed(request, against)
    candidate = _installed(request, commit) if isinstance(baseline, Path) else None
    for unbuilt in (baseline, candidate):
        if isinstance(unbuilt, search.Unbuilt):
            return unbuilt, time.monotonic() - started
    request.count += 1
    sha = request.commits[commit].short
    folder = request.output / bisect_names.BISECT_STEPS_DIR / f"{request.count:02d}-{sha}-vs-{request.commits[against].short}"
    options = dict(request.ab_options)
    if tests is not None:
        options["subexperiments"] = list(dict.fromkeys(test.subexperiment for test in tests))
    if rounds is not None:
        options["rounds"] = rounds
    print(f"perfgate bisect: A/B {request.count}: {sha} against {request.commits[against].short} "
          f"({options.get('rounds') or 'default'} rounds) in {folder}", flush=True)
    plan = ab_latency.plan_ab(output=folder, baseline=str(baseline), candidate=str(candidate),
                              label=f"bisect-{request.count:02d}-{sha}", **options)
    try:
        # every round: a step is classified by the size of its change (search.classify), which a
        # curtailed A/B (stopped once its verdict is certain) estimates from fewer rounds than asked
        code = ab_latency.measure_ab(plan, threshold=request.threshold, alpha=request.alpha, draw=False,
                                     curtailed=False, layout_read=request.layout_read)
    except InputError:
        raise
    except PerfgateError as error:
        raise search.Stop(f"the A/B of {sha} against {request.commits[against].short} failed: "
                          + " / ".join(messages.message_lines(error))) from None
    return _measured(folder, request.threshold, request.alpha, code, request.layout), time.monotonic() - started


def command_bisect(*, workspace, git_url, good, bad, output, subexperiments=None, payloads=None, quick=False,
                   rounds=None, samples=None, threshold=None, alpha=None, pin_cpus=None, cpu_latency_request=None,
                   jobs=None, fastcdr_url=None, no_plots=False, layout_thresholds=None) -> int:
    outputs.require_paths(workspace=workspace, git_url=git_url, output=output, fastcdr_url=fastcdr_url)
    url = check_git_url(git_url, "--git-url")
    fastcdr_url = check_git_url(fastcdr_url, "--fastcdr-url") if fastcdr_url is not None else None
    good, bad = history.require_ref(good, "--good"), history.require_ref(bad, "--bad")
    threshold, alpha = v.require_parameters(threshold, alpha)
    # --layout-thresholds, else requirements/<$PERFGATE_PLATFORM>_layout.json when it exists, as `perfgate ab`:
    # read once here, so that a malformed file stops the bisect before anything is fetched, built or written
    layout_read = layout_file.resolve(layout_thresholds)
    layout, layout_source = (layout_read.thresholds, layout_read.path) if layout_read else ({}, None)
    output, workspace = Path(output).resolve(), Path(workspace).resolve()
    ab_options = dict(rounds=rounds, samples=samples, quick=quick, subexperiments=subexperiments, payloads=payloads,
                      pin_cpus=pin_cpus, cpu_latency_request=cpu_latency_request)
    # every A/B option checked before anything is fetched or built (exit 2)
    probe = ab_latency.plan_ab(output=output / bisect_names.BISECT_STEPS_DIR / "check", baseline=s.FASTDDS_SYSTEM_SPEC,
                               candidate=s.FASTDDS_SYSTEM_SPEC, **ab_options)
    # the requested sub-experiments' layout thresholds, in their order: what the reports say applied
    layout = {sub.name: layout[sub.name] for sub in probe.options.subexperiments if sub.name in layout}
    _check_build_options(workspace)
    with claims.claimed(output):
        request = Request(workspace, url, output, ab_options, threshold, alpha, jobs, fastcdr_url,
                          layout=layout, layout_read=layout_read)
        request.commits = history.fetch_range(url, good, bad, workspace / "perfgate" / "bisect.git")
        print(f"perfgate bisect: {len(request.commits) - 1} first-parent commit(s) after good {request.commits[0].short} "
              f"up to bad {request.commits[-1].short}; at most {search.step_budget(len(request.commits))} A/Bs of "
              f"{probe.rounds} rounds when no build fails and no step is ambiguous", flush=True)
        for line in report.layout_lines(threshold, layout, layout_source):
            print(f"perfgate bisect: {log_text(line)}", flush=True)
        started = time.monotonic()
        result = search.bisect(len(request.commits), lambda *a: measure(request, *a), probe.rounds)
        wall = time.monotonic() - started
        bisection = report.Bisection(result, request.commits, url, threshold, alpha, wall, layout, layout_source)
        report.write(output, bisection, plots=not no_plots)
    for line in report.summary_lines(bisection):
        print(f"perfgate bisect: {log_text(line)}")
    print(f"perfgate bisect: report {output / s.REPORT_HTML}")
    if result.status == search.UNDECIDED:
        print(f"perfgate bisect: error: cannot decide: {log_text(result.why)}", file=sys.stderr)
    return result.exit_code


def command_bisect_lines(**options) -> int:
    """`perfgate bisect` as the command line runs it: command_bisect, with an error's several lines
    (git's stderr) printed one console line each rather than as one line holding `\\n`
    (`perfgate bisect-events` calls command_bisect and keeps the error)."""
    try:
        return command_bisect(**options)
    except PerfgateError as error:
        messages.print_lines("perfgate bisect: error: ", error)
        return error.exit_code
