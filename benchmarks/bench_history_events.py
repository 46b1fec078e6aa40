"""History events in short histories: detection, position and false alarms of perfgate, and of Otava on the
same stores (issue 24 item 2). Statistics, not timing: it measures how often, not how fast.

    .venv/bin/python benchmarks/bench_history_events.py [--stores 100] [--varied-stores 20] [--flat-stores 200]
        [--long-flat-stores 20] [--otava PYTHON] [--otava-stores 20] [--rows target,varied,flat,slow]

Synthetic stores like the nightly's (10 sub-experiments x 11 payloads x Median, 99%, Max): per run a machine
drift shared by every cell (normal, sd `drift`, in log), per cell its own noise (sd `noise`; Max 30 %),
in some settings runs in a slow state (every cell 10 to 40 % slower, `slow` of the runs),
and in one sub-experiment (STEP_SUB) a step of `step` in all three statistics from run `before` on,
`after` runs before the end. Each store goes through what `perfgate history` runs (per-payload family
and whole sub-experiment family at alpha 0.01, then events):

- found at +-1: an event of STEP_SUB placed within one run of the step;
- position error: the median |event index - step| of the stores where STEP_SUB has an event;
- false alarm: a store with an event anywhere else (another sub-experiment, or any in a flat store).

`--otava PYTHON`: the python of a venv with apache-otava (it pins numpy 2.2.0, hence its own venv); each
store's 330 series go through Otava's default analysis (otava.analysis.compute_change_points:
window 50, max p-value 0.001, what `otava analyze` runs per metric) and are counted the same way,
a change point of any STEP_SUB series counting as found. Without it the Otava columns say "-".
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from perfgate import schema as s
from perfgate.history import change_points as cp
from perfgate.history import events as history_events
from perfgate.history import whole
from perfgate.history import names as event_names

SUBS = s.DEFAULT_SUBEXPERIMENT_NAMES
PAYLOADS = s.PAYLOADS
STEP_SUB = SUBS[3]
ALPHA = cp.DEFAULT_ALPHA


@dataclass(frozen=True)
class Setting:
    before: int
    after: int
    step: float  # 1.0: a flat store
    drift: float
    noise: float
    slow: float = 0.0  # fraction of runs in a slow state: every cell of the run 10 to 40 % slower


# the target first: +6 % with 25 runs before and 15 after, drift 2 %, noise 1.5 %
TARGET = Setting(25, 15, 1.06, 0.02, 0.015)
VARIED = [Setting(25, 15, 1.06, 0.01, 0.015), Setting(25, 15, 1.06, 0.03, 0.015), Setting(25, 15, 1.06, 0.02, 0.03),
          Setting(25, 15, 1.04, 0.02, 0.015), Setting(25, 15, 1.08, 0.02, 0.015), Setting(25, 5, 1.06, 0.02, 0.015),
          Setting(25, 10, 1.06, 0.02, 0.015), Setting(100, 15, 1.06, 0.02, 0.015),
          Setting(25, 15, 1.06, 0.02, 0.015, 0.05)]
FLAT = [Setting(40, 0, 1.0, 0.02, 0.015), Setting(200, 0, 1.0, 0.02, 0.015), Setting(40, 0, 1.0, 0.02, 0.015, 0.05)]


def store_values(seed: int, setting: Setting) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    runs = setting.before + setting.after
    level = rng.normal(0.0, setting.drift, runs)
    slow = rng.random(runs) < setting.slow
    level[slow] += np.log(rng.uniform(1.1, 1.4, int(slow.sum())))
    frames = []
    for number, sub in enumerate(SUBS):
        for statistic, factor in zip(cp.STATISTICS, (1.0, 1.5, 20.0)):
            spread = 0.3 if statistic == s.MAX else setting.noise
            values = 10.0 * (1 + number) * factor * np.exp(level[:, None] + rng.normal(0, spread, (runs, len(PAYLOADS))))
            if sub == STEP_SUB:
                values[setting.before:] *= setting.step
            frames.append(pd.DataFrame({s.EXPERIMENT_TYPE: sub, s.BYTES: np.tile(PAYLOADS, runs), cp.STATISTIC: statistic,
                                        cp.INDEX: np.repeat(np.arange(runs), len(PAYLOADS)), cp.VALUE: values.ravel()}))
    return pd.concat(frames, ignore_index=True)


def perfgate_events(values: pd.DataFrame, runs: int) -> pd.DataFrame:
    experiments = pd.DataFrame({s.LABEL: [str(i) for i in range(runs)], cp.COMMIT: [f"c{i}" for i in range(runs)]})
    payload_tests = cp.tests_of_series(values, ALPHA * (1 - whole.WHOLE_SHARE))
    changes, wholes = whole.decide_both(payload_tests, whole.tests_of_subs(values, ALPHA), experiments, ALPHA)
    return history_events.events(changes, wholes, values, experiments, ALPHA)


# run by Otava's own python: one JSON line per store in (series name -> values), one out (name -> indexes)
OTAVA_SCRIPT = """
import json, sys
from otava.analysis import compute_change_points
for line in sys.stdin:
    store = json.loads(line)
    found = {name: [int(point.index) for point in compute_change_points(values)[0]] for name, values in store.items()}
    print(json.dumps(found), flush=True)
