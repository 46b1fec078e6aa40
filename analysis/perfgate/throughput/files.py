"""throughput.files: reading the throughput experiment's tables (docs/formats.md section 15): the
harness's counts, the contract's throughput_<sub>.csv, and throughput requirements. Each bad cell is
an InputError naming the file and line (exit 2)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .. import csv_lines, files, plausibility
from .. import schema as s
from ..errors import InputError
from ..files import SUBEXPERIMENT_NAME, no_duplicate_rows, numeric_column
from .table import throughput_table

TEST_KEYS = [s.PAYLOAD, s.DEMAND, s.RECOVERY_TIME]
REQUIREMENT_BYTES = s.BYTES
REQUIREMENT_DEMAND = "Demand"
REQUIREMENT_RECOVERY = "Recovery time"
REQUIREMENT_THROUGHPUT = "Subscription throughput"
REQUIREMENT_LOST = "Lost [%]"  # optional: the most a best-effort test may lose
THROUGHPUT_REQUIREMENT_COLUMNS = (s.EXPERIMENT_TYPE, REQUIREMENT_BYTES, REQUIREMENT_DEMAND, REQUIREMENT_RECOVERY,
                                  REQUIREMENT_THROUGHPUT)
# named like a table (throughput_<...>.csv) but not one: check-throughput's report and the throughput
# history's change points, which a results store holds beside the tables
NOT_TABLES = frozenset({"throughput_checks.csv", "throughput_change_points.csv"})
# What the harness can run (native/src: kMaxDataBytes, kMaxBurst, --recovery-times-ms): a test beyond them
# is never measured, so a requirement for it could only ever be missing.
MAX_PAYLOAD_BYTES = 65536
MAX_DEMAND = 100000  # the largest burst: the writer keeps a whole burst
MAX_RECOVERY_MS = 60000
# The rates and throughputs are derived from the row's counts and times (throughput_table) and written
# with 3 decimals; a value further off than rounding (and the times' own rounding) was not derived so.
RATE_TOLERANCE_ABSOLUTE = 0.001
RATE_TOLERANCE_RELATIVE = 1e-6
DERIVED_FROM = {s.PUBLICATION_RATE: (s.SENT, s.PUBLICATION_TIME),
                s.PUBLICATION_THROUGHPUT: (s.SENT, s.PAYLOAD, s.PUBLICATION_TIME),
                s.SUBSCRIPTION_RATE: (s.RECEIVED, s.SUBSCRIPTION_TIME),
                s.SUBSCRIPTION_THROUGHPUT: (s.RECEIVED, s.PAYLOAD, s.SUBSCRIPTION_TIME)}


def _counts_and_times(frame: pd.DataFrame, path: Path, lines: np.ndarray, counts: tuple[str, ...],
                      times: tuple[str, ...]) -> pd.DataFrame:
    clean = pd.DataFrame({column: numeric_column(frame, column, path, lines, integer=True,
                                                 positive=column in (s.PAYLOAD, s.DEMAND))
                          for column in counts})
    for column in times:
        clean[column] = numeric_column(frame, column, path, lines, integer=False)
    no_duplicate_rows(clean, TEST_KEYS, path, lines, "throughput test")
    over = (clean[s.RECEIVED] > clean[s.SENT]).to_numpy()
    if over.any():  # a subscriber cannot get more than was sent: a broken count, not a measurement
        index = over.nonzero()[0][0]
        raise InputError(f"{s.RECEIVED!r} ({clean[s.RECEIVED].iloc[index]}) is more than {s.SENT!r} "
                         f"({clean[s.SENT].iloc[index]})", path, lines[index])
    return clean


def read_harness_throughput(path: Path) -> pd.DataFrame:
    """The harness's CSV: s.THROUGHPUT_HARNESS_COLUMNS, one row per finished test."""
    path = Path(path)
    frame, lines = csv_lines.read_csv(path, s.THROUGHPUT_HARNESS_COLUMNS, "throughput counts")
    counts = (s.PAYLOAD, s.DEMAND, s.RECOVERY_TIME, s.SENT, s.RECEIVED)
    clean = _counts_and_times(frame, path, lines, counts, (s.PUBLICATION_TIME, s.SUBSCRIPTION_TIME))
    return clean[list(s.THROUGHPUT_HARNESS_COLUMNS)]


def table_paths(folder: Path) -> dict[str, Path]:
    """Throughput name -> its table in the folder; NOT_TABLES, named alike, left out."""
    return {path.stem: path for path in sorted(Path(folder).glob(f"{s.THROUGHPUT_PREFIX}*.csv"))
            if path.name not in NOT_TABLES}


def read_throughput(path: Path) -> pd.DataFrame:
    """A throughput_<sub>.csv: s.THROUGHPUT_COLUMNS, the row's physical line in attrs."""
    path = Path(path)
    frame, lines = csv_lines.read_csv(path, s.THROUGHPUT_COLUMNS, "throughput")
    times = tuple(c for c in s.THROUGHPUT_COLUMNS if c not in s.THROUGHPUT_COUNT_COLUMNS)
    counts = tuple(c for c in s.THROUGHPUT_COUNT_COLUMNS if c != s.LOST)
    clean = _counts_and_times(frame, path, lines, counts, times)
    lost = numeric_column(frame, s.LOST, path, lines, integer=True)
    wrong = (lost != clean[s.SENT] - clean[s.RECEIVED]).to_numpy()
    if wrong.any():
        index = wrong.nonzero()[0][0]
        raise InputError(f"{s.LOST!r} is not {s.SENT!r} minus {s.RECEIVED!r}", path, lines[index])
    clean[s.LOST] = lost
    _derived_as_written(clean, path, lines)
    return clean[list(s.THROUGHPUT_COLUMNS)]


