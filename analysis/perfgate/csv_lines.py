"""CSV text with physical line numbers: the one place the contract's files are parsed.

pandas drops blank lines without counting them, so its row numbers are not the lines an editor (or a
pull-request annotation) shows. Here blank lines, and where allowed `#` comment lines, are dropped
before pandas sees the text, and each row keeps the physical line it came from; the syntax errors
pandas would pass over silently (a repeated column renamed `X.1`, cells beyond the header dropped or
made the index) are refused, and so is a missing column. What the cells must hold is files.py's concern.

Raw measurements can hold millions of rows, so they are read in chunks (`read_csv_chunks`): the file
is read (and a `.gz` inflated) a block at a time, and each chunk of whole lines is parsed on its own,
so that memory follows the chunk, not the file (docs/formats.md section 13). A `.gz` may inflate to
at most INFLATION_RATIO times its own size: past that it is a gzip bomb, not measurements.
"""
from __future__ import annotations

import codecs
import csv
import gzip
import io
import os
import re
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import InputError

COMMENT = "#"
GZIP_SUFFIX = ".gz"
# bytes read (and inflated) at a time: a chunk of about 100 000 raw rows, which pandas parses with some 20 MB
BLOCK_BYTES = 2 << 20
# perfgate's raw CSVs compress 3 (measured latencies) to 7 times (one constant latency, the most
# compressible a measurement gets); a gzip bomb about 1000 times. A .gz inflating past this many
# times its own size (and past MIN_INFLATION_LIMIT, for tiny files) is refused before it fills memory.
INFLATION_RATIO = 64
MIN_INFLATION_LIMIT = 1 << 20
SMALL_TEXT = 1 << 16  # characters: parsed from a StringIO (faster), larger texts from bytes (4 times smaller)
# a line made only of whitespace, in text whose lines end with "\n" (str.strip's whitespace, as content_lines)
_BLANK_LINE = re.compile(r"^[^\S\n]*$", re.MULTILINE)
# And never past this many bytes, whatever the file's size: 4 Mi rows of raw measurements at up to 32
# bytes each (11 payloads x 380000 samples; a gate stores 11 x 10000). The results store's pull holds a
# raw file to the same cap (store_branch.RAW_LIMIT).
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
    within its inflation limit."""
    return b"".join(byte_blocks(path, what))


def inflation_limit(compressed_bytes: int) -> int:
    """The most a .gz of this size may inflate to (docs/formats.md section 13)."""
    return min(MAX_INFLATED, max(MIN_INFLATION_LIMIT, INFLATION_RATIO * compressed_bytes))


def inflation_problem(limit: int) -> str:
    """What a .gz that inflates past `limit` is said to do."""
    if limit == MAX_INFLATED:
        return f"inflates to more than {MAX_INFLATED} bytes, the most a raw file may hold"
    return f"inflates past {limit} bytes ({INFLATION_RATIO} times its compressed size): not measurements"


def byte_blocks(path: Path, what: str, block_bytes: int | None = None) -> Iterator[bytes]:
    """The file's bytes a block at a time; a `.gz` inflated as it is read, refused (InputError) once it
    inflates past its limit, before the excess is held anywhere."""
    path, block_bytes = Path(path), block_bytes or BLOCK_BYTES
    if not path.name.endswith(GZIP_SUFFIX):
        with open(path, "rb") as handle:
            while block := handle.read(block_bytes):
                yield block
        return
    with open(path, "rb") as compressed:  # a file that cannot be opened is OSError, as any file's
        limit = inflation_limit(os.fstat(compressed.fileno()).st_size)
        inflated = 0
        with gzip.GzipFile(fileobj=compressed, mode="rb") as handle:
            while True:
                try:
                    block = handle.read(min(block_bytes, limit + 1 - inflated))
                except (OSError, EOFError, zlib.error) as error:  # not gzip, or cut short
                    raise InputError(f"{what} file is not readable gzip ({error})", path) from None
                if not block:
                    return
                inflated += len(block)
                if inflated > limit:
                    raise InputError(f"{what} file {inflation_problem(limit)}", path)
                yield block


def inflated_problem(path: Path) -> str | None:
    """Why a `.gz` file would be refused by read_bytes (not gzip, cut short, inflating past its
    limit), or None; reads it a block at a time, never holding more."""
    try:
        for _ in byte_blocks(path, "raw measurements"):
            pass
    except InputError as error:
        return error.message.removeprefix("raw measurements file ")
    return None


def duplicate_column(header: str) -> str | None:
    """The first column name the header line repeats (pandas would rename the second `X.1`)."""
    seen = set()
    for name in (name.strip() for name in cells(header) or []):
        if name and name in seen:
            return name
        seen.add(name)
    return None


def _require_file(path: Path, what: str) -> None:
    if not path.exists():
        raise InputError(f"{what} file not found", path)
    if not path.is_file():
        raise InputError(f"{what} path is not a file", path)


def read_csv(path: Path, columns: tuple[str, ...], what: str, *, comments: bool = False,
             max_rows: int | None = None) -> tuple[pd.DataFrame, np.ndarray]:
    """The file as a frame with (at least) `columns`, and the physical line of each of its rows. With
    `max_rows`, a file with more rows is refused as soon as its reading passes them, whatever its size."""
    path = Path(path)
    _require_file(path, what)
    bodies, numbers, rows = [], [], -1  # the header is no row
    for body, lines in line_chunks(path, what, comments=comments):
        bodies.append(body)
        numbers.append(lines)
        rows += lines.size
        if max_rows is not None and rows > max_rows:
            line = int(np.concatenate(numbers)[max_rows + 1])
            raise InputError(f"{what} file has more than {max_rows} rows (row {max_rows + 1} is at line {line}): "
                             f"more than perfgate could ever check", path, line)
    if not bodies:
        raise InputError(f"{what} file is empty", path)
    header, _, body = "\n".join(bodies).partition("\n")
    lines = np.concatenate(numbers)
    _check_header(header, int(lines[0]), path)
    return _parse(path, what, columns, header, int(lines[0]), body, lines[1:]), lines[1:]


def read_csv_chunks(path: Path, columns: tuple[str, ...], what: str) -> Iterator[tuple[pd.DataFrame, np.ndarray]]:
    """read_csv a chunk of rows at a time (no comment lines): the same checks and the same messages,
    each chunk a frame with (at least) `columns` and the physical line of each of its rows."""
    path = Path(path)
    _require_file(path, what)
    header, header_line, rows = None, 0, 0
    for body, numbers in line_chunks(path, what):
        if header is None:
            if numbers.size == 0:
                continue
            header, _, body = body.partition("\n")
            header_line, numbers = int(numbers[0]), numbers[1:]
            _check_header(header, header_line, path)
            if numbers.size == 0:
                continue
        frame = _parse(path, what, columns, header, header_line, body, numbers)
        rows += len(frame)
        yield frame, numbers
    if header is None:
        raise InputError(f"{what} file is empty", path)
    if rows == 0:  # refused by _parse, which names a missing column first
        _parse(path, what, columns, header, header_line, "", np.zeros(0, dtype=np.int64))


def line_chunks(path: Path, what: str, block_bytes: int | None = None, *,
                comments: bool = False) -> Iterator[tuple[str, np.ndarray]]:
    """The file's content lines a block at a time: each chunk the lines joined with "\n" and the physical
    line number of each, by content_lines' rules (CRLF, LF and a lone CR end a line; blank lines, and
    with `comments` `#` comment lines, are no content; a byte-order mark is not content; text that is
    not UTF-8 or holds NUL is refused)."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    carry, counted = "", 0  # the unfinished last line of the text so far, and the lines before it
    blocks = byte_blocks(path, what, block_bytes)
    while True:
        block = next(blocks, None)
        try:
            text = carry + decoder.decode(block or b"", final=block is None)
        except UnicodeDecodeError:
            raise InputError(f"{what} file is not text", path) from None
        if "\0" in text:
            raise InputError(f"{what} file is not text (it holds NUL bytes)", path)
        held = ""
        if block is not None and text.endswith("\r"):  # perhaps the first half of a CRLF
            text, held = text[:-1], "\r"
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if block is None:
            complete, carry = text, ""
        else:
            end = text.rfind("\n")
            complete, carry = (text[:end], text[end + 1:] + held) if end >= 0 else ("", text + held)
            if end < 0:
                continue
        count = complete.count("\n") + 1
        if _BLANK_LINE.search(complete) is None and not (comments and COMMENT in complete):  # every line a row
            yield complete, np.arange(counted + 1, counted + count + 1, dtype=np.int64)
        else:
            lines = complete.split("\n")
            kept = [number for number, line in enumerate(lines)
                    if line.strip() and not (comments and line.strip().startswith(COMMENT))]
            if kept:
                yield "\n".join(lines[n] for n in kept), np.asarray(kept, dtype=np.int64) + counted + 1
        counted += count
        if block is None:
            return


