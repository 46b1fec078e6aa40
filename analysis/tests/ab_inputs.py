"""Stored A/B rounds with known shifts, written as `perfgate ab` leaves them: for tests of the verdict,
its files and the reports that show it."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

import conftest
from conftest import FASTDDS_FIXTURES
from perfgate import files
from perfgate import schema as s
from perfgate.ab import curtail
from perfgate.ab import verdict as v
from perfgate.ab.rounds import read_rounds
from perfgate.ab.verdict import ROUND, STATISTIC
from perfgate.fastdds import colcon, layouts
from perfgate.fastdds import harness as native_harness
from perfgate.model import KIND_AB, AbArm, CpuLatency, FastDDS, LoadAverage, Metadata, Platform, write_metadata

SUBS = ["intraprocess_best_effort", "interprocess_best_effort"]
PAYLOADS = (16, 256, 4096)


def summary(medians: dict[int, float], spread: float = 1.1) -> pd.DataFrame:
    rows = []
    for payload, median in medians.items():
        rows.append({s.BYTES: payload, s.SAMPLES: 200, s.MAX: median * 3, s.MIN: median * 0.9, s.MEAN: median * 1.02,
                     s.MEDIAN: median, s.STDEV: 0.1, s.MEAN_JITTER: 0.05, s.MAX_JITTER: 1.0,
                     s.P90: median * spread, s.P99: median * 1.5, s.P9999: median * 2.5})
    return pd.DataFrame(rows, columns=list(s.SUMMARY_COLUMNS))


def write_rounds(ab_dir, rounds: int, slowdown: dict[str, float], seed: int = 7, skip=()):
    """Stored rounds whose candidate is `slowdown` slower per sub-experiment, with round-to-round noise
    shared by both arms (as a machine state) and a little of each arm's own."""
    rng = np.random.default_rng(seed)
    for r in range(rounds):
        state = rng.normal(0, 0.05)
        for arm in s.AB_ARMS:
            folder = ab_dir / s.AB_ROUNDS_DIR / f"{r + 1:02d}" / arm
            folder.mkdir(parents=True)
            for sub in SUBS:
                if (r, arm, sub) in skip:
                    continue
                factor = math.exp(state + rng.normal(0, 0.004)) * (1 + (slowdown.get(sub, 0) if arm == "candidate" else 0))
                base = 2.0 if sub.startswith("intra") else 60.0
                files.write_csv(folder / s.summary_csv_name(sub),
                                summary({p: base * (1 + p / 16384) * factor for p in PAYLOADS}))


def stored_rounds() -> Path:
    return FASTDDS_FIXTURES.parent / "ab-rounds"


def curtailed_copy(source: Path, target: Path) -> dict[str, int]:
    """The stored A/B as a curtailed `perfgate ab` would have left it: each sub-experiment's summaries of
    the rounds after it was decided removed, empty rounds gone, curtailed.json written."""
    shutil.copytree(source, target)
    rounds = read_rounds(target)
    means, _ = v.usable_round_means(v.log_ratios(rounds.table))
    values = curtail.test_values(means, rounds.round_names, rounds.subexperiments, v.TESTED_STATISTICS)
    used = curtail.replay(values, rounds.subexperiments, len(rounds.round_names),
                          math.log1p(v.DEFAULT_THRESHOLD), v.DEFAULT_ALPHA)
    for position, name in enumerate(rounds.round_names):
        for sub, measured in used.items():
            if position >= measured:
                for arm in s.AB_ARMS:
                    (target / s.AB_ROUNDS_DIR / name / arm / s.summary_csv_name(sub)).unlink()
        if not any((target / s.AB_ROUNDS_DIR / name).rglob("*.csv")):
            shutil.rmtree(target / s.AB_ROUNDS_DIR / name)
    curtail.write_record(target, len(rounds.round_names),
                         {sub: n for sub, n in used.items() if n < len(rounds.round_names)},
                         v.DEFAULT_THRESHOLD, v.DEFAULT_ALPHA)
    return used


# --- synthetic round means for the curtailing tests (no files) ------------------------------------------
SYNTHETIC_SUBS = [f"sub{i}" for i in range(10)]
SYNTHETIC_PAYLOADS = (16, 1024, 16384)


