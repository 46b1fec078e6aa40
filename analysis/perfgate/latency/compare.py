"""latency.compare: a target experiment against a reference, magnitude by magnitude.

Pure computations first: `compare_summaries` (two summaries -> one verdict per payload and
magnitude), `coverage` (what one experiment has that the other lacks) and `stacked_summaries` (the
contract's `<sub>_comparison.csv`). `command_compare` reads, prints, writes and plots around them.

Rule: a magnitude fails when result > reference * (1 + fail_threshold), both at the 3 decimals the
summaries are written with; a result exactly at the limit passes. The limit is reported rounded down
to 3 decimals, so "failed" always reads as "result > Limit" in the written tables.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import experiments as ex
from ..escape.workflow import log_text
from .. import files, outputs
from .. import schema as s

# products like 7000 * 1.1 land a hair above or below the exact limit; this much is float noise
RELATIVE_TOLERANCE = 1e-9


def allowed_thousandths(reference_values: np.ndarray, fail_threshold: float) -> np.ndarray:
    """The highest passing result, in whole thousandths: reference * (1 + threshold) rounded down, so
    that the written Limit reads exactly like a requirement (failed when result > Limit)."""
    exact = files.thousandths(reference_values) * (1 + fail_threshold)
    return np.floor(exact * (1 + RELATIVE_TOLERANCE))


def compare_summaries(reference: pd.DataFrame, result: pd.DataFrame, fail_threshold: float) -> pd.DataFrame:
    """One row per compared magnitude (schema.COMPARED_MAGNITUDES) and payload in both summaries.

    Columns: Check, Bytes, Reference, Result, Limit, Percentage over reference, Status; magnitudes in
    COMPARED_MAGNITUDES order, payloads in the reference's order.
    """
    common = reference[reference[s.BYTES].isin(result[s.BYTES])]
    by_payload = result.set_index(s.BYTES)
    blocks = []
    for magnitude in s.COMPARED_MAGNITUDES:
        reference_values = common[magnitude].to_numpy(dtype=float)
        result_values = by_payload.loc[common[s.BYTES], magnitude].to_numpy(dtype=float)
        limit_thousandths = allowed_thousandths(reference_values, fail_threshold)
        failed = files.thousandths(result_values) > limit_thousandths
        with np.errstate(divide="ignore", invalid="ignore"):
            percentage = np.where(reference_values > 0, (result_values - reference_values) / reference_values * 100,
                                  np.nan)
        blocks.append(pd.DataFrame({
            s.CHECK: magnitude,
            s.BYTES: common[s.BYTES].to_numpy(dtype=np.int64),
            s.REFERENCE: reference_values,
            s.RESULT: result_values,
            s.LIMIT: limit_thousandths / 1000,
            s.PERCENT_OVER_REFERENCE: percentage,
            s.STATUS: np.where(failed, s.FAILED, s.PASSED),
        }))
    return pd.concat(blocks, ignore_index=True)


@dataclass(frozen=True)
class Coverage:
    """What the result lacks (an error: expected data is missing) and what it has extra (a note)."""

    missing_subs: list[str]
    extra_subs: list[str]
    missing_payloads: dict[str, list[int]]
    extra_payloads: dict[str, list[int]]

    @property
    def complete(self) -> bool:
        return not self.missing_subs and not self.missing_payloads


def coverage(reference: dict[str, pd.DataFrame], result: dict[str, pd.DataFrame]) -> Coverage:
    common = [sub for sub in reference if sub in result]
    missing_payloads, extra_payloads = {}, {}
    for sub in common:
        reference_payloads, result_payloads = list(reference[sub][s.BYTES]), list(result[sub][s.BYTES])
        missing = [int(p) for p in reference_payloads if p not in set(result_payloads)]
        extra = [int(p) for p in result_payloads if p not in set(reference_payloads)]
        if missing:
            missing_payloads[sub] = missing
        if extra:
            extra_payloads[sub] = extra
    return Coverage(
        missing_subs=[sub for sub in reference if sub not in result],
        extra_subs=[sub for sub in result if sub not in reference],
        missing_payloads=missing_payloads,
        extra_payloads=extra_payloads,
    )


def stacked_summaries(reference: pd.DataFrame, result: pd.DataFrame, reference_label: str,
                      result_label: str) -> pd.DataFrame:
    """The two summaries one under the other, with the Label column last (docs/formats.md section 7)."""
    top = reference.loc[:, list(s.SUMMARY_COLUMNS)].assign(**{s.LABEL: s.REFERENCE_LABEL_PREFIX + reference_label})
    bottom = result.loc[:, list(s.SUMMARY_COLUMNS)].assign(**{s.LABEL: s.RESULT_LABEL_PREFIX + result_label})
    return pd.concat([top, bottom], ignore_index=True)


def failures_table(comparisons: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Every failed comparison of every sub-experiment (COMPARISON_FAILURE_COLUMNS)."""
    rows = [table[table[s.STATUS] == s.FAILED].assign(**{s.EXPERIMENT_TYPE: sub}) for sub, table in comparisons.items()]
    failed = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=list(s.COMPARISON_FAILURE_COLUMNS))
    return failed.loc[:, list(s.COMPARISON_FAILURE_COLUMNS)]