def _check_header(header: str, header_line: int, path: Path) -> None:
    repeated = duplicate_column(header)
    if repeated is not None:
        raise InputError(f"column {repeated!r} appears twice in the header", path, header_line)


def _parse(path: Path, what: str, columns: tuple[str, ...], header: str, header_line: int, body: str,
           row_numbers: np.ndarray) -> pd.DataFrame:
    """The header and the rows of `body` (content lines joined with "\n", at `row_numbers`) as a frame with
    (at least) `columns`; InputError naming the line for what pandas would pass over or mistake."""
    text = f"{header}\n{body}" if row_numbers.size else header
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)  # cells beyond the header: refused, not dropped
            # round_trip: correctly rounded parsing, as Python's float() does (docs/formats.md section 1);
            # index_col=False: a first row longer than the header must not become the index (columns shifted)
            # a chunk of raw rows as bytes, which pandas' parser reads as they are (a StringIO holds 4 bytes
            # a character); a small file as text, a little faster
            source = io.BytesIO(text.encode("utf-8")) if len(text) > SMALL_TEXT else io.StringIO(text)
            frame = pd.read_csv(source, encoding="utf-8", float_precision="round_trip", skipinitialspace=True,
                                lineterminator="\n", index_col=False)
    except pd.errors.ParserWarning:
        raise InputError("malformed CSV: a row has more cells than the header", path,
                         first_long_row(text.split("\n"), [header_line, *row_numbers.tolist()])) from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{what} file is empty", path) from None
    except pd.errors.ParserError as error:
        text, line = parser_error(error, [header_line, *row_numbers.tolist()])
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
    if len(frame) != row_numbers.size:  # a quoted cell ran over a line end: rows no longer match lines
        quoted = next((int(n) for line, n in zip(text.split("\n")[1:], row_numbers) if '"' in line), None)
        raise InputError("malformed CSV: " + ("a quoted cell runs over the end of its line" if quoted else
                                              "its rows do not match its lines"), path, quoted)
    return frame


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
