"""ab.samples: a latency A/B folder's stored rounds replayed at fewer samples per payload.

A run of n samples per payload measures exactly the first n of a longer run's samples of each payload
(the smallest `Sample` numbers of that payload: perfgate numbers them through the run, payload after
payload, in measured order), so the first n samples of a stored round are what an A/B of n samples
would have measured in that round: the same machine states, the same turns. From them
the tested statistics are computed as `perfgate process` summarises (latency.process), and the
verdict is the project's own (ab.verdict, ab.curtail). Nothing is written into the A/B folder (which
ab.rounds.read_rounds would do for a round without summaries): a replay only reads.

A round counts once it is finished: the A/B's metadata.json says the A/B finished (not interrupted),
or both arms' metadata.json in the round have `finished_utc` (an arm's metadata.json is written after every
sub-experiment, so its presence alone says nothing). Rounds being measured are left out and named.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import files
from .. import schema as s
from ..errors import InputError, PerfgateError
from ..latency import process
from ..model import Metadata, read_metadata
from ..latency.experiments import sort_subexperiments
from ..measure import completeness
from ..outcome import verdict_of
from . import curtail, layout as ab_layout, verdict as v
from .rounds import round_folders
from .throughput_report import is_throughput_ab


def first_samples(raw: pd.DataFrame, n: int) -> pd.DataFrame:
    """The rows of the first n samples (the n smallest `Sample` numbers) of every payload, in the raw
    frame's order: what a run of n samples per payload measures."""
    rank = raw.groupby(s.PAYLOAD, sort=False)[s.SAMPLE].rank(method="first")
    return raw[(rank <= n).to_numpy()]


def tested_statistics(raw: pd.DataFrame, n: int) -> pd.DataFrame:
    """Bytes and the verdict's statistics (Median, 90 %) per payload of the first n samples."""
    return process.summarise(first_samples(raw, n))[[s.BYTES, *v.TESTED_STATISTICS]]


def read_arm_metadata(arm_dir: Path) -> Metadata | None:
    return read_metadata(arm_dir) if (arm_dir / s.METADATA_FILE).is_file() else None


def attempts_held(raw: pd.DataFrame, arm_metadata: Metadata | None, sub: str) -> dict[int, int]:
    """Per payload, the round trips the run attempted: its rows, plus those the arm's metadata.json
    counts lost where the payload was complete without them (a best-effort one, measure.completeness),
    so that a round of 199 rows and 1 lost replays at the A/B's 200 samples."""
    counts = {int(p): int(n) for p, n in raw.groupby(s.PAYLOAD, sort=False).size().items()}
    entry = arm_metadata.outcome_of(sub) if arm_metadata is not None else None
    recorded = (entry.lost_samples if entry is not None else None) or {}
    lost = {int(p): n for p, n in recorded.items()  # untrusted: whole numbers only
            if isinstance(p, str) and p.isdigit() and isinstance(n, int) and not isinstance(n, bool) and n >= 0}
    samples = arm_metadata.samples if arm_metadata is not None else None
    reliability = entry.reliability if entry is not None and entry.reliability else ""
    return completeness.attempts_held(reliability, counts, lost, samples if isinstance(samples, int) else None)


@dataclass(frozen=True)
class StoredVerdict:
    """What the stored verdict.json decided, and the setting it decided at."""
    status: str
    failed: tuple[tuple[str, str], ...]  # (sub-experiment, statistic)
    threshold: float
    alpha: float
    layout: dict[str, float]
    layout_source: str | None


@dataclass(frozen=True)
class StoredAb:
    folder: Path
    metadata: Metadata | None
    round_names: list[str]  # the finished rounds, in order
    unfinished: list[str]  # round folders still being measured: left out
    subexperiments: list[str]  # contract order
    held: int  # the fewest round trips attempted for any payload of any finished round (rows + lost)
    tables: dict[int, pd.DataFrame]  # n -> ROUND, ARM, Experiment type, Bytes, Median, 90 % (as Rounds.table)
    verdict: StoredVerdict | None  # None: no verdict.json yet (an A/B still measuring)

    def subexperiment_rounds(self, sub: str) -> int:
        """The finished rounds with raw measurements of `sub` in both arms."""
        table = next(iter(self.tables.values()))
        rows = table[table[s.EXPERIMENT_TYPE] == sub]
        return int((rows.groupby(v.ROUND)[v.ARM].nunique() == len(s.AB_ARMS)).sum())


def _finished(round_dir: Path, ab_finished: bool) -> bool:
    if ab_finished:
        return True
    for arm in s.AB_ARMS:
        if not (round_dir / arm / s.METADATA_FILE).is_file():
            return False
        meta = read_metadata(round_dir / arm)
        if meta is None or meta.finished_utc is None:
            return False
    return True


