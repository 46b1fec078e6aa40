"""latency.process: raw measurements -> summary (docs/formats.md section 4), one payload at a time.

`summary_row` is the pure computation, on one payload's samples; `summarise` applies it to a frame
and `summarise_raw_file` to a file read in chunks, holding one compact float64 array per payload and
never a frame of the whole file (a raw file of 20 million rows is 400 MB of text). The functions
below them read, write and plot around them.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import files, outputs
from .. import schema as s
from ..errors import InputError
from ..escape.workflow import log_text
from ..pools import stop_requested, worker_pool


def summary_row(payload: int, latencies: np.ndarray) -> dict:
    """The summary of one payload's samples, in measured order:

    - percentiles: linear interpolation between closest ranks (position q*(n-1));
    - Stdev: population standard deviation;
    - jitter: |x[i] - x[i-1]| between consecutive samples, in measured order.

    Mean, Stdev and Mean jitter are pandas' grouped mean and standard deviation (compensated sums),
    and the percentiles pandas' grouped quantile formula, so that every value is the very float the
    summaries were always computed with (the published summaries are reproduced to the byte); the
    percentiles come from a partition rather than pandas' sort of the whole group, which took 40
    bytes a sample.
    """
    latencies = np.asarray(latencies, dtype=float)
    one_group = np.zeros(latencies.size, dtype=np.int8)
    grouped = pd.Series(latencies, copy=False).groupby(one_group, sort=False)
    row = {s.BYTES: int(payload), s.SAMPLES: int(latencies.size), s.MAX: float(latencies.max()),
           s.MIN: float(latencies.min()), s.MEAN: float(grouped.mean().iloc[0]),
           s.STDEV: float(grouped.std(ddof=0).iloc[0])}
    del grouped
    jitter = np.diff(latencies)
    np.abs(jitter, out=jitter)
    row[s.MEAN_JITTER] = float(pd.Series(jitter, copy=False).groupby(one_group[1:], sort=False).mean().iloc[0])
    row[s.MAX_JITTER] = float(jitter.max())
    del jitter, one_group
    row.update(percentiles(latencies))
    return row


def percentiles(latencies: np.ndarray) -> dict[str, float]:
    """Median, 90%, 99% and 99.99% as pandas' quantile computes them: at position q*(n-1), the value of
    rank floor(position), plus the step to the next rank times the position's fraction."""
    last = latencies.size - 1
    positions = {column: q * last for column, q in s.PERCENTILES.items()}
    ranks = sorted({int(p) for p in positions.values()} | {min(int(p) + 1, last) for p in positions.values()})
    ordered = np.partition(latencies, ranks)
    values = {}
    for column, position in positions.items():
        rank, fraction = int(position), position % 1
        low = float(ordered[rank])
        values[column] = low if fraction == 0.0 else low + (float(ordered[rank + 1]) - low) * fraction
    return values


def summary_frame(rows: list[dict]) -> pd.DataFrame:
    summary = pd.DataFrame(rows, columns=list(s.SUMMARY_COLUMNS))
    return summary.astype({s.BYTES: np.int64, s.SAMPLES: np.int64})


def summarise(raw: pd.DataFrame) -> pd.DataFrame:
    """One summary row per payload of a raw frame, in the order payloads first appear."""
    payloads = raw[s.PAYLOAD].to_numpy()
    latencies = raw[s.LATENCY].to_numpy(dtype=float)
    rows_of = pd.Series(latencies).groupby(payloads, sort=False).indices
    return summary_frame([summary_row(payload, latencies[rows_of[payload]]) for payload in pd.unique(payloads)])


def raw_payloads(path: Path) -> Iterator[tuple[int, np.ndarray]]:
    """(payload, its latencies in measured order) of a raw file, each as its block of rows ends, read
    in chunks (files.read_raw_chunks): the last comes after every rule was checked, so a consumer
    writes nothing before the generator is exhausted."""
    current, pieces = None, []
    for clean, _ in files.read_raw_chunks(path):
        payloads = clean[s.PAYLOAD].to_numpy()
        latencies = clean[s.LATENCY].to_numpy()
        starts = np.flatnonzero(np.r_[True, payloads[1:] != payloads[:-1]])
        for start, end in zip(starts, np.r_[starts[1:], payloads.size]):
            if payloads[start] != current:
                if current is not None:
                    yield current, _joined(pieces)
                current, pieces = int(payloads[start]), []
            pieces.append(latencies[start:end].copy())  # a copy: the chunk's frame is not kept alive
    if current is not None:
        yield current, _joined(pieces)


def _joined(pieces: list[np.ndarray]) -> np.ndarray:
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)


def summarise_raw_file(path: Path, keep_latencies: bool = False) -> tuple[pd.DataFrame, dict[int, np.ndarray]]:
    """A raw file's summary and (with keep_latencies, for the plots) each payload's latencies; without,
    one payload's samples are held at a time."""
    rows, kept = [], {}
    for payload, latencies in raw_payloads(path):
        if latencies.size < 2:  # no summary: the reader refuses the file once it is read (RawRows.finish)
            continue
        rows.append(summary_row(payload, latencies))
        if keep_latencies:
            kept[payload] = latencies
        del latencies
    return summary_frame(rows), kept


