"""Whether sampling the harness processes' resources moves the latency median more than its own A/A noise.

    .venv/bin/python benchmarks/bench_resources.py                 # 8 rounds, 3 sub-experiments, 1000 samples
    .venv/bin/python benchmarks/bench_resources.py --rounds 10 --subexperiments all

Each round runs `perfgate run --samples N` three times, one after the other: twice without sampling
(PERFGATE_RESOURCE_SAMPLING=off: arms "off" and "off2") and once with it ("on"), in an order that
rotates from round to round so that no arm always runs first or last. Per run and sub-experiment the
level is the geometric mean over payloads of the latency median (the verdict's mean log ratio, docs/
verdict.md); per round, two ratios: on / off (what sampling does) and off2 / off (what nothing does:
the A/A). Sampling passes when the median over rounds of on / off lies within the A/A spread, the
range that holds the middle 80 % of the rounds' off2 / off ratios (widened to cover their median
absolute deviation from 1 at least).

Prints the machine's load before and after; figures: docs/formats.md section 16.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from perfgate import files
from perfgate import schema as s
from perfgate.measure import resources

DEFAULT_SUBEXPERIMENTS = ("intraprocess_best_effort", "interprocess_best_effort", "interprocess_reliable")
ARMS = ("off", "on", "off2")


def run_arm(output: Path, arm: str, samples: int, subexperiments: list[str]) -> None:
    environment = dict(os.environ)
    environment[resources.SAMPLING_ENV] = "on" if arm == "on" else "off"
    command = [sys.executable, "-m", "perfgate.cli", "run", "--samples", str(samples), "--subexperiments",
               ",".join(subexperiments), "--output", str(output)]
    completed = subprocess.run(command, env=environment, capture_output=True, text=True)
    if completed.returncode != 0:
        sys.exit(f"bench_resources: {arm} run failed ({completed.returncode}): {completed.stderr.strip()[-400:]}")
    sampled = any(output.glob(f"{s.RESOURCES_PREFIX}*.csv"))
    if sampled != (arm == "on"):
        sys.exit(f"bench_resources: the {arm} run {'wrote' if sampled else 'did not write'} resources files")


def levels(experiment: Path) -> dict[str, float]:
    """sub-experiment -> geometric mean over payloads of the latency median (us)."""
    found = {}
    for sub, raw in files.raw_files(experiment).items():
        frame = files.read_raw(raw)
        medians = frame.groupby(s.PAYLOAD)[s.LATENCY].median().to_numpy()
        found[sub] = float(np.exp(np.log(medians).mean()))
    return found


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--subexperiments", default=",".join(DEFAULT_SUBEXPERIMENTS),
                        help="comma-separated names, or `all` for the ten")
    parser.add_argument("--keep", default=None, help="a folder to keep the runs in (default: a temporary one)")
    args = parser.parse_args()
    subs = list(s.DEFAULT_SUBEXPERIMENT_NAMES) if args.subexperiments == "all" else args.subexperiments.split(",")
    print(f"bench_resources: {args.rounds} rounds x {len(ARMS)} runs of {len(subs)} sub-experiment(s), "
          f"{args.samples} samples per payload; sampling every {resources.SAMPLE_INTERVAL_S} s; load {load()}",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-resources-") as scratch:
        root = Path(args.keep or scratch)
        ratios: dict[str, dict[str, list[float]]] = {sub: {"on": [], "off2": []} for sub in subs}
        for round_index in range(args.rounds):
            order = ARMS[round_index % 3:] + ARMS[:round_index % 3]
            measured = {}
            for arm in order:
                output = root / f"round{round_index + 1:02d}" / arm
                run_arm(output, arm, args.samples, subs)
                measured[arm] = levels(output)
            for sub in subs:
                for arm in ("on", "off2"):
                    ratios[sub][arm].append(measured[arm][sub] / measured["off"][sub])
            print(f"[round {round_index + 1}/{args.rounds}] order {'-'.join(order)}, load {load()}", flush=True)
    print(f"bench_resources: load after {load()}")
    print(f"{'sub-experiment':40s} {'on/off':>8s} {'A/A off2/off':>13s} {'A/A 80% range':>18s}  verdict")
    moved = 0
    for sub in subs:
        effect = statistics.median(ratios[sub]["on"])
        aa = sorted(ratios[sub]["off2"])
        low, high = np.quantile(aa, [0.1, 0.9])
        mad = statistics.median(abs(r - 1.0) for r in aa)
        low, high = min(low, 1.0 - mad), max(high, 1.0 + mad)
        within = low <= effect <= high
        moved += not within
        print(f"{sub:40s} {100 * (effect - 1):+7.2f}% {100 * (statistics.median(aa) - 1):+12.2f}% "
              f"{100 * (low - 1):+8.2f}% .. {100 * (high - 1):+6.2f}%  {'within A/A' if within else 'MOVED'}")
    print(f"bench_resources: {'PASS' if not moved else 'FAIL'}: sampling moved the median beyond the A/A spread "
          f"in {moved} of {len(subs)} sub-experiment(s)")
    return 0 if not moved else 1


if __name__ == "__main__":
    sys.exit(main())
