"""history.latency: the latency of every stored experiment, oldest to newest, against the requirements.

Pure computations first: `magnitude_history` (one sub-experiment's summaries -> experiments x
payloads), `requirement_lookup` and `above_requirement`. The command loads the store, checks that
its experiments compare, and draws per sub-experiment (docs/formats.md section 9):
`<plots>/<sub>/history_{min,median,max,99}.png` and `<plots>/<sub>/<bytes>_bytes_{median,99,max}.png`.

Work is split by sub-experiment over worker processes in two rounds: first every summary is read
and validated, then the plots are drawn. A damaged experiment (store_check) is reported on one line
and left out before anything is drawn. The command reports and exits 0: gating is `check`'s job;
history shows the trend.

Experiments are taken commit by commit (change_points.commit_order). Change points over every
sub-experiment, payload and statistic (change_points) go to `<plots>/change_points.csv`, those of each
sub-experiment as a whole (history.whole) join them in events (history.events: `<plots>/events.csv`
and events.md, which lead the console), and
the store as Apache Otava CSV to `<plots>/otava/` (history_files), with or without plots. Each run's
A/B verdict against its parent, where it has one, is marked at its commit (history_ab).
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
import threading
from pathlib import Path

import pandas as pd

from ..latency import experiments as ex
from . import build_options
from . import change_points as cp
from . import events as history_events
from . import whole
from .. import files, outputs
from ..store import experiments as store, check as store_check
from . import ab as history_ab
from . import bisect_links
from . import files as hf
from . import page as hp
from .. import schema as s
from ..errors import InputError, PerfgateError
from ..escape.html import plotly_text
from ..escape.workflow import log_list, log_text
from ..pools import worker_pool
from . import index as si
from .throughput import CHANGE_POINTS_CSV as THROUGHPUT_CHANGE_POINTS_CSV, EVENTS_CSV as THROUGHPUT_EVENTS_CSV
from .throughput import change_point_lines as throughput_change_point_lines
from .throughput import throughput_history
from ..latency.check import is_over
from . import topology as history_topology, topology_page
from .pngs import (above_requirement, baseline_values, change_marks, draw_sub,  # noqa: F401  (callers' names)
                   magnitude_history, payload_plots_wanted)
from . import names as event_names


# --- pure computations --------------------------------------------------------------------------
def requirement_lookup(requirements: pd.DataFrame, sub: str) -> dict[tuple[int, str], float]:
    """(payload, check) -> requirement of one sub-experiment."""
    rows = requirements[requirements[s.EXPERIMENT_TYPE] == sub]
    return {(int(row[s.BYTES]), check): float(row[check]) for _, row in rows.iterrows() for check in s.CHECKED_MAGNITUDES}


def newest_verdicts(table: pd.DataFrame, requirements: dict[tuple[int, str], float], newest: int) -> tuple[int, int]:
    """(checks over the requirement, checks with a requirement) of the newest experiment."""
    rows = table[table[ex.ORDER] == newest]
    over = checked = 0
    for _, row in rows.iterrows():
        for check in s.CHECKED_MAGNITUDES:
            requirement = requirements.get((int(row[s.BYTES]), check))
            if requirement is not None:
                checked += 1
                over += int(is_over(row[check], requirement))
    return over, checked


# --- per sub-experiment work (runs in worker processes) -----------------------------------------
def _guarded(function, *arguments):
    """Run in a worker; return a PerfgateError as data (its path and line do not survive pickling)."""
    try:
        return function(*arguments), None
    except PerfgateError as error:
        return None, (type(error), error.message, error.path, error.line)


def _load_sub(experiments: list[ex.Experiment], sub: str,
              indexed: Path | None) -> tuple[pd.DataFrame, list[store_check.Damage]]:
    """ex.summary_table, with the summary files read through the store's index (summary_index); and
    the experiments whose summary (or raw-only measurements) of `sub` did not read, left out."""
    rows, damaged = store_check.load_summaries(experiments, sub, indexed)
    by_folder = {e.path.name: (order, e.label) for order, e in enumerate(experiments)}
    rows.insert(0, s.LABEL, rows[si.FOLDER].map(lambda folder: by_folder[folder][1]))
    rows.insert(0, ex.ORDER, rows[si.FOLDER].map(lambda folder: by_folder[folder][0]))
    frames = [rows.drop(columns=si.FOLDER)]
    # a sub-experiment with only raw measurements (older tooling) is summarised on the fly, never indexed
    raw_only = [(order, e) for order, e in enumerate(experiments) if sub in e.raw_paths]
    for order, experiment in raw_only:
        summary = store_check.summarise_raw_only(experiment, sub)
        if isinstance(summary, store_check.Damage):
            damaged.append(summary)
            continue
        summary.insert(0, s.LABEL, experiment.label)
        summary.insert(0, ex.ORDER, order)
        frames.append(summary)
    table = pd.concat(frames, ignore_index=True)
    return (table.sort_values(ex.ORDER, kind="stable").reset_index(drop=True) if raw_only else table), damaged


def index_folder(experiments_results: Path) -> Path | None:
    """Where the summary index is kept: the experiments folder of a results store, else nowhere (a
    folder of experiments that is no store is someone's own, not ours to write into)."""
    folder = ex.experiments_folder(experiments_results)
    return folder if store.is_store(folder.parent) else None


def _test_sub(sub: str, table: pd.DataFrame, alpha: float) -> tuple[tuple[list[tuple], int], tuple[list[tuple], int]]:
    """The tests of one sub-experiment's per-payload series and of its whole series (history.whole)."""
    values = cp.long_values({sub: table}, ex.ORDER)
    return cp.tests_of_series(values, alpha * (1 - whole.WHOLE_SHARE)), whole.tests_of_subs(values, alpha)


def write_page(path: Path, experiments: list[ex.Experiment], by_sub: dict[str, pd.DataFrame], changes: pd.DataFrame,
               ticks: list[str], alpha: float, verdicts: list, requirements: Path | None = None,
               topology: history_topology.TopologyHistory | None = None) -> None:
    """The interactive page (history_page) beside the PNGs, led by the history's events when it wrote
    them (<plots>/events.csv); the platform named as its requirements file is (requirements/<name>.csv)."""
    count = len(experiments)
    hover = [plotly_text(f"{tick} · {experiment.label}") for tick, experiment in zip(ticks, experiments)]
    charts = {sub: [hp.chart(sub, statistic, magnitude_history(table, statistic, count), changes,
                             hp.tick_positions(count), ticks,
                             [(p, outcome, f"{hover[p]}<br>{plotly_text(text)}")
                              for p, outcome, text in history_ab.marks(verdicts, sub)])
                    for statistic in hp.CHART_STATISTICS]
              for sub, table in by_sub.items() if not table.empty}
    newest = experiments[-1].metadata
    title, machine = hp.platform_title(hp.platform_name(requirements),
                                       newest.platform if newest is not None else None)
    summary = (f"{count} experiments ({experiments[0].label} .. {experiments[-1].label}), commit by commit; "
               f"{len(changes)} change point(s) at a family-wise false-alarm level of {alpha:g} (docs/history.md)"
               + (f"; {history_ab.count_text(verdicts)}" if history_ab.count_text(verdicts) else "") + ".")
    events = hp.read_events(path.parent / event_names.EVENTS_CSV)
    files.write_text(path, hp.page(title, summary, changes, charts, hover, hp.plotly_javascript(), events, machine,
                                   bisect_links.links(path.parent, events),
                                   topology_page.section(topology, count, hp.tick_positions(count), ticks)))


def _workers(tasks: int) -> int:
    return max(1, min(tasks, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()))


def _pool_context():
    """fork when safe: workers inherit the imported pandas and matplotlib instead of importing them
    again. With other threads alive (the gate calls this in-process) a forked child could inherit a
    lock held by one of them, so then spawn."""
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _map(executor, function, argument_lists):
    """Results in order; the first worker error is raised here, in the main process."""
    if executor is None:
        outcomes = [_guarded(function, *arguments) for arguments in argument_lists]
    else:
        calls = [executor.submit(_guarded, function, *arguments) for arguments in argument_lists]
        outcomes = [call.result() for call in calls]
    results = []
    for result, error in outcomes:
        if error is not None:
            kind, message, path, line = error
            raise kind(message, path, line)
        results.append(result)
    return results


# --- the command --------------------------------------------------------------------------------
def command_history(requirements: str, experiments_results: str, plots_directory: str, no_plots: bool,
                    alpha: float = cp.DEFAULT_ALPHA, baseline: list[str] | None = None, all_plots: bool = False) -> int:
    return redraw_history(files.read_requirements(Path(requirements)), Path(requirements), Path(experiments_results),
                          Path(plots_directory), draw=not no_plots, alpha=alpha,
                          baselines=[Path(folder) for folder in baseline or []], every_payload=all_plots)


def redraw_history(required: pd.DataFrame, requirements_path: Path, folder: Path, plots: Path, *, draw: bool = True,
                   alpha: float = cp.DEFAULT_ALPHA, baselines: list[Path] | None = None,
                   every_payload: bool = False) -> int:
    """The history of a results store (or a folder of experiments) against requirements
    (files.read_requirements of requirements_path), with reference lines of the baseline folders; the
    PNG of every payload with `every_payload`, else of the series that moved (history.pngs)."""
    _require_plots_folder(plots, folder)
    # a results store is shared with gates adding to it: read and draw it whole, one redraw at a time
    with store.locked(folder) if store.is_store(folder) else contextlib.nullcontext():
        return _history(required, requirements_path, folder, plots, draw, alpha, baselines or [], every_payload)


def _load_all(executor, experiments: list[ex.Experiment], indexed: Path | None):
    """Every sub-experiment's table (_load_sub, in the workers) and the damage found, once per folder."""
    subs = ex.all_subexperiments(experiments)
    loaded = _map(executor, _load_sub, [(experiments, sub, indexed) for sub in subs])
    damage = {}
    for _, found in loaded:
        for item in found:
            damage.setdefault(item.folder, item)
    return subs, [table for table, _ in loaded], list(damage.values())


def _require_plots_folder(plots: Path, experiments_results: Path) -> None:
    """Before anything is read: the plots folder can be made, and is not among the experiment folders
    (change_points.csv there would be a stray file that stops the next history, a plot folder an
    experiment that is not one)."""
    outputs.require_paths(plots_directory=str(plots), experiments_results=str(experiments_results))
    outputs.require_writable(plots, "plots folder", folder=True)
    experiments_folder = ex.experiments_folder(experiments_results).resolve()
    if plots.resolve().is_relative_to(experiments_folder):
        raise InputError(f"the plots folder is inside the experiments folder {experiments_folder}; the next history "
                         "would read what it writes as experiments", plots)


def in_commit_order(experiments: list[ex.Experiment]) -> tuple[list[ex.Experiment], int]:
    """Experiments (given oldest first) commit by commit, the order of the change points and the x
    axis; and the position there of the newest experiment (a re-run of an old commit is not last)."""
    order = cp.commit_order([e.commit for e in experiments])
    return [experiments[i] for i in order], order.index(len(experiments) - 1)


def describe(experiments: list[ex.Experiment]) -> pd.DataFrame:
    """Label, Fast DDS commit, creation time and build options by position (the change points', the
    events' and Otava's rows)."""
    return pd.DataFrame({s.LABEL: [e.label for e in experiments], cp.COMMIT: [e.commit for e in experiments],
                         hf.CREATED: [e.created for e in experiments],
                         build_options.BUILD_OPTIONS: [build_options.build_options(
                             e.metadata.fastdds.build if e.metadata and e.metadata.fastdds else None) for e in experiments]})


def _history(requirement_table: pd.DataFrame, requirements: Path, experiments_results: Path, plots: Path, draw: bool,
             alpha: float, baseline_folders: list[Path], every_payload: bool = False) -> int:
    # a damaged experiment is reported and skipped: one bad folder must not stop every later history
    readable, damaged = store_check.readable_experiments(experiments_results)
    experiments, newest_position = in_commit_order(readable)
    # a baseline is drawn beside the history only if it was measured the same way on the same platform
    baselines = [(folder.resolve().name, ex.describe_experiment(folder)) for folder in baseline_folders]
    for note in ex.require_comparable(experiments + [experiment for _, experiment in baselines]):
        print(f"perfgate history: note: {log_text(note)}", file=sys.stderr)

    workers = _workers(len(ex.all_subexperiments(experiments)))
    # output: a plot worker killed mid-write leaves its temporary PNG below the plots folder
    with worker_pool(workers, _pool_context(), output=plots) if workers > 1 else contextlib.nullcontext() as executor:
        indexed = index_folder(experiments_results)
        subs, tables, summary_damage = _load_all(executor, experiments, indexed)
        if summary_damage:  # read again without them (from the index now: quick), so positions stay contiguous
            damaged += summary_damage
            skipped = {d.folder for d in summary_damage}
            readable = [e for e in readable if e.path not in skipped]
            if not readable:
                raise InputError(f"every experiment of the results store is damaged, e.g. {damaged[0].problem}",
                                 ex.experiments_folder(experiments_results))
            experiments, newest_position = in_commit_order(readable)
            subs, tables, _ = _load_all(executor, experiments, indexed)
        for damage in damaged:
            print(f"perfgate history: warning: {log_text(damage.line())}", file=sys.stderr)
        uncovered = [sub for sub in subs if sub not in set(requirement_table[s.EXPERIMENT_TYPE])]
        if uncovered:
            print(f"perfgate history: note: {log_text(requirements)} has no requirements for {log_list(uncovered)}; "
                  f"their payload histories are drawn without a requirement line", file=sys.stderr)
        lookups = [requirement_lookup(requirement_table, sub) for sub in subs]
        described = describe(experiments)
        verdicts = [history_ab.read_verdict(e.path) for e in experiments]  # the A/B of each run, where it has one
        by_sub = dict(zip(subs, tables))
        tested = _map(executor, _test_sub, [(sub, table, alpha) for sub, table in by_sub.items()])
        changes, wholes = whole.decide_both(*whole.joined(tested), described, alpha)
        events = history_events.events(changes, wholes, cp.long_values(by_sub, ex.ORDER), described, alpha)
        bisects = bisect_links.links(plots, events)  # a bad bisect.json stops here, before anything is written
        files.write_text(plots / hf.CHANGE_POINTS_CSV, hf.format_change_points(changes))
        files.write_text(plots / event_names.EVENTS_CSV, hf.format_events(events))
        files.write_text(plots / hf.EVENTS_MD, hf.events_markdown(events, alpha, bisects))
        hf.write_otava(plots / hf.OTAVA_DIR, {sub: hf.otava_table(table, described, ex.ORDER)
                                              for sub, table in by_sub.items() if not table.empty})
        topology = history_topology.topology_history(experiments, described, plots, alpha)  # its CSVs, also --no-plots
        drawn = 0
        ticks = None
        if draw:
            from ..plotting.history_marks import commit_tick_labels

            ticks = commit_tick_labels([e.created for e in experiments], [e.label for e in experiments],
                                       [e.commit for e in experiments],
                                       [e.metadata.fastdds.version if e.metadata and e.metadata.fastdds else None
                                        for e in experiments])
            drawn = sum(_map(executor, draw_sub,
                             [(sub, table, lookup, ticks, plots, change_marks(changes, sub), baseline_values(baselines, sub),
                               history_ab.marks(verdicts, sub),
                               None if every_payload else payload_plots_wanted(changes, events, sub))
                              for sub, table, lookup in zip(subs, tables, lookups)]))
            write_page(plots / hp.PAGE_NAME, experiments, by_sub, changes, ticks, alpha, verdicts, requirements, topology)

    throughput = throughput_history(experiments, described, ticks, plots, alpha)
    newest = experiments[newest_position]
    # the events lead: one line per moment a sub-experiment moved, the drill-down follows
    print(f"history: {len(events)} event(s), {int((events[event_names.EVENT_CHANGE] > 0).sum())} regression(s), family-wise "
          f"false-alarm level {alpha:g}: {log_text(plots / event_names.EVENTS_CSV)}")
    for line in hf.event_lines(events):
        print(log_text(line))
    if damaged:
        print(f"history: {len(damaged)} damaged experiment(s) skipped: {log_list(d.folder.name for d in damaged)}")
    print(f"history: {len(experiments)} experiments ({log_text(experiments[0].label)} .. {log_text(newest.label)}), "
          f"{len(subs)} sub-experiments; {drawn} plots in {log_text(plots)}"
          + ("" if every_payload else f" (the {len(s.PLOTTED_MAGNITUDES) * len(subs)} of all payloads, and one per series that moved; "
             "--all-plots: every payload's)") if draw else
          f"history: {len(experiments)} experiments, {len(subs)} sub-experiments; plots skipped")
    if baselines:
        print(f"history: reference lines: {log_list(f'baseline {name}' for name, _ in baselines)}")
    ab_lines = history_ab.summary_lines(verdicts, [e.label for e in experiments])
    for line in ab_lines:
        print(log_text(line))  # lines carrying labels and commits
    for sub, table, lookup in zip(subs, tables, lookups):
        over, checked = newest_verdicts(table, lookup, newest_position)
        if over:
            print(f"  newest ({log_text(newest.label)}) {log_text(sub)}: {over} of {checked} checks above the requirement")
    regressions = int((changes[cp.CHANGE] > 0).sum())
    print(f"history: {len(changes)} change point(s), {regressions} regression(s), family-wise false-alarm level "
          f"{alpha:g}: {log_text(plots / hf.CHANGE_POINTS_CSV)}")
    for line in hf.change_point_lines(changes):
        print(log_text(line))
    if throughput is not None:
        throughput_changes, throughput_drawn, throughput_events = throughput
        print(f"history: throughput: {len(throughput_events)} event(s), "
              f"{int((throughput_events[event_names.EVENT_CHANGE] < 0).sum())} regression(s) (drops): "
              f"{log_text(plots / THROUGHPUT_EVENTS_CSV)}")
        for line in hf.event_lines(throughput_events, higher_is_worse=False):
            print(log_text(line))
        print(f"history: throughput: {len(throughput_changes)} change point(s), "
              f"{int((throughput_changes[cp.CHANGE] < 0).sum())} regression(s) (drops), {throughput_drawn} plots: "
              f"{log_text(plots / THROUGHPUT_CHANGE_POINTS_CSV)}")
        for line in throughput_change_point_lines(throughput_changes):
            print(log_text(line))
    for line in topology.summary_lines(plots) if topology is not None else []:
        print(log_text(line))  # topology names, labels and commits from the store
    return s.EXIT_OK
