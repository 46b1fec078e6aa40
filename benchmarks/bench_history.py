"""History with change points: speed and memory over a big store, false alarms and hits over many seeds.

    .venv/bin/python benchmarks/bench_history.py [--experiments 1000] [--seeds 100] [--plots] [--compare]
        [--page 200,1000,5000] [--flat-stores N]

Issue 24's two timings in one command (the page at 200/1000/5000 runs, then history with its plots
over 1000 runs, first and with one run added, each with the load average):
    .venv/bin/python benchmarks/bench_history.py --page 200,1000,5000 --plots --seeds 0

1. Writes a results store of `--experiments` nightly runs (10 sub-experiments x 11 payloads,
   summaries and metadata, one commit per run) with a +8 % step in one sub-experiment from 3/4 of
   the way on, and runs `perfgate history --no-plots` twice (before and with the summary index;
   with `--plots` also with its plots, then again after one more run is added: the nightly's case)
   each as its own process: wall clock, CPU and the peak memory of its process tree against 60 s
   and 1 GB, with the load average.
2. False alarms: `--seeds` histories of 100 runs without any step through change_points.detect
   (330 series each); the fraction with any change point is the family-wise false-alarm rate,
   which the default level (0.01) bounds.
   The events the history wrote (events.csv): how many, in the stepped sub-experiment and elsewhere, each
   event's place and the range of runs it vouches for (one planted step: one event is right).
3. Hits: the same with a +8 % step in one sub-experiment's median at run 70; how often every
   payload's step is found, and how often at its commit +-1.
4. `--compare`: the detectors considered (docs/history.md "Choosing the detector") on the same
   synthetic series: spurious candidates on flat series, steps placed within +-1, time per series.

`--raw-storage [EXPERIMENT ...]` instead: size and read time of raw measurements kept as CSV, gzip'd
CSV or Parquet with zstd (needs pyarrow, which perfgate does not depend on: `pip install pyarrow`).

Noise like the real runs (docs/verdict.md): per run and sub-experiment a 3 % level shared by its
payloads, one run in twenty 10 to 40 % slower, 1 % of each value's own; Max with a heavy tail.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synthetic  # noqa: E402  (beside this file)
from bench_analysis import measure, perfgate_command  # noqa: E402

from perfgate.history import change_points as cp  # noqa: E402
from perfgate.history import page as hp  # noqa: E402
from perfgate import files  # noqa: E402
from perfgate import schema as s  # noqa: E402

SUBS = s.DEFAULT_SUBEXPERIMENT_NAMES
STEP_SUB = "interprocess_reliable"
STEP = 1.08
MEMORY_TARGET_MB = 1024
TIME_TARGET_S = 60
PLOTS_TIME_TARGET_S = 30  # history with every plot over 1000 runs on 2 cores (issue 24 item 5)


def run_levels(rng: np.random.Generator, runs: int) -> np.ndarray:
    level = rng.normal(0.0, 0.03, (runs, len(SUBS)))
    slow = rng.random((runs, len(SUBS))) < 0.05
    level[slow] += rng.uniform(0.1, 0.4, int(slow.sum()))
    return np.exp(level)


def summary_rows(rng: np.random.Generator, sub: str, level: float) -> pd.DataFrame:
    """A plausible summary (statistics in order) at `level` times the sub-experiment's usual latency,
    each payload with 1 % of its own noise; Max with a heavy tail."""
    medians = np.array([synthetic.base_latency(s.KNOWN_SUBEXPERIMENTS[sub], p) for p in s.PAYLOADS]) * level \
        * rng.lognormal(0, 0.01, len(s.PAYLOADS))
    p99 = medians * rng.uniform(1.3, 1.7, medians.size)
    p9999 = p99 * rng.uniform(2.0, 6.0, medians.size)
    maxima = p9999 * (1 + rng.lognormal(0, 0.5, medians.size))
    return pd.DataFrame({
        s.BYTES: list(s.PAYLOADS), s.SAMPLES: 1000, s.MAX: maxima, s.MIN: medians * 0.82, s.MEAN: medians * 1.05,
        s.MEDIAN: medians, s.STDEV: medians * 0.2, s.MEAN_JITTER: medians * 0.08, s.MAX_JITTER: maxima * 0.95,
        s.P90: medians * rng.uniform(1.12, 1.2, medians.size), s.P99: p99, s.P9999: p9999,
    }).loc[:, list(s.SUMMARY_COLUMNS)]


def write_step_store(store: Path, experiments: int, seed: int = 0, step: float = STEP) -> int:
    """A store whose STEP_SUB runs `step` times slower from 3/4 of the way on (1.0: a flat store); returns
    that run's position."""
    rng = np.random.default_rng(seed)
    levels = run_levels(rng, experiments)
    step_at = experiments * 3 // 4
    for index in range(experiments):
        commit = f"{index:08x}" + "f" * 32
        label = f"nightly-{index:04d}"
        folder = store / s.STORE_EXPERIMENTS_DIR / label
        for column, sub in enumerate(SUBS):
            level = levels[index, column] * (step if sub == STEP_SUB and index >= step_at else 1.0)
            files.write_csv(folder / s.summary_csv_name(sub), summary_rows(rng, sub, level))
        files.write_metadata(folder, synthetic.metadata(label, synthetic.BASE_TIME + timedelta(days=index), commit,
                                                        1000, list(SUBS)))
    return step_at


