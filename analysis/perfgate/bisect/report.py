"""bisect.report: what `perfgate bisect` writes into its output folder (docs/bisect.md).

bisect.json (everything a program needs), report.md (answer first), report.html (self-contained, the
chart of the change along the tested commits first) and plots/bisect_change.png. A commit's subject
and author come from the repository bisected, which is untrusted: escaped for each target.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import files
from .. import schema as s
from ..ab import report as ab_report, verdict as v
from ..report import CSS, _e, _md
from . import search
from .commits import Commit, commit_link
from . import names as bisect_names


@dataclass(frozen=True)
class Bisection:
    result: search.Result
    commits: list[Commit]
    url: str
    threshold: float
    alpha: float
    wall_s: float
    # the layout thresholds every A/B was decided at (sub-experiment -> fraction, the requested
    # sub-experiments') and their file; None: no layout file, every test at the threshold
    layout: dict[str, float] = field(default_factory=dict)
    layout_source: str | None = None


def _change(ratio: float) -> str:
    return "n/a" if not math.isfinite(ratio) else f"{(ratio - 1) * 100:+.1f} %"


def _number(value: float) -> float | None:
    return round(value, 6) if math.isfinite(value) else None


def commit_json(bisection: Bisection, index: int) -> dict:
    commit = bisection.commits[index]
    return {"index": index, "sha": commit.sha, "subject": commit.subject, "author": commit.author,
            "date": commit.date, "link": commit_link(bisection.url, commit.sha)}


def measured_json(measured: search.Measured) -> dict:
    return {"rounds": measured.rounds, "incomplete": measured.incomplete, "ab_directory": measured.folder,
            "tests": [{"subexperiment": t.subexperiment, "statistic": t.statistic,
                       "ratio": _number(measured.ratios[t]), "lower_bound": _number(measured.lower_bounds[t]),
                       "threshold": _number(measured.thresholds[t]) if t in measured.thresholds else None,
                       "failed": t in measured.failed, "layout_sized": t in measured.layout_sized}
                      for t in measured.ratios]}


def bisect_json(bisection: Bisection) -> dict:
    result = bisection.result
    return {
        "status": result.status, "exit_code": result.exit_code, "why": result.why,
        "repository": bisection.url, "threshold": bisection.threshold, "alpha": bisection.alpha,
        "layout_thresholds": ({"file": bisection.layout_source, "thresholds": bisection.layout}
                              if bisection.layout_source else None),
        "good": commit_json(bisection, 0), "bad": commit_json(bisection, len(bisection.commits) - 1),
        "commits": len(bisection.commits) - 1, "ab_count": result.ab_count,
        "ab_budget": search.step_budget(len(bisection.commits)), "wall_s": round(bisection.wall_s, 1),
        "change": [{"subexperiment": t.subexperiment, "statistic": t.statistic, "ratio": _number(r)}
                   for t, r in result.change.items()],
        "culprit": None if result.culprit is None else {
            **commit_json(bisection, result.culprit),
            "against_parent": measured_json(result.culprit_change) if result.culprit_change else None},
        "skipped": [{**commit_json(bisection, i), "why": skip_reason(bisection, i)} for i in result.skipped],
        "candidates": [commit_json(bisection, i) for i in result.candidates],
        "steps": [{"kind": step.kind, "commit": bisection.commits[step.commit].sha,
                   "against": bisection.commits[step.against].sha, "outcome": step.outcome, "why": step.why,
                   "wall_s": round(step.wall_s, 1), **(measured_json(step.measured) if step.measured else {})}
                  for step in result.steps],
    }


def skip_reason(bisection: Bisection, index: int) -> str:
    """Why commit `index` was skipped: its build's error, as its step says."""
    return next((step.why for step in bisection.result.steps if step.commit == index and step.outcome == search.SKIPPED),
                "build failed")


def headline(bisection: Bisection) -> str:
    result, commits = bisection.result, bisection.commits
    if result.status == search.FOUND:
        culprit = commits[result.culprit]
        against = result.culprit_change
        changes = ", ".join(f"{t} {_change(against.ratios[t])} (lower bound {_change(against.lower_bounds[t])})"
                            for t in sorted(against.failed, key=str)) if against else ""
        return f"REGRESSION: culprit {culprit.short} \"{culprit.subject}\" ({culprit.author}): {changes}"
    if result.status == search.NOT_REGRESSED:
        return f"PASS: {commits[-1].short} does not regress against {commits[0].short}"
    return f"INCOMPLETE: cannot decide: {result.why}"


def layout_lines(threshold: float, layout: dict[str, float], source: str | None) -> list[str]:
    """Which layout thresholds every A/B was decided at, as `perfgate ab` says it (none: no line)."""
    return [ab_report.layout_line(source, threshold, layout, list(layout))] if source else []


def summary_lines(bisection: Bisection) -> list[str]:
    result = bisection.result
    lines = [headline(bisection),
             f"{result.ab_count} A/B(s) (budget {search.step_budget(len(bisection.commits))} for "
             f"{len(bisection.commits) - 1} commit(s)), {len(result.skipped)} skipped build(s), "
             f"{bisection.wall_s:.0f} s"]
    lines += layout_lines(bisection.threshold, bisection.layout, bisection.layout_source)
    for index in result.skipped:  # the error's first line (a build's log tail is in the steps and bisect.json)
        first, *more = skip_reason(bisection, index).split(" / ", 1)
        lines.append(f"skipped {bisection.commits[index].short}: {first}" + (" (more in its step)" if more else ""))
    if result.candidates:
        lines.append("the culprit is one of: " + ", ".join(bisection.commits[i].short for i in result.candidates))
    return lines


