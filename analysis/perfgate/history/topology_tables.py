"""The topology runs a stored experiment keeps (<experiment>/topology/<name>/, docs/formats.md section 9),
read as untrusted: they come from a results branch as much as from this runner's gates.

Each topology folder holds metadata.json (kind topology, topology.metadata) and, when the run gave
figures, latency_total.csv, latency_all.csv and resources.csv. Every cell the history uses is checked
(a finite, non-negative number; a share at most 100 % and the one its counts give; the totals the
sums of latency_all's subscriptions) and the first bad one is an InputError naming the file and line,
which makes the experiment damaged (store.check): skipped by history with one line, never pulled.
A folder without the tables is a run without figures (it did not finish): a gap in the series, never a pass.

`figures` gives what the history follows per run: received, the late, too-late and lost shares,
mean and 99 % latency (over every message; the 99 % where latency_total.csv has it), and CPU and RSS
as check-topology measures them (topology.target.measured_resources).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import csv_lines
from ..errors import InputError
from ..files import numeric_column
from ..store.baseline import FOLDER_NAME
from ..topology import names as n
from ..topology.metadata import TopologyMetadata, read_topology_metadata
from ..topology.target import measured_resources

FIGURES = (n.RECEIVED, n.LATE_PERCENT, n.TOO_LATE_PERCENT, n.LOST_PERCENT, n.MEAN, n.P99, n.RESOURCE_CPU,
           n.RESOURCE_RSS)
TABLES = (n.LATENCY_TOTAL_CSV, n.LATENCY_ALL_CSV, n.RESOURCES_CSV)
COUNTS = (n.RECEIVED, n.LATE, n.TOO_LATE, n.LOST)
SHARES = {n.LATE_PERCENT: (n.LATE, n.RECEIVED), n.TOO_LATE_PERCENT: (n.TOO_LATE, n.RECEIVED),
          n.LOST_PERCENT: (n.LOST, None)}  # None: of received + lost
SHARE_TOLERANCE = 0.0011  # written with 3 decimals
MAX_SUBSCRIPTIONS = 2000  # topology.model: at most 2000 endpoints
MAX_RESOURCE_ROWS = 1_000_000
PROCESS_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")  # a node's name (topology.model.NAME), or "all"


@dataclass(frozen=True)
class StoredTopology:
    name: str  # the folder's name: the topology file's stem
    metadata: TopologyMetadata
    figures: dict[str, float]  # FIGURES -> value; NaN when the run gave none


def _latencies(frame: pd.DataFrame, column: str, path: Path, lines: np.ndarray, received: int) -> float:
    """A latency cell of latency_total: a measurement when messages arrived, empty (NaN) when none did."""
    if column not in frame.columns:
        return math.nan
    if received == 0 and pd.isna(frame[column].iloc[0]):
        return math.nan
    return float(numeric_column(frame, column, path, lines, integer=False).iloc[0])


def read_latency_total(path: Path) -> dict[str, float]:
    frame, lines = csv_lines.read_csv(path, n.LATENCY_TOTAL_COLUMNS, "topology latency_total", max_rows=1)
    if len(frame) != 1:
        raise InputError(f"latency_total has {len(frame)} rows, not one", path)
    counts = {column: int(numeric_column(frame, column, path, lines, integer=True).iloc[0]) for column in COUNTS}
    if counts[n.LATE] + counts[n.TOO_LATE] > counts[n.RECEIVED]:
        raise InputError("more late and too-late messages than were received", path, int(lines[0]))
    values: dict[str, float] = {n.RECEIVED: float(counts[n.RECEIVED])}
    for share, (part, whole) in SHARES.items():
        value = float(numeric_column(frame, share, path, lines, integer=False).iloc[0])
        total = counts[whole] if whole else counts[n.RECEIVED] + counts[n.LOST]
        expected = 100.0 * counts[part] / total if total else 0.0
        if abs(value - expected) > SHARE_TOLERANCE:
            raise InputError(f"{share!r} is {value:g}, but its counts give {expected:.3f}: the row contradicts itself",
                             path, int(lines[0]))
        values[share] = value
    for column in (n.MEAN, n.P99):
        values[column] = _latencies(frame, column, path, lines, counts[n.RECEIVED])
    values.update({f"_{column}": float(counts[column]) for column in COUNTS})
    return values


def check_latency_all(path: Path, totals: dict[str, float]) -> None:
    """latency_all.csv: whole counts per subscription whose sums are latency_total's counts."""
    frame, lines = csv_lines.read_csv(path, n.LATENCY_ALL_COLUMNS, "topology latency_all", max_rows=MAX_SUBSCRIPTIONS)
    for column in COUNTS:
        total = int(numeric_column(frame, column, path, lines, integer=True).sum())
        if total != totals[f"_{column}"]:
            raise InputError(f"the subscriptions' {column!r} add up to {total}, latency_total.csv says "
                             f"{totals[f'_{column}']:.0f}: the tables contradict each other", path)


