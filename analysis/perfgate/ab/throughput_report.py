"""ab.throughput_report: the verdict of a throughput A/B folder (perfgate.ab.throughput), and its files.

The decision is the latency A/B's (perfgate.ab.verdict: exact one-sided sign test on per-round means of
log ratios, Holm over all tests) with the direction flipped: for a throughput, higher is better, so
a round's d is log(baseline / candidate) and d > log(1 + T) means the candidate delivers less than
the baseline / (1 + T). One test per sub-experiment, on the Subscription throughput (what arrived);
each round's d is the mean over that sub-experiment's tests (payload x demand x recovery time).

What this module writes reads the other way round, as a throughput should: Ratio is candidate /
baseline (0.90 = 10 % less), its distribution-free bound is an *upper* bound (a failed test's upper
bound is below 1 / (1 + T)):

    verdict.csv        Experiment type,Statistic,Rounds,Ratio,Upper bound,p-value,Adjusted p-value,Status,
                       Threshold,Rounds above threshold,Baseline median,Candidate median,Reason (as the latency's,
                       the medians in Mb/s, the rounds counted those down more than the threshold's drop)
    verdict_tests.csv  Experiment type,Statistic,Test,Rounds,Ratio,Upper bound,p-value (drill-down, not tested)
    verdict.json, junit.xml, report.md, report.html, plots/verdict_heatmap.png
"""
from __future__ import annotations

import dataclasses
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import files
from .. import junit_writer
from .. import schema as s
from . import attempts, curtail, explain, verdict as v
from .arms import recorded_alignments
from .rounds import round_folders
from ..errors import IncompleteError
from ..latency.experiments import sort_subexperiments
from ..escape.workflow import log_text
from ..report import CSS, Column, _e, _html_table, _md, _md_table
from ..report.bounds import bound_text
from ..throughput.files import read_throughput
from ..junit_writer import TestCase
from ..model import AbArm, FastDDS, Metadata, as_json, read_metadata
from ..outcome import INCOMPLETE, exit_code, verdict_of
from .verdict import require_parameters

STATISTICS = (s.SUBSCRIPTION_THROUGHPUT,)
TEST = "Test"
UPPER_BOUND = "Upper bound"
VERDICT_COLUMNS = (s.EXPERIMENT_TYPE, v.STATISTIC, v.ROUNDS, v.RATIO, UPPER_BOUND, v.P_VALUE, v.ADJUSTED_P, s.STATUS)
TEST_COLUMNS = (s.EXPERIMENT_TYPE, v.STATISTIC, TEST, v.ROUNDS, v.RATIO, UPPER_BOUND, v.P_VALUE)
VERDICT_TESTS_CSV = "verdict_tests.csv"
KIND = "ab-throughput"  # metadata.json's "kind" of a throughput A/B folder


def test_label(payload: int, demand: int, recovery_ms: int) -> str:
    return f"{payload} B x {demand}, {recovery_ms} ms"


def is_throughput_ab(ab_dir: Path) -> bool:
    """An A/B folder of the throughput experiment: said by its metadata, or (without one) by its rounds'
    tables. `perfgate verdict` decides either kind."""
    metadata = read_metadata(ab_dir) if (ab_dir / s.METADATA_FILE).is_file() else None
    if metadata is not None and metadata.kind is not None:
        return metadata.kind == KIND
    return any((ab_dir / s.AB_ROUNDS_DIR).glob(f"*/*/{s.THROUGHPUT_PREFIX}*.csv"))


# --- reading the rounds ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ThroughputRounds:
    table: pd.DataFrame  # ROUND, ARM, Experiment type, TEST, Subscription throughput
    subexperiments: list[str]
    round_names: list[str]
    metadata: Metadata | None
    test_order: dict[str, tuple[int, int, int]]  # test label -> (payload, demand, recovery), for sorting


