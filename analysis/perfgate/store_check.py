"""Damaged experiments in a results store: found the one way history and the gate both use.

An experiment folder is damaged when history could not read it: its metadata, its summaries (or
raw-only measurements), its A/B verdict or its throughput tables are unreadable or impossible (a
copy cut short, a file edited by hand). The two callers differ on purpose:
- `perfgate history` reports each damaged experiment (one line naming the file and the problem)
  and draws the others: one bad folder among a thousand nightly runs must not stop every later
  history;
- `perfgate gate --store` refuses to start (exit 2, before measuring) while the store holds one:
  its run would be added beside it and the history it redraws would miss a run without anyone
  asking why; the maintainer repairs or removes the folder first.
A stray file among the experiment folders, experiments of two platforms or latency definitions,
and a store with no experiment stay errors of the whole store (experiments.load_store).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import experiments as ex
from . import history_ab
from .errors import InputError
from .summary_index import IndexedSummaries
from .throughput_files import read_throughput, table_paths


@dataclass(frozen=True)
class Damage:
    folder: Path  # the experiment folder skipped
    problem: str  # the one error line: the file, its line where there is one, what is wrong

    def line(self) -> str:
        return f"{self.problem}; experiment {self.folder.name} skipped"


def check_folder(folder: Path) -> ex.Experiment:
    """describe_experiment, and the files history reads whole per folder (A/B verdict, throughput
    tables); InputError on the first problem."""
    experiment = ex.describe_experiment(folder)
    history_ab.read_verdict(folder)
    for path in table_paths(folder).values():  # not check-throughput's report, which is named alike
        read_throughput(path)
    return experiment


def readable_experiments(results: Path) -> tuple[list[ex.Experiment], list[Damage]]:
    """The experiments whose folders read (oldest first) and the damaged ones; InputError for what
    is wrong with the store as a whole, or when every experiment is damaged."""
    experiments, damaged = [], []
    for folder in ex.experiment_folders(results):
        try:
            experiments.append(check_folder(folder))
        except InputError as error:
            damaged.append(Damage(folder, str(error)))
    if not experiments:
        raise InputError(f"every experiment of the results store is damaged, e.g. {damaged[0].problem}",
                         ex.experiments_folder(results))
    return ex.order_experiments(experiments), damaged


def load_summaries(experiments: list[ex.Experiment], sub: str, indexed: Path | None) -> tuple[pd.DataFrame, list[Damage]]:
    """One sub-experiment's summary rows (FOLDER and the summary columns) of every experiment that has
    a summary of it, read through the store's index; the experiments whose summary is damaged apart."""
    with_summary = [e for e in experiments if sub in e.summary_paths]
    problems: dict[str, str] = {}
    rows = IndexedSummaries(indexed, sub).load([e.path.name for e in with_summary],
                                               [e.summary_paths[sub] for e in with_summary], problems)
    return rows, [Damage(e.path, problems[e.path.name]) for e in with_summary if e.path.name in problems]


def summarise_raw_only(experiment: ex.Experiment, sub: str) -> pd.DataFrame | Damage:
    try:
        return experiment.summary(sub)
    except InputError as error:
        return Damage(experiment.path, str(error))


def require_undamaged(results: Path) -> list[ex.Experiment]:
    """The gate's check before measuring: every experiment of the store, or InputError naming the
    first damaged one (history would skip it)."""
    experiments, damaged = readable_experiments(results)
    indexed = ex.experiments_folder(results)
    for sub in ex.all_subexperiments(experiments):
        damaged += load_summaries(experiments, sub, indexed)[1]
        damaged += [d for e in experiments if sub in e.raw_paths
                    for d in [summarise_raw_only(e, sub)] if isinstance(d, Damage)]
    if damaged:
        raise InputError(f"the results store holds a damaged experiment: {damaged[0].problem}; repair or remove "
                         f"{damaged[0].folder} before gating into this store (perfgate history skips it)")
    return experiments

