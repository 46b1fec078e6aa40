"""The harness against Fast DDS' own LatencyTest on one Fast DDS build, every sub-experiment both
measure (DDS Security included), pinned, in alternating rounds.

    flock /tmp/perfgate-timing.lock .venv/bin/python benchmarks/bench_security_vs_latencytest.py \\
        --workspace WS [--rounds 3] [--pin-cpus 0,1] [--subexperiments a,b]

WS is a `perfgate build` workspace whose build tree holds LatencyTest (the upstream engine refuses a
kept install, which has none). Each round runs `perfgate run --engine upstream --workspace WS` (their
ctest latency tests, 10000 samples, their payloads_demands.csv) and `perfgate run --fastdds-prefix
<WS's install>` (the harness of this checkout built against that same Fast DDS, 10000 samples at the
payloads LatencyTest measured), both pinned alike; which engine goes first alternates. Sub-experiments:
by default every one that both engines have (the upstream engine's names for this build's tests).
LatencyTest's half round trip is put back on the harness's footing, 2 * (half + the clock read it
subtracts), as benchmarks/bench_run.py does. The table: median of the rounds' medians [lowest-highest],
the ratio of those medians and the paired ratio (median of the rounds' harness/LatencyTest, with its
distribution-free confidence interval). Run it under the timing lock and quote the load it prints.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_run import median_interval_ranks, medians, spread
from perfgate.fastdds import harness
from perfgate import schema as s
from perfgate.fastdds.record import read_record
from perfgate.measure.upstream_commands import latency_tests
from perfgate.measure.upstream_names import LATENCY_TEST_SAMPLES, subexperiment_tests

ROUNDS = 3


def shared_subexperiments(workspace: Path) -> tuple[list[str], Path]:
    """(sub-experiments both engines measure on this build, the Fast DDS install prefix)."""
    record = read_record(workspace)
    ctest_file = workspace / "build" / record["fastdds"]["package"] / "test" / "performance" / "latency" / \
        "CTestTestfile.cmake"
    theirs = subexperiment_tests(latency_tests(ctest_file.read_text()))
    ours = {sub.name for sub in s.SUBEXPERIMENTS + s.EXTRA_SUBEXPERIMENTS if not sub.is_floor}
    order = [sub.name for sub in s.SUBEXPERIMENTS + s.EXTRA_SUBEXPERIMENTS]
    return [name for name in order if name in theirs and name in ours], Path(record["prefix"])


def run(command: list[str]) -> None:
    completed = subprocess.run([sys.executable, "-m", "perfgate.cli", "run", *command], capture_output=True, text=True)
    if completed.returncode != 0:
        raise SystemExit(f"perfgate run {' '.join(command)}: exit {completed.returncode}: "
                         f"{completed.stderr.strip()[-800:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", type=Path, required=True, help="a `perfgate build` workspace with its build tree")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"alternating rounds (default {ROUNDS})")
    parser.add_argument("--pin-cpus", default="0,1", metavar="PUB,SUB", help="both engines pinned alike (default 0,1)")
    parser.add_argument("--subexperiments", default=None, help="default: every one both engines measure")
    arguments = parser.parse_args()
    if arguments.rounds < 1:
        parser.error(f"--rounds {arguments.rounds}: needs at least one round")
    workspace = arguments.workspace.resolve()
    shared, prefix = shared_subexperiments(workspace)
    subs = arguments.subexperiments.split(",") if arguments.subexperiments else shared
    built = harness.ensure_harness(prefix)  # before the rounds: its build is not measured
    print(f"harness {built.latency}")
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} CPUs")
    print(f"workspace {workspace}, Fast DDS {read_record(workspace)['fastdds'].get('version')} in {prefix}; "
          f"sub-experiments: {', '.join(subs)}")
    found: dict[str, list[dict[tuple[str, int], float]]] = {"LatencyTest": [], "harness": []}
    with tempfile.TemporaryDirectory(prefix="bench-security-") as folder:
        pinning = ["--pin-cpus", arguments.pin_cpus]
        upstream = ["--engine", "upstream", "--workspace", str(workspace), "--subexperiments", ",".join(subs), *pinning]
        payloads: list[int] = []
        for round_index in range(arguments.rounds):
            order = ["LatencyTest", "harness"] if round_index % 2 == 0 else ["harness", "LatencyTest"]
            for engine in order:
                output = Path(folder) / f"{engine}-{round_index}"
                if engine == "LatencyTest":
                    run(["--output", str(output), *upstream])
                    if not payloads:
                        payloads = sorted({p for (_, p) in medians(output)})
                else:
                    # the harness measures what LatencyTest measured: its sample count and payloads
                    run(["--output", str(output), "--fastdds-prefix", str(prefix), "--subexperiments", ",".join(subs),
                         "--samples", str(LATENCY_TEST_SAMPLES), "--payloads", ",".join(map(str, payloads or [16, 16384])),
                         *pinning])
                found[engine].append(medians(output))
            print(f"round {round_index + 1} of {arguments.rounds} done "
                  f"(load {' '.join(f'{v:.2f}' for v in os.getloadavg())})", flush=True)
    low, high, coverage = median_interval_ranks(arguments.rounds)
    print(f"median round trip in us, {arguments.rounds} alternating rounds, pinned {arguments.pin_cpus}: median of the "
          f"rounds' medians [lowest-highest]; paired: median of the rounds' harness/LT ratios "
          f"[{coverage:.0%} confidence interval]")
    print(f"| {'sub-experiment':34s} | {'bytes':>5s} | {'LatencyTest':>22s} | {'harness':>22s} | harness/LT | "
          f"{'paired':>21s} |")
    print(f"|{'-' * 36}|{'-' * 7}|{'-' * 24}|{'-' * 24}|{'-' * 12}|{'-' * 23}|")
    for sub in subs:
        for payload in payloads:
            reference = [r[(sub, payload)] for r in found["LatencyTest"] if (sub, payload) in r]
            ours = [r[(sub, payload)] for r in found["harness"] if (sub, payload) in r]
            if len(reference) != arguments.rounds or len(ours) != arguments.rounds:
                print(f"| {sub:34s} | {payload:5d} | missing in some round |")
                continue
            paired = sorted(o / r for o, r in zip(ours, reference))
            print(f"| {sub:34s} | {payload:5d} | {spread(reference):>22s} | {spread(ours):>22s} | "
                  f"{statistics.median(ours) / statistics.median(reference):9.3f}x | "
                  f"{statistics.median(paired):.3f} [{paired[low]:.3f}-{paired[high]:.3f}] |")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
