"""ab.report: `perfgate verdict` and what it writes beside an A/B folder's rounds.

verdict.csv (one row per test), verdict_payloads.csv (the drill-down, not tested), verdict.json
(everything a program needs), junit.xml (one testcase per test), report.md (the step summary,
answer first), report.html (self-contained, heatmap first) and plots/verdict_heatmap.png.
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import files
from .. import junit_writer
from .. import schema as s
from . import attempts, curtail, explain, layout_file, verdict as v
from .verdict import require_parameters
from . import throughput_report as ab_throughput_report
from .rounds import Rounds, read_rounds
from ..junit_writer import TestCase
from ..model import AbArm, FastDDS, Metadata, as_json
from ..outcome import INCOMPLETE, exit_code, verdict_of
from ..errors import InputError
from ..escape.workflow import log_text
from .arms import recorded_alignments
from ..report import CSS, Column, _e, _html_table, _md, _md_table
from ..report.bounds import bound_text
from ..report.columns import idle_text
from ..report.words import named_subexperiment

@dataclass(frozen=True)
class VerdictReport:
    ab_dir: Path
    rounds: Rounds
    decision: v.Decision

    @property
    def status(self) -> str:
        return verdict_of(incomplete=self.decision.incomplete or bool(attempts.unfinished(self.rounds.metadata)),
                          regressed=not self.decision.failed.empty)

    @property
    def exit_code(self) -> int:
        return exit_code(self.status)

    def headline(self) -> str:
        d, table = self.decision, self.decision.table
        tests = f"{len(table)} tests ({len(self.rounds.subexperiments)} sub-experiment(s) x " \
                f"{'/'.join(v.TESTED_STATISTICS)})"
        parts = []
        if not d.failed.empty:
            worst = d.failed.sort_values(v.LOWER_BOUND, ascending=False).iloc[0]
            parts.append(f"{len(d.failed)} of {tests} failed; worst {worst[s.EXPERIMENT_TYPE]} {worst[v.STATISTIC]} "
                         f"{_ratio(worst[v.RATIO])} (lower bound {_ratio(worst[v.LOWER_BOUND])})")
        elif d.layout:
            parts.append(f"no regression above +{d.threshold:.1%} or the sub-experiment's layout threshold in {tests}")
        else:
            parts.append(f"no regression above +{d.threshold:.1%} in {tests}")
        sized = d.table[d.table[v.LAYOUT_SIZED]]
        if not sized.empty:
            parts.append("layout-sized, not a failure: " + ", ".join(
                f"{r[s.EXPERIMENT_TYPE]} {r[v.STATISTIC]} {_percent(r[v.RATIO])} (layout threshold "
                f"+{r[v.THRESHOLD]:.1%})" for _, r in sized.iterrows()))
        if d.too_few_rounds:
            few = ", ".join(f"{sub} ({n})" for sub, n in d.too_few_rounds.items())
            parts.append(f"too few usable rounds for {few}: a test needs at least {d.rounds_needed} to ever reject "
                         f"at family-wise {d.alpha:g}")
        if d.undecided:
            parts.append(curtail.undecided_text(d))
        if attempts.unfinished(self.rounds.metadata):
            parts.append(attempts.unfinished_text(attempts.unfinished(self.rounds.metadata)))
        return f"{self.status}: " + "; ".join(parts)


def _ratio(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:.3f}x"


def _percent(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{(value - 1) * 100:+.1f} %"


# --- the files -------------------------------------------------------------------------------------
def ordered_for_reading(table: pd.DataFrame) -> pd.DataFrame:
    """Failed first (largest lower bound first), then the rest in contract order."""
    failed = table[table[s.STATUS] == s.FAILED].sort_values(v.LOWER_BOUND, ascending=False)
    return pd.concat([failed, table[table[s.STATUS] != s.FAILED]])


def verdict_json(report: VerdictReport) -> dict:
    d = report.decision
    meta = report.rounds.metadata or Metadata()

    def rows(frame: pd.DataFrame) -> list[dict]:
        return [{"subexperiment": r[s.EXPERIMENT_TYPE], "statistic": r[v.STATISTIC], "ratio": round(r[v.RATIO], 6),
                 "lower_bound": round(r[v.LOWER_BOUND], 6), "p_value": r[v.P_VALUE], "adjusted_p_value": r[v.ADJUSTED_P],
                 "rounds": int(r[v.ROUNDS])} for _, r in frame.iterrows()]

    return {
        "status": report.status, "exit_code": report.exit_code, "headline": report.headline(),
        "method": "exact one-sided sign test on per-round mean log ratios, Holm over all tests",
        "threshold": d.threshold, "alpha": d.alpha, "tests": len(d.table), "rounds_needed": d.rounds_needed,
        "rounds": report.rounds.round_names, "too_few_rounds": d.too_few_rounds,
        **curtail.json_fields(d),
        # the bound each sub-experiment was tested at, and the layout thresholds that raised some of them
        "thresholds": {sub: d.threshold_of(sub) for sub in report.rounds.subexperiments},
        "layout_thresholds": {"file": d.layout_source, "thresholds": d.layout} if d.layout_source else None,
        "layout_sized": rows(d.table[d.table[v.LAYOUT_SIZED]]),
        "smallest_detectable_change": {k: (round(x, 4) if math.isfinite(x) else None)
                                       for k, x in d.smallest_detectable.items()},
        "failed": rows(d.failed), "improved": rows(d.table[d.table[v.IMPROVED]]),
        "arms": as_json(meta.arms), "align_functions": recorded_alignments(meta.arms),
        "cpu_pinning": as_json(meta.cpu_pinning), "samples": meta.samples, "load_average": as_json(meta.load_average),
    }


def junit_xml(report: VerdictReport) -> str:
    d = report.decision
    cases = []
    for _, row in d.table.iterrows():
        summary = (f"{row[s.EXPERIMENT_TYPE]} {row[v.STATISTIC]}: candidate {_ratio(row[v.RATIO])} the baseline "
                   f"(lower bound {_ratio(row[v.LOWER_BOUND])}, threshold {1 + row[v.THRESHOLD]:.3f}x"
                   + (", layout-sized: the global threshold alone would fail it" if row[v.LAYOUT_SIZED] else "")
                   + "), "
                   f"p = {row[v.P_VALUE]:.3g}, Holm-adjusted {row[v.ADJUSTED_P]:.3g}, {row[v.ROUNDS]} rounds")
        too_few, failed = row[s.EXPERIMENT_TYPE] in d.too_few_rounds, row[s.STATUS] == s.FAILED
        case = TestCase(f"{row[s.EXPERIMENT_TYPE]} {row[v.STATISTIC]} vs baseline", classname=row[s.EXPERIMENT_TYPE],
                        stdout=None if too_few or failed else summary)
        if too_few:
            case.add_error_info(summary, report.headline(), "too_few_rounds")
        elif failed:
            case.add_failure_info(summary, summary, "regression")
        cases.append(case)
    return junit_writer.document("perfgate ab", [junit_writer.suite("ab_verdict", cases)])


def heatmap_frame(decision: v.Decision, subs: list[str]) -> tuple[pd.DataFrame, set[tuple[str, int]],
                                                                  set[tuple[str, int]]]:
    """The Median's change per sub-experiment and payload in %, the cells whose own test says slower beyond
    the threshold (their lower bound clears it) and those whose mirrored test says faster."""
    medians = decision.payloads[decision.payloads[v.STATISTIC] == s.MEDIAN]
    changes = medians.pivot(index=s.EXPERIMENT_TYPE, columns=s.BYTES, values=v.RATIO).reindex(subs)
    significant = {(r[s.EXPERIMENT_TYPE], int(r[s.BYTES])) for _, r in medians.iterrows()
                   if r[v.LOWER_BOUND] > 1 + decision.threshold_of(r[s.EXPERIMENT_TYPE])}
    faster = {(r[s.EXPERIMENT_TYPE], int(r[s.BYTES])) for _, r in medians.iterrows() if r[v.IMPROVED]}
    return (changes - 1) * 100, significant, faster


# what the heatmap's colours and marks mean: under the picture and beside it on the page
HEATMAP_LEGEND = ("Colour: the payload's own test says slower (red) or faster (blue) beyond the threshold at the "
                  "verdict's level; grey: a change these rounds cannot tell from noise. \u2022: slower beyond the "
                  "threshold. Red frame: the sub-experiment failed.")


# --- the readers' views ------------------------------------------------------------------------------
def layout_line(source: str, threshold: float, layout: dict[str, float], subs) -> str:
    """Which layout thresholds a verdict applied: "layout thresholds from FILE: sub +x%, ..." (those of
    `subs` that raise the bound above `threshold`); an A/B's settings and `perfgate bisect` say it so."""
    raised = {sub: v.bound_of(threshold, layout, sub) for sub in subs if v.bound_of(threshold, layout, sub) > threshold}
    return (f"layout thresholds from {source}: " + (", ".join(f"{sub} +{x:.1%}" for sub, x in raised.items())
                                                    or "none above the threshold") + " (docs/verdict.md)")


