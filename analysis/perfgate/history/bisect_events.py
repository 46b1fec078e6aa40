"""`perfgate bisect-events`: a `perfgate bisect` for each new regression event of a history (the
nightly's step after `perfgate history`), thin around history.bisect_plan.

Each event not bisected before, largest first, until --max bisects have started is bisected from its Previous
commit (good) to its Fast DDS commit (bad) on its sub-experiments and payloads, into
<output>/<good 12>-<bad 12>/ (the record that it was bisected). A range of one commit is not
bisected: the event already names its commit (the commit graph comes from the workspace's git,
bisect.commits). No event is started once --time-budget seconds have passed; those left wait for the
next run. Exit 0 when every started bisect gave an answer (a culprit is an answer, linked from the
page), 3 when one could not decide or failed, 2 for a bad events.csv or option.
"""
from __future__ import annotations

import csv
import sys
import time
from pathlib import Path
from typing import Iterator, TextIO

from .. import files, outputs
from .. import schema as s
from ..bisect import commits as bisect_commits
from ..ab import latency as ab_latency
from ..ab import layout_file, verdict as v
from ..bisect import driver, messages
from ..errors import InputError, PerfgateError
from ..escape.workflow import log_text
from . import bisect_plan
from . import names as event_names

PREFIX = "perfgate bisect-events:"


def _event_rows(path: Path, stream: TextIO) -> Iterator[dict[str, str]]:
    """The rows of events.csv one at a time, each {column: text} (as history.page.read_events reads every
    cell); InputError naming `path` for other columns or a row of another length."""
    reader = csv.reader(stream)
    header = tuple(next(reader, ()))
    if header != event_names.EVENT_COLUMNS:
        raise InputError(f"the history's events have the columns {', '.join(header)}, not "
                         f"{', '.join(event_names.EVENT_COLUMNS)}", path)
    for cells in reader:
        if not cells:  # a blank line, skipped as pandas does
            continue
        if len(cells) != len(header):
            raise InputError(f"event on line {reader.line_num}: {len(cells)} cells, not {len(header)}", path)
        yield dict(zip(header, cells))


def _read_regressions(path: Path) -> list[bisect_plan.Planned]:
    """bisect_plan.regressions of events.csv, streamed: a row is read, checked and folded into its range,
    never kept (a 152 MB file read whole took 2.8 GB); a cell over the csv module's limit (128 Ki
    characters) is refused."""
    try:
        with path.open(encoding="utf-8", newline="") as stream:
            return bisect_plan.regressions(_event_rows(path, stream), path)
    except (OSError, csv.Error, UnicodeDecodeError) as error:
        raise InputError(f"cannot read the history's events: {error}", path) from None


def _range_size(url: str, event: bisect_plan.Planned, workspace: Path) -> int | None:
    """Commits after good up to bad on bad's first parents (0: good is not on them); None (with a line)
    when git cannot tell."""
    try:
        return bisect_commits.range_size(url, event.good, event.bad, workspace)
    except InputError as error:  # good is not on bad's first parents (runs of another branch): no range
        print(f"{PREFIX} {event.folder}: not bisectable: {log_text(str(error))}", flush=True)
        return 0
    except PerfgateError as error:
        messages.print_lines(f"{PREFIX} {event.folder}: not bisected: ", error, PREFIX)  # git's lines, a line each
        return None


def command_bisect_events(*, events, workspace, git_url, output, max_events, time_budget, quick=False, rounds=None,
                          samples=None, threshold=None, alpha=None, jobs=None, fastcdr_url=None,
                          no_plots=False) -> int:
    outputs.require_paths(events=events, workspace=workspace, output=output, git_url=git_url, fastcdr_url=fastcdr_url)
    url = bisect_commits.check_git_url(git_url, "--git-url")  # a bad URL is exit 2 before anything is fetched
    if fastcdr_url is not None:
        fastcdr_url = bisect_commits.check_git_url(fastcdr_url, "--fastcdr-url")
    events_path, output, workspace = Path(events), Path(output).resolve(), Path(workspace).resolve()
    if not events_path.is_file():
        raise InputError("no such events file (perfgate history writes events.csv)", events_path)
    planned = _read_regressions(events_path)
    # every A/B option checked before anything is fetched or built (exit 2), as `perfgate bisect` does:
    # an InputError from one event's bisect is then that event's (a commit that is no Fast DDS source)
    v.require_parameters(threshold, alpha)
    # the layout thresholds every bisect reads (the platform's file): a malformed one is exit 2 here,
    # not recorded as each event's failed bisect (and so never tried again)
    layout_file.resolve_layout(None)
    ab_latency.plan_ab(output=output / "check", baseline=s.FASTDDS_SYSTEM_SPEC, candidate=s.FASTDDS_SYSTEM_SPEC,
                       rounds=rounds, samples=samples, quick=quick)
    if output.exists() and not output.is_dir():
        raise InputError("is not a folder", output)
    done = {folder.name for folder in output.iterdir() if folder.is_dir()} if output.is_dir() else set()
    chosen = bisect_plan.waiting(planned, done)
    print(f"{PREFIX} {len(planned)} regression range(s) in {log_text(events_path)}, "
          f"{len([e for e in planned if e.folder in done])} bisected before; at most {max_events} now", flush=True)
    started, undecided, bisects, later = time.monotonic(), 0, 0, []
    for number, event in enumerate(chosen):
        if bisects == max_events or time.monotonic() - started >= time_budget:
            later = chosen[number:]
            why = f"{max_events} bisect(s) started" if bisects == max_events else f"time budget of {time_budget:g} s spent"
            print(f"{PREFIX} {why}", flush=True)
            break
        size = _range_size(url, event, workspace)
        if size is None:
            undecided += 1
            continue
        if size == 1:
            print(f"{PREFIX} {event.folder}: one commit: the event names its commit, nothing to bisect", flush=True)
        if size <= 1:
            continue
        print(f"{PREFIX} {event.folder}: bisecting {size} commit(s), {log_text(' '.join(event.subexperiments))} "
              f"(+{event.change:.1f} %)", flush=True)
        if event.build_change:  # the bisect builds both ends with today's options: its first A/B tells
            print(f"{PREFIX} {event.folder}: the runs' build options changed beside it ({log_text(event.build_change)}): "
                  "both ends are built alike here, so a step that was the build's does not regress", flush=True)
        try:
            code = driver.command_bisect(
                workspace=workspace, git_url=url, good=event.good, bad=event.bad, output=output / event.folder,
                subexperiments=list(event.subexperiments), payloads=list(event.payloads) or None, quick=quick,
                rounds=rounds, samples=samples, threshold=threshold, alpha=alpha, jobs=jobs,
                fastcdr_url=fastcdr_url, no_plots=no_plots)
        except PerfgateError as error:  # its commits do not build as Fast DDS, its sub-experiment is not measured...
            messages.print_lines(f"{PREFIX} {event.folder}: failed: ", error, PREFIX)
            # the record that it was tried (bisect removed its half-written folder): not tried again each
            # night; removing the folder tries again
            files.write_text(output / event.folder / event_names.BISECT_FAILED_TXT, f"{error}\n")
            code = s.EXIT_INCOMPLETE
        bisects += 1
        undecided += code == s.EXIT_INCOMPLETE
    if later:
        print(f"{PREFIX} left for a later run: {log_text(' '.join(event.folder for event in later))}", flush=True)
    if undecided:
        print(f"{PREFIX} error: {undecided} bisect(s) gave no answer (see above)", file=sys.stderr)
        return s.EXIT_INCOMPLETE
    return s.EXIT_OK