def read_resources(path: Path) -> pd.DataFrame:
    columns = (n.RESOURCE_TIME, n.PROCESS, n.RESOURCE_CPU, n.RESOURCE_RSS)
    frame, lines = csv_lines.read_csv(path, columns, "topology resources", max_rows=MAX_RESOURCE_ROWS)
    processes = frame[n.PROCESS].fillna("").astype(str)
    named = processes.map(lambda name: PROCESS_NAME.fullmatch(name) is not None)
    if not named.all():
        index = int((~named).to_numpy().nonzero()[0][0])
        raise InputError(f"{n.PROCESS!r} is {ascii(processes.iloc[index])[:60]}, not a node's name or "
                         f"{n.ALL_NODES_PROCESS!r}", path, int(lines[index]))
    usage = pd.DataFrame({n.PROCESS: processes})
    for column in (n.RESOURCE_TIME, n.RESOURCE_CPU, n.RESOURCE_RSS):
        usage[column] = numeric_column(frame, column, path, lines, integer=False)
    return usage


def read_stored_topology(folder: Path) -> StoredTopology:
    """One topology run kept in a stored experiment; InputError on the first bad file or cell."""
    metadata = read_topology_metadata(folder)
    present = [name for name in TABLES if (folder / name).exists() or (folder / name).is_symlink()]
    if not present:
        return StoredTopology(folder.name, metadata, {figure: math.nan for figure in FIGURES})
    if len(present) < len(TABLES):
        missing = next(name for name in TABLES if name not in present)
        raise InputError(f"{missing} is missing beside {present[0]}: a topology run keeps all its tables or none",
                         folder / missing)
    totals = read_latency_total(folder / n.LATENCY_TOTAL_CSV)
    check_latency_all(folder / n.LATENCY_ALL_CSV, totals)
    usage = read_resources(folder / n.RESOURCES_CSV)
    publishing_ms = metadata.publishing_start_ms or 0.0
    measured = measured_resources(usage, publishing_ms)
    if not (usage[n.RESOURCE_TIME] > publishing_ms).any():  # no sample while publishing: no CPU figure
        measured[n.RESOURCE_CPU] = math.nan
    figures = {figure: totals.get(figure, measured.get(figure, math.nan)) for figure in FIGURES}
    return StoredTopology(folder.name, metadata, figures)


def stored_topologies(experiment: Path) -> list[StoredTopology]:
    """The topology runs of one stored experiment folder, by name; [] when it kept none."""
    root = Path(experiment) / n.GATE_TOPOLOGY_DIR
    if not root.exists() and not root.is_symlink():
        return []
    if root.is_symlink() or not root.is_dir():
        raise InputError("is not a folder of topology runs", root)
    found = []
    for folder in sorted(root.iterdir()):
        if folder.is_symlink() or not folder.is_dir() or not FOLDER_NAME.fullmatch(folder.name):
            raise InputError(f"{ascii(folder.name)[:60]} is not a topology run's folder (letters, digits, '.', '_', "
                             "'-')", root)
        found.append(read_stored_topology(folder))
    return found