def _label(measured: search.Measured, test: search.Test) -> str:
    """A step's test as the A/B's report marks it: failed, or passed but layout-sized (the verdict's
    own LAYOUT_SIZED: the global threshold alone would have failed it)."""
    if test in measured.failed:
        return " (failed)"
    return f" ({v.LAYOUT_SIZED})" if test in measured.layout_sized else ""


def step_rows(bisection: Bisection) -> pd.DataFrame:
    rows = []
    for number, step in enumerate(bisection.result.steps, start=1):
        commit, against = bisection.commits[step.commit], bisection.commits[step.against]
        measured = step.measured
        rows.append({"#": number, "kind": step.kind, "commit": commit.short, "subject": commit.subject,
                     "against": against.short, "rounds": measured.rounds if measured else "",
                     "change": "; ".join(f"{t} {_change(r)}" + _label(measured, t)
                                         for t, r in measured.ratios.items()) if measured else "",
                     "outcome": step.outcome, "why": step.why, "wall [s]": f"{step.wall_s:.0f}"})
    return pd.DataFrame(rows)


def chart_points(bisection: Bisection) -> pd.DataFrame:
    """Per commit measured against good, per test of the change: its last measurement (most rounds)."""
    from ..plotting.bisect_plots import CHANGE, INDEX, LOWER, TEST
    latest = {}
    for step in bisection.result.steps:
        if step.measured is not None and step.against == 0:
            latest[step.commit] = step.measured
    rows = [{TEST: str(t), INDEX: index, CHANGE: (m.ratios[t] - 1) * 100, LOWER: (m.lower_bounds[t] - 1) * 100}
            for index, m in latest.items() for t in bisection.result.change if t in m.ratios]
    return pd.DataFrame(rows, columns=[TEST, INDEX, CHANGE, LOWER])


def markdown(bisection: Bisection) -> str:
    result = bisection.result
    lines = [f"# perfgate bisect: {result.status}", "", _md(headline(bisection)), ""]
    for line in summary_lines(bisection)[1:]:  # a paragraph each: the skipped commits' lines not run together
        lines += [_md(line), ""]
    if result.culprit is not None:
        culprit = bisection.commits[result.culprit]
        link = commit_link(bisection.url, culprit.sha)
        lines += [f"Culprit: {f'[{culprit.sha}]({link})' if link else culprit.sha}, {_md(culprit.subject)}, "
                  f"{_md(culprit.author)}, {_md(culprit.date)}", ""]
    table = step_rows(bisection)
    if len(table):
        lines += ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
        lines += ["| " + " | ".join(_md(str(value)) for value in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def html_page(bisection: Bisection, chart_uri: str | None) -> str:
    result = bisection.result
    colour = {search.FOUND: "#cf222e", search.NOT_REGRESSED: "#1a7f37"}.get(result.status, "#9a6700")
    parts = [f'<div class="verdict" style="background:{colour}">{_e(headline(bisection))}</div>']
    parts += [f"<p>{_e(line)}</p>" for line in summary_lines(bisection)[1:]]
    if result.culprit is not None:
        culprit = bisection.commits[result.culprit]
        link = commit_link(bisection.url, culprit.sha)
        sha = f'<a href="{_e(link)}">{_e(culprit.sha)}</a>' if link else _e(culprit.sha)
        parts.append(f"<p>Culprit: {sha}, {_e(culprit.subject)}, {_e(culprit.author)}, {_e(culprit.date)}</p>")
    if chart_uri:
        parts.append(f'<h2>The change along the tested commits</h2><img alt="change along the commits" '
                     f'src="{chart_uri}" style="max-width:100%">')
    table = step_rows(bisection)
    if len(table):
        numbers = {"#", "rounds", "wall [s]"}  # the rest is text, left-aligned (CSS class "text")
        kind = [("" if column in numbers else ' class="text"') for column in table.columns]
        head = "".join(f"<th{k}>{_e(column)}</th>" for k, column in zip(kind, table.columns))
        body = "".join("<tr>" + "".join(f"<td{k}>{_e(str(value))}</td>" for k, value in zip(kind, row)) + "</tr>"
                       for row in table.itertuples(index=False))
        parts.append(f"<h2>Steps</h2><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>perfgate bisect</title>"
            f"<style>{CSS}</style></head><body><main><h1>perfgate bisect: {_e(result.status)}</h1>"
            + "".join(parts) + "</main></body></html>\n")


def write(output: Path, bisection: Bisection, plots: bool) -> None:
    files.write_text(output / bisect_names.BISECT_JSON, json.dumps(bisect_json(bisection), indent=2) + "\n")
    files.write_text(output / s.REPORT_MARKDOWN, markdown(bisection))
    chart_uri = None
    points = chart_points(bisection)
    if plots and len(points):
        from ..plotting.bisect_plots import draw_bisect_chart
        from ..report import embedded_images

        path = output / s.PLOTS_DIR / bisect_names.BISECT_CHART_PNG
        path.parent.mkdir(parents=True, exist_ok=True)
        result = bisection.result
        draw_bisect_chart(points, [c.short for c in bisection.commits], result.skipped, result.culprit, path,
                          f"perfgate bisect: {result.status}")
        chart_uri = embedded_images(path.parent).get(path)
    files.write_text(output / s.REPORT_HTML, html_page(bisection, chart_uri))
