"""Damaged experiments in a results store: found the one way history and the gate both use.

An experiment folder is damaged when history could not read it: its metadata, its summaries (or
raw-only measurements), its A/B verdict, its throughput or topology tables are unreadable or impossible (a
copy cut short, a file edited by hand). Both callers skip it:
- `perfgate history` reports each damaged experiment (one line naming the file and the problem)
  and draws the others: one bad folder among a thousand nightly runs must not stop every later
  history;
- `perfgate gate --store` measures and adds its run all the same, and warns of each damaged one
  (a warning in its reports): one folder a results branch brought in, or a copy cut short, must
  not stop every later gate of the runner (it did, issue 23); `perfgate store check` lists them.
Pull and push judge one experiment whole (experiment_damage): what history would skip, plus what a
results branch may not hold (store_branch: names, sizes, a `.gz` inflating past its cap), so push
never uploads a damaged experiment and pull never lands one.
A stray file among the experiment folders, experiments of two platforms or latency definitions,
and a store with no experiment stay errors of the whole store (experiments.load_store).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..latency import experiments as ex
from ..history import ab as history_ab
from .. import schema as s
from . import experiments as results_store
from . import branch as store_branch
from . import aa_gates
from ..cli_types import label_problem
from ..csv_lines import GZIP_SUFFIX, inflated_problem
from ..errors import InputError
from ..history.index import IndexedSummaries
from ..history.topology_tables import stored_topologies
from ..throughput.check import THROUGHPUT_CHECKS_FILE
from ..throughput.files import read_throughput, table_paths


@dataclass(frozen=True)
class Damage:
    folder: Path  # the experiment folder skipped
    problem: str  # the one error line: the file, its line where there is one, what is wrong

    def line(self) -> str:
        return f"{self.problem}; experiment {self.folder.name} skipped"


def check_folder(folder: Path) -> ex.Experiment:
    """describe_experiment, and the files history, the gate and false-alarms read whole per folder (the
    A/B verdicts, junit.xml, throughput tables and checks), each through its one reader; InputError on
    the first problem."""
    experiment = ex.describe_experiment(folder)
    history_ab.read_verdict(folder)
    aa_gates.read_verdict_status(folder / aa_gates.THROUGHPUT_VERDICT, "throughput A/B verdict")
    aa_gates.junit_status(folder / s.JUNIT_FILE)  # what false-alarms reads of each stored run
    aa_gates.throughput_checks_status(folder / THROUGHPUT_CHECKS_FILE)
    for path in table_paths(folder).values():  # not check-throughput's report, which is named alike
        read_throughput(path)
    stored_topologies(folder)  # the topology runs it keeps, every cell the topology history reads
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


def undamaged_experiments(results: Path) -> tuple[list[ex.Experiment], list[Damage]]:
    """The gate's look at the store before measuring: the experiments history would draw, and the
    damaged ones it would skip (every one may be damaged: the gate's run is then the first good one)."""
    experiments, damaged = [], []
    for folder in ex.experiment_folders(results):
        try:
            experiments.append(check_folder(folder))
        except InputError as error:
            damaged.append(Damage(folder, str(error)))
    indexed = ex.experiments_folder(results)
    for sub in ex.all_subexperiments(experiments):
        damaged += load_summaries(experiments, sub, indexed)[1]
        damaged += [d for e in experiments if sub in e.raw_paths
                    for d in [summarise_raw_only(e, sub)] if isinstance(d, Damage)]
    skipped = {d.folder for d in damaged}
    return ex.order_experiments([e for e in experiments if e.path not in skipped]), damaged


def file_problem(folder: Path) -> str | None:
    """What a results branch may not hold in this experiment folder (store_branch), or None: its name,
    its kept files' names and sizes, a `.gz` that is not gzip or inflates past its cap."""
    problem = store_branch.store_label_problem(folder.name)
    if problem is not None:
        return f"{folder}: the folder {problem}"
    for relative, path in results_store.kept_files(folder).items():
        entry = store_branch.Entry(store_branch.REGULAR_FILE, "blob", "", path.stat().st_size,
                                   f"{s.STORE_EXPERIMENTS_DIR}/{folder.name}/{relative}")
        problem = store_branch.file_problem(entry, relative)
        if problem is None and relative.endswith(GZIP_SUFFIX):
            problem = inflated_problem(path)
        if problem is not None:
            return f"{path}: {problem}"
    return None


def experiment_damage(folder: Path) -> Damage | None:
    """One experiment folder judged whole, as push and pull need it: file_problem, then whatever
    history would skip it for (its metadata, A/B verdict, throughput tables, every summary, the
    raw measurements of a sub-experiment without one), and a label in its metadata that --label
    would refuse (a line break, a terminal escape)."""
    problem = file_problem(folder)
    if problem is not None:
        return Damage(folder, problem)
    try:
        experiment = check_folder(folder)
        for sub in experiment.subexperiments:
            experiment.summary(sub)
    except InputError as error:
        return Damage(folder, str(error))
    problem = label_problem(experiment.label)  # printed by history and the reports: --label's rule
    if problem is not None:
        return Damage(folder, f"{folder / s.METADATA_FILE}: the label {ascii(experiment.label)} {problem}")
    return None


def damaged_folders(results: Path) -> tuple[int, list[Damage]]:
    """`perfgate store check`: (how many experiment folders, the damaged ones, each judged whole)."""
    folders = ex.experiment_folders(results)
    return len(folders), [d for folder in folders for d in [experiment_damage(folder)] if d is not None]