"""


def otava_found(python: str, stores: list[pd.DataFrame]) -> list[dict[str, list[int]]]:
    lines = []
    for values in stores:
        series = {f"{sub}|{payload}|{statistic}": group.sort_values(cp.INDEX)[cp.VALUE].tolist()
                  for (sub, payload, statistic), group in values.groupby([s.EXPERIMENT_TYPE, s.BYTES, cp.STATISTIC])}
        lines.append(json.dumps(series))
    result = subprocess.run([python, "-c", OTAVA_SCRIPT], input="\n".join(lines) + "\n", capture_output=True,
                            text=True, check=True)
    return [json.loads(line) for line in result.stdout.splitlines()]


def score(setting: Setting, found: list[list[tuple[str, int]]]) -> tuple[int, list[int], int]:
    """(stores found at +-1, position errors, stores with a false alarm) of (sub, index) per store."""
    hits, errors, false = 0, [], 0
    for points in found:
        at_step = [index for sub, index in points if sub == STEP_SUB] if setting.step != 1.0 else []
        if at_step:
            error = min(abs(index - setting.before) for index in at_step)
            errors.append(error)
            hits += error <= 1
        false += any(sub != STEP_SUB or setting.step == 1.0 for sub, _ in points)
    return hits, errors, false


def row(setting: Setting, stores: int, perfgate: tuple, otava: tuple | None, otava_stores: int) -> str:
    def cells(result, stores):
        if result is None:
            return "- | - | -"
        hits, errors, false = result
        found = f"{hits}/{stores} ({100 * hits / stores:.0f} %)" if setting.step != 1.0 else "-"
        error = f"{np.median(errors):.0f}" if errors else "-"
        return f"{found} | {error} | {false}/{stores} ({100 * false / stores:.1f} %)"
    step = (f"{100 * (setting.step - 1):+.0f} %" if setting.step != 1.0 else "flat") + (
        f", {100 * setting.slow:.0f} % slow runs" if setting.slow else "")
    return (f"| {step} | {setting.before}+{setting.after} | {100 * setting.drift:.0f} % | {100 * setting.noise:.1f} % | "
            f"{stores} | {cells(perfgate, stores)} | {cells(otava, otava_stores)} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=100, help="stores of the target setting")
    parser.add_argument("--varied-stores", type=int, default=20, help="stores of each varied setting")
    parser.add_argument("--otava-stores", type=int, default=20,
                        help="the first stores of the target and flat settings also given to Otava (seconds each)")
    parser.add_argument("--flat-stores", type=int, default=200, help="flat stores of 40 runs (a fifth as many of 200)")
    parser.add_argument("--otava", default=os.environ.get("PERFGATE_OTAVA_PYTHON"),
                        help="python of a venv with apache-otava; without, Otava is not run")
    parser.add_argument("--long-flat-stores", type=int, default=20, help="flat stores of 200 runs, and with slow runs")
    parser.add_argument("--rows", default="target,varied,flat",
                        help="which settings: target, varied, flat, slow (those with slow runs only)")
    arguments = parser.parse_args()
    print(f"load before: {Path('/proc/loadavg').read_text().strip()}")
    print("| step | runs before+after | drift | noise | stores | perfgate found at +-1 | position error (median) "
          "| false alarms | Otava found at +-1 | position error | false alarms |  (Otava: the first --otava-stores)")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    started, otava_seconds = time.process_time(), 0.0
    rows = set(arguments.rows.split(","))
    for number, setting in enumerate([TARGET, *VARIED, *FLAT]):  # the number seeds the stores: rows repeat
        kind = "target" if setting == TARGET else "varied" if setting.step != 1.0 else "flat"
        if kind not in rows and not ("slow" in rows and setting.slow):
            continue
        count = arguments.stores if setting == TARGET else arguments.varied_stores if setting.step != 1.0 else (
            arguments.flat_stores if setting.before <= 40 and not setting.slow else arguments.long_flat_stores)
        stores = [store_values(1000 * number + seed, setting) for seed in range(count)]
        runs = setting.before + setting.after
        found = []
        for values in stores:
            table = perfgate_events(values, runs)
            found.append(list(zip(table[s.EXPERIMENT_TYPE], table[event_names.EVENT_INDEX].astype(int))))
        otava = None
        if arguments.otava and setting in (TARGET, *FLAT):
            clock = time.time()
            points = otava_found(arguments.otava, stores[:arguments.otava_stores])
            otava_seconds += time.time() - clock
            otava = score(setting, [[(name.split("|")[0], index) for name, indexes in store.items() for index in indexes]
                                    for store in points])
        print(row(setting, count, score(setting, found), otava, min(count, arguments.otava_stores)), flush=True)
    print(f"perfgate CPU {time.process_time() - started:.0f} s, Otava wall {otava_seconds:.0f} s; "
          f"load after: {Path('/proc/loadavg').read_text().strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
