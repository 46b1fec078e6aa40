"""Reading and writing the contract's files: validation on the way in, atomic writes on the way out.

Every reader raises InputError naming the file (and line, where there is one) for bad input, so the
pure computations can assume clean frames. Every writer writes a temporary file beside the target
and renames it, so an interrupted or failed command never leaves a half-written file.
"""
from __future__ import annotations

import errno
import json
import math
import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from . import csv_lines, plausibility, temporaries
from .outputs import open_input, special_kind  # noqa: F401  (files.open_input: every reader's)
from . import schema as s
from .errors import InputError

# A data row's line in a file without blank lines: one header line, and pandas counts rows from zero.
HEADER_LINES = 1
# frame.attrs key: the physical line of each row of a summary or check report read here
ROW_LINES = "perfgate.row_lines"
# the smallest latency that is not 0.000 us at the 3 decimals every CSV is written with
ROUNDS_TO_ZERO = 0.0005
# what a requirement may name: every sub-experiment perfgate runs, and the files a run could write
SUBEXPERIMENT_NAME = r"[A-Za-z0-9_.\-]+"


def file_line(row_index: int) -> int:
    return int(row_index) + HEADER_LINES + 1


def row_line(frame: pd.DataFrame, position: int) -> int:
    """The physical line of a frame's data row, counted as a text editor counts (header, blank and comment
    lines included): as the reader recorded it, else the row's position after one header line."""
    lines = frame.attrs.get(ROW_LINES)
    if lines is not None and 0 <= position < len(lines):
        return int(lines[position])
    return file_line(position)


def _cell(value) -> str:
    """A cell as the user wrote it (numpy scalars shown as plain numbers)."""
    return repr(value.item() if hasattr(value, "item") else value)


def _numeric(frame: pd.DataFrame, column: str, path: Path, lines: np.ndarray, *, integer: bool,
             positive: bool = False) -> pd.Series:
    """The column as numbers, or InputError on the first bad cell (non-numeric, NaN, inf, negative or, with
    `positive`, zero, or beyond what a measurement can be: plausibility's bounds)."""
    raw = frame[column]
    values = pd.to_numeric(raw, errors="coerce")
    bad = values.isna() | ~np.isfinite(values.to_numpy(dtype=float, na_value=np.nan))
    if bad.any():
        index = bad.to_numpy().nonzero()[0][0]
        raise InputError(f"{column!r} is not a finite number: {_cell(raw.iloc[index])}", path, lines[index])
    floats = values.to_numpy(dtype=float)
    negative = floats < 0 if not positive else floats <= 0
    if negative.any():
        index = negative.nonzero()[0][0]
        sign = "negative" if floats[index] < 0 else "zero, which no measurement is"
        raise InputError(f"{column!r} is {sign}: {_cell(raw.iloc[index])}", path, lines[index])
    if positive and not integer:
        # written with 3 decimals, it would be 0.000: a summary of it could not be read back (Min of zero)
        vanishing = floats < ROUNDS_TO_ZERO
        if vanishing.any():
            index = vanishing.nonzero()[0][0]
            raise InputError(f"{column!r} is {_cell(raw.iloc[index])}, which is 0.000 us at the 3 decimals perfgate "
                             "writes: no measurement", path, lines[index])
    limit, limit_text = ((plausibility.MAX_WHOLE_NUMBER, plausibility.MAX_WHOLE_NUMBER_TEXT) if integer else
                         (plausibility.MAX_LATENCY_US, plausibility.MAX_LATENCY_TEXT))
    huge = floats > limit
    if integer:
        huge |= _whole_beyond_limit(values, floats)
        inexact = (floats >= limit) & ~huge & (values.dtype.kind == "f")
        if inexact.any():
            index = inexact.nonzero()[0][0]
            raise InputError(f"{column!r} is {_cell(raw.iloc[index])}, a whole number written as a float at "
                             f"{limit_text}, where a float cannot tell it from {limit_text} + 1: write it as an integer",
                             path, lines[index])
    if huge.any():
        index = huge.nonzero()[0][0]
        raise InputError(f"{column!r} is {_cell(raw.iloc[index])}, above {limit_text}: not a measurement",
                         path, lines[index])
    if integer:
        fractional = floats != np.floor(floats)
        if fractional.any():
            index = fractional.nonzero()[0][0]
            raise InputError(f"{column!r} is not a whole number: {_cell(raw.iloc[index])}", path, lines[index])
        return pd.Series(floats.astype(np.int64), index=frame.index, name=column)
    return pd.Series(floats, index=frame.index, name=column)