def synthetic_ratios(rng: np.random.Generator, rounds: int, shifts: dict[str, float], bad_share: float) -> pd.DataFrame:
    """Rounds like the real ones: a per-round state shared by the payloads (sd 2.5 %), now and then one
    arm in a bad machine state (x1.3-1.8, either direction), and a regression of `shifts[sub]`."""
    rows = []
    for r in range(rounds):
        name = f"{r + 1:02d}"
        for sub in SYNTHETIC_SUBS:
            state = rng.normal(0, 0.025)
            if rng.random() < bad_share:
                state += rng.choice([-1, 1]) * math.log(rng.uniform(1.3, 1.8))
            for statistic in v.TESTED_STATISTICS:
                for payload in SYNTHETIC_PAYLOADS:
                    d = math.log1p(shifts.get(sub, 0.0)) + state + rng.normal(0, 0.005)
                    rows.append({ROUND: name, s.EXPERIMENT_TYPE: sub, s.BYTES: payload, STATISTIC: statistic,
                                 "log_ratio": d})
    return pd.DataFrame(rows)


def statuses(decision: v.Decision) -> dict[tuple[str, str], str]:
    return {(r[s.EXPERIMENT_TYPE], r[STATISTIC]): r[s.STATUS] for _, r in decision.table.iterrows()}


def layout_ab(folder, slowdown: dict[str, float], seed: int, rounds: int = 16, commits=("a" * 40, "b" * 40),
              cpu_latency: CpuLatency | None = None, layouts: int | None = None, aligned: tuple[int, int] | None = None):
    """A finished A/B of two builds that differ only in layout: rounds whose candidate is `slowdown`
    slower (negative: faster), the metadata `perfgate ab` writes, and its verdict.json. `aligned`: the
    arms are `perfgate build --align-functions` builds of these alignments (their records' CMake arguments)."""
    write_rounds(folder, rounds, slowdown, seed=seed)
    builds = [{"cmake_args": colcon.cmake_arguments(ccache=True, align_functions=n)} for n in aligned] if aligned \
        else [None, None]
    arms = {name: AbArm.record(spec=f"ws/installs/{commit[:7]}",
                               fastdds=FastDDS.record(version="3.2.0", commit=commit, build=build))
            for name, commit, build in zip(s.AB_ARMS, commits, builds)}
    write_metadata(folder, Metadata.record(label=folder.name, kind=KIND_AB, created_utc="2026-11-27T05:00:00.000000Z",
                                           finished_utc="2026-11-27T05:20:00.000000Z", arms=arms, rounds=rounds,
                                           samples=1000, requested_subexperiments=tuple(SUBS),
                                           platform=Platform.record(id="vm-abc", cores=2),
                                           load_average=LoadAverage.record(before=(1.1, 1.0, 0.9), after=(1.2, 1.0, 0.9)),
                                           cpu_latency=cpu_latency, layouts=layouts))
    done = conftest.perfgate_in_process("verdict", "--ab-directory", str(folder), "--no-plots")
    assert done.returncode in (s.EXIT_OK, s.EXIT_REGRESSION), done.stderr
    return folder


def one_line_exit_2(done, *words):
    """A command's bad-input exit: code 2, one line on stderr naming `words`, no traceback."""
    assert done.returncode == s.EXIT_USAGE, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


def kept_with_layouts(root: Path, commit: str, count: int, harness, align_functions: int = 0) -> Path:
    """A kept install with `count` layouts as `perfgate build --layouts` keeps them (bin/, a build record with its
    `layout`), each with the real harness (`harness`: HarnessPaths) on the system's Fast DDS."""
    folder = root / commit
    for seed, where in enumerate([folder] + [folder / layouts.LAYOUTS_DIR / str(k) for k in range(1, count + 1)]):
        (where / "bin").mkdir(parents=True)
        for executable in (harness.latency, harness.floor):
            shutil.copy2(executable, where / "bin" / executable.name)
        record = {"status": s.BUILD_OK, "workspace": str(root), "prefix": str(where),
                  "harness": str(where / "bin" / native_harness.LATENCY_EXECUTABLE),
                  "fastdds": {"package": "fastrtps", "version": "2.9.1", "commit": commit, "kind": "git"},
                  "cmake_args": colcon.cmake_arguments(ccache=False, align_functions=align_functions),
                  "harness_source": "sources-1"}
        record.update({"layout": {"seed": seed, "of": count, "order": layouts.ORDER}} if seed else
                      {"layouts": {"count": count, "order": layouts.ORDER}})
        files.write_text(where / s.BUILD_RECORD_FILE, json.dumps(record))
    return folder
