"""report.tables: what the reports show, as frames computed from an experiment folder's files.

`load` reads the folder (check reports, summaries, the baseline comparison's `<sub>_comparison.csv`
and failures, metadata.json) into ExperimentResults; the functions here turn that into the rows of
the reports' tables and into the gate's Verdict. Pure: no formatting, nothing written.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import files, outcome
from .. import schema as s
from ..latency.check import split_missing
from ..errors import InputError
from ..latency.experiments import sort_subexperiments
from ..model import Metadata, read_metadata
from ..outcome import INCOMPLETE, REGRESSION
from ..latency.requested import requested_of
from .ab_view import STATUS_WORDS, GateAb, read_gate_ab


# Columns of the reports' own tables (not files of the contract).
SUB = "Sub-experiment"
BASELINE = "Baseline"
CHANGE = "Change vs baseline"
LINE = "line"
REASON = "Reason"
PAYLOADS = "Payloads"


@dataclass
class ExperimentResults:
    """Everything the reports show, as read from an experiment folder."""

    experiment_dir: Path
    requirements_path: Path
    requirements: pd.DataFrame  # files.read_requirements: with each row's line
    metadata: Metadata | None
    checks: dict[str, pd.DataFrame]  # sub -> check report
    summaries: dict[str, pd.DataFrame] = field(default_factory=dict)  # sub -> summary
    comparisons: dict[str, pd.DataFrame] = field(default_factory=dict)  # sub -> <sub>_comparison.csv
    baseline_failures: pd.DataFrame | None = None  # None: not compared with a baseline
    baseline_note: str = "not compared with a baseline"
    step_errors: list[str] = field(default_factory=list)  # steps that could not finish
    warnings: list[str] = field(default_factory=list)  # what the reader should know, not a failure
    ab_headline: str | None = None  # the A/B verdict that decides a gate run with a baseline build
    throughput_headline: str | None = None  # the gate's throughput experiment (throughput/), when it ran
    topology_headline: str | None = None  # the gate's topologies (topology/<name>/), when it ran them
    fastdds_note: str | None = None  # the gate's: which Fast DDS it measured and what chose it
    ab: GateAb | None = None  # <experiment>/ab/: the latency A/B's verdict table and baseline, when one ran
    throughput_ab: GateAb | None = None  # <experiment>/throughput/ab/
    platform_name: str | None = None  # the gate's --platform or $PERFGATE_PLATFORM; None when neither was given
    # one line: the platform files the gate judged by that were derived on other machines (gate.platform_files)
    platform_mismatch: str | None = None


@dataclass(frozen=True)
class Verdict:
    status: str
    checks_total: int
    checks_failed: int
    missing: int
    baseline_failed: int
    baseline_compared: bool
    step_errors: int
    ab_status: str | None = None  # PASS / REGRESSION / INCOMPLETE of the A/B verdict, when one ran
    throughput_status: str | None = None  # PASS / REGRESSION / INCOMPLETE / MEASURED, when it ran
    topology_status: str | None = None  # the same, of the gate's topologies
    checks_noted: int = 0  # misses within the gross margin (a baseline build decides): notes, not failures
    unfinished_steps: tuple[str, ...] = ()  # the names of the steps that could not finish, in order
    platform_mismatch: str | None = None  # judged by thresholds derived on other machines: said last, in one line

    @property
    def exit_code(self) -> int:
        return outcome.exit_code(self.status)

    def headline(self) -> str:
        """The gate's status once, then what decided: the A/B first (when one ran), then the checks, all
        in words (one verdict word per banner)."""
        parts = []
        if self.ab_status is not None:
            parts.append(f"the A/B against the baseline build {STATUS_WORDS.get(self.ab_status, self.ab_status)}")
        checks = "gross checks" if self.ab_status is not None else "checks"
        if self.checks_failed:
            parts.append(f"{self.checks_failed} of {self.checks_total} {checks} failed")
        else:
            parts.append(f"all {self.checks_total} {checks} passed")
        if self.checks_noted:
            parts[-1] += f" ({self.checks_noted} noted: missed within the gross margin)"
        if self.missing:
            parts.append(f"{self.missing} required result(s) without measurements")
        if self.step_errors:
            names = ", ".join(dict.fromkeys(self.unfinished_steps))
            parts.append(f"{self.step_errors} step(s) could not finish" + (f" ({names})" if names else ""))
        if self.throughput_status is not None:
            parts.append(f"throughput {STATUS_WORDS.get(self.throughput_status, self.throughput_status.lower())}")
        if self.topology_status is not None:
            parts.append(f"topologies {STATUS_WORDS.get(self.topology_status, self.topology_status.lower())}")
        if self.ab_status is None:  # no A/B: the stored baseline comparison decides beside the checks
            parts.append("no baseline comparison" if not self.baseline_compared else
                         f"{self.baseline_failed} baseline comparison(s) over the limit" if self.baseline_failed else
                         "baseline comparison passed")
        return f"{self.status}: " + ", ".join(parts) + (f"; {self.platform_mismatch}" if self.platform_mismatch else "")



def baseline_references(comparisons: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """sub -> the baseline's summary rows (the `Reference: ` half of `<sub>_comparison.csv`), by Bytes."""
    references = {}
    for sub, comparison in comparisons.items():
        rows = comparison[comparison[s.LABEL].astype(str).str.startswith(s.REFERENCE_LABEL_PREFIX)]
        references[sub] = rows.drop_duplicates(subset=[s.BYTES]).set_index(s.BYTES)
    return references


