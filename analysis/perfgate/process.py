"""process: raw measurements -> summary (docs/formats.md section 4), vectorised over all samples.

`summarise` is the pure computation; the functions below it read, write and plot around it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import files, outputs
from . import schema as s
from .errors import InputError
from .escape.workflow import log_text
from .pools import stop_requested, worker_pool


def summarise(raw: pd.DataFrame) -> pd.DataFrame:
    """One summary row per payload, in the order payloads first appear.

    - percentiles: linear interpolation between closest ranks (position q*(n-1));
    - Stdev: population standard deviation;
    - jitter: |x[i] - x[i-1]| between consecutive samples of one payload, in measured order.
    """
    payloads = raw[s.PAYLOAD].to_numpy()
    latencies = raw[s.LATENCY].to_numpy(dtype=float)
    groups = pd.Series(latencies).groupby(payloads, sort=False)

    jitter = np.abs(groups.diff().to_numpy())  # NaN at each payload's first sample
    jitter_groups = pd.Series(jitter).groupby(payloads, sort=False)

    summary = pd.DataFrame(
        {
            s.BYTES: groups.size().index.astype(np.int64),
            s.SAMPLES: groups.size().to_numpy(),
            s.MAX: groups.max().to_numpy(),
            s.MIN: groups.min().to_numpy(),
            s.MEAN: groups.mean().to_numpy(),
            s.MEDIAN: groups.quantile(s.PERCENTILES[s.MEDIAN]).to_numpy(),
            s.STDEV: groups.std(ddof=0).to_numpy(),
            s.MEAN_JITTER: jitter_groups.mean().to_numpy(),
            s.MAX_JITTER: jitter_groups.max().to_numpy(),
        }
    )
    for column in (s.P90, s.P99, s.P9999):
        summary[column] = groups.quantile(s.PERCENTILES[column]).to_numpy()
    return summary.loc[:, list(s.SUMMARY_COLUMNS)]


# --- reading: every raw file is validated before anything is written --------------------------------
@dataclass(frozen=True)
class _ReadFailure:
    """An InputError carried back from a worker (its path and line would not survive pickling)."""

    message: str
    path: str | None
    line: int | None


def _read_raw_or_failure(path: Path) -> pd.DataFrame | _ReadFailure:
    try:
        return files.read_raw(path)
    except InputError as error:
        return _ReadFailure(error.message, None if error.path is None else str(error.path), error.line)


def read_raw_files(paths: dict[str, Path], jobs: int) -> dict[str, pd.DataFrame]:
    """sub-experiment -> validated raw frame; InputError for the first bad file in name order."""
    subs = list(paths)
    if jobs > 1 and len(subs) > 1:
        with worker_pool(min(jobs, len(subs))) as pool:
            results = list(pool.map(_read_raw_or_failure, [paths[sub] for sub in subs]))
    else:
        results = [_read_raw_or_failure(paths[sub]) for sub in subs]
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


def payload_plots(sub: str, raw: pd.DataFrame, summary: pd.DataFrame, plots_dir: Path) -> list[PayloadPlots]:
    latencies = dict(tuple(raw.groupby(s.PAYLOAD, sort=False)[s.LATENCY]))
    return [
        PayloadPlots(sub, int(payload), latencies[payload].to_numpy(dtype=float), float(median), float(p99),
                     Path(plots_dir))
        for payload, median, p99 in zip(summary[s.BYTES], summary[s.MEDIAN], summary[s.P99])
    ]


def _draw_payload_plots(batch: list[PayloadPlots]) -> None:
    from .plotting.process_plots import PayloadPlotter

    plotter = PayloadPlotter()  # one per batch: it reuses its figures from payload to payload
    for task in batch:
        if stop_requested():
            return
        plotter.histogram(task.latencies, task.median, task.p99, task.sub, task.payload,
                          s.histogram_png(task.plots_dir, task.sub, task.payload))
        plotter.series(task.latencies, task.median, task.p99, task.sub, task.payload,
                       s.series_png(task.plots_dir, task.sub, task.payload))


def _draw_comparison(summaries: dict[str, pd.DataFrame], magnitude: str, plots_dir: Path) -> None:
    from .plotting import process_plots

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
    raws = read_raw_files(raw_paths, jobs)
    _can_be_written(None, experiment_dir / s.PLOTS_DIR if plots else None)
    summaries = {sub: summarise(raw) for sub, raw in raws.items()}
    for sub, summary in summaries.items():
        files.write_csv(experiment_dir / s.summary_csv_name(sub), summary)
    if plots:
        plots_dir = experiment_dir / s.PLOTS_DIR
        tasks = [task for sub in raws for task in payload_plots(sub, raws[sub], summaries[sub], plots_dir)]
        draw_plots(tasks, summaries, plots_dir, jobs)
    return summaries


def process_raw_file(raw_csv: Path, output_csv: Path, plots_dir: Path | None, *, jobs: int | None = None) -> pd.DataFrame:
    """One raw file -> its summary and (given a plots folder) plots in <plots_dir>/<sub>/."""
    jobs = jobs or os.cpu_count() or 1
    raw = files.read_raw(Path(raw_csv))
    outputs.require_not_input(Path(output_csv), [raw_csv], "output CSV")
    _can_be_written(Path(output_csv), plots_dir)
    summary = summarise(raw)
    files.write_csv(Path(output_csv), summary)
    if plots_dir is not None:
        draw_plots(payload_plots(sub_name_of_raw(raw_csv), raw, summary, Path(plots_dir)), None, Path(plots_dir), jobs)
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