def add_run(store: Path, index: int, seed: int = 1) -> None:
    """One more nightly run at the end of a store of write_step_store (stepped like the runs before it)."""
    rng = np.random.default_rng(seed)
    level = run_levels(rng, 1)[0]
    label = f"nightly-{index:04d}"
    folder = store / s.STORE_EXPERIMENTS_DIR / label
    for column, sub in enumerate(SUBS):
        files.write_csv(folder / s.summary_csv_name(sub),
                        summary_rows(rng, sub, level[column] * (STEP if sub == STEP_SUB else 1.0)))
    files.write_metadata(folder, synthetic.metadata(label, synthetic.BASE_TIME + timedelta(days=index),
                                                    f"{index:08x}" + "f" * 32, 1000, list(SUBS)))


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def synthetic_values(seed: int, runs: int, step_at: int | None = None) -> pd.DataFrame:
    """`detect`'s input: 10 sub-experiments x 11 payloads x Median/99%/Max over `runs` runs."""
    rng = np.random.default_rng(seed)
    levels = run_levels(rng, runs)
    frames = []
    for column, sub in enumerate(SUBS):
        for statistic, factor in zip(cp.STATISTICS, (1.0, 1.5, 20.0)):
            values = 10.0 * factor * levels[:, column, None] * rng.lognormal(0, 0.01, (runs, len(s.PAYLOADS)))
            if statistic == s.MAX:
                values *= rng.lognormal(0, 0.5, values.shape)
            if step_at is not None and sub == STEP_SUB and statistic == s.MEDIAN:
                values[step_at:] *= STEP
            frames.append(pd.DataFrame({s.EXPERIMENT_TYPE: sub, s.BYTES: np.tile(s.PAYLOADS, runs),
                                        cp.STATISTIC: statistic, cp.INDEX: np.repeat(np.arange(runs), len(s.PAYLOADS)),
                                        cp.VALUE: values.ravel()}))
    return pd.concat(frames, ignore_index=True)


def described(runs: int) -> pd.DataFrame:
    return pd.DataFrame({s.LABEL: [f"run-{i}" for i in range(runs)], cp.COMMIT: [f"{i:040x}" for i in range(runs)]})


