"""How good the throughput A/B verdict is on this machine: spread, false alarms, power, wall time.

    .venv/bin/python benchmarks/bench_throughput_ab.py --output /tmp/tp-ab            # measure, then print
    .venv/bin/python benchmarks/bench_throughput_ab.py --output /tmp/tp-ab --reuse    # print from stored runs

1. One real A/A `perfgate ab-throughput` (the system Fast DDS in both arms, pinned, the default
   tests: payloads 16 and 16384, demand 1000, recovery 0 ms) with --rounds and --subexperiments;
   its whole verdict must pass. Wall time and load from its metadata.
2. The spread of d per sub-experiment: the robust sd of the per-round mean log ratio
   baseline / candidate (1.4826 x MAD).
3. Resampled rates: rounds drawn with replacement from the A/A's rounds, --resamples verdicts
   each (the verdict's own decide(), Holm over the sub-experiments measured). False alarms: the
   share of whole verdicts that fail anything. Power at a drop x: one sub-experiment's drawn d
   shifted by log(1 / (1 - x)) (its candidate delivering (1 - x) times as much), the share of draws
   in which that sub-experiment fails, averaged over the sub-experiments.
Resampled rounds inherit the real rounds' noise, whatever its shape; they cannot show effects
slower than one A/B (a drift across days), which only repeated real runs can.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from perfgate.ab import throughput_report as tr
from perfgate import schema as s
from perfgate.ab import verdict as v

DROPS = (0.02, 0.05, 0.10, 0.20)
DEFAULT_SUBS = "intraprocess_best_effort,interprocess_best_effort,interprocess_reliable,interprocess_best_effort_tcp"


def ratios_of(ab_dir: Path) -> pd.DataFrame:
    rounds = tr.read_rounds(ab_dir)
    return v.log_ratios(rounds.table, tr.STATISTICS, unit=tr.TEST, higher_is_better=True)


def resampled(ratios: pd.DataFrame, subs: list[str], rounds: int, trials: int, seed: int,
              drop: float | None) -> float:
    """Share of verdicts that fail (drop None: anything; else the shifted sub-experiment)."""
    rng = np.random.default_rng(seed)
    names = sorted(set(ratios[v.ROUND]))
    by_round = {name: rows for name, rows in ratios.groupby(v.ROUND)}
    hits = 0
    for trial in range(trials):
        drawn = [by_round[name].assign(**{v.ROUND: f"{i:03d}"}) for i, name in enumerate(rng.choice(names, rounds))]
        table = pd.concat(drawn, ignore_index=True)
        if drop is None:
            hits += not v.decide(table, order=subs, statistics=tr.STATISTICS, unit=tr.TEST).failed.empty
            continue
        target = subs[trial % len(subs)]
        shifted = table[s.EXPERIMENT_TYPE] == target
        table.loc[shifted, "log_ratio"] += math.log(1 / (1 - drop))
        failed = v.decide(table, order=subs, statistics=tr.STATISTICS, unit=tr.TEST).failed
        hits += target in set(failed[s.EXPERIMENT_TYPE])
    return hits / trials


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--reuse", action="store_true", help="print from the stored A/A run")
    parser.add_argument("--rounds", type=int, default=13)
    parser.add_argument("--time", default="0.5", help="seconds per test")
    parser.add_argument("--subexperiments", default=DEFAULT_SUBS)
    parser.add_argument("--resamples", type=int, default=400)
    options = parser.parse_args()
    aa = options.output / "aa"
    if not options.reuse:
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "perfgate.cli", "ab-throughput", "--output", str(aa),
                               "--baseline", "system", "--candidate", "system", "--rounds", str(options.rounds),
                               "--time", options.time, "--subexperiments", options.subexperiments, "--no-plots"],
                              capture_output=True, text=True)
        print(f"A/A ab-throughput: exit {done.returncode}, wall {time.monotonic() - started:.0f} s")
        if done.returncode not in (s.EXIT_OK, s.EXIT_REGRESSION):
            print(done.stdout + done.stderr, file=sys.stderr)
            return 1
    record = json.loads((aa / s.VERDICT_JSON).read_text())
    meta = json.loads((aa / s.METADATA_FILE).read_text())
    load = meta.get("load_average") or {}
    print(f"A/A verdict: {record['headline']}")
    print(f"settings: {len(record['rounds'])} rounds, {meta.get('throughput')}, payloads {meta.get('payloads')}, "
          f"pinned {(meta.get('cpu_pinning') or {}).get('pinned')}, load {load.get('before', ['?'])[0]} before, "
          f"{load.get('after', ['?'])[0]} after")
    ratios = ratios_of(aa)
    subs = list(dict.fromkeys(ratios[s.EXPERIMENT_TYPE]))
    means, _ = v.usable_round_means(ratios, tr.TEST)
    print("\nspread of d (robust sd of the per-round mean log ratio baseline/candidate):")
    for sub, d in means.groupby(s.EXPERIMENT_TYPE)["d"]:
        print(f"  {sub:<40} {float(np.median(np.abs(d - np.median(d))) * 1.4826):.4f}")
    rounds = len(record["rounds"])
    print(f"\nresampled ({options.resamples} verdicts each, {rounds} rounds, Holm over {len(subs)} tests at "
          f"{v.DEFAULT_ALPHA}, threshold {v.DEFAULT_THRESHOLD:.0%}):")
    print(f"  A/A whole-verdict false alarms: {resampled(ratios, subs, rounds, options.resamples, 1, None):.1%}")
    for drop in DROPS:
        print(f"  one sub-experiment -{drop:.0%}: caught {resampled(ratios, subs, rounds, options.resamples, 2, drop):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