# --- reading: every raw file is validated before anything is written --------------------------------
@dataclass(frozen=True)
class _ReadFailure:
    """An InputError carried back from a worker (its path and line would not survive pickling)."""

    message: str
    path: str | None
    line: int | None


@dataclass(frozen=True)
class RawSummary:
    """A raw file's summary and, when plots are drawn, each payload's latencies."""

    summary: pd.DataFrame
    latencies: dict[int, np.ndarray]


def _summarise_or_failure(path: Path, keep_latencies: bool) -> RawSummary | _ReadFailure:
    try:
        return RawSummary(*summarise_raw_file(path, keep_latencies))
    except InputError as error:
        return _ReadFailure(error.message, None if error.path is None else str(error.path), error.line)


def summarise_raw_files(paths: dict[str, Path], jobs: int, keep_latencies: bool) -> dict[str, RawSummary]:
    """sub-experiment -> its raw file summarised; InputError for the first bad file in name order."""
    subs = list(paths)
    if jobs > 1 and len(subs) > 1:
        with worker_pool(min(jobs, len(subs))) as pool:
            results = list(pool.map(_summarise_or_failure, [paths[sub] for sub in subs],
                                    [keep_latencies] * len(subs)))
    else:
        results = [_summarise_or_failure(paths[sub], keep_latencies) for sub in subs]
    for result in results:
        if isinstance(result, _ReadFailure):
            raise InputError(result.message, result.path, result.line)
    return dict(zip(subs, results))


# --- plotting: the slow part, spread over worker processes -------------------------------------------
@dataclass(frozen=True)
class PayloadPlots:
    """What the histogram and the time series of one payload need."""

    sub: str
    payload: int
    latencies: np.ndarray
    median: float
    p99: float
    plots_dir: Path


def payload_plots(sub: str, latencies: dict[int, np.ndarray], summary: pd.DataFrame,
                  plots_dir: Path) -> list[PayloadPlots]:
    return [
        PayloadPlots(sub, int(payload), latencies[int(payload)], float(median), float(p99), Path(plots_dir))
        for payload, median, p99 in zip(summary[s.BYTES], summary[s.MEDIAN], summary[s.P99])
    ]


def _draw_payload_plots(batch: list[PayloadPlots]) -> None:
    from ..plotting.process_plots import PayloadPlotter

    plotter = PayloadPlotter()  # one per batch: it reuses its figures from payload to payload
    for task in batch:
        if stop_requested():
            return
        plotter.histogram(task.latencies, task.median, task.p99, task.sub, task.payload,
                          s.histogram_png(task.plots_dir, task.sub, task.payload))
        plotter.series(task.latencies, task.median, task.p99, task.sub, task.payload,
                       s.series_png(task.plots_dir, task.sub, task.payload))


def _draw_comparison(summaries: dict[str, pd.DataFrame], magnitude: str, plots_dir: Path) -> None:
    from ..plotting import process_plots

    process_plots.draw_comparison(summaries, magnitude, s.comparison_png(plots_dir, magnitude))


# Batches per worker: more balance the load, fewer reuse each figure for longer.
BATCHES_PER_WORKER = 3


def draw_plots(payload_tasks: list[PayloadPlots], comparison_summaries: dict[str, pd.DataFrame] | None,
               plots_dir: Path, jobs: int) -> int:
    """Draw every per-payload plot and (given summaries) the comparison plots; returns how many PNGs."""
    comparisons = list(s.PLOTTED_MAGNITUDES) if comparison_summaries else []
    if jobs > 1 and len(payload_tasks) + len(comparisons) > 1:
        batch_count = max(1, min(len(payload_tasks), jobs * BATCHES_PER_WORKER))
        batches = [payload_tasks[i::batch_count] for i in range(batch_count)]
        with worker_pool(jobs, output=plots_dir) as pool:
            # the comparisons first: they are the slowest plots, so they do not finish last alone
            futures = [pool.submit(_draw_comparison, comparison_summaries, m, plots_dir) for m in comparisons]
            futures += [pool.submit(_draw_payload_plots, batch) for batch in batches if batch]
            for future in futures:
                future.result()
    else:
        for magnitude in comparisons:
            _draw_comparison(comparison_summaries, magnitude, plots_dir)
        if payload_tasks:
            _draw_payload_plots(payload_tasks)
    return 2 * len(payload_tasks) + len(comparisons)


# --- the commands ---------------------------------------------------------------------------------
def sub_name_of_raw(path: Path) -> str:
    """`measurements_<sub>.csv` -> `<sub>`; any other file name -> its stem."""
    return s.sub_from_raw_csv(Path(path)) or Path(path).stem