def setting_lines(report: VerdictReport) -> list[str]:
    meta, d = report.rounds.metadata, report.decision
    pin = meta.cpu_pinning if meta else None
    arms = (meta.arms if meta else None) or {}
    pinning = (f"pinned (publisher CPU {pin.publisher_cpu}, subscriber CPU {pin.subscriber_cpu})"
               if pin and pin.pinned else "not pinned" if pin else "pinning not recorded")
    detectable = [x for x in d.smallest_detectable.values() if math.isfinite(x)]
    rounds = curtail.rounds_text(d, len(report.rounds.round_names))
    if meta:
        load = ((meta.load_average.before if meta.load_average else None) or ["?"])[0]
        turns = meta.turn_samples  # absent: an A/B from before turns existed
        order = f"both arms in turns of {turns} round trips" if turns else "the arms one after the other"
        if meta.layouts:
            order += f", rounds rotating through {meta.layouts} code layouts of each build"
        samples = meta.samples if meta.samples is not None else "?"
        idle = idle_text(meta.cpu_latency)
        idle = f", idle CPUs {idle}" if idle else ""
        rounds += f", {samples} samples per payload, {order}, {pinning}{idle}, load {load} before"
    else:
        rounds += f"; no {s.METADATA_FILE} beside the rounds: arms, samples and pinning not recorded"
    lines = [rounds,
             f"threshold +{d.threshold:.1%}, family-wise false-alarm level {d.alpha:g} (Holm over {len(d.table)} tests)"]
    if d.layout_source:
        lines.append(layout_line(d.layout_source, d.threshold, d.layout, report.rounds.subexperiments))
    if detectable:
        lines.append(f"smallest slow-down these rounds detect with 95 % power: +{min(detectable):.1%} "
                     f"(best sub-experiment) to +{max(detectable):.1%} (noisiest)")
    alignments = recorded_alignments(arms)
    for name in s.AB_ARMS if arms else ():
        arm = arms.get(name) or AbArm()
        fastdds = arm.fastdds or FastDDS()
        delay = arm.injected_echo_delay_ns or {}
        lines.append(f"{name}: {arm.spec or '?'} (Fast DDS {fastdds.version or '?'}"
                     + (f", commit {fastdds.commit[:12]}" if fastdds.commit else "")
                     + (f", functions aligned to {alignments[name]} bytes" if alignments.get(name) else "") + ")"
                     + (", injected echo delay " + ", ".join(f"{sub} {ns} ns" for sub, ns in delay.items())
                        if delay else ""))
    return lines + ["Baseline and Candidate: each arm's round-trip latency in us, per round the geometric mean over "
                    "the payloads, then the median over the test's rounds; Change: the median of the rounds' paired "
                    "changes (each round's candidate against that round's baseline), the quantity tested, which can "
                    "disagree with Candidate / Baseline when single rounds jump"]