def false_alarms_and_hits(seeds: int, runs: int = 100, step_at: int = 70) -> None:
    started = time.perf_counter()
    alarms = 0
    for seed in range(seeds):
        alarms += not cp.detect(synthetic_values(seed, runs), described(runs)).empty
    rate = alarms / seeds
    half_width = 1.96 * math.sqrt(max(rate * (1 - rate), 1 / seeds) / seeds)
    print(f"false alarms: {alarms} of {seeds} flat histories ({runs} runs x 330 series) had a change point: "
          f"{100 * rate:.1f} % (+-{100 * half_width:.1f}), level {cp.DEFAULT_ALPHA:g} "
          f"({time.perf_counter() - started:.0f} s)")
    all_found = placed = elsewhere = total = 0
    for seed in range(seeds):
        found = cp.detect(synthetic_values(10_000 + seed, runs, step_at), described(runs))
        mine = (found[s.EXPERIMENT_TYPE] == STEP_SUB) & (found[cp.STATISTIC] == s.MEDIAN)
        elsewhere += int((~mine).sum())
        all_found += found[mine][s.BYTES].nunique() == len(s.PAYLOADS)
        placed += int((found[mine][cp.INDEX] - step_at).abs().le(1).sum())
        total += int(mine.sum())
    print(f"hits: +{100 * (STEP - 1):.0f} % median step at run {step_at} of {runs}: every payload found in "
          f"{all_found} of {seeds} histories; {placed} of {total} change points at the commit +-1; "
          f"{elsewhere} change point(s) elsewhere")


def flat_stores(count: int, experiments: int, workdir: Path) -> None:
    """`count` stores of `experiments` runs without any step, each read by a first `perfgate history
    --no-plots`: every event or change point there is a false alarm of the whole history."""
    with_events = with_changes = 0
    requirements = workdir / "requirements.csv"
    files.write_csv(requirements, synthetic.requirements_for())
    for number in range(count):
        store = workdir / f"flat-{number}"
        shutil.rmtree(store, ignore_errors=True)
        write_step_store(store, experiments, seed=100 + number, step=1.0)
        load = load_average()
        run = measure(f"flat store {number + 1}", [*perfgate_command(), "history", "--requirements", str(requirements),
                                                   "--experiments-results", str(store), "--plots-directory",
                                                   str(store / s.STORE_HISTORY_DIR), "--no-plots"], TIME_TARGET_S)
        events = pd.read_csv(store / s.STORE_HISTORY_DIR / "events.csv")
        changes = pd.read_csv(store / s.STORE_HISTORY_DIR / "change_points.csv")
        with_events += not events.empty
        with_changes += not changes.empty
        print(f"flat store {number + 1} of {count} ({experiments} runs, seed {100 + number}): exit {run.exit_code}, "
              f"{run.wall:.1f} s wall (first history, load {load} before), {len(events)} event(s), "
              f"{len(changes)} change point(s)", flush=True)
        shutil.rmtree(store, ignore_errors=True)
    print(f"flat stores: {with_events} of {count} with an event, {with_changes} of {count} with a change point "
          f"(family-wise level {cp.DEFAULT_ALPHA:g} per history)")


def page_charts(runs: int, seed: int = 0) -> tuple[dict, list[str], pd.DataFrame]:
    """The page's charts of a synthetic history of `runs` runs (detect's input of synthetic_values with the
    step at 3/4, change points found by detect): charts by sub-experiment, hover texts, change points."""
    step_at = runs * 3 // 4
    values = synthetic_values(seed, runs, step_at)
    changes = cp.detect(values, described(runs))
    ticks = [f"{i:07x} {(synthetic.BASE_TIME + timedelta(days=i)):%Y-%m-%d}" for i in range(runs)]
    charts = {}
    for sub in SUBS:
        mine = values[values[s.EXPERIMENT_TYPE] == sub]
        charts[sub] = [hp.chart(sub, statistic, mine[mine[cp.STATISTIC] == statistic].pivot(
            index=cp.INDEX, columns=s.BYTES, values=cp.VALUE), changes, hp.tick_positions(runs), ticks)
            for statistic in hp.CHART_STATISTICS]
    return charts, [f"{tick} · run-{i}" for i, tick in enumerate(ticks)], changes


