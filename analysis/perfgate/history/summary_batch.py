"""Many summary files read at once: the first history of a store of 5000 nightly runs reads 50000.

files.read_summary parses and checks one file with pandas, some 2 ms of CPU each, most of it pandas'
cost per call: 50000 of them were 100 of the 123 s of such a history (issue 45 item 7). Summaries
as perfgate writes them (the summary header exactly, one row per line ending in "\\n", no quotes,
carriage returns, blank lines, spaces or byte-order mark, as many cells as columns on every line) are read
here as one text: the rows of up to BATCH_FILES files joined, parsed once with read_summary's parser
options and checked once with read_summary's own rules (files.checked_summary), which each look at one
row but the payloads' uniqueness, checked per file.

Whatever is not that plain (another column order, a comment, a special file, a larger file) and every
file of a batch the joined check refuses is read by files.read_summary on its own, so a file is
accepted or refused, with its message and line, exactly as read_summary would; the values are the
very same floats (one parse of the same cells with the same options).
"""
from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import numpy as np
import pandas as pd

from .. import files
from .. import schema as s
from ..errors import InputError

HEADER = ",".join(s.SUMMARY_COLUMNS) + "\n"
CELLS_PER_ROW = len(s.SUMMARY_COLUMNS)
# files joined into one text: a refused batch is read again file by file, so a damaged file costs at
# most this many slow reads; 1000 summaries are some 1 MB of text
BATCH_FILES = 1000
# a summary of 11 payloads is about 1 KB; anything much larger is no summary perfgate wrote
PLAIN_BYTES = 1 << 16
# what no plain summary holds: a quote, a carriage return, NUL, a byte-order mark, a blank line, and
# spaces or tabs: a cell with one is text to pandas, and a column holding text anywhere in the joined
# rows would be parsed by another parser for every file (a last bit may differ)
_NOT_PLAIN = ('"', "\r", "\0", "\ufeff", "\n\n", " ", "\t")


def plain_rows(path: Path) -> str | None:
    """The rows of a summary perfgate wrote (its text after the header, each line ending in "\\n"), or
    None when the file is anything else, for files.read_summary to judge."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_size > PLAIN_BYTES:
            return None
        data = os.read(descriptor, PLAIN_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    if len(data) > PLAIN_BYTES:  # grew since it was looked at
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.startswith(HEADER) or not text.endswith("\n"):
        return None
    rows = text[len(HEADER):]  # the header is the summary header exactly: its spaces are the columns' names
    if any(mark in rows for mark in _NOT_PLAIN):
        return None
    count = rows.count("\n")
    if count == 0 or rows.count(",") != (CELLS_PER_ROW - 1) * count:
        return None
    # a line with too few cells and another with too many would balance the count: each line is counted
    if any(line.count(",") != CELLS_PER_ROW - 1 for line in rows[:-1].split("\n")):
        return None
    return rows


def _joined(texts: list[str], counts: list[int]) -> pd.DataFrame | None:
    """The rows of several plain summaries as checked summary columns, or None when a check refuses
    any row (each file is then read on its own)."""
    owners = np.repeat(np.arange(len(texts)), counts)
    source = io.BytesIO((HEADER + "".join(texts)).encode("utf-8"))
    try:
        # read_summary's parser options (csv_lines._parse), so that every cell is the same float
        frame = pd.read_csv(source, encoding="utf-8", float_precision="round_trip", skipinitialspace=True,
                            lineterminator="\n", index_col=False)
        if len(frame) != owners.size or list(frame.columns) != list(s.SUMMARY_COLUMNS):
            return None
        return files.checked_summary(frame, Path("summaries"), np.zeros(owners.size, dtype=np.int64), owners)
    except (InputError, ValueError, pd.errors.ParserError):
        return None


def read_summaries(paths: list[Path]) -> tuple[pd.DataFrame, np.ndarray, dict[int, InputError]]:
    """The summary columns of every readable file of `paths` in one frame (files in the given order,
    rows in file order), the position in `paths` of each row's file, and the error of each file refused
    (by position): what files.read_summary gives and raises for each file."""
    frames: list[pd.DataFrame] = []
    owners: list[np.ndarray] = []
    refused: dict[int, InputError] = {}

    def one_by_one(positions) -> None:
        for position in positions:
            try:
                summary = files.read_summary(paths[position])
            except InputError as error:
                refused[position] = error
                continue
            frames.append(summary.loc[:, list(s.SUMMARY_COLUMNS)])
            owners.append(np.full(len(summary), position, dtype=np.int64))

    for start in range(0, len(paths), BATCH_FILES):
        positions = range(start, min(start + BATCH_FILES, len(paths)))
        texts, counts, plain, other = [], [], [], []
        for position in positions:
            rows = plain_rows(Path(paths[position]))
            if rows is None:
                other.append(position)
            else:
                texts.append(rows)
                counts.append(rows.count("\n"))
                plain.append(position)
        joined = _joined(texts, counts) if plain else None
        if joined is not None:
            frames.append(joined.reset_index(drop=True))
            owners.append(np.repeat(np.asarray(plain, dtype=np.int64), counts))
        else:
            other.extend(plain)
        one_by_one(other)
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype="int64" if c in (s.BYTES, s.SAMPLES) else "float64")
                             for c in s.SUMMARY_COLUMNS}), np.zeros(0, dtype=np.int64), refused
    owner = np.concatenate(owners)
    order = np.argsort(owner, kind="stable")  # files read one by one came after their batch's plain ones
    table = pd.concat(frames, ignore_index=True).iloc[order].reset_index(drop=True)
    return table.astype({s.BYTES: "int64", s.SAMPLES: "int64"}), owner[order], refused
