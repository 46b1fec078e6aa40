"""Throughput folders derived from harness rows, as `perfgate throughput` writes them."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from perfgate import files
from perfgate import schema as s
from perfgate.throughput.files import read_harness_throughput
from perfgate.throughput.table import throughput_table

HARNESS_HEADER = ",".join(s.THROUGHPUT_HARNESS_COLUMNS) + "\n"


def write_experiment(folder: Path, sub: str, harness_rows: str) -> pd.DataFrame:
    """A throughput folder with one sub-experiment's table, derived from harness rows as a run does."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "counts.csv").write_text(HARNESS_HEADER + harness_rows)
    table = throughput_table(read_harness_throughput(folder / "counts.csv"))
    (folder / "counts.csv").unlink()
    files.write_csv(folder / s.throughput_csv_name(sub), table)
    return table
