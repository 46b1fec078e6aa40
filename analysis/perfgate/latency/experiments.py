"""Experiment folders and results stores: what they hold, in which order, and whether they compare.

An experiment folder is one run of the gate (docs/formats.md section 8): metadata.json (absent for
results of the older tooling) and one summary CSV per sub-experiment. A results store keeps one
experiment folder per run under `<store>/experiments/<label>/`.

Decisions (docs/analysis-history-compare.md explains them for users):
- `--experiments-results` may name the store or its `experiments/` folder: when the folder has an
  `experiments/` sub-folder, that is where the experiments are; otherwise its sub-folders are.
  Entries whose names start with a dot are ignored (editor and file-system droppings); any other
  file among the experiment folders is a usage error, so that a misplaced summary is never skipped.
- Summaries are read, never raw measurements, when a sub-experiment has a summary; a sub-experiment
  with only its raw CSV is summarised on the fly (process.summarise_raw_file, one payload at a time).
- Order: by metadata's creation time (UTC); folders without one (older tooling) come first, by
  folder name, because they predate metadata.json. Equal times are broken by folder name.
- A folder that records no latency definition is taken as `round_trip`, the definition of this
  gate's harness; a folder that records no platform id is taken as the platform of the others.
  Both assumptions are reported as notes, never made silently. Two different recorded latency
  definitions or platform ids are a usage error naming both folders.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from .. import files
from . import process
from .. import schema as s
from ..errors import InputError
from ..model import Metadata, read_metadata

ORDER = "Order"  # position of an experiment in a history, oldest first (internal column)


@dataclass(frozen=True)
class Experiment:
    """One experiment folder, described from its metadata and file listing (summaries not read yet)."""

    path: Path
    label: str
    created: datetime | None
    latency_definition: str
    latency_definition_recorded: bool
    platform_id: str | None
    commit: str | None
    metadata: Metadata | None
    summary_paths: dict[str, Path] = field(default_factory=dict)
    raw_paths: dict[str, Path] = field(default_factory=dict)  # only sub-experiments without a summary

    @property
    def subexperiments(self) -> list[str]:
        return sorted(set(self.summary_paths) | set(self.raw_paths))

    def summary(self, sub: str) -> pd.DataFrame:
        if sub in self.summary_paths:
            return files.read_summary(self.summary_paths[sub])
        return process.summarise_raw_file(self.raw_paths[sub])[0]


# --- one folder ---------------------------------------------------------------------------------
def describe_experiment(folder: Path) -> Experiment:
    """Metadata and the summary (or raw-only) files of one folder; InputError when it holds neither."""
    folder = files.require_dir(folder, "experiment folder")
    metadata = read_metadata(folder)
    summary_paths = files.summary_files(folder, required=False)
    raw_paths = {sub: path for sub, path in files.raw_files(folder).items() if sub not in summary_paths}
    if not summary_paths and not raw_paths:
        raise InputError(
            f"no summaries ({s.summary_csv_name('<sub>')}) and no raw measurements in the experiment folder", folder
        )
    meta = metadata or Metadata()
    recorded_definition = meta.latency_definition
    if recorded_definition is not None and recorded_definition not in s.LATENCY_DEFINITIONS:
        raise InputError(
            f"'latency_definition' is {recorded_definition!r}; expected one of "
            f"{', '.join(s.LATENCY_DEFINITIONS)}",
            folder / s.METADATA_FILE,
        )
    return Experiment(
        path=folder,
        label=meta.label or folder.name,
        created=_created(meta, folder),
        latency_definition=recorded_definition or s.ROUND_TRIP,
        latency_definition_recorded=recorded_definition is not None,
        platform_id=meta.platform_id or None,
        commit=meta.commit or None,
        metadata=metadata,
        summary_paths=summary_paths,
        raw_paths=raw_paths,
    )


def _created(meta: Metadata, folder: Path) -> datetime | None:
    text = meta.created_utc
    if text is None:
        return None
    try:
        created = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"'created_utc' is not an ISO 8601 time: {text!r}", folder / s.METADATA_FILE) from None
    # a time without a zone is UTC by the contract
    return created.replace(tzinfo=timezone.utc) if created.tzinfo is None else created.astimezone(timezone.utc)



# --- a results store ----------------------------------------------------------------------------
def experiments_folder(results: Path) -> Path:
    """The folder that holds the experiment folders: `<store>/experiments/` or `results` itself."""
    results = files.require_dir(results, "experiments results folder")
    nested = results / s.STORE_EXPERIMENTS_DIR
    if nested.is_dir():
        return nested
    if (results / s.METADATA_FILE).exists() or files.summary_files(results, required=False):
        raise InputError("is one experiment folder, not a results store of experiment folders", results)
    return results


def experiment_folders(results: Path) -> list[Path]:
    """The experiment folders of a results store, by name; InputError on a stray file or none."""
    root = experiments_folder(results)
    folders = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        if not entry.is_dir():
            raise InputError("stray file among the experiment folders (each run is a folder)", entry)
        folders.append(entry)
    if not folders:
        raise InputError("no experiment folders in the results store", root)
    return folders


def load_store(results: Path) -> list[Experiment]:
    """Every experiment folder of a results store, oldest first; InputError on stray files or none,
    and on the first folder that does not read (store_check skips those instead)."""
    return order_experiments([describe_experiment(folder) for folder in experiment_folders(results)])


def order_experiments(experiments: list[Experiment]) -> list[Experiment]:
    """Oldest first by creation time; untimed folders (older tooling) first, by folder name."""

    def key(experiment: Experiment):
        if experiment.created is None:
            return (0, datetime.min.replace(tzinfo=timezone.utc), experiment.path.name)
        return (1, experiment.created, experiment.path.name)

    return sorted(experiments, key=key)


def require_comparable(experiments: list[Experiment]) -> list[str]:
    """InputError naming two folders whose latency definitions or platform ids differ; else notes.

    The notes say which folders were assumed to match (nothing recorded); the caller prints them.
    """
    recorded = [e for e in experiments if e.latency_definition_recorded]
    _same(recorded, lambda e: e.latency_definition, "latency definitions")
    # a folder recording no definition counts as round_trip; it must then agree with the recorded ones
    _same(experiments, lambda e: e.latency_definition, "latency definitions (none recorded counts as round_trip)")
    with_platform = [e for e in experiments if e.platform_id is not None]
    _same(with_platform, lambda e: e.platform_id, "platform ids")

    notes = []
    unrecorded = [e for e in experiments if not e.latency_definition_recorded]
    if unrecorded:
        notes.append(f"{_count(unrecorded)} no latency_definition (e.g. {unrecorded[0].path}); "
                     f"taken as {s.ROUND_TRIP}")
    no_platform = [e for e in experiments if e.platform_id is None]
    if no_platform and with_platform:
        notes.append(f"{_count(no_platform)} no platform id (e.g. {no_platform[0].path}); "
                     f"taken as platform {with_platform[0].platform_id!r} of the others")
    return notes


def _same(experiments: list[Experiment], value, what: str) -> None:
    if not experiments:
        return
    first = experiments[0]
    for other in experiments[1:]:
        if value(other) != value(first):
            raise InputError(
                f"{what} differ: {first.path} has {value(first)!r}, {other.path} has {value(other)!r}; "
                f"such data is never compared"
            )


def _count(experiments: list[Experiment]) -> str:
    """'1 experiment folder records' / '3 experiment folders record'."""
    return f"{len(experiments)} experiment folder records" if len(experiments) == 1 else \
        f"{len(experiments)} experiment folders record"


def commits(experiments: list[Experiment]) -> list[str]:
    """The distinct Fast DDS commits recorded, in order of first appearance."""
    return list(dict.fromkeys(e.commit for e in experiments if e.commit is not None))


# --- summaries across experiments ---------------------------------------------------------------
def summary_table(experiments: list[Experiment], sub: str) -> pd.DataFrame:
    """One sub-experiment's summary rows of every experiment that has it, with ORDER and LABEL first.

    ORDER is the experiment's position in `experiments` (so gaps show where a run lacks the sub).
    """
    frames = []
    for order, experiment in enumerate(experiments):
        if sub not in experiment.subexperiments:
            continue
        summary = experiment.summary(sub)
        summary.insert(0, s.LABEL, experiment.label)
        summary.insert(0, ORDER, order)
        frames.append(summary)
    if not frames:
        return pd.DataFrame(columns=[ORDER, s.LABEL, *s.SUMMARY_COLUMNS])
    return pd.concat(frames, ignore_index=True)


def all_subexperiments(experiments: list[Experiment]) -> list[str]:
    """Sub-experiments of any experiment: the contract's order first, then others by name."""
    present = set().union(*(e.subexperiments for e in experiments)) if experiments else set()
    return sort_subexperiments(present)


def sort_subexperiments(names) -> list[str]:
    known = [name for name in s.KNOWN_SUBEXPERIMENTS if name in names]
    return known + sorted(set(names) - set(known))