def compare_detectors(seeds: int, runs: int = 200, step_at: int = 150) -> None:
    """Detectors on single Median series (one payload): flat ones and ones with the step."""
    import ruptures

    penalty = cp.PENALTY_PER_LOG_N * math.log(runs)

    def rank_binseg(x):
        return cp.candidates(x)

    def l2_binseg(x):  # a Gaussian BIC penalty needs the noise's scale: a robust one from differences
        scale = np.median(np.abs(np.diff(x))) / 0.6745 / math.sqrt(2)
        return ruptures.Binseg(model="l2", min_size=cp.MIN_SEGMENT, jump=1).fit(x.reshape(-1, 1)).predict(
            pen=penalty * scale ** 2)[:-1]

    def rank_pelt(x):
        return ruptures.Pelt(model="rank", min_size=cp.MIN_SEGMENT, jump=1).fit(x.reshape(-1, 1)).predict(
            pen=penalty)[:-1]

    def kernel_binseg(x):
        return ruptures.KernelCPD(kernel="rbf", min_size=cp.MIN_SEGMENT, jump=1).fit(x.reshape(-1, 1)).predict(
            pen=penalty / 20)[:-1]

    print(f"\ndetectors on {seeds} flat and {seeds} stepped Median series of {runs} runs (step at {step_at}):")
    print(f"{'detector':<28} {'flat with a candidate':>22} {'step found +-1':>15} {'ms per series':>14}")
    for name, detector in [("ruptures Binseg, rank (used)", rank_binseg), ("ruptures Binseg, l2 + BIC", l2_binseg),
                           ("ruptures Pelt, rank", rank_pelt), ("ruptures KernelCPD, rbf", kernel_binseg)]:
        spurious = hits = 0
        started = time.perf_counter()
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            flat = np.log(10 * run_levels(rng, runs)[:, 0] * rng.lognormal(0, 0.01, runs))
            stepped = flat.copy()
            stepped[step_at:] += math.log(STEP)
            spurious += bool(detector(flat))
            hits += any(abs(b - step_at) <= 1 for b in detector(stepped))
        per_series = 1000 * (time.perf_counter() - started) / (2 * seeds)
        print(f"{name:<28} {spurious:>15} of {seeds} {hits:>8} of {seeds} {per_series:>14.1f}")