def _whole_beyond_limit(values: pd.Series, floats: np.ndarray) -> np.ndarray:
    """Whole numbers above 2**53 that their float rounds down to it (2**53 + 1): integers compared exactly."""
    if values.dtype.kind not in "iu" or not (floats >= plausibility.MAX_WHOLE_NUMBER).any():
        return np.zeros(len(floats), dtype=bool)
    return values.to_numpy() > plausibility.MAX_WHOLE_NUMBER


def _no_duplicates(frame: pd.DataFrame, keys: list[str], path: Path, lines: np.ndarray, what: str) -> None:
    duplicated = frame.duplicated(subset=keys, keep="first").to_numpy()
    if duplicated.any():
        index = duplicated.nonzero()[0][0]
        key = ", ".join(f"{k}={plausibility.printable(frame[k].iloc[index])}" for k in keys)
        raise InputError(f"duplicate {what} row ({key})", path, lines[index])


# for the readers of other tables (throughput/files.py): the same cell checks and messages
numeric_column = _numeric
no_duplicate_rows = _no_duplicates


# --- the contract's files -----------------------------------------------------------------------
def read_raw_chunks(path: Path) -> Iterator[tuple[pd.DataFrame, np.ndarray]]:
    """Raw measurements (Sample, Payload [Bytes], Latency [us], in measured order) a chunk of rows at a
    time, with the physical line of each row: memory follows the chunk, not the file. Every rule is
    checked as the rows come, the last (two samples a payload) after the last chunk, so a consumer
    writes nothing until the generator is exhausted."""
    path = Path(path)
    rules = plausibility.RawRows(path)
    for frame, lines in csv_lines.read_csv_chunks(path, s.RAW_COLUMNS, "raw measurements"):
        clean = pd.DataFrame(
            {
                s.SAMPLE: _numeric(frame, s.SAMPLE, path, lines, integer=True),
                s.PAYLOAD: _numeric(frame, s.PAYLOAD, path, lines, integer=True, positive=True),
                # a round trip of zero is no measurement (a clock not read, a row not filled)
                s.LATENCY: _numeric(frame, s.LATENCY, path, lines, integer=False, positive=True),
            }
        )
        del frame
        rules.check(clean, lines)
        yield clean, lines
    rules.finish()


def read_raw(path: Path) -> pd.DataFrame:
    """Raw measurements as one frame (process reads large files by payload: process.raw_payloads)."""
    chunks = [clean for clean, _ in read_raw_chunks(path)]
    return chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)


def read_summary(path: Path) -> pd.DataFrame:
    frame, lines = csv_lines.read_csv(Path(path), s.SUMMARY_COLUMNS, "summary")
    clean = checked_summary(frame, Path(path), lines)
    clean.attrs[ROW_LINES] = tuple(int(n) for n in lines)
    return clean