def _percent_change(value: float, reference: float) -> float:
    if not (files.is_finite(value) and files.is_finite(reference)) or reference == 0:
        return math.nan
    return (value - reference) / reference * 100.0


def _requirement_lines(requirements: pd.DataFrame) -> dict[tuple[str, int], int]:
    return {(row[s.EXPERIMENT_TYPE], int(row[s.BYTES])): int(row[LINE]) for _, row in requirements.iterrows()}


def check_rows(results: ExperimentResults) -> pd.DataFrame:
    """Every check of every sub, with the baseline's value, the change against it and the requirement's line."""
    references = baseline_references(results.comparisons)
    lines = _requirement_lines(results.requirements)
    frames = []
    for sub, report in results.checks.items():
        frame = report.copy()
        frame.insert(0, SUB, sub)
        reference = references.get(sub)
        baseline_values = []
        for _, row in frame.iterrows():
            has_value = reference is not None and row[s.BYTES] in reference.index and row[s.CHECK] in reference.columns
            baseline_values.append(float(reference.at[row[s.BYTES], row[s.CHECK]]) if has_value else math.nan)
        frame[BASELINE] = baseline_values
        frame[CHANGE] = [_percent_change(v, b) for v, b in zip(frame[s.EXPERIMENT], frame[BASELINE])]
        frame[LINE] = [lines.get((sub, int(b))) for b in frame[s.BYTES]]
        frames.append(frame)
    columns = [SUB, *s.CHECK_COLUMNS, BASELINE, CHANGE, LINE]
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True).loc[:, columns]


def _is_measured(frame: pd.DataFrame) -> pd.Series:
    return frame[s.STATUS].isin(s.CHECK_STATUSES) & frame[s.EXPERIMENT].notna()


def failed_checks(rows: pd.DataFrame) -> pd.DataFrame:
    """The failed checks, worst (largest percentage over requirement) first."""
    if rows.empty:
        return rows
    failed = rows[(rows[s.STATUS] == s.FAILED) & _is_measured(rows)]
    return failed.sort_values(s.PERCENT_OVER, ascending=False, kind="stable").reset_index(drop=True)


def requested_subs(metadata: Metadata | None, checks: dict[str, pd.DataFrame]) -> list[str]:
    """The sub-experiments the run was asked for (metadata) and any other that was checked, in the
    contract's order, as every other table of the page lists them (a pooled run's metadata keeps them by
    name: the page's chips put intra-process last)."""
    recorded = list((metadata.subexperiments if metadata is not None else None) or {})
    return sort_subexperiments(dict.fromkeys(recorded + list(checks)))