def _status(row: pd.Series) -> str:
    return row[s.STATUS] + (" (improved)" if row[v.IMPROVED] else "") + (" (layout-sized)" if row[v.LAYOUT_SIZED] else "")


def _microseconds(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value:.4g}"


# the tables of report.md and report.html, in the gate report's table helpers and style; the values are
# each arm's median over the test's rounds of its geometric mean over the payloads (ab.verdict)
TEST_COLUMNS = [
    Column("Sub-experiment", lambda r: str(r[s.EXPERIMENT_TYPE]), text=True),
    Column("Statistic", lambda r: str(r[v.STATISTIC]), text=True),
    Column("Baseline [us]", lambda r: _microseconds(r[v.BASELINE_MEDIAN])),
    Column("Candidate [us]", lambda r: _microseconds(r[v.CANDIDATE_MEDIAN])),
    Column("Change", lambda r: _percent(r[v.RATIO])),
    Column("Threshold", lambda r: f"+{100 * r[v.THRESHOLD]:.1f} %"),  # as Change, and as the gate's pages
    Column("Lower bound", lambda r: bound_text(r[v.LOWER_BOUND], r[v.ROUNDS], v.LOWER_BOUND)),
    Column("p (Holm)", lambda r: f"{r[v.ADJUSTED_P]:.3g}"),
    Column("Rounds", lambda r: str(r[v.ROUNDS])),
    Column("Status", _status, text=True),
    Column("Reason", lambda r: str(r[v.REASON]), text=True, wrap=True),
]
# with the planned rounds known: the rounds each test used "of" them
TEST_COLUMNS_PLANNED = [column if column.header != "Rounds" else
                        Column("Rounds", lambda r: f"{r[v.ROUNDS]} of {r[curtail.PLANNED]}")
                        for column in TEST_COLUMNS]