def checked_summary(frame: pd.DataFrame, path: Path, lines: np.ndarray, owners: np.ndarray | None = None) -> pd.DataFrame:
    """Parsed rows' summary columns, every rule checked (InputError at the first broken): each about one row
    but unique payloads, per file (`owners`: each row's file, when history.summary_batch joins files)."""
    # Min above zero: a zero round trip is no measurement (Stdev and jitter may be zero)
    clean = pd.DataFrame({c: _numeric(frame, c, path, lines, integer=c in (s.BYTES, s.SAMPLES),
                                      positive=c in (s.BYTES, s.MIN)) for c in s.SUMMARY_COLUMNS})
    keyed = clean if owners is None else pd.DataFrame({"File": owners, s.BYTES: clean[s.BYTES].to_numpy()})
    _no_duplicates(keyed, [s.BYTES] if owners is None else ["File", s.BYTES], path, lines, "payload")
    # as read_raw: one sample has no jitter and no spread, so no summary of it is one perfgate wrote
    for index in np.flatnonzero((clean[s.SAMPLES] < 2).to_numpy())[:1]:
        raise InputError(f"payload {int(clean[s.BYTES].iloc[index])} B is summarised from "
                         f"{int(clean[s.SAMPLES].iloc[index])} sample(s); at least 2 are needed", path, lines[index])
    plausibility.consistent_summary(clean, path, lines)
    return clean


def read_requirements(path: Path) -> pd.DataFrame:
    """Requirements with each row's physical line in the file (for JUnit file/line annotations). Blank
    lines and `#` comment lines are allowed: maintainers edit this file by hand and say why."""
    path = Path(path)
    frame, lines = csv_lines.read_csv(path, s.REQUIREMENT_COLUMNS, "requirements", comments=True,
                                      max_rows=plausibility.MAX_REQUIREMENT_ROWS)
    kinds = frame[s.EXPERIMENT_TYPE].astype(str).str.strip()
    empty = (kinds == "") | frame[s.EXPERIMENT_TYPE].isna()
    if empty.any():
        index = empty.to_numpy().nonzero()[0][0]
        raise InputError(f"{s.EXPERIMENT_TYPE!r} is empty", path, lines[index])
    # a name no run can write (a comma, a space, a slash) would only ever be "no measurements" (exit 3)
    unnamed = ~kinds.str.fullmatch(SUBEXPERIMENT_NAME)
    if unnamed.any():
        index = unnamed.to_numpy().nonzero()[0][0]
        raise InputError(f"{kinds.iloc[index]!r} is not a sub-experiment name (letters, digits, '_', '-', '.')",
                         path, lines[index])
    clean = pd.DataFrame({s.EXPERIMENT_TYPE: kinds,
                          s.BYTES: _numeric(frame, s.BYTES, path, lines, integer=True, positive=True)})
    for column in s.CHECKED_MAGNITUDES:
        clean[column] = _numeric(frame, column, path, lines, integer=False)
    clean["line"] = lines.tolist()
    _no_duplicates(clean, [s.EXPERIMENT_TYPE, s.BYTES], path, lines, "requirement")
    plausibility.consistent_requirements(clean, path, lines)
    return clean


def read_check_report(path: Path) -> pd.DataFrame:
    path = Path(path)
    frame, lines = csv_lines.read_csv(path, s.CHECK_COLUMNS, "check report")
    clean = frame.loc[:, list(s.CHECK_COLUMNS)].copy()
    clean[s.BYTES] = _numeric(frame, s.BYTES, path, lines, integer=True, positive=True)
    for column in (s.REQUIREMENT, s.EXPERIMENT, s.DIFFERENCE):
        clean[column] = pd.to_numeric(frame[column], errors="coerce")
    clean[s.PERCENT_OVER] = pd.to_numeric(frame[s.PERCENT_OVER], errors="coerce")
    statuses = clean[s.STATUS].astype(str).str.strip()
    clean[s.STATUS] = statuses
    clean[s.CHECK] = clean[s.CHECK].astype(str).str.strip()
    clean.attrs[ROW_LINES] = tuple(int(n) for n in lines)
    return clean