def sub_outcome(metadata: Metadata | None, sub: str) -> tuple[str, str]:
    """(outcome, error) of one sub-experiment as the run recorded it; ok when nothing is recorded."""
    entry = metadata.outcome_of(sub) if metadata is not None else None
    if entry is None:
        return s.OUTCOME_OK, ""
    return entry.status, entry.error or ""


def _split_missing(results: ExperimentResults):
    requested = requested_of(results.metadata, results.experiment_dir / s.METADATA_FILE)
    return split_missing(results.summaries, results.requirements, requested)


def missing_data(results: ExperimentResults) -> pd.DataFrame:
    """Every requirement row the run asked for without measurements, found as `check` finds them (one
    row per sub and payload, with the requirement's line); the reason says how the run of that sub ended."""
    rows = []
    for item in _split_missing(results)[0]:
        outcome, error = sub_outcome(results.metadata, item.subexperiment)
        note = f" (run {outcome}{': ' + error if error else ''})" if outcome != s.OUTCOME_OK else ""
        rows.append((item.subexperiment, item.bytes, item.reason + note, item.line))
    return pd.DataFrame(rows, columns=[SUB, s.BYTES, REASON, LINE])


def not_asked_data(results: ExperimentResults) -> pd.DataFrame:
    """Every requirement row the run was not asked for (--subexperiments, --payloads): listed, not
    checked (perfgate.latency.requested), as missing_groups lists missing ones."""
    rows = [(item.subexperiment, item.bytes, "not asked for", item.line) for item in _split_missing(results)[1]]
    return pd.DataFrame(rows, columns=[SUB, s.BYTES, REASON, LINE])


def missing_groups(missing: pd.DataFrame) -> pd.DataFrame:
    """Sub-experiment, payloads and reason: a whole missing sub-experiment is one row, not eleven."""
    groups: dict[tuple[str, str], list[int]] = {}
    for sub, payload, reason in zip(missing[SUB], missing[s.BYTES], missing[REASON]):
        groups.setdefault((sub, reason), []).append(int(payload))
    rows = [(sub, ", ".join(map(str, payloads)) + " B", reason) for (sub, reason), payloads in groups.items()]
    return pd.DataFrame(rows, columns=[SUB, PAYLOADS, REASON])