def read_stored_verdict(ab_dir: Path) -> StoredVerdict | None:
    """verdict.json's status, failed tests, threshold, level and layout thresholds, each checked (the
    folder may come from anywhere); None when there is none."""
    path = Path(ab_dir) / s.VERDICT_JSON
    data = files.read_json_object(path, "a verdict")
    if data is None:
        return None
    try:
        threshold, alpha = v.require_parameters(data.get("threshold"), data.get("alpha"))
    except InputError as error:
        raise InputError(error.message.removeprefix("--"), path) from None  # a field here, not an option
    status, failed, layout = data.get("status"), data.get("failed"), data.get("layout_thresholds")
    named = isinstance(failed, list) and all(isinstance(row, dict) and isinstance(row.get("subexperiment"), str)
                                             and isinstance(row.get("statistic"), str) for row in failed)
    if not isinstance(status, str) or not named:
        raise InputError("status is not a string or failed is not a list of {subexperiment, statistic}", path)
    try:
        parsed = ab_layout.parse_thresholds(layout) if isinstance(layout, dict) else {}
    except ValueError as error:
        raise InputError(f"layout_thresholds: {error}", path) from None
    source = layout.get("file") if isinstance(layout, dict) and isinstance(layout.get("file"), str) else None
    return StoredVerdict(status, tuple((row["subexperiment"], row["statistic"]) for row in failed), threshold, alpha,
                         parsed, source)


def read_stored_ab(ab_dir: Path, samples: list[int]) -> StoredAb:
    """Every finished round's raw measurements, cut to each n of `samples` (those above what the rounds
    hold are dropped). InputError (exit 2) for a folder that is no latency A/B or has no finished round
    with raw measurements."""
    ab_dir = Path(ab_dir)
    try:
        files.require_dir(ab_dir, "A/B folder")
        if is_throughput_ab(ab_dir):
            raise InputError("a throughput A/B: samples per round are a latency A/B's", ab_dir)
        metadata = read_metadata(ab_dir)
        folders = round_folders(ab_dir)
        ab_finished = metadata is not None and metadata.finished_utc is not None and not metadata.interrupted
        finished = [f for f in folders if _finished(f, ab_finished)]
        rows, held = [], math.inf
        for folder in finished:
            for arm in s.AB_ARMS:
                arm_metadata = read_arm_metadata(folder / arm)
                for sub, path in files.raw_files(folder / arm).items():
                    known = s.KNOWN_SUBEXPERIMENTS.get(sub)
                    if known is not None and known.is_floor:
                        continue  # never part of an A/B's verdict
                    raw = files.read_raw(path)
                    held = min(held, min(attempts_held(raw, arm_metadata, sub).values()))
                    for n in samples:
                        frame = tested_statistics(raw, n)
                        frame.insert(0, s.EXPERIMENT_TYPE, sub)
                        frame.insert(0, v.ARM, arm)
                        frame.insert(0, v.ROUND, folder.name)
                        frame.insert(0, "n", n)
                        rows.append(frame)
        if not rows:
            raise InputError(f"no finished round with raw measurements ({len(folders)} round folder(s), "
                             f"{len(finished)} finished)", ab_dir)
        fitting = [n for n in samples if n <= held]
        if not fitting:
            raise InputError(f"its rounds hold {held} samples per payload, fewer than every n asked for "
                             f"({', '.join(map(str, samples))})", ab_dir)
        table = pd.concat(rows, ignore_index=True)
        tables = {n: table[table["n"] == n].drop(columns="n").reset_index(drop=True) for n in fitting}
        requested = [sub for sub in ((metadata.requested_subexperiments if metadata else None) or ())
                     if sub in set(table[s.EXPERIMENT_TYPE])]
        measured = sort_subexperiments(set(table[s.EXPERIMENT_TYPE]))
        return StoredAb(ab_dir, metadata, [f.name for f in finished], [f.name for f in folders if f not in finished],
                        requested + [sub for sub in measured if sub not in requested], int(held), tables,
                        read_stored_verdict(ab_dir))
    except PerfgateError as error:
        if error.path is None:  # every line names the folder it is about
            raise InputError(error.message, ab_dir) from None
        raise


def settings(stored: StoredAb) -> StoredVerdict:
    """The verdict's setting the replay decides at: the stored verdict's, else the defaults."""
    if stored.verdict is not None:
        return stored.verdict
    return StoredVerdict("", (), v.DEFAULT_THRESHOLD, v.DEFAULT_ALPHA, {}, None)


def replayed_decision(stored: StoredAb, n: int) -> v.Decision:
    """The verdict of the stored rounds at n samples per payload, as `perfgate verdict` decides the folder
    (its curtailment record, the stored verdict's threshold, level and layout thresholds)."""
    setting = settings(stored)
    planned, stopped = curtail.read_record(stored.folder, stored.subexperiments, len(stored.round_names))
    return curtail.decide_curtailed(v.log_ratios(stored.tables[n]), planned=planned, stopped=stopped,
                                    threshold=setting.threshold, alpha=setting.alpha, order=stored.subexperiments,
                                    layout=setting.layout, layout_source=setting.layout_source)


def status_of(decision: v.Decision) -> str:
    return verdict_of(incomplete=decision.incomplete, regressed=not decision.failed.empty)


def failed_tests(decision: v.Decision) -> tuple[tuple[str, str], ...]:
    return tuple((row[s.EXPERIMENT_TYPE], row[v.STATISTIC]) for _, row in decision.failed.iterrows())