# --- atomic writing -----------------------------------------------------------------------------
FULL_DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success rename it over `path`, on failure remove it.
    A process killed outright cannot remove it: its name carries the process id, and the next writer
    in the folder, or the main process of a worker pool, removes it (perfgate.temporaries)."""
    path = Path(path)
    if path.exists() and not path.is_file() and not path.is_dir():  # renamed over, /dev/full would be replaced
        raise InputError(f"{special_kind(path)}, not a file: perfgate writes a file here", path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporaries.sweep_once(path.parent)
    handle, temporary = tempfile.mkstemp(prefix=temporaries.prefix(path), suffix=temporaries.suffix(path),
                                         dir=path.parent)
    os.close(handle)
    temporary_path = Path(temporary)
    temporaries.started(temporary_path)
    try:
        yield temporary_path
        # mkstemp creates 0600; results are shared artefacts, so give them the usual umask mode
        os.chmod(temporary_path, 0o666 & ~_current_umask())
        os.replace(temporary_path, path)
    except OSError as error:
        if error.errno not in FULL_DISK_ERRORS:
            raise
        # a write error carries no file name: name the output, or the line says nothing of where
        raise InputError(f"cannot be written: {error.strerror}", path) from None
    finally:
        if temporary_path.exists():
            temporary_path.unlink()
        temporaries.finished(temporary_path)


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: Path, text: str) -> None:
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


_NEGATIVE_ZERO = re.compile(r"(?<![\d.])-(0\.0+)(?![\d])")


def format_csv(frame: pd.DataFrame) -> str:
    """The contract's CSV text: one header line, every float with exactly 3 decimals, no `-0.000`."""
    text = frame.to_csv(index=False, float_format="%.3f", lineterminator="\n")
    return _NEGATIVE_ZERO.sub(r"\1", text)


def write_csv(path: Path, frame: pd.DataFrame) -> None:
    write_text(path, format_csv(frame))


def format_float(value: float) -> str:
    """One float as the CSV files write it."""
    text = f"{value:.3f}"
    return "0.000" if text == "-0.000" else text


def thousandths(values) -> np.ndarray:
    """Values in whole thousandths exactly as the CSV files write them (rounded as `format_float`
    rounds, not as value * 1000 would), so that every comparison judges what a maintainer reads.
    NaN stays NaN."""
    array = np.asarray(values, dtype=float)
    result = np.full(array.shape, np.nan)
    finite = np.isfinite(array)
    result[finite] = [round(float(format_float(v)) * 1000) for v in array[finite]]
    return result


# --- metadata -----------------------------------------------------------------------------------
def read_json_object(path: Path, what: str, max_bytes: int | None = None) -> dict | None:
    """A JSON file holding one object, or None when the file does not exist; with `max_bytes`, a larger
    file is refused before it is parsed (parsed JSON takes several times its text's memory)."""
    path = Path(path)
    try:
        with open_input(path, what, max_bytes) as handle:
            data = handle.read(-1 if max_bytes is None else max_bytes + 1)
        if max_bytes is not None and len(data) > max_bytes:
            raise InputError(f"{what} is over {max_bytes} bytes, more than any such file holds", path)
        text = data.decode("utf-8")
        data = json.loads(text, object_pairs_hook=lambda pairs: _object_without_repeats(pairs, text, path))
    except json.JSONDecodeError as error:
        raise InputError(f"malformed JSON: {error.msg}", path, error.lineno) from None
    except RecursionError:  # [[[[...]]]] thousands deep: the parser's recursion, not a traceback
        raise InputError(f"{what} is nested too deeply to be {what}", path) from None
    except UnicodeDecodeError:
        raise InputError(f"{what} is not text", path) from None
    except ValueError as error:  # a number of more than 4300 digits (int's limit), not a traceback
        raise InputError(f"malformed JSON: {str(error)[:120]}", path) from None
    except (FileNotFoundError, NotADirectoryError):  # no such file, or a file where its folder would be
        return None
    except OSError as error:
        raise InputError(f"{what} cannot be read: {error.strerror or error}", path) from None
    if not isinstance(data, dict):
        raise InputError(f"{what} is not a JSON object", path)
    return data