PAYLOAD_COLUMNS = [
    Column("Sub-experiment", lambda r: str(r[s.EXPERIMENT_TYPE]), text=True),
    Column("Statistic", lambda r: str(r[v.STATISTIC]), text=True),
    Column("Bytes", lambda r: str(int(r[s.BYTES]))),
    Column("Change", lambda r: _percent(r[v.RATIO])),
    Column("Lower bound", lambda r: bound_text(r[v.LOWER_BOUND], r[v.ROUNDS], v.LOWER_BOUND)),
]


def markdown(report: VerdictReport) -> str:
    lines = [f"## perfgate A/B verdict: **{report.status}**", "", _md(report.headline()), ""]
    lines += [f"- {_md(line)}" for line in setting_lines(report)] + [""]
    return "\n".join(lines + _md_table(*curtail.with_planned(ordered_for_reading(explain.explained(report.decision)),
                                                             report.decision, TEST_COLUMNS, TEST_COLUMNS_PLANNED)))


def html_page(report: VerdictReport, heatmap_uri: str | None) -> str:
    picture = f'<img alt="change of the median per sub-experiment and payload" src="{heatmap_uri}">' if heatmap_uri else ""
    tests = _html_table(*curtail.with_planned(ordered_for_reading(explain.explained(report.decision)), report.decision, TEST_COLUMNS,
                                              TEST_COLUMNS_PLANNED), lambda r: str(r[s.STATUS]))
    drill = _html_table(report.decision.payloads, PAYLOAD_COLUMNS)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>perfgate A/B verdict: {_e(report.status)}</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>{CSS}img{{max-width:100%}}</style></head>
