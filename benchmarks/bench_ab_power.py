"""Power of the latency A/B on fresh rounds: a known slow-down injected, every round measured (issue 28).

    .venv/bin/python benchmarks/bench_ab_power.py --output /tmp/power --build WS/installs/<commit> \
        --delays-from aa-1 --delays-from aa-2 --runs 3 --level 0.05
    .venv/bin/python benchmarks/bench_ab_power.py --output /tmp/power --reuse     # print from the runs in it

Each run is `perfgate ab --baseline B --candidate B --all-rounds --inject-delay-ns ...` of one build against
itself, with the candidate's echo busy-waiting D ns in **every** sub-experiment at once; D is sized per
sub-experiment from the baseline medians of stored A/A folders (--delays-from, pooled) so that the mean
over payloads of log(1 + D / median) is log(1 + level), the verdict's own scale. The rounds and the
layout-aware thresholds are those `perfgate ab` plans for the platform ($PERFGATE_PLATFORM).

Why all at once: each sub-experiment is measured by its own processes in its own turns, so one's delay
never reaches another's rounds; a run gives one fresh trial per sub-experiment in little more than the
time a run with one regressed sub-experiment takes (its 15 or more rounds).

Each sub-experiment is then decided as if it alone had regressed, from its own tests' p-values (every
round measured, so they are the full A/B's): Holm over the m tests compares the smallest p-value with
alpha / m, so it is caught when the smaller of its two p-values (Median, 90 %) is <= alpha / m. That is
exact unless an unchanged test's p-value is smaller still and <= alpha / m (a false alarm, when it would
be compared more leniently): a lower bound on power, never an overstatement. Printed at the levels the
A/B is run at: 0.02 (`perfgate ab`), 0.015 and 0.01 (the gate's latency A/B without and with the
throughput A/B, perfgate.gate.budget), with 95 % Clopper-Pearson intervals, pooled and per sub-experiment.

Measures one run at a time; nothing else should run on the machine meanwhile. Wall time: about 20 min
a run of the ten sub-experiments (16 rounds, 24 for the widest) on the 2-vCPU development VM.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from perfgate import schema as s
from perfgate.ab import verdict as v
from perfgate.ab.resample import clopper_pearson
from perfgate.gate import budget
from perfgate.model import read_metadata

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gate_quality import delays_for  # noqa: E402  (beside this file: the same sizing of a slow-down)

LEVELS = (0.02, budget.AB_VERDICTS, budget.AB_VERDICTS - budget.THROUGHPUT_AB_SHARE)
RUN_PREFIX = "run-"


def run_ab(output: Path, build: str, delays: dict[str, int]) -> None:
    command = [sys.executable, "-m", "perfgate.cli", "ab", "--output", str(output), "--baseline", build,
               "--candidate", build, "--all-rounds", "--no-plots", "--label", output.name,
               "--inject-delay-ns", ",".join(f"{sub}={d}" for sub, d in delays.items())]
    started = time.monotonic()
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode not in (s.EXIT_OK, s.EXIT_REGRESSION):
        sys.exit(f"bench: perfgate ab failed (exit {completed.returncode}):\n{completed.stderr}")
    (output / "bench_wall_s.txt").write_text(f"{time.monotonic() - started:.1f}\n")


def caught(table: pd.DataFrame, alpha: float) -> dict[str, bool]:
    """Per sub-experiment: would it fail if it alone had regressed (module docstring)."""
    smallest = table.groupby(s.EXPERIMENT_TYPE)[v.P_VALUE].min()
    return {sub: bool(p <= alpha / len(table)) for sub, p in smallest.items()}


def interval_text(k: int, n: int) -> str:
    low, high = clopper_pearson(k, n)
    return f"{k} of {n} ({k / n:.0%}, 95 % interval {low:.0%} to {high:.0%})"


def report(runs: list[Path]) -> None:
    rows = []
    for run in runs:
        table = pd.read_csv(run / s.VERDICT_CSV)
        meta = read_metadata(run)
        delays = (meta.arms or {})["candidate"].injected_echo_delay_ns or {}
        load = meta.load_average.before[0] if meta.load_average and meta.load_average.before else float("nan")
        wall = float((run / "bench_wall_s.txt").read_text()) if (run / "bench_wall_s.txt").is_file() else float("nan")
        print(f"{run.name}: {table[s.STATUS].eq(s.FAILED).sum()} of {len(table)} tests failed the whole A/B, "
              f"wall {wall / 60:.1f} min, load {load:.2f} before")
        decided = {alpha: caught(table, alpha) for alpha in LEVELS}
        for sub, tests in table.groupby(s.EXPERIMENT_TYPE):
            best = tests.loc[tests[v.P_VALUE].idxmin()]
            rows.append({"run": run.name, "sub": sub, "delay_ns": delays.get(sub), "rounds": int(best[v.ROUNDS]),
                         "ratio": float(best[v.RATIO]), "statistic": best[v.STATISTIC], "p": float(best[v.P_VALUE]),
                         **{alpha: decided[alpha][sub] for alpha in LEVELS}})
    table = pd.DataFrame(rows)
    print()
    print("per sub-experiment, each run: the test with the smaller p-value, its rounds, ratio, and caught at "
          + ", ".join(f"alpha {a:g}" for a in LEVELS))
    for sub, runs_of in table.groupby("sub"):
        cells = [f"{r['ratio']:.3f}x {r['statistic']} p {r['p']:.2g} ({r['rounds']} rounds) "
                 + "".join("Y" if r[a] else "-" for a in LEVELS) for _, r in runs_of.iterrows()]
        delay = runs_of["delay_ns"].iloc[0]
        delay = f"{int(delay):>6d}" if pd.notna(delay) else "  none"
        print(f"  {sub:40s} D {delay} ns | " + " | ".join(cells))
    print()
    injected = table[table["delay_ns"].notna()]  # the trials: sub-experiments with a delay injected
    # a delay sized from stored medians does not move today's median by exactly the level: say by how much
    realised = injected["ratio"] - 1
    print(f"the injected delays moved their sub-experiments by {realised.min():+.1%} to {realised.max():+.1%} "
          f"(median {realised.median():+.1%}): the power below is at those sizes")
    for alpha in LEVELS:
        k, n = int(injected[alpha].sum()), len(injected)
        print(f"power, one sub-experiment regressed, alpha {alpha:g} (Holm's first level alpha / 20): "
              f"{interval_text(k, n)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, required=True, help="one folder per run is made in it")
    parser.add_argument("--build", help="the install measured in both arms (a kept install or 'system')")
    parser.add_argument("--delays-from", type=Path, action="append", default=[],
                        help="an A/A folder whose baseline medians size the delays (repeatable, pooled)")
    parser.add_argument("--level", type=float, default=0.05, help="the relative slow-down injected")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reuse", action="store_true", help="print from the runs already in --output")
    args = parser.parse_args()
    if not args.reuse:
        if not args.build or not args.delays_from:
            parser.error("--build and --delays-from are needed unless --reuse")
        delays = delays_for(args.level, *args.delays_from)
        print(f"+{args.level:.0%} as echo delays: " + ", ".join(f"{k}={d} ns" for k, d in delays.items()),
              flush=True)
        args.output.mkdir(parents=True, exist_ok=True)
        first = len(list(args.output.glob(RUN_PREFIX + "*"))) + 1
        for index in range(first, first + args.runs):
            print(f"run {index} start {time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.2f}", flush=True)
            run_ab(args.output / f"{RUN_PREFIX}{index}", args.build, delays)
    runs = sorted(args.output.glob(RUN_PREFIX + "*"), key=lambda p: int(p.name[len(RUN_PREFIX):]))
    if not runs:
        sys.exit(f"bench: no {RUN_PREFIX}* folder in {args.output}")
    report(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