def no_repeated_keys(text: str, path: Path):
    """json.loads' object_pairs_hook for `text` read from `path`: a key given twice is an InputError."""
    return lambda pairs: _object_without_repeats(pairs, text, path)


def _object_without_repeats(pairs: list, text: str, path: Path) -> dict:
    """A key given twice in one object: JSON keeps the last silently, so a value (a limit, a label)
    could be changed by a line a reviewer reads as the other one."""
    seen = set()
    for key, _ in pairs:
        if key in seen:
            occurrences = [number for number, line in enumerate(text.splitlines(), 1) if f'"{key}"' in line]
            raise InputError(f"key {key!r} is given twice in one object (the last would silently win)", path,
                             occurrences[1] if len(occurrences) > 1 else None)
        seen.add(key)
    return dict(pairs)


def read_metadata(experiment_dir: Path) -> dict | None:
    """metadata.json of an experiment folder as its JSON object, or None when the folder has none.
    Unchecked: the commands read it through perfgate.model.read_metadata, which checks every field."""
    return read_json_object(Path(experiment_dir) / s.METADATA_FILE, "metadata")


def write_metadata(experiment_dir: Path, metadata: dict) -> None:
    """The JSON object as metadata.json (perfgate.model.write_metadata writes a Metadata through this)."""
    write_text(Path(experiment_dir) / s.METADATA_FILE, json.dumps(metadata, indent=2, sort_keys=True, default=str) + "\n")


# --- experiment folders -------------------------------------------------------------------------
def require_dir(path: Path, what: str) -> Path:
    path = Path(path)
    if not path.exists():
        raise InputError(f"{what} not found", path)
    if not path.is_dir():
        raise InputError(f"{what} is not a folder", path)
    return path


def raw_files(experiment_dir: Path) -> dict[str, Path]:
    """sub-experiment -> raw measurements CSV, sorted by name: `measurements_<sub>.csv`, or as a results
    store keeps it, `measurements_<sub>.csv.gz`; both for one sub-experiment is ambiguous (InputError)."""
    folder = require_dir(experiment_dir, "experiment folder")
    found: dict[str, Path] = {}
    paths = [*folder.glob(f"{s.RAW_PREFIX}*.csv"), *folder.glob(f"{s.RAW_PREFIX}*.csv{s.COMPRESSED_SUFFIX}")]
    for path in sorted(paths):
        sub = s.sub_from_raw_csv(path)
        if sub is None:
            continue
        if sub in found:
            raise InputError(f"two raw measurements of {sub!r}: {found[sub].name} and {path.name}; keep one", folder)
        found[sub] = path
    return dict(sorted(found.items()))


def summary_files(experiment_dir: Path, *, required: bool = True) -> dict[str, Path]:
    """sub-experiment -> summary CSV, sorted by name; InputError when there are none and required."""
    experiment_dir = require_dir(experiment_dir, "experiment folder")
    found = {}
    for path in sorted(experiment_dir.glob(f"{s.RAW_PREFIX}*{s.SUMMARY_SUFFIX}")):
        sub = s.sub_from_summary_csv(path)
        if sub is not None:
            found[sub] = path
    if required and not found:
        raise InputError(f"no summaries ({s.summary_csv_name('<sub>')}) in the experiment folder", experiment_dir)
    return found


def check_files(experiment_dir: Path) -> dict[str, Path]:
    experiment_dir = require_dir(experiment_dir, "experiment folder")
    found = {}
    for path in sorted(experiment_dir.glob(f"{s.CHECK_PREFIX}*.csv")):
        sub = s.sub_from_check_csv(path)
        if sub is not None:
            found[sub] = path
    return found


def is_finite(value: float) -> bool:
    return value is not None and math.isfinite(value)
