"""report.html: the self-contained HTML page of a gate run, every plot embedded (shrunk when the
plots together would make the page too heavy)."""
from __future__ import annotations

import base64
import io
import math
import os
import re
from pathlib import Path
from typing import Callable

import pandas as pd
from PIL import Image

from .. import schema as s
from ..escape.html import text as html_text
from ..latency.experiments import sort_subexperiments
from ..pools import worker_pool
from . import ab_view
from .columns import (BASELINE_CHANGE_COLUMNS, BASELINE_FAILURE_COLUMNS, MISSING_COLUMNS, Column, check_columns,
                      metadata_items)
from .words import subexperiment_words
from .tables import (PAYLOADS, REASON, SUB, ExperimentResults, Verdict, baseline_table, check_rows, failed_checks,
                     missing_data, missing_groups, not_asked_data, requested_subs, sub_outcome, verdict)

# Above this many bytes of PNG the page re-encodes its images (shrink_image) to stay a few MB for a
# full ten-sub experiment (254 plots, 13.6 MB of PNG).
IMAGE_BUDGET = 3_000_000
PALETTE_COLOURS = 64
MAX_IMAGE_WIDTH = 1200


CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
main{max-width:1400px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:24px;margin:8px 0 12px}
h2{font-size:20px;margin:32px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:16px;margin:20px 0 6px}
.verdict{padding:14px 18px;border-radius:6px;font-size:18px;font-weight:600;color:#fff}
.verdict a{color:inherit}.verdict.PASS{background:#1a7f37}.verdict.REGRESSION{background:#cf222e}.verdict.INCOMPLETE{background:#9a6700}
.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:12px 0;background:#fff;
  padding:10px 14px;border:1px solid #d0d7de;border-radius:6px}
.meta dt{font-weight:600}.meta dd{margin:0;font-family:ui-monospace,monospace;font-size:13px;overflow-wrap:anywhere}
table{border-collapse:collapse;background:#fff;margin:6px 0 12px;font-size:13px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:right;white-space:nowrap}
th{background:#eaeef2;position:sticky;top:0}td.text,th.text{text-align:left}td.wrap{white-space:normal;min-width:18em}
tr.failed td{background:#ffebe9}tr.missing td{background:#fff8c5}
.status-failed{color:#cf222e;font-weight:600}.status-passed{color:#1a7f37}.status-noted{color:#9a6700}
nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:6px}
nav a{display:inline-block;padding:3px 10px;border-radius:12px;background:#fff;border:1px solid #d0d7de;
  text-decoration:none;color:#1f2328;font-size:13px}
nav a.failed{border-color:#cf222e;color:#cf222e;font-weight:600}nav a.missing{border-color:#9a6700;color:#9a6700}
nav a.passed{border-color:#1a7f37;color:#1a7f37}nav a.unchecked{border-style:dashed;color:#59636e}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:10px}
figure{margin:0;background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:6px}
figure img{width:100%;height:auto;display:block}
figcaption{font-size:12px;color:#59636e;font-family:ui-monospace,monospace}
details>summary{cursor:pointer;font-weight:600;margin:8px 0}
.note{color:#59636e}ul.errors{color:#cf222e}ul.warnings{color:#9a6700}
"""


def _e(text) -> str:
    return html_text(text)


def _html_table(rows: pd.DataFrame, columns: list[Column], row_class: Callable[[pd.Series], str] = lambda r: "") -> str:
    """Every cell escaped; a Status column's cells coloured by their value."""
    head = "".join(f'<th class="{"text" if c.text else ""}">{_e(c.header)}</th>' for c in columns)
    body = []
    for _, row in rows.iterrows():
        cells = []
        for column in columns:
            text = column.cell(row)
            classes = ("text " if column.text else "") + ("wrap " if column.wrap else "") \
                + (f"status-{text}" if column.header == "Status" else "")
            cells.append(f'<td class="{_e(classes.strip())}">{_e(text)}</td>')
        body.append(f'<tr class="{_e(row_class(row))}">{"".join(cells)}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _check_row_class(row: pd.Series) -> str:
    return row[s.STATUS] if row[s.STATUS] in s.CHECK_STATUSES else "missing"


def _natural_key(path: Path) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.as_posix())]


class _Plots:
    """The page's images, handed out once each, so that whatever no section claims still gets shown."""

    def __init__(self, images: dict[Path, str], plots_dir: Path) -> None:
        self.images, self.plots_dir, self.placed = images, plots_dir, set()

    def in_dir(self, directory: Path) -> list[Path]:
        return sorted((p for p in self.images if p.parent == directory and p not in self.placed), key=_natural_key)

    def subdirs(self, directory: Path) -> list[Path]:
        return sorted({p.parent for p in self.images if p.parent.parent == directory}, key=_natural_key)

    def rest(self) -> list[Path]:
        return sorted((p for p in self.images if p not in self.placed), key=_natural_key)

    def figures(self, paths: list[Path]) -> str:
        self.placed.update(paths)
        figures = []
        for path in paths:
            caption = path.relative_to(self.plots_dir).as_posix() if path.is_relative_to(self.plots_dir) else path.name
            figures.append(f'<figure><img src="{self.images[path]}" alt="{_e(caption)}" loading="lazy">'
                           f"<figcaption>{_e(caption)}</figcaption></figure>")
        return f'<div class="plots">{"".join(figures)}</div>' if figures else ""


def _sub_plot_order(sub_dir: Path, paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """(check plots, then per-payload plots: each payload's histogram beside its time series)."""
    checks = [p for p in (sub_dir / f"check_{slug}.png" for slug in s.CHECK_SLUGS.values()) if p in paths]
    per_payload = sorted((p for p in paths if p not in checks),
                         key=lambda p: ([int(n) for n in re.findall(r"\d+", p.stem)] or [math.inf], p.name))
    return checks, per_payload


def _html_head(results: ExperimentResults, result: Verdict) -> list[str]:
    label = results.metadata.label if results.metadata and results.metadata.label is not None \
        else results.experiment_dir.name
    title = f"perfgate report: {label}"  # latency, and throughput or topologies when the gate measured them
    meta = "".join(f"<dt>{_e(n)}</dt><dd>{_e(v)}</dd>" for n, v in metadata_items(results.metadata, results.platform_name))
    out = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>',
           f'<meta name="viewport" content="width=device-width,initial-scale=1"><style>{CSS}</style></head>',
           f"<body><main><h1>{_e(title)}</h1>",
           f'<div class="verdict {_e(result.status)}">{_e(result.headline())}</div>',
           *[f'<div class="verdict {_e(ab.verdict.status)}">{_e(ab_view.banner_text(ab))} '
             f'(<a href="{_e(ab.link)}">A/B report</a>)</div>' for ab in (results.ab,) if ab is not None],
           *([f'<div class="verdict {_e(result.throughput_status)}">Throughput: {_e(results.throughput_headline)} '
              f'(<a href="{s.THROUGHPUT_DIR}/">throughput/</a>: tables, checks, plots'
              + (f'; <a href="{s.THROUGHPUT_DIR}/{s.AB_DIR}/{s.REPORT_HTML}">throughput A/B report</a>'
                 if (results.experiment_dir / s.THROUGHPUT_DIR / s.AB_DIR / s.REPORT_HTML).is_file() else "")
              + ')</div>']
             if results.throughput_headline else []),
           *([f'<div class="verdict {_e(result.topology_status)}">Topologies: {_e(results.topology_headline)} '
              f'(<a href="topology/">topology/</a>: one folder per topology, its tables, checks and plots)</div>']
             if results.topology_headline else []),
           f'<dl class="meta">{meta}'
           + (f"<dt>measured</dt><dd>{_e(results.fastdds_note)}</dd>" if results.fastdds_note else "")
           + "".join(f"<dt>baseline build</dt><dd>{_e(ab.baseline)}</dd>" for ab in (results.ab,) if ab is not None)
           + f'<dt>requirements</dt><dd>{_e(results.requirements_path)}</dd>'
           f"<dt>experiment</dt><dd>{_e(results.experiment_dir)}</dd></dl>"]
    if results.step_errors:
        out.append('<ul class="errors">' + "".join(f"<li>{_e(e)}</li>" for e in results.step_errors) + "</ul>")
    if results.warnings:
        out.append('<ul class="warnings">' + "".join(f"<li>{_e(w)}</li>" for w in results.warnings) + "</ul>")
    return out


def chip_state(sub: str, results: ExperimentResults, failed: pd.DataFrame, missing: pd.DataFrame) -> tuple[str, str]:
    """(class, text) of a sub-experiment's chip: the A/B's verdict on it first (a regression there is
    red whatever the gross checks say), then the checks."""
    # each A/B named by what it measures: "A/B passed, A/B passed" said neither which
    named = [(name, ab.sub_state(sub)) for name, ab in (("latency A/B", results.ab), ("throughput A/B", results.throughput_ab))
             if ab is not None]
    ab_states = [state for _, state in named]
    checks = ("failed" if sub in set(failed[SUB]) else "missing" if sub in set(missing[SUB])
              else "passed" if sub in results.checks else "unchecked")
    said = [f"{name} {state}" for name, state in named if state] + ([f"checks {checks}"] if checks != "unchecked" else [])
    text = f"{sub}: {', '.join(said)}" if said else sub
    for state in ("failed", "missing"):
        if state in ab_states or checks == state:
            return state, text
    return ("passed" if "passed" in ab_states or checks == "passed" else "unchecked"), text


def _html_nav(subs: list[str], results: ExperimentResults, failed: pd.DataFrame, missing: pd.DataFrame) -> str:
    links = []
    for sub in subs:
        state, text = chip_state(sub, results, failed, missing)
        links.append(f'<li><a class="{state}" href="#sub-{_e(sub)}" title="{_e(text)}">{_e(text)}</a></li>')
    return f"<nav><ul>{''.join(links)}</ul></nav>"


def _html_baseline(results: ExperimentResults, plots: _Plots) -> list[str]:
    out = [f"<h2>Baseline comparison</h2><p>{_e(results.baseline_note)}</p>"]
    if results.baseline_failures is not None and not results.baseline_failures.empty:
        out.append("<h3>Over the limit</h3>"
                   + _html_table(results.baseline_failures, BASELINE_FAILURE_COLUMNS, lambda r: "failed"))
    baseline_dir = plots.plots_dir / s.BASELINE_COMPARISON_DIR
    out.append(plots.figures(plots.in_dir(baseline_dir)))
    for sub_dir in plots.subdirs(baseline_dir):
        out.append(f"<h3>{_e(sub_dir.name)}</h3>" + plots.figures(plots.in_dir(sub_dir)))
    return out


def _html_sub(sub: str, results: ExperimentResults, rows: pd.DataFrame, missing: pd.DataFrame,
              against_baseline: pd.DataFrame, plots: _Plots) -> list[str]:
    """One sub-experiment: what is missing, its checks (folded when all passed), check plots, the
    per-payload plots (folded unless a check failed) and the comparison with the baseline (folded)."""
    words = subexperiment_words(sub)
    out = [f'<h2 id="sub-{_e(sub)}">{_e(sub)}</h2>' + (f'<p class="note">{_e(words)}</p>' if words != sub else "")]
    outcome, error = sub_outcome(results.metadata, sub)
    sub_missing = missing[missing[SUB] == sub]
    if outcome != s.OUTCOME_OK and sub_missing.empty:  # a sub that is not gated: said here only
        out.append(f'<p class="status-failed">Run {_e(outcome)}{": " + _e(error) if error else ""}</p>')
    for _, group in missing_groups(sub_missing).iterrows():
        out.append(f'<p class="status-failed">Missing {_e(group[PAYLOADS])}: {_e(group[REASON])}</p>')
    sub_rows = rows[rows[SUB] == sub]
    failures = int((sub_rows[s.STATUS] == s.FAILED).sum())
    if not sub_rows.empty:
        table = _html_table(sub_rows, check_columns(with_sub=False, with_baseline=bool(results.comparisons)),
                            _check_row_class)
        if failures or not sub_missing.empty:
            out.append(table)
        else:  # nothing to look at: folded, so that a full page stays scannable
            out.append(f"<details><summary>All {len(sub_rows)} checks passed</summary>{table}</details>")
    elif sub_missing.empty:
        out.append('<p class="note">Not checked: the requirements list nothing for it (measured for reference).</p>')
    sub_dir = s.sub_plots_dir(plots.plots_dir, sub)
    check_plots, per_payload = _sub_plot_order(sub_dir, plots.in_dir(sub_dir))
    out.append(plots.figures(check_plots))
    if per_payload:
        out.append(f"<details{' open' if failures else ''}><summary>Histograms and time series "
                   f"({len(per_payload)} plots)</summary>{plots.figures(per_payload)}</details>")
    sub_changes = against_baseline[against_baseline[SUB] == sub]
    if not sub_changes.empty:
        out.append("<details><summary>Against the baseline</summary>"
                   + _html_table(sub_changes, BASELINE_CHANGE_COLUMNS) + "</details>")
    return out


def html_page(results: ExperimentResults, images: dict[Path, str]) -> str:
    """The page: verdict, metadata, failed checks, missing data, baseline, plots, one section per sub.

    images: every PNG of the experiment's plots folder -> its data URI; every one is placed."""
    result = verdict(results)
    rows = check_rows(results)
    failed = failed_checks(rows)
    missing = missing_data(results)
    plots = _Plots(images, results.experiment_dir / s.PLOTS_DIR)
    plotted = [d.name for d in plots.subdirs(plots.plots_dir) if d.name != s.BASELINE_COMPARISON_DIR]
    subs = sort_subexperiments(dict.fromkeys(requested_subs(results.metadata, results.checks)
                                             + missing[SUB].tolist() + plotted))

    out = _html_head(results, result)
    out.append(_html_nav(subs, results, failed, missing))
    out += [ab_view.html_section(ab) for ab in (results.ab, results.throughput_ab) if ab is not None]
    if results.ab is not None:  # the A/B decided; the requirement checks below catch gross failures only
        out.append('<p class="note">Gross checks: the measured run against the platform\'s requirements '
                   "(docs/verdict.md).</p>")
    out.append(f"<h2>Failed checks ({len(failed)})</h2>")
    out.append(_html_table(failed, check_columns(with_sub=True, with_baseline=bool(results.comparisons)),
                           _check_row_class) if not failed.empty else '<p class="note">None.</p>')
    out.append(f"<h2>Missing data ({len(missing)})</h2>")
    out.append(_html_table(missing_groups(missing), MISSING_COLUMNS, lambda r: "missing")
               if not missing.empty else '<p class="note">None.</p>')
    not_asked = not_asked_data(results)
    if not not_asked.empty:  # listed once, never checked: the run was narrowed (docs/formats.md section 6)
        out.append(f"<h2>Not asked for ({len(not_asked)} requirement rows, not checked)</h2>")
        out.append(_html_table(missing_groups(not_asked), MISSING_COLUMNS[:2]))
    out += _html_baseline(results, plots)
    out.append("<h2>Sub-experiments compared</h2>")
    out.append(plots.figures(plots.in_dir(plots.plots_dir)) or '<p class="note">No comparison plots.</p>')
    against_baseline = baseline_table(results.comparisons)
    for sub in subs:
        out += _html_sub(sub, results, rows, missing, against_baseline, plots)
    rest = plots.rest()
    if rest:
        out.append("<h2>Other plots</h2>" + plots.figures(rest))
    out.append("</main></body></html>\n")
    return "\n".join(out)



def shrink_image(data: bytes) -> tuple[str, bytes]:
    """(MIME type, image): the plot with a 64-colour palette (plots are flat colours, so this loses
    nothing visible), at most MAX_IMAGE_WIDTH wide, as lossless WebP, which every current browser
    shows: about a fifth of the PNG. The PNG itself when that is smaller."""
    with Image.open(io.BytesIO(data)) as image:
        image = image.convert("RGB")
        if image.width > MAX_IMAGE_WIDTH:
            height = round(image.height * MAX_IMAGE_WIDTH / image.width)
            image = image.resize((MAX_IMAGE_WIDTH, height), Image.Resampling.LANCZOS)
        palette = image.quantize(colors=PALETTE_COLOURS, method=Image.Quantize.FASTOCTREE).convert("RGB")
        buffer = io.BytesIO()
        palette.save(buffer, format="WEBP", lossless=True, method=4)
    shrunk = buffer.getvalue()
    return ("image/webp", shrunk) if len(shrunk) < len(data) else ("image/png", data)


def embedded_images(plots_dir: Path, budget: int | None = IMAGE_BUDGET) -> dict[Path, str]:
    """Every PNG under the plots folder as a data URI; shrunk when together they exceed `budget` bytes
    (None: never shrunk)."""
    paths = sorted(Path(plots_dir).rglob("*.png"), key=_natural_key) if Path(plots_dir).is_dir() else []
    images = {path: ("image/png", path.read_bytes()) for path in paths}
    if budget is not None and sum(len(data) for _, data in images.values()) > budget:
        # 30-40 ms an image (WebP encoding), so a full run's 300 plots take 12 s on one CPU
        workers = min(len(os.sched_getaffinity(0)), len(images))
        with worker_pool(workers) as pool:
            shrunk = pool.map(shrink_image, [data for _, data in images.values()], chunksize=8)
            images = dict(zip(images, shrunk))
    return {path: f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
            for path, (mime, data) in images.items()}

