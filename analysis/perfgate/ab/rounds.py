"""ab.rounds: read an A/B folder's rounds into one table (the verdict's input).

    <ab dir>/metadata.json                 optional: the requested sub-experiments, arms, order
    <ab dir>/rounds/<NN>/<arm>/            arm = baseline | candidate, an ordinary experiment folder

Rounds are taken in the order of their folder names; a round folder needs no metadata.json. An arm
with raw measurements but no summaries is summarised here (and the summaries written, as
`perfgate process` would). Floors are not read: they measure the machine, never Fast DDS.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import files
from ..latency import process
from .. import schema as s
from ..errors import IncompleteError, InputError
from ..model import Metadata, read_metadata
from ..latency.experiments import sort_subexperiments
from .verdict import ARM, ROUND, TESTED_STATISTICS


@dataclass(frozen=True)
class Rounds:
    table: pd.DataFrame  # ROUND, ARM, Experiment type, Bytes, and the tested statistics
    subexperiments: list[str]  # in contract order: requested ones first, then any other with data
    round_names: list[str]
    metadata: Metadata | None


def _natural_key(name: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def round_folders(ab_dir: Path) -> list[Path]:
    rounds_dir = Path(ab_dir) / s.AB_ROUNDS_DIR
    if not rounds_dir.is_dir():
        raise InputError(f"not an A/B folder: it has no {s.AB_ROUNDS_DIR}/ folder", ab_dir)
    return sorted((p for p in rounds_dir.iterdir() if p.is_dir() and not p.name.startswith(".")),
                  key=lambda p: _natural_key(p.name))


def arm_summaries(arm_dir: Path) -> dict[str, pd.DataFrame]:
    """The arm's summaries by sub-experiment, summarising raw files that have no summary yet."""
    summaries = {sub: files.read_summary(path) for sub, path in files.summary_files(arm_dir, required=False).items()}
    for sub, raw_path in files.raw_files(arm_dir).items():
        if sub not in summaries:
            summary = process.summarise(files.read_raw(raw_path))
            files.write_csv(arm_dir / s.summary_csv_name(sub), summary)
            summaries[sub] = summary
    return summaries


def _is_gated(sub: str) -> bool:
    known = s.KNOWN_SUBEXPERIMENTS.get(sub)
    return known is None or not known.is_floor


def read_rounds(ab_dir: Path) -> Rounds:
    ab_dir = Path(ab_dir)
    files.require_dir(ab_dir, "A/B folder")
    metadata = read_metadata(ab_dir)
    folders = round_folders(ab_dir)
    if not folders:
        raise IncompleteError(f"no rounds in {s.AB_ROUNDS_DIR}/: nothing was measured", ab_dir)
    rows = []
    for folder in folders:
        for arm in s.AB_ARMS:
            arm_dir = folder / arm
            if not arm_dir.is_dir():
                continue  # a round cut short: the verdict counts usable rounds per sub-experiment
            for sub, summary in arm_summaries(arm_dir).items():
                if not _is_gated(sub):
                    continue
                frame = summary[[s.BYTES, *TESTED_STATISTICS]].copy()
                frame.insert(0, s.EXPERIMENT_TYPE, sub)
                frame.insert(0, ARM, arm)
                frame.insert(0, ROUND, folder.name)
                rows.append(frame)
    table = (pd.concat(rows, ignore_index=True) if rows
             else pd.DataFrame(columns=[ROUND, ARM, s.EXPERIMENT_TYPE, s.BYTES, *TESTED_STATISTICS]))
    requested = [name for name in ((metadata.requested_subexperiments if metadata else None) or ())
                 if _is_gated(name)]
    measured = sort_subexperiments(set(table[s.EXPERIMENT_TYPE]))
    subs = requested + [sub for sub in measured if sub not in requested]
    if not subs:
        raise IncompleteError("no round has summaries or raw measurements of a sub-experiment", ab_dir)
    return Rounds(table, subs, [f.name for f in folders], metadata)
