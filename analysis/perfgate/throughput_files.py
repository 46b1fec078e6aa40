"""throughput_files: reading the throughput experiment's tables (docs/formats.md section 15): the
harness's counts, the contract's throughput_<sub>.csv, and throughput requirements. Each bad cell is
an InputError naming the file and line (exit 2)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import csv_lines
from . import schema as s
from .errors import InputError
from .files import SUBEXPERIMENT_NAME, no_duplicate_rows, numeric_column

TEST_KEYS = [s.PAYLOAD, s.DEMAND, s.RECOVERY_TIME]
REQUIREMENT_BYTES = s.BYTES
REQUIREMENT_DEMAND = "Demand"
REQUIREMENT_RECOVERY = "Recovery time"
REQUIREMENT_THROUGHPUT = "Subscription throughput"
REQUIREMENT_LOST = "Lost [%]"  # optional: the most a best-effort test may lose
THROUGHPUT_REQUIREMENT_COLUMNS = (s.EXPERIMENT_TYPE, REQUIREMENT_BYTES, REQUIREMENT_DEMAND, REQUIREMENT_RECOVERY,
                                  REQUIREMENT_THROUGHPUT)


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
    return clean[list(s.THROUGHPUT_COLUMNS)]


def read_throughput_requirements(path: Path) -> pd.DataFrame:
    """Experiment type, Bytes, Demand, Recovery time, Subscription throughput (a minimum, Mb/s), and an
    optional Lost [%] (the most a best-effort test may lose); `line` is each row's physical line."""
    path = Path(path)
    frame, lines = csv_lines.read_csv(path, THROUGHPUT_REQUIREMENT_COLUMNS, "throughput requirements",
                                      comments=True)
    kinds = frame[s.EXPERIMENT_TYPE].fillna("").astype(str).str.strip()
    unnamed = ~kinds.str.fullmatch(SUBEXPERIMENT_NAME) | ~kinds.str.startswith(s.THROUGHPUT_PREFIX)
    if unnamed.any():
        index = unnamed.to_numpy().nonzero()[0][0]
        raise InputError(f"{kinds.iloc[index]!r} is not a throughput sub-experiment "
                         f"({s.THROUGHPUT_PREFIX}<latency sub-experiment>)", path, lines[index])
    clean = pd.DataFrame({s.EXPERIMENT_TYPE: kinds})
    for column in (REQUIREMENT_BYTES, REQUIREMENT_DEMAND):
        clean[column] = numeric_column(frame, column, path, lines, integer=True, positive=True)
    clean[REQUIREMENT_RECOVERY] = numeric_column(frame, REQUIREMENT_RECOVERY, path, lines, integer=True)
    clean[REQUIREMENT_THROUGHPUT] = numeric_column(frame, REQUIREMENT_THROUGHPUT, path, lines, integer=False)
    if REQUIREMENT_LOST in frame.columns:
        lost = frame[REQUIREMENT_LOST].fillna("").astype(str).str.strip()
        given = lost != ""
        clean[REQUIREMENT_LOST] = np.nan
        if given.any():
            values = numeric_column(frame[given], REQUIREMENT_LOST, path, lines[given.to_numpy()], integer=False)
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