def read_rounds(ab_dir: Path) -> ThroughputRounds:
    files.require_dir(ab_dir, "A/B folder")
    metadata = read_metadata(ab_dir)
    folders = round_folders(ab_dir)
    if not folders:
        raise IncompleteError(f"no rounds in {s.AB_ROUNDS_DIR}/: nothing was measured", ab_dir)
    rows, order = [], {}
    for folder in folders:
        for arm in s.AB_ARMS:
            for path in sorted((folder / arm).glob(f"{s.THROUGHPUT_PREFIX}*.csv")):
                sub = path.stem[len(s.THROUGHPUT_PREFIX):]
                table = read_throughput(path)
                for _, row in table.iterrows():
                    key = (int(row[s.PAYLOAD]), int(row[s.DEMAND]), int(row[s.RECOVERY_TIME]))
                    order[test_label(*key)] = key
                    rows.append({v.ROUND: folder.name, v.ARM: arm, s.EXPERIMENT_TYPE: sub, TEST: test_label(*key),
                                 s.SUBSCRIPTION_THROUGHPUT: float(row[s.SUBSCRIPTION_THROUGHPUT])})
    table = pd.DataFrame(rows, columns=[v.ROUND, v.ARM, s.EXPERIMENT_TYPE, TEST, s.SUBSCRIPTION_THROUGHPUT])
    requested = list((metadata.requested_subexperiments if metadata else None) or ())
    subs = requested + [sub for sub in sort_subexperiments(set(table[s.EXPERIMENT_TYPE])) if sub not in requested]
    if table.empty:
        raise IncompleteError(f"no round has a {s.THROUGHPUT_PREFIX}<sub>.csv table", ab_dir)
    return ThroughputRounds(table, subs, [f.name for f in folders], metadata, order)


# --- the verdict ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ThroughputVerdict:
    ab_dir: Path
    rounds: ThroughputRounds
    decision: v.Decision

    @property
    def status(self) -> str:
        return verdict_of(incomplete=self.decision.incomplete or bool(attempts.unfinished(self.rounds.metadata)),
                          regressed=not self.decision.failed.empty)

    @property
    def exit_code(self) -> int:
        return exit_code(self.status)

    def tests(self) -> pd.DataFrame:
        """The decision's tests as candidate / baseline throughput (see the module's docstring), each
        with its reason (ab.explain)."""
        return as_throughput(explain.explained(self.decision, higher_is_better=True))

    def headline(self) -> str:
        d, tests = self.decision, self.tests()
        what = f"{len(tests)} tests ({len(self.rounds.subexperiments)} sub-experiment(s) x subscription throughput)"
        failed = tests[tests[s.STATUS] == s.FAILED]
        if not failed.empty:
            worst = failed.sort_values(UPPER_BOUND).iloc[0]
            parts = [f"{len(failed)} of {what} failed; worst {worst[s.EXPERIMENT_TYPE]} {_ratio(worst[v.RATIO])} the "
                     f"baseline's throughput (upper bound {_ratio(worst[UPPER_BOUND])})"]
        else:
            parts = [f"no throughput drop beyond {d.threshold:.1%} in {what}"]
        if d.too_few_rounds:
            few = ", ".join(f"{sub} ({n})" for sub, n in d.too_few_rounds.items())
            parts.append(f"too few usable rounds for {few}: a test needs at least {d.rounds_needed} to ever reject "
                         f"at family-wise {d.alpha:g}")
        if d.undecided:
            parts.append(curtail.undecided_text(d))
        if attempts.unfinished(self.rounds.metadata):
            parts.append(attempts.unfinished_text(attempts.unfinished(self.rounds.metadata)))
        return f"{self.status}: " + "; ".join(parts)


def as_throughput(table: pd.DataFrame) -> pd.DataFrame:
    """The verdict's slow-down columns (Ratio, Lower bound of baseline / candidate) as candidate /
    baseline throughput and its upper bound."""
    out = table.copy()
    out[v.RATIO] = 1 / table[v.RATIO]
    out[UPPER_BOUND] = 1 / table[v.LOWER_BOUND]
    return out.drop(columns=[v.LOWER_BOUND])


def decide(rounds: ThroughputRounds, threshold: float, alpha: float, planned: int | None = None,
           stopped: dict[str, int] | None = None) -> v.Decision:
    ratios = v.log_ratios(rounds.table, STATISTICS, unit=TEST, higher_is_better=True)
    decision = curtail.decide_curtailed(ratios, planned=planned, stopped=stopped or {}, threshold=threshold,
                                        alpha=alpha, order=rounds.subexperiments, statistics=STATISTICS, unit=TEST)
    # the drill-down in contract order, each sub-experiment's tests by payload, demand, recovery time
    position = {sub: i for i, sub in enumerate(rounds.subexperiments)}
    keys = pd.DataFrame([rounds.test_order[test] for test in decision.payloads[TEST]], columns=["_p", "_d", "_r"],
                        index=decision.payloads.index)
    drill = decision.payloads.join(keys).assign(_sub=decision.payloads[s.EXPERIMENT_TYPE].map(position))
    drill = drill.sort_values(["_sub", "_p", "_d", "_r"]).drop(columns=["_sub", "_p", "_d", "_r"])
    return dataclasses.replace(decision, payloads=drill.reset_index(drop=True))