def baseline_table(comparisons: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Baseline against this run for every compared magnitude and payload, with the change in percent."""
    rows = []
    for sub, comparison in comparisons.items():
        labels = comparison[s.LABEL].astype(str)
        reference = comparison[labels.str.startswith(s.REFERENCE_LABEL_PREFIX)].set_index(s.BYTES)
        result = comparison[labels.str.startswith(s.RESULT_LABEL_PREFIX)].set_index(s.BYTES)
        for magnitude in s.COMPARED_MAGNITUDES:
            for payload in result.index:
                if payload not in reference.index:
                    continue
                before, after = float(reference.at[payload, magnitude]), float(result.at[payload, magnitude])
                rows.append((sub, magnitude, int(payload), before, after, _percent_change(after, before)))
    return pd.DataFrame(rows, columns=[SUB, s.CHECK, s.BYTES, s.REFERENCE, s.RESULT, CHANGE])


def verdict(results: ExperimentResults) -> Verdict:
    rows = check_rows(results)
    measured = rows[_is_measured(rows)] if not rows.empty else rows
    failed = len(failed_checks(rows))
    missing = len(missing_data(results))
    baseline_failed = 0 if results.baseline_failures is None else len(results.baseline_failures)
    ab_status = results.ab_headline.split(":")[0] if results.ab_headline else None
    throughput_status = results.throughput_headline.split(":")[0] if results.throughput_headline else None
    topology_status = results.topology_headline.split(":")[0] if results.topology_headline else None
    status = outcome.verdict_of(
        incomplete=bool(missing or results.step_errors) or INCOMPLETE in (ab_status, throughput_status, topology_status),
        regressed=bool(failed or baseline_failed) or REGRESSION in (ab_status, throughput_status, topology_status))
    return Verdict(status, len(measured), failed, missing, baseline_failed,
                   results.baseline_failures is not None, len(results.step_errors), ab_status, throughput_status,
                   topology_status, int((measured[s.STATUS] == s.NOTED).sum()) if not measured.empty else 0,
                   tuple(error.partition(": ")[0] for error in results.step_errors),
                   platform_mismatch=results.platform_mismatch)



# --- reading an experiment folder ----------------------------------------------------------------
def _read_comparison(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, float_precision="round_trip", skipinitialspace=True)
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in (*s.SUMMARY_COLUMNS, s.LABEL) if c not in frame.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(repr(c) for c in missing)}", path, 1)
    return frame


def _read_baseline_failures(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, float_precision="round_trip", skipinitialspace=True)
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in s.COMPARISON_FAILURE_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(repr(c) for c in missing)}", path, 1)
    return frame


def _in_contract_order(frames: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Sub-experiments in the contract's order (then others by name), as every other output lists them."""
    return {sub: frames[sub] for sub in sort_subexperiments(frames)}


def load(experiment_dir: Path, requirements_path: Path, *, requirements: pd.DataFrame | None = None,
         baseline_compared: bool = False,
         baseline_note: str = "not compared with a baseline",
         step_errors: list[str] | None = None, ab_headline: str | None = None,
         warnings: list[str] | None = None, throughput_headline: str | None = None,
         topology_headline: str | None = None,
         fastdds_note: str | None = None, platform_name: str | None = None,
         platform_mismatch: str | None = None) -> ExperimentResults:
    """Read what the reports show from an experiment folder (after check and, optionally, compare);
    requirements: the table of requirements_path when the caller has read it already."""
    experiment_dir = files.require_dir(experiment_dir, "experiment folder")
    baseline_dir = experiment_dir / s.PLOTS_DIR / s.BASELINE_COMPARISON_DIR
    comparisons = {}
    failures = None
    if baseline_compared:
        for path in sorted(baseline_dir.glob("*_comparison.csv")):
            comparisons[path.name[: -len("_comparison.csv")]] = _read_comparison(path)
        failures_path = baseline_dir / s.COMPARISON_FAILURES_FILE
        failures = (_read_baseline_failures(failures_path) if failures_path.exists()
                    else pd.DataFrame(columns=list(s.COMPARISON_FAILURE_COLUMNS)))
    return ExperimentResults(
        experiment_dir=experiment_dir,
        requirements_path=Path(requirements_path),
        requirements=files.read_requirements(requirements_path) if requirements is None else requirements,
        metadata=read_metadata(experiment_dir),
        checks=_in_contract_order({sub: files.read_check_report(path)
                                   for sub, path in files.check_files(experiment_dir).items()}),
        summaries=_in_contract_order({sub: files.read_summary(path)
                                      for sub, path in files.summary_files(experiment_dir, required=False).items()}),
        comparisons=_in_contract_order(comparisons),
        baseline_failures=failures,
        baseline_note=baseline_note,
        step_errors=list(step_errors or []),
        warnings=list(warnings or []),
        ab_headline=ab_headline,
        throughput_headline=throughput_headline,
        topology_headline=topology_headline,
        fastdds_note=fastdds_note,
        platform_name=platform_name,
        platform_mismatch=platform_mismatch,
        ab=read_gate_ab(experiment_dir / s.AB_DIR, "A/B against the baseline build", f"{s.AB_DIR}/{s.REPORT_HTML}",
                        "Lower bound"),
        throughput_ab=read_gate_ab(experiment_dir / s.THROUGHPUT_DIR / s.AB_DIR,
                                   "Throughput A/B against the baseline build",
                                   f"{s.THROUGHPUT_DIR}/{s.AB_DIR}/{s.REPORT_HTML}", "Upper bound"),
    )