# --- the command --------------------------------------------------------------------------------
def _report_coverage(found: Coverage) -> None:
    for sub in found.missing_subs:
        print(f"perfgate compare: error: {sub} is in the reference but missing in the result", file=sys.stderr)
    for sub, payloads in found.missing_payloads.items():
        print(f"perfgate compare: error: {sub}: payload(s) {', '.join(map(str, payloads))} B of the reference are "
              f"missing in the result", file=sys.stderr)
    for sub in found.extra_subs:
        print(f"perfgate compare: note: {sub} is only in the result; not compared", file=sys.stderr)
    for sub, payloads in found.extra_payloads.items():
        print(f"perfgate compare: note: {sub}: payload(s) {', '.join(map(str, payloads))} B are only in the result; "
              f"not compared", file=sys.stderr)


def command_compare(reference: str, results: str, plots_directory: str, fail_threshold: float, no_plots: bool) -> int:
    outputs.require_paths(reference=reference, results=results, plots_directory=plots_directory)
    return compare_experiments(Path(reference), Path(results), Path(plots_directory), fail_threshold, draw=not no_plots)


def compare_experiments(reference: Path, results: Path, plots_dir: Path, fail_threshold: float, draw: bool = True) -> int:
    """Compare the experiment folder `results` with `reference`: the comparison tables (and plots) in plots_dir."""
    reference_experiment = ex.describe_experiment(reference)
    result_experiment = ex.describe_experiment(results)
    for note in ex.require_comparable([reference_experiment, result_experiment]):
        print(f"perfgate compare: note: {note}", file=sys.stderr)
    # every summary is read (and validated) before anything is written
    reference_summaries = {sub: reference_experiment.summary(sub) for sub in
                           ex.sort_subexperiments(reference_experiment.subexperiments)}
    result_summaries = {sub: result_experiment.summary(sub) for sub in
                        ex.sort_subexperiments(result_experiment.subexperiments)}

    found = coverage(reference_summaries, result_summaries)
    common = [sub for sub in reference_summaries if sub in result_summaries]
    comparisons = {sub: compare_summaries(reference_summaries[sub], result_summaries[sub], fail_threshold)
                   for sub in common}
    failed = failures_table(comparisons)

    plots = outputs.require_writable(plots_dir, "plots folder", folder=True)
    with outputs.write_errors_as_input_errors():
        for sub in common:
            files.write_csv(plots / s.comparison_csv_name(sub),
                            stacked_summaries(reference_summaries[sub], result_summaries[sub],
                                              reference_experiment.label, result_experiment.label))
        files.write_csv(plots / s.COMPARISON_FAILURES_FILE, failed)
        if draw:
            from ..plotting.compare_plots import draw_comparison

            for sub in common:
                for pair, magnitudes in s.COMPARE_PLOT_PAIRS.items():
                    draw_comparison(sub, magnitudes, comparisons[sub], reference_experiment.label,
                                    result_experiment.label, fail_threshold, s.compare_png(plots, sub, pair))

    checked = sum(len(table) for table in comparisons.values())
    print(f"compare: {log_text(result_experiment.label)} against {log_text(reference_experiment.label)}, threshold "
          f"+{fail_threshold:.1%}: {len(failed)} of {checked} comparisons failed in {len(common)} sub-experiments")
    if len(failed):
        print(files.format_csv(failed).rstrip("\n"))
    _report_coverage(found)
    if not found.complete:
        return s.EXIT_INCOMPLETE
    return s.EXIT_REGRESSION if len(failed) else s.EXIT_OK