def raw_storage(experiment: Path, repeats: int = 3) -> None:
    """Size and read time of an experiment's raw measurements kept as CSV, gzip'd CSV and Parquet
    with zstd (pyarrow), for keeping every stored run's raw samples (docs/history.md)."""
    import gzip
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    raws = sorted(experiment.glob("measurements_*.csv"))
    raws = [path for path in raws if not path.name.endswith("_summary.csv")]
    frames = {path.name: pd.read_csv(path) for path in raws}
    # as the harness writes them: 3 decimals (the synthetic files have 4), so that ns are exact
    texts = {name: frame.to_csv(index=False, float_format="%.3f", lineterminator="\n").encode()
             for name, frame in frames.items()}
    frames = {name: pd.read_csv(io.BytesIO(text)) for name, text in texts.items()}
    samples = sum(len(frame) for frame in frames.values())

    def parquet_bytes(frame: pd.DataFrame, thousandths: bool) -> bytes:
        table = frame.copy()
        if thousandths:  # the CSV's 3 decimals as whole numbers: exact, and integers compress better
            table[s.LATENCY] = np.rint(table[s.LATENCY] * 1000).astype(np.int64)
        sink = io.BytesIO()
        pq.write_table(pa.Table.from_pandas(table, preserve_index=False), sink, compression="zstd")
        return sink.getvalue()

    formats = {
        "csv": (lambda name: texts[name], lambda data: pd.read_csv(io.BytesIO(data))),
        "csv.gz (gzip 6)": (lambda name: gzip.compress(texts[name], 6),
                            lambda data: pd.read_csv(io.BytesIO(data), compression="gzip")),
        "parquet zstd, float64 us": (lambda name: parquet_bytes(frames[name], False),
                                     lambda data: pq.read_table(io.BytesIO(data)).to_pandas()),
        "parquet zstd, int64 ns": (lambda name: parquet_bytes(frames[name], True),
                                   lambda data: pq.read_table(io.BytesIO(data)).to_pandas()),
    }
    print(f"\nraw measurements of {experiment} ({len(raws)} files, {samples} samples):")
    print(f"{'format':<26} {'MB':>8} {'bytes/sample':>13} {'write s':>8} {'read s':>8}")
    for name, (encode, decode) in formats.items():
        started = time.perf_counter()
        encoded = {raw: encode(raw) for raw in texts}
        written = time.perf_counter() - started
        size = sum(len(data) for data in encoded.values())
        started = time.perf_counter()
        for _ in range(repeats):
            for data in encoded.values():
                decode(data)
        read = (time.perf_counter() - started) / repeats
        print(f"{name:<26} {size / 1e6:>8.2f} {size / samples:>13.2f} {written:>8.2f} {read:>8.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=1000, help="experiments in the results store")
    parser.add_argument("--seeds", type=int, default=100, help="synthetic histories for false alarms and hits")
    parser.add_argument("--plots", action="store_true", help="also time history with every plot")
    parser.add_argument("--compare", action="store_true", help="also compare the detectors considered")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the generated store here")
    parser.add_argument("--raw-storage", type=Path, nargs="*", default=None, metavar="EXPERIMENT",
                        help="only measure keeping these experiments' raw files compressed (none: a synthetic one)")
    parser.add_argument("--before", type=Path, default=None, metavar="ANALYSIS_DIR",
                        help="with --plots: also time an earlier perfgate's history on the same store, side by side "
                             "(its analysis/ folder, e.g. from `git archive main analysis | tar -x -C DIR`)")
    parser.add_argument("--page", type=lambda text: [int(n) for n in text.split(",")], default=None,
                        metavar="RUNS,RUNS", help="time history.html of synthetic histories, e.g. 200,1000,5000 (bench_history_page.py); "
                             "alone, only that; with --plots, then the history too")
    parser.add_argument("--flat-stores", type=int, default=0, metavar="N",
                        help="also N stores of --experiments runs without any step, each read by a first history: "
                             "the events and change points found there are false alarms")
    options = parser.parse_args()
    if options.page is not None:
        from bench_history_page import page_scale  # beside this file

        page_scale(options.page, (options.workdir / "pages") if options.workdir else
                   Path(tempfile.mkdtemp(prefix="perfgate-bench-page-")))
        if not options.plots:
            return 0
    if options.raw_storage is not None:
        experiments = options.raw_storage
        if not experiments:
            experiments = [synthetic.write_raw_experiment(Path(tempfile.mkdtemp(prefix="perfgate-raw-")) / "synthetic")]
        for experiment in experiments:
            raw_storage(experiment)
        return 0

    workdir = options.workdir or Path(tempfile.mkdtemp(prefix="perfgate-bench-history-"))
    store, requirements = workdir / "store", workdir / "requirements.csv"
    shutil.rmtree(store, ignore_errors=True)
    started = time.perf_counter()
    step_at = write_step_store(store, options.experiments)
    files.write_csv(requirements, synthetic.requirements_for())
    print(f"store of {options.experiments} experiments written in {time.perf_counter() - started:.0f} s "
          f"(+{100 * (STEP - 1):.0f} % in {STEP_SUB} from run {step_at})")

    command = [*perfgate_command(), "history", "--requirements", str(requirements), "--experiments-results",
               str(store), "--plots-directory", str(store / s.STORE_HISTORY_DIR)]
    # the first history reads every summary and writes the store's summary index; later ones (every
    # gate adds one run) read the index and the new run's files
    runs = [measure("history --no-plots, no index yet", [*command, "--no-plots"], TIME_TARGET_S),
            measure("history --no-plots, index current", [*command, "--no-plots"], TIME_TARGET_S)]
    loads = {}
    if options.plots and options.before is not None:
        # the same store drawn by an earlier perfgate (its analysis/ folder first on the path), then by this one
        loads["before"] = Path("/proc/loadavg").read_text().split()[:3]
        os.environ["PYTHONPATH"] = str(options.before.resolve())
        runs.append(measure("history, every plot, before", [sys.executable, "-m", "perfgate.cli", *command[1:]],
                            PLOTS_TIME_TARGET_S))
        del os.environ["PYTHONPATH"]
    plot_loads = []
    if options.plots:
        loads["after"] = Path("/proc/loadavg").read_text().split()[:3]
        plot_loads.append(load_average())
        runs.append(measure("history with its plots, first" + (", after" if options.before else ""), command,
                            PLOTS_TIME_TARGET_S))
        # the nightly's case: one run more than the last redraw (every plot's x axis grows by one run)
        add_run(store, options.experiments)
        plot_loads.append(load_average())
        runs.append(measure("history with its plots, one run added", command, PLOTS_TIME_TARGET_S))
        plot_loads.append(load_average())
    for m in runs:
        verdict = "ok" if m.exit_code == 0 and m.wall <= TIME_TARGET_S and m.peak_tree_mb <= MEMORY_TARGET_MB \
            else "OVER TARGET" if m.exit_code == 0 else "FAILED"
        print(f"{m.name}: exit {m.exit_code}, {m.wall:.1f} s wall, {m.cpu:.1f} s CPU, peak {m.peak_tree_mb:.0f} MB "
              f"(targets {TIME_TARGET_S} s, {MEMORY_TARGET_MB} MB): {verdict}")
    if plot_loads:
        first, again = runs[-2], runs[-1]
        print(f"history with its plots over {options.experiments} runs on {os.cpu_count()} cores (target "
              f"{PLOTS_TIME_TARGET_S} s): first {first.wall:.1f} s wall, {first.cpu:.1f} s CPU; one run added "
              f"{again.wall:.1f} s wall, {again.cpu:.1f} s CPU; load average before, between, after: "
              f"{' | '.join(plot_loads)}")
    if len(loads) == 2:
        before, after = runs[-3], runs[-2]
        print(f"history with every plot over {options.experiments} runs on {os.cpu_count()} cores, before | after:")
        print(f"  wall {before.wall:.1f} s | {after.wall:.1f} s (target {PLOTS_TIME_TARGET_S} s); CPU {before.cpu:.1f} s | "
              f"{after.cpu:.1f} s; load average before each: {' '.join(loads['before'])} | {' '.join(loads['after'])}")
    page = store / s.STORE_HISTORY_DIR / "history.html"
    if options.plots and page.exists():
        print(f"history.html: {page.stat().st_size / 1e6:.1f} MB (target under 10 MB)")
    found = pd.read_csv(store / s.STORE_HISTORY_DIR / "change_points.csv")
    mine = (found[s.EXPERIMENT_TYPE] == STEP_SUB)
    print(f"change points: {len(found)}, {int(mine.sum())} in {STEP_SUB} "
          f"({int((found[mine][cp.INDEX] - step_at).abs().le(1).sum())} at run {step_at} +-1), "
          f"{int((~mine).sum())} elsewhere")
    events = pd.read_csv(store / s.STORE_HISTORY_DIR / "events.csv")
    stepped = events[events[s.EXPERIMENT_TYPE] == STEP_SUB]
    placed = [f"#{row['Index']} (runs {row['First run']}-{row['Last run']}, {row['Change [%]']:+.1f} %)"
              for _, row in stepped.iterrows()]
    held = sum(row["First run"] <= step_at <= row["Last run"] for _, row in stepped.iterrows())
    print(f"events: {len(events)}, {len(stepped)} in {STEP_SUB} ({', '.join(placed) or 'none'}; {held} of them with "
          f"the step's run {step_at} in their range), {len(events) - len(stepped)} elsewhere (one planted step: one "
          "event is right)")

    if options.flat_stores:
        flat_stores(options.flat_stores, options.experiments, workdir)
    if options.seeds:
        false_alarms_and_hits(options.seeds)
    if options.compare:
        compare_detectors(options.seeds)
    if options.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if all(m.exit_code == 0 for m in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
