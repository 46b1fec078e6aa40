"""CSV text with physical line numbers: the one place the contract's files are parsed.

pandas drops blank lines without counting them, so its row numbers are not the lines an editor (or a
pull-request annotation) shows. Here blank lines, and where allowed `#` comment lines, are dropped
before pandas sees the text, and each row keeps the physical line it came from; the syntax errors
pandas would pass over silently (a repeated column renamed `X.1`, cells beyond the header dropped or
made the index) are refused, and so is a missing column. What the cells must hold is files.py's concern.
"""
from __future__ import annotations

import csv
import gzip
import io
import re
import warnings
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import InputError

COMMENT = "#"
GZIP_SUFFIX = ".gz"
# The most a `.gz` file is inflated to (bytes): 4 Mi rows of raw measurements at up to 32 bytes each
# (11 payloads x 380000 samples; a gate stores 11 x 10000). A small file that inflates past it (2 MB
# of gzip can hold 2 GiB of one repeated line) is refused before it fills the memory.
MAX_INFLATED = 128 << 20


def content_lines(path: Path, what: str, comments: bool) -> tuple[list[str], list[int]]:
    """The lines that hold the header or a row, and their physical line numbers (from 1). Blank lines
    (and, where allowed, `#` comment lines) are dropped here rather than by pandas, which would drop
    them without counting them, so that every error and JUnit annotation names the right line."""
    try:
        # utf-8-sig: a byte-order mark (spreadsheet exports) is not part of the first column's name
        text = read_bytes(path, what).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{what} file is not text", path) from None
    except OSError as error:
        raise InputError(f"{what} file cannot be read: {error.strerror or error}", path) from None
    if "\0" in text:
        raise InputError(f"{what} file is not text (it holds NUL bytes)", path)
    kept, numbers = [], []
    # CRLF, LF and a lone CR each end a line, as pandas and editors take them
    for number, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1):
        content = line.strip()
        if content and not (comments and content.startswith(COMMENT)):
            kept.append(line)
            numbers.append(number)
    return kept, numbers


def read_bytes(path: Path, what: str) -> bytes:
    """The file's bytes; a `.gz` file (raw measurements as the results store keeps them) decompressed,
    up to MAX_INFLATED."""
    if not path.name.endswith(GZIP_SUFFIX):
        return path.read_bytes()
    try:
        with gzip.open(path, "rb") as compressed:
            data = compressed.read(MAX_INFLATED + 1)
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:  # not gzip, or cut short
        raise InputError(f"{what} file is not readable gzip ({error})", path) from None
    if len(data) > MAX_INFLATED:
        raise InputError(f"{what} file inflates to more than {MAX_INFLATED} bytes, the most a raw file may hold",
                         path)
    return data


def inflated_problem(path: Path) -> str | None:
    """Why a `.gz` file would be refused by read_bytes (not gzip, cut short, inflating past
    MAX_INFLATED), or None; reads it in 1 MiB pieces, never holding more."""
    inflated = 0
    try:
        with gzip.open(path, "rb") as compressed:
            while piece := compressed.read(1 << 20):
                inflated += len(piece)
                if inflated > MAX_INFLATED:
                    return f"inflates to more than {MAX_INFLATED} bytes, the most a raw file may hold"
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        return f"is not readable gzip ({error})"
    return None


def duplicate_column(header: str) -> str | None:
    """The first column name the header line repeats (pandas would rename the second `X.1`)."""
    seen = set()
    for name in (name.strip() for name in cells(header) or []):
        if name and name in seen:
            return name
        seen.add(name)
    return None


def read_csv(path: Path, columns: tuple[str, ...], what: str, *,
             comments: bool = False) -> tuple[pd.DataFrame, np.ndarray]:
    """The file as a frame with (at least) `columns`, and the physical line of each of its rows."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{what} file not found", path)
    if not path.is_file():
        raise InputError(f"{what} path is not a file", path)
    kept, numbers = content_lines(path, what, comments)
    if not kept:
        raise InputError(f"{what} file is empty", path)
    header_line = numbers[0]
    repeated = duplicate_column(kept[0])
    if repeated is not None:
        raise InputError(f"column {repeated!r} appears twice in the header", path, header_line)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)  # cells beyond the header: refused, not dropped
            # round_trip: correctly rounded parsing, as Python's float() does (docs/formats.md section 1);
            # index_col=False: a first row longer than the header must not become the index (columns shifted)
            frame = pd.read_csv(io.StringIO("\n".join(kept)), float_precision="round_trip", skipinitialspace=True,
                                lineterminator="\n", index_col=False)
    except pd.errors.ParserWarning:
        raise InputError("malformed CSV: a row has more cells than the header", path,
                         first_long_row(kept, numbers)) from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{what} file is empty", path) from None
    except pd.errors.ParserError as error:
        text, line = parser_error(error, numbers)
        raise InputError(f"malformed CSV: {text}", path, line) from None
    frame.columns = [str(c).strip() for c in frame.columns]
    if frame.columns.duplicated().any():  # names that differ only in spaces or quotes
        raise InputError(f"column {frame.columns[frame.columns.duplicated()][0]!r} appears twice in the header",
                         path, header_line)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(repr(c) for c in missing)}; header has "
            f"{', '.join(repr(c) for c in frame.columns)}",
            path,
            header_line,
        )
    if frame.empty:
        raise InputError(f"{what} file has a header but no data rows", path, header_line)
    if len(frame) != len(kept) - 1:  # a quoted cell ran over a line end: rows no longer match lines
        quoted = next((n for line, n in zip(kept[1:], numbers[1:]) if '"' in line), None)
        raise InputError("malformed CSV: " + ("a quoted cell runs over the end of its line" if quoted else
                                              "its rows do not match its lines"), path, quoted)
    return frame, np.asarray(numbers[1:], dtype=np.int64)


def cells(line: str) -> list[str] | None:
    """The cells of one line as the csv module splits them; None where it cannot (pandas will say why)."""
    try:
        return next(csv.reader([line], skipinitialspace=True))
    except (csv.Error, StopIteration):
        return None


def first_long_row(kept: list[str], numbers: list[int]) -> int | None:
    """The physical line of the first row with more cells than the header."""
    width = len(cells(kept[0]) or [])
    return next((n for line, n in zip(kept[1:], numbers[1:]) if len(cells(line) or []) > width), None)


def parser_error(error: Exception, numbers: list[int]) -> tuple[str, int | None]:
    """pandas' message (its last line) and the physical line it is about; pandas counts the lines it was
    given (no blank or comment lines), so its "line N" is translated in the message too."""
    text = str(error).strip().splitlines()[-1] if str(error).strip() else "cannot be parsed"
    text = text if text.isprintable() else repr(text)
    match = re.search(r"line (\d+)", text)
    if not match or not 1 <= int(match.group(1)) <= len(numbers):
        return text, None
    line = numbers[int(match.group(1)) - 1]
    return text[:match.start()] + f"line {line}" + text[match.end():], line
