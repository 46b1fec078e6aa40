"""An index of a results store's summaries, so that history over 1000 experiments reads in seconds.

Reading and validating one summary CSV costs milliseconds (docs/formats.md section 13), and a store
of 1000 nightly runs holds 10000 of them. An experiment is written once and never replaced
(store.add_experiment), so what was read once can be kept:

    <experiments>/.perfgate-summary-index/<sub>.csv.gz

one file per sub-experiment with every summary row read so far, each under its experiment folder's
name and the summary file's size and modification time (ns). A summary whose size or time differ
from the index (edited by hand, restored from a backup) is read and validated again, so the index
never hides a change; rows are written with full precision (not the summaries' 3 decimals), so a
value read from the index is the very value read from the file. The folder's name starts with a
dot: a store reader skips it. A store that cannot be written (a read-only copy) is read without
keeping an index.

New runs only (the nightly's case: one more run since the last history) are appended to the file
as one more gzip member (a gzip file may hold several, read as one text) instead of the whole index
being formatted and compressed again: that rewrite was 0.25 s of CPU per sub-experiment at 1000
runs, some 10 % of a history's work besides drawing (issue 24 item 5).
"""
from __future__ import annotations

import gzip
import os
from pathlib import Path

import pandas as pd

from .. import files
from . import summary_batch
from .. import schema as s
from ..errors import InputError

INDEX_DIR = ".perfgate-summary-index"
FOLDER = "Folder"
SIZE = "Size"
MTIME = "Mtime ns"
KEY_COLUMNS = (FOLDER, SIZE, MTIME)


def index_path(experiments_folder: Path, sub: str) -> Path:
    return experiments_folder / INDEX_DIR / f"{sub}.csv.gz"


def file_key(path: Path) -> tuple[int, int]:
    status = os.stat(path)
    return status.st_size, status.st_mtime_ns


def read_index(path: Path) -> pd.DataFrame:
    """The index's rows (Folder, Size, Mtime ns, the summary columns); empty when there is no
    readable index: it is a cache, a damaged one is rebuilt from the summaries, never trusted."""
    empty = empty_index()
    try:
        table = pd.read_csv(path, compression="gzip", float_precision="round_trip", dtype={FOLDER: str})
    except (OSError, ValueError, EOFError, pd.errors.ParserError):
        return empty
    if list(table.columns) != [*KEY_COLUMNS, *s.SUMMARY_COLUMNS]:
        return empty
    return table


def empty_index() -> pd.DataFrame:
    """No rows, with the dtypes of a read index (merges refuse to join text with numbers)."""
    table = pd.DataFrame({FOLDER: pd.Series(dtype=object), SIZE: pd.Series(dtype="int64"),
                          MTIME: pd.Series(dtype="int64")})
    for column in s.SUMMARY_COLUMNS:
        table[column] = pd.Series(dtype="int64" if column in (s.BYTES, s.SAMPLES) else "float64")
    return table


def write_index(path: Path, table: pd.DataFrame) -> None:
    text = table.to_csv(index=False, lineterminator="\n")
    with files.atomic_path(path) as temporary:
        with gzip.open(temporary, "wt", encoding="utf-8", compresslevel=6) as handle:
            handle.write(text)


def append_to_index(path: Path, rows: pd.DataFrame) -> None:
    """`rows` (the index's columns, in order) after those of the index file at `path`, as one more gzip
    member without a header; atomically, like write_index (the old members are copied, not recompressed)."""
    member = gzip.compress(rows.to_csv(index=False, header=False, lineterminator="\n").encode("utf-8"), compresslevel=6)
    written = path.read_bytes()
    with files.atomic_path(path) as temporary:
        temporary.write_bytes(written + member)


class IndexedSummaries:
    """Summaries of one sub-experiment, from the index where it is current, else from the file."""

    def __init__(self, experiments_folder: Path | None, sub: str):
        self.path = index_path(experiments_folder, sub) if experiments_folder is not None else None
        self.table = read_index(self.path) if self.path is not None else empty_index()
        # rows of self.table that are the index file as it is on disk (None: none, or not known to be)
        self._on_disk = len(self.table) if len(self.table) else None

    def load(self, folders: list[str], summary_files: list[Path], problems: dict[str, str] | None = None) -> pd.DataFrame:
        """Folder and the summary columns of every folder's summary file, folders in the given order,
        rows in file order; the index is brought up to date (and written, when it can be). With
        `problems`, a summary that does not read is left out and its error line kept there under its
        folder (store_check: history skips a damaged experiment); without, it is raised."""
        if not folders:  # every run of this sub-experiment has raw measurements only (older tooling)
            return empty_index().drop(columns=[SIZE, MTIME])
        wanted = pd.DataFrame({FOLDER: folders, "_order": range(len(folders))})
        keys = [file_key(path) for path in summary_files]
        wanted[SIZE] = [size for size, _ in keys]
        wanted[MTIME] = [mtime for _, mtime in keys]
        current = self.table.merge(wanted, on=list(KEY_COLUMNS), how="inner")
        missing = sorted(set(folders) - set(current[FOLDER]))
        fresh = []
        if missing:
            by_folder = dict(zip(folders, zip(summary_files, keys)))
            # read together: one parse for many files (summary_batch), the very values and errors of read_summary
            read, owner, refused = summary_batch.read_summaries([by_folder[folder][0] for folder in missing])
            for position, error in sorted(refused.items()):
                if problems is None:
                    raise error
                problems[missing[position]] = str(error)
            if len(read):
                read.insert(0, MTIME, [by_folder[missing[p]][1][1] for p in owner])
                read.insert(0, SIZE, [by_folder[missing[p]][1][0] for p in owner])
                read.insert(0, FOLDER, [missing[p] for p in owner])
                fresh.append(read)
        kept = current.drop(columns="_order")
        stale = len(self.table) != len(kept)
        if fresh or stale:
            # an empty frame is left out of the concatenation: pandas would let its dtypes decide
            self.table = pd.concat([frame for frame in (kept, *fresh) if not frame.empty], ignore_index=True) \
                if fresh else kept
            self._save(appended=not stale and self._on_disk == len(kept))
        rows = self.table.merge(wanted.loc[:, [FOLDER, "_order"]], on=FOLDER, how="inner")
        rows = rows.sort_values("_order", kind="stable")
        return rows.loc[:, [FOLDER, *s.SUMMARY_COLUMNS]].reset_index(drop=True).astype(
            {s.BYTES: int, s.SAMPLES: int})

    def _save(self, appended: bool = False) -> None:
        """Write the index; `appended`: the file holds the table's first rows and the rest are new."""
        if self.path is None:
            return
        try:
            if appended:
                append_to_index(self.path, self.table.iloc[self._on_disk:])
            else:
                write_index(self.path, self.table)
            self._on_disk = len(self.table)
        except (OSError, InputError):
            self._on_disk = None  # a read-only store, a full disk: the next history reads the files again