def _derived_as_written(clean: pd.DataFrame, path: Path, lines: np.ndarray) -> None:
    """A rate or throughput that its row's counts and times do not give (an edited cell, a time of zero
    beside a rate) is refused: the check and the plots read it as measured."""
    derived = throughput_table(clean)
    for column, sources in DERIVED_FROM.items():
        written, expected = clean[column].to_numpy(float), derived[column].to_numpy(float)
        off = np.abs(written - expected) > RATE_TOLERANCE_ABSOLUTE + RATE_TOLERANCE_RELATIVE * np.abs(expected)
        if off.any():
            index = int(off.nonzero()[0][0])
            raise InputError(f"{column!r} is {files.format_float(written[index])}, but "
                             f"{', '.join(map(repr, sources))} give {files.format_float(expected[index])}: the row "
                             "contradicts itself", path, lines[index])


def read_throughput_requirements(path: Path) -> pd.DataFrame:
    """Experiment type, Bytes, Demand, Recovery time, Subscription throughput (a minimum, Mb/s), and an
    optional Lost [%] (the most a best-effort test may lose); `line` is each row's physical line."""
    path = Path(path)
    frame, lines = csv_lines.read_csv(path, THROUGHPUT_REQUIREMENT_COLUMNS, "throughput requirements",
                                      comments=True, max_rows=plausibility.MAX_REQUIREMENT_ROWS)
    kinds = frame[s.EXPERIMENT_TYPE].fillna("").astype(str).str.strip()
    unnamed = ~kinds.str.fullmatch(SUBEXPERIMENT_NAME) | ~kinds.str.startswith(s.THROUGHPUT_PREFIX)
    if unnamed.any():
        index = unnamed.to_numpy().nonzero()[0][0]
        raise InputError(f"{kinds.iloc[index]!r} is not a throughput sub-experiment "
                         f"({s.THROUGHPUT_PREFIX}<latency sub-experiment>)", path, lines[index])
    for index, kind in enumerate(kinds):
        base = s.KNOWN_SUBEXPERIMENTS.get(kind[len(s.THROUGHPUT_PREFIX):])
        if base is not None and (base.is_floor or base.subscribers > 1):  # `perfgate throughput` refuses them
            why = "a floor measures plain sockets" if base.is_floor else f"{base.name} has {base.subscribers} subscribers"
            raise InputError(f"{kind!r} is never measured: {why}; the throughput experiment takes one subscriber of "
                             "Fast DDS", path, lines[index])
    clean = pd.DataFrame({s.EXPERIMENT_TYPE: kinds})
    for column in (REQUIREMENT_BYTES, REQUIREMENT_DEMAND):
        clean[column] = numeric_column(frame, column, path, lines, integer=True, positive=True)
    clean[REQUIREMENT_RECOVERY] = numeric_column(frame, REQUIREMENT_RECOVERY, path, lines, integer=True)
    for column, most in ((REQUIREMENT_BYTES, MAX_PAYLOAD_BYTES), (REQUIREMENT_DEMAND, MAX_DEMAND),
                         (REQUIREMENT_RECOVERY, MAX_RECOVERY_MS)):
        above = (clean[column] > most).to_numpy()
        if above.any():
            index = int(above.nonzero()[0][0])
            raise InputError(f"{column!r} is {clean[column].iloc[index]}, above {most}, the most a throughput test "
                             "takes: no run measures it", path, lines[index])
    clean[REQUIREMENT_THROUGHPUT] = numeric_column(frame, REQUIREMENT_THROUGHPUT, path, lines, integer=False)
    zero = files.thousandths(clean[REQUIREMENT_THROUGHPUT]) == 0
    if zero.any():  # a minimum of 0.000 Mb/s is met by a test that received nothing: a check that cannot fail
        index = int(zero.nonzero()[0][0])
        raise InputError(f"{REQUIREMENT_THROUGHPUT!r} is 0.000 Mb/s at 3 decimals: a minimum that nothing fails",
                         path, lines[index])
    if REQUIREMENT_LOST in frame.columns:
        # from the text: pandas reads "nan", "NA" or "null" as an empty cell, which would drop the limit
        lost = pd.Series(_cells_of(path, REQUIREMENT_LOST), index=frame.index)
        given = lost != ""
        clean[REQUIREMENT_LOST] = np.nan
        if given.any():
            values = numeric_column(pd.DataFrame({REQUIREMENT_LOST: lost[given]}), REQUIREMENT_LOST, path,
                                    lines[given.to_numpy()], integer=False)
            above = values > 100
            if above.any():
                position = int(above.to_numpy().nonzero()[0][0])
                raise InputError(f"{REQUIREMENT_LOST!r} is above 100: {values.iloc[position]}", path,
                                 lines[given.to_numpy()][position])
            clean.loc[given, REQUIREMENT_LOST] = values
    clean["line"] = lines.tolist()
    no_duplicate_rows(clean, [s.EXPERIMENT_TYPE, REQUIREMENT_BYTES, REQUIREMENT_DEMAND, REQUIREMENT_RECOVERY],
                      path, lines, "throughput requirement")
    return clean


def _cells_of(path: Path, column: str) -> list[str]:
    """One column's cells as written (stripped), one per data row, in the rows' order (read_csv has
    already checked that the rows are the content lines after the header)."""
    kept, _ = csv_lines.content_lines(path, "throughput requirements", True)
    header = [name.strip() for name in csv_lines.cells(kept[0]) or []]
    position = header.index(column)
    rows = [csv_lines.cells(line) or [] for line in kept[1:]]
    return [row[position].strip() if position < len(row) else "" for row in rows]