def process_experiment(experiment_dir: Path, *, jobs: int | None = None, plots: bool = True) -> dict[str, pd.DataFrame]:
    """Every raw file of an experiment folder -> its summary, per-payload plots and the comparison plots."""
    experiment_dir = Path(experiment_dir)
    jobs = jobs or os.cpu_count() or 1
    raw_paths = files.raw_files(experiment_dir)
    if not raw_paths:
        raise InputError(f"no raw measurements ({s.raw_csv_name('<sub>')}) in the experiment folder", experiment_dir)
    raws = summarise_raw_files(raw_paths, jobs, keep_latencies=plots)
    _can_be_written(None, experiment_dir / s.PLOTS_DIR if plots else None)
    summaries = {sub: raw.summary for sub, raw in raws.items()}
    for sub, summary in summaries.items():
        files.write_csv(experiment_dir / s.summary_csv_name(sub), summary)
    if plots:
        plots_dir = experiment_dir / s.PLOTS_DIR
        tasks = [task for sub, raw in raws.items() for task in payload_plots(sub, raw.latencies, raw.summary, plots_dir)]
        del raws  # the tasks hold the latencies now
        draw_plots(tasks, summaries, plots_dir, jobs)
    return summaries


def process_raw_file(raw_csv: Path, output_csv: Path, plots_dir: Path | None, *, jobs: int | None = None) -> pd.DataFrame:
    """One raw file -> its summary and (given a plots folder) plots in <plots_dir>/<sub>/."""
    jobs = jobs or os.cpu_count() or 1
    summary, latencies = summarise_raw_file(Path(raw_csv), keep_latencies=plots_dir is not None)
    outputs.require_not_input(Path(output_csv), [raw_csv], "output CSV")
    _can_be_written(Path(output_csv), plots_dir)
    files.write_csv(Path(output_csv), summary)
    if plots_dir is not None:
        tasks = payload_plots(sub_name_of_raw(raw_csv), latencies, summary, Path(plots_dir))
        del latencies
        draw_plots(tasks, None, Path(plots_dir), jobs)
    return summary


def process_folder(experiment_dir: Path, jobs: int | None = None, plots: bool = True) -> int:
    """Every sub-experiment of an experiment folder: summaries, plots and the comparison plots."""
    with outputs.write_errors_as_input_errors():
        summaries = process_experiment(experiment_dir, jobs=jobs or os.cpu_count() or 1, plots=plots)
    print(f"processed {len(summaries)} sub-experiment(s) in {log_text(experiment_dir)}")
    return s.EXIT_OK


def command_process(raw_csv=None, output_csv=None, plots_directory=None, experiment_directory=None,
                    jobs=None, no_plots=False) -> int:
    outputs.require_paths(raw_csv=raw_csv, output_csv=output_csv, plots_directory=plots_directory,
                        experiment_directory=experiment_directory)
    jobs = jobs or os.cpu_count() or 1
    single = {"--raw-csv": raw_csv, "--output-csv": output_csv, "--plots-directory": plots_directory}
    with outputs.write_errors_as_input_errors():
        if experiment_directory is not None:
            given = [option for option, value in single.items() if value is not None]
            if given:
                raise InputError(f"--experiment-directory processes a whole folder; do not give {', '.join(given)} with it")
            return process_folder(Path(experiment_directory), jobs=jobs, plots=not no_plots)
        if no_plots:
            single.pop("--plots-directory")  # nothing to draw, so no folder needed
        missing = [option for option, value in single.items() if value is None]
        if missing:
            raise InputError("give --raw-csv, --output-csv and --plots-directory (one sub-experiment) or "
                             f"--experiment-directory (all of them); missing: {', '.join(missing)}")
        process_raw_file(Path(raw_csv), Path(output_csv), None if no_plots else Path(plots_directory), jobs=jobs)
        print(f"wrote {log_text(output_csv)}")
        return s.EXIT_OK


def command_compare_subexperiments(plots_directory, subexperiment_summaries, no_plots=False) -> int:
    """Comparison plots (Min, Median, Max, 99% against payload) of the given summaries."""
    outputs.require_paths(plots_directory=plots_directory, subexperiment_summaries=subexperiment_summaries)
    summaries: dict[str, pd.DataFrame] = {}
    for path in map(Path, subexperiment_summaries):
        name = s.sub_from_summary_csv(path) or path.stem
        if name in summaries:
            raise InputError(f"sub-experiment {name!r} is given twice", path)
        summaries[name] = files.read_summary(path)
    if not no_plots:
        with outputs.write_errors_as_input_errors():
            draw_plots([], summaries, Path(plots_directory), jobs=1)
        print(f"wrote {len(s.PLOTTED_MAGNITUDES)} comparison plots in {log_text(plots_directory)}")
    return s.EXIT_OK


def _can_be_written(output_csv: Path | None, plots_dir: Path | None) -> None:
    """Found before the summary is written rather than after it: a folder as the output file, a file
    as the plots folder, a place nothing can be written."""
    if output_csv is not None:
        outputs.require_writable(output_csv, "output CSV")
    if plots_dir is not None:
        outputs.require_writable(plots_dir, "plots folder", folder=True)

