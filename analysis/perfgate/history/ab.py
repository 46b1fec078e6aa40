"""The A/B verdict of each stored run, marked on its commit in the history plots and page.

A gate run with `--baseline-build` (per-commit CI: each Fast DDS commit against its parent) keeps its
A/B verdict in the store (`<experiment>/ab/verdict.csv` and `verdict.json`, docs/formats.md section
10). Per sub-experiment the history marks that commit with one outcome:

- regression:  a test of the sub-experiment failed (candidate slower than its parent);
- improvement: a test found it faster, none failed;
- incomplete:  too few usable rounds to decide;
- passed:      tested, neither slower nor faster.

`sub_outcomes` and `marks` are pure; `read_verdict` reads one experiment folder (None: no A/B), its
verdict.json through history.verdict_file, the one reader the store's checks use too.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import csv_lines
from .. import schema as s
from ..errors import InputError
from ..ab.verdict import RATIO, STATISTIC, VERDICT_COLUMNS
from .verdict_file import read_stored_verdict

REGRESSION, IMPROVEMENT, INCOMPLETE, PASSED = "regression", "improvement", "incomplete", "passed"
OUTCOMES = (REGRESSION, IMPROVEMENT, INCOMPLETE, PASSED)  # the order of the legends


def _ratios(rows: pd.DataFrame) -> str:
    parts = []
    for row in rows.itertuples(index=False):
        ratio = pd.to_numeric(getattr(row, "ratio"), errors="coerce")
        parts.append(f"{row.statistic} {ratio:.3f}x" if pd.notna(ratio) else f"{row.statistic} -")
    return ", ".join(parts)


def sub_outcomes(record: dict, table: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """sub-experiment -> (outcome, text) of one A/B: `record` is verdict.json, `table` verdict.csv."""
    failed = {entry["subexperiment"] for entry in record.get("failed") or []}
    improved = {entry["subexperiment"] for entry in record.get("improved") or []}
    too_few = set(record.get("too_few_rounds") or {})
    rows = table.rename(columns={STATISTIC: "statistic", RATIO: "ratio"})
    found = {}
    for sub, group in rows.groupby(s.EXPERIMENT_TYPE, sort=False):
        outcome = (REGRESSION if sub in failed else IMPROVEMENT if sub in improved
                   else INCOMPLETE if sub in too_few else PASSED)
        found[str(sub)] = (outcome, f"A/B {outcome}: candidate/parent {_ratios(group)}")
    return found


def marks(verdicts: list[dict[str, tuple[str, str]] | None], sub: str) -> list[tuple[int, str, str]]:
    """(position, outcome, text) of every experiment (in history order) whose A/B tested `sub`."""
    return [(position, *verdict[sub]) for position, verdict in enumerate(verdicts)
            if verdict is not None and sub in verdict]


def read_verdict(experiment: Path) -> dict[str, tuple[str, str]] | None:
    """sub_outcomes of an experiment folder's ab/verdict.json and verdict.csv; None without them. One of
    the two without the other is a damaged experiment (InputError): the gate keeps both or neither."""
    folder = Path(experiment) / s.AB_DIR
    json_path, csv_path = folder / s.VERDICT_JSON, folder / s.VERDICT_CSV
    if not json_path.exists() and not csv_path.exists():
        return None
    if not csv_path.exists():
        raise InputError(f"the A/B verdict has {s.VERDICT_JSON} but no {s.VERDICT_CSV}", json_path)
    record = read_stored_verdict(json_path, "A/B verdict")  # every field sub_outcomes uses checked
    if record is None:
        raise InputError(f"the A/B verdict has {s.VERDICT_CSV} but no {s.VERDICT_JSON}", csv_path)
    table, _ = csv_lines.read_csv(csv_path, VERDICT_COLUMNS, "A/B verdict")
    return sub_outcomes(record, table)


def count_text(verdicts: list[dict[str, tuple[str, str]] | None]) -> str | None:
    """How many runs have an A/B verdict, and how many of them found a regression; None when none has."""
    tested = [verdict for verdict in verdicts if verdict is not None]
    if not tested:
        return None
    regressed = sum(1 for verdict in tested if any(outcome == REGRESSION for outcome, _ in verdict.values()))
    return (f"{len(tested)} of {len(verdicts)} experiments have an A/B verdict against their parent, "
            f"{regressed} with a regression")


def summary_lines(verdicts: list[dict[str, tuple[str, str]] | None], labels: list[str]) -> list[str]:
    """For the terminal: how many runs have an A/B, and each regression with its run."""
    counted = count_text(verdicts)
    if counted is None:
        return []
    lines = [f"history: {counted}"]
    for position, verdict in enumerate(verdicts):
        for sub, (outcome, text) in (verdict or {}).items():
            if outcome == REGRESSION:
                lines.append(f"  A/B REGRESSION: {labels[position]} {sub}: {text}")
    return lines