<body><main><h1>perfgate A/B verdict</h1>
<div class="verdict {_e(report.status)}">{_e(report.headline())}</div>
<ul>{"".join(f"<li>{_e(line)}</li>" for line in setting_lines(report))}</ul>
{picture}
<h2>Tests</h2>{tests}
<details><summary>Per payload (drill-down, not tested)</summary>{drill}</details>
<h2>Sub-experiments</h2><ul>{"".join(f"<li>{_e(named_subexperiment(sub))}</li>" for sub in report.rounds.subexperiments)}</ul>
</main></body></html>
"""


# --- the command ------------------------------------------------------------------------------------
def write_outputs(report: VerdictReport, plots: bool) -> None:
    ab_dir, d = report.ab_dir, report.decision
    files.write_csv(ab_dir / s.VERDICT_CSV, v.csv_cells(explain.explained(d), v.VERDICT_COLUMNS + v.EXPLAINED_COLUMNS))
    files.write_csv(ab_dir / s.VERDICT_PAYLOADS_CSV, v.csv_cells(d.payloads, v.PAYLOAD_COLUMNS))
    files.write_text(ab_dir / s.VERDICT_JSON, json.dumps(verdict_json(report), indent=2, default=_json_value) + "\n")
    files.write_text(ab_dir / s.JUNIT_FILE, junit_xml(report))
    files.write_text(ab_dir / s.REPORT_MARKDOWN, markdown(report))
    heatmap_uri = None
    if plots:
        from ..plotting.verdict_plots import draw_heatmap
        from ..report import embedded_images

        changes, significant, faster = heatmap_frame(d, report.rounds.subexperiments)
        path = ab_dir / s.PLOTS_DIR / s.VERDICT_HEATMAP_PNG
        path.parent.mkdir(parents=True, exist_ok=True)
        draw_heatmap(changes, set(d.failed[s.EXPERIMENT_TYPE]), significant, path,
                     f"Median, candidate vs baseline: {report.status}", better=faster, legend=HEATMAP_LEGEND)
        heatmap_uri = embedded_images(path.parent).get(path)
    files.write_text(ab_dir / s.REPORT_HTML, html_page(report, heatmap_uri))


def _json_value(value):
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON: {type(value)}")


def command_verdict(*, ab_directory, threshold=None, alpha=None, no_plots=False, program="verdict",
                    layout_thresholds=None, platform_layout=True) -> int:
    """Decide an A/B folder from its rounds. Latency: at max(threshold, each sub-experiment's layout
    threshold) from `layout_thresholds`, else (with `platform_layout`) requirements/<$PERFGATE_PLATFORM>_layout.json."""
    if ab_throughput_report.is_throughput_ab(Path(ab_directory)):
        if layout_thresholds is not None:
            raise InputError("--layout-thresholds: layout thresholds are for latency A/Bs; this is a throughput A/B",
                             ab_directory)
        return ab_throughput_report.command_verdict(ab_directory=ab_directory, threshold=threshold, alpha=alpha,
                                                    no_plots=no_plots, program=program)
    require_parameters(threshold, alpha)
    layout = layout_file.resolve(layout_thresholds) if layout_thresholds is not None or platform_layout else None
    return decide_latency(ab_directory, threshold, alpha, layout, draw=not no_plots, program=program)


def decide_latency(ab_directory, threshold: float | None, alpha: float | None,
                   layout_read: layout_file.LayoutThresholds | None, *, draw: bool = True, program: str = "verdict") -> int:
    """Decide a latency A/B folder from its rounds at a layout file already read (None: the threshold alone),
    write its outputs and print its lines: `perfgate ab` decides at the file it planned and curtailed with."""
    threshold, alpha = require_parameters(threshold, alpha)
    layout, layout_source = (layout_read.thresholds, layout_read.path) if layout_read is not None else ({}, None)
    rounds = read_rounds(Path(ab_directory))
    ratios = v.log_ratios(rounds.table)
    planned, stopped = curtail.read_record(Path(ab_directory), rounds.subexperiments, len(rounds.round_names))
    decision = curtail.decide_curtailed(ratios, planned=planned, stopped=stopped, threshold=threshold, alpha=alpha,
                                        order=rounds.subexperiments, layout=layout, layout_source=layout_source)
    report = VerdictReport(Path(ab_directory), rounds, decision)
    write_outputs(report, plots=draw)
    for _, row in ordered_for_reading(decision.table).iterrows():
        if row[s.STATUS] == s.FAILED or row[v.IMPROVED]:
            what = (f"{log_text(row[s.EXPERIMENT_TYPE])} {row[v.STATISTIC]} {_percent(row[v.RATIO])} "
                    f"({_microseconds(row[v.BASELINE_MEDIAN])} -> {_microseconds(row[v.CANDIDATE_MEDIAN])} us, "
                    f"ratio {_ratio(row[v.RATIO])}")
            if row[s.STATUS] == s.FAILED:
                print(f"perfgate {program}: REGRESSION: {what}, lower bound {_ratio(row[v.LOWER_BOUND])}, "
                      f"Holm p {row[v.ADJUSTED_P]:.3g})")
            else:
                print(f"perfgate {program}: improved: {what})")
        elif row[v.LAYOUT_SIZED]:
            print(f"perfgate {program}: layout-sized (passed): {log_text(row[s.EXPERIMENT_TYPE])} {row[v.STATISTIC]} "
                  f"{_percent(row[v.RATIO])}, within its layout threshold +{row[v.THRESHOLD]:.1%}")
    for line in setting_lines(report)[:4 if decision.layout_source else 3]:
        print(f"perfgate {program}: {log_text(line)}")
    print(f"perfgate {program}: {log_text(report.headline())}")
    print(f"perfgate {program}: report {log_text((Path(ab_directory) / s.REPORT_HTML).resolve())}")
    if report.status == INCOMPLETE:
        print(f"perfgate {program}: error: {log_text(report.headline())}", file=sys.stderr)
    return report.exit_code