# --- the files ----------------------------------------------------------------------------------------
def _ratio(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:.3f}x"


def _percent(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{(value - 1) * 100:+.1f} %"


def _rate(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:.4g}"


def ordered_for_reading(tests: pd.DataFrame) -> pd.DataFrame:
    """Failed first (the largest drop first), then the rest in contract order."""
    failed = tests[tests[s.STATUS] == s.FAILED].sort_values(UPPER_BOUND)
    return pd.concat([failed, tests[tests[s.STATUS] != s.FAILED]])


def _json_rows(frame: pd.DataFrame) -> list[dict]:
    return [{"subexperiment": r[s.EXPERIMENT_TYPE], "statistic": r[v.STATISTIC], "ratio": _finite(r[v.RATIO]),
             "upper_bound": _finite(r[UPPER_BOUND]), "p_value": float(r[v.P_VALUE]),
             "adjusted_p_value": float(r[v.ADJUSTED_P]), "rounds": int(r[v.ROUNDS])} for _, r in frame.iterrows()]


def _finite(value: float) -> float | None:
    return round(float(value), 6) if math.isfinite(value) else None


def verdict_json(report: ThroughputVerdict) -> dict:
    d, tests, meta = report.decision, report.tests(), report.rounds.metadata or Metadata()
    return {
        "status": report.status, "exit_code": report.exit_code, "headline": report.headline(), "kind": "throughput",
        "method": "exact one-sided sign test on per-round mean log ratios (baseline / candidate), Holm over all tests",
        "threshold": d.threshold, "alpha": d.alpha, "tests": len(tests), "rounds_needed": d.rounds_needed,
        "rounds": report.rounds.round_names, "too_few_rounds": d.too_few_rounds, **curtail.json_fields(d),
        "smallest_detectable_drop": {k: (round(1 - 1 / (1 + x), 4) if math.isfinite(x) else None)
                                     for k, x in d.smallest_detectable.items()},
        "failed": _json_rows(tests[tests[s.STATUS] == s.FAILED]), "improved": _json_rows(tests[tests[v.IMPROVED]]),
        "arms": as_json(meta.arms), "align_functions": recorded_alignments(meta.arms),
        "cpu_pinning": as_json(meta.cpu_pinning), "throughput": as_json(meta.throughput),
        "payloads": as_json(meta.payloads), "load_average": as_json(meta.load_average),
    }


def _summary(row: pd.Series, threshold: float) -> str:
    return (f"{row[s.EXPERIMENT_TYPE]} subscription throughput: candidate {_ratio(row[v.RATIO])} the baseline "
            f"(upper bound {_ratio(row[UPPER_BOUND])}, threshold {1 / (1 + threshold):.3f}x), "
            f"p = {row[v.P_VALUE]:.3g}, Holm-adjusted {row[v.ADJUSTED_P]:.3g}, {row[v.ROUNDS]} rounds")


def junit_xml(report: ThroughputVerdict) -> str:
    d, tests = report.decision, report.tests()
    cases = []
    for _, row in tests.iterrows():
        summary = _summary(row, d.threshold)
        too_few, failed = row[s.EXPERIMENT_TYPE] in d.too_few_rounds, row[s.STATUS] == s.FAILED
        case = TestCase(f"{row[s.EXPERIMENT_TYPE]} Subscription throughput vs baseline",
                        classname=row[s.EXPERIMENT_TYPE], stdout=None if too_few or failed else summary)
        if too_few:
            case.add_error_info(summary, report.headline(), "too_few_rounds")
        elif failed:
            case.add_failure_info(summary, summary, "throughput_regression")
        cases.append(case)
    return junit_writer.document("perfgate ab-throughput", [junit_writer.suite("ab_throughput_verdict", cases)])


def setting_lines(report: ThroughputVerdict) -> list[str]:
    meta, d = report.rounds.metadata or Metadata(), report.decision
    pin, arms = meta.cpu_pinning, meta.arms or {}
    settings = as_json(meta.throughput) or {}
    pinning = (f"pinned (publisher CPU {pin.publisher_cpu}, subscriber CPU {pin.subscriber_cpu})"
               if pin and pin.pinned else "not pinned" if pin else "pinning not recorded")
    load = ((meta.load_average.before if meta.load_average else None) or ["?"])[0]
    payloads = as_json(meta.payloads) if meta.payloads is not None else "?"
    lines = [f"{curtail.rounds_text(d, len(report.rounds.round_names))}; tests "
             f"{len(report.rounds.test_order)} per sub-experiment of {settings.get('time_s', '?')} s "
             f"(payloads {payloads}, demands {settings.get('demands', '?')}, recovery "
             f"{settings.get('recovery_times_ms', '?')} ms), the arms one after the other, {pinning}, load {load} before",
             f"threshold: a drop below {1 / (1 + d.threshold):.3f}x the baseline; family-wise false-alarm level "
             f"{d.alpha:g} (Holm over {len(d.table)} tests)"]
    detectable = [1 - 1 / (1 + x) for x in d.smallest_detectable.values() if math.isfinite(x)]
    if detectable:
        lines.append(f"smallest drop these rounds detect with 95 % power: -{min(detectable):.1%} (best "
                     f"sub-experiment) to -{max(detectable):.1%} (noisiest)")
    for name in s.AB_ARMS if arms else ():
        arm = arms.get(name) or AbArm()
        fastdds = arm.fastdds or FastDDS()
        lines.append(f"{name}: {arm.spec or '?'} (Fast DDS {fastdds.version or '?'}"
                     + (f", commit {fastdds.commit[:12]}" if fastdds.commit else "") + ")")
    return lines


COLUMNS = [
    Column("Sub-experiment", lambda r: str(r[s.EXPERIMENT_TYPE]), text=True),
    Column("Baseline [Mb/s]", lambda r: _rate(r[v.BASELINE_MEDIAN])),
    Column("Candidate [Mb/s]", lambda r: _rate(r[v.CANDIDATE_MEDIAN])),
    Column("Change", lambda r: _percent(r[v.RATIO])),
    Column("Threshold", lambda r: f"-{100 * explain.threshold_drop(r[v.THRESHOLD]):.1f} %"),
    Column("Upper bound", lambda r: bound_text(r[UPPER_BOUND], r[v.ROUNDS], UPPER_BOUND)),
    Column("p (Holm)", lambda r: f"{r[v.ADJUSTED_P]:.3g}"),
    Column("Rounds", lambda r: str(r[v.ROUNDS])),
    Column("Status", lambda r: r[s.STATUS] + (" (improved)" if r[v.IMPROVED] else ""), text=True),
    Column("Reason", lambda r: str(r[v.REASON]), text=True, wrap=True),
]
COLUMNS_PLANNED = [column if column.header != "Rounds" else Column("Rounds", lambda r: f"{r[v.ROUNDS]} of {r[curtail.PLANNED]}")
                   for column in COLUMNS]
DRILL_COLUMNS = [
    Column("Sub-experiment", lambda r: str(r[s.EXPERIMENT_TYPE]), text=True),
    Column("Test", lambda r: str(r[TEST]), text=True),
    Column("Change", lambda r: _percent(r[v.RATIO])),
    Column("Upper bound", lambda r: bound_text(r[UPPER_BOUND], r[v.ROUNDS], UPPER_BOUND)),
]


def markdown(report: ThroughputVerdict) -> str:
    lines = [f"## perfgate throughput A/B verdict: **{report.status}**", "", _md(report.headline()), ""]
    lines += [f"- {_md(line)}" for line in setting_lines(report)] + [""]
    return "\n".join(lines + _md_table(*curtail.with_planned(ordered_for_reading(report.tests()), report.decision,
                                                             COLUMNS, COLUMNS_PLANNED)))


def html_page(report: ThroughputVerdict, heatmap_uri: str | None) -> str:
    picture = (f'<img alt="change of the subscription throughput per sub-experiment and test" src="{heatmap_uri}">'
               if heatmap_uri else "")
    tests = _html_table(*curtail.with_planned(ordered_for_reading(report.tests()), report.decision, COLUMNS,
                                              COLUMNS_PLANNED), lambda r: str(r[s.STATUS]))
    drill = _html_table(as_throughput(report.decision.payloads), DRILL_COLUMNS)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>perfgate throughput A/B verdict: {_e(report.status)}</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>{CSS}img{{max-width:100%}}</style></head>
<body><main><h1>perfgate throughput A/B verdict</h1>
<div class="verdict {_e(report.status)}">{_e(report.headline())}</div>
<ul>{"".join(f"<li>{_e(line)}</li>" for line in setting_lines(report))}</ul>
{picture}
<h2>Tests</h2>{tests}
<details><summary>Per test (drill-down, not tested)</summary>{drill}</details>
</main></body></html>
"""


def write_outputs(report: ThroughputVerdict, plots: bool) -> None:
    ab_dir, d = report.ab_dir, report.decision
    files.write_csv(ab_dir / s.VERDICT_CSV, v.csv_cells(report.tests(), VERDICT_COLUMNS + v.EXPLAINED_COLUMNS, (v.RATIO, UPPER_BOUND)))
    files.write_csv(ab_dir / VERDICT_TESTS_CSV, v.csv_cells(as_throughput(d.payloads), TEST_COLUMNS, (v.RATIO, UPPER_BOUND)))
    files.write_text(ab_dir / s.VERDICT_JSON, json.dumps(verdict_json(report), indent=2) + "\n")
    files.write_text(ab_dir / s.JUNIT_FILE, junit_xml(report))
    files.write_text(ab_dir / s.REPORT_MARKDOWN, markdown(report))
    heatmap_uri = None
    if plots:
        from ..plotting.verdict_plots import draw_heatmap
        from ..report import embedded_images

        drill = as_throughput(d.payloads)
        changes = (drill.pivot(index=s.EXPERIMENT_TYPE, columns=TEST, values=v.RATIO) - 1) * 100
        changes = changes.reindex(index=report.rounds.subexperiments,
                                  columns=sorted(changes.columns, key=report.rounds.test_order.get))
        significant = {(r[s.EXPERIMENT_TYPE], r[TEST]) for _, r in drill.iterrows()
                       if r[UPPER_BOUND] < 1 / (1 + d.threshold)}
        path = ab_dir / s.PLOTS_DIR / s.VERDICT_HEATMAP_PNG
        path.parent.mkdir(parents=True, exist_ok=True)
        draw_heatmap(changes, set(d.failed[s.EXPERIMENT_TYPE]), significant, path,
                     f"Subscription throughput, candidate vs baseline: {report.status}",
                     x_label="Test (payload x demand, recovery time)", higher_is_better=True,
                     colour_label="change of the subscription throughput [%]")
        heatmap_uri = embedded_images(path.parent).get(path)
    files.write_text(ab_dir / s.REPORT_HTML, html_page(report, heatmap_uri))


def command_verdict(*, ab_directory, threshold=None, alpha=None, no_plots=False, program="verdict") -> int:
    threshold, alpha = require_parameters(threshold, alpha)
    rounds = read_rounds(Path(ab_directory))
    planned, stopped = curtail.read_record(Path(ab_directory), rounds.subexperiments, len(rounds.round_names))
    report = ThroughputVerdict(Path(ab_directory), rounds, decide(rounds, threshold, alpha, planned, stopped))
    write_outputs(report, plots=not no_plots)
    for _, row in ordered_for_reading(report.tests()).iterrows():
        what = f"{log_text(row[s.EXPERIMENT_TYPE])} subscription throughput {_percent(row[v.RATIO])} (ratio {_ratio(row[v.RATIO])}"
        if row[s.STATUS] == s.FAILED:
            print(f"perfgate {program}: REGRESSION: {what}, upper bound {_ratio(row[UPPER_BOUND])}, "
                  f"Holm p {row[v.ADJUSTED_P]:.3g})")
        elif row[v.IMPROVED]:
            print(f"perfgate {program}: improved: {what})")
    for line in setting_lines(report)[:3]:
        print(f"perfgate {program}: {log_text(line)}")
    print(f"perfgate {program}: {log_text(report.headline())}")
    print(f"perfgate {program}: report {log_text((Path(ab_directory) / s.REPORT_HTML).resolve())}")
    if report.status == INCOMPLETE:
        print(f"perfgate {program}: error: {log_text(report.headline())}", file=sys.stderr)
    return report.exit_code
