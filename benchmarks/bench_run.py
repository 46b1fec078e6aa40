"""How long `perfgate run` takes on this machine, against the targets.

    .venv/bin/python benchmarks/bench_run.py            # quick run, then the full default
    .venv/bin/python benchmarks/bench_run.py --quick-only
    .venv/bin/python benchmarks/bench_run.py --quick-only --workspace WS   # and the harness overhead

Targets (2 cores): quick (200 samples, the default sub-experiments) within 60 s; the full default
(10 sub-experiments x 11 payloads x 10000 samples, plus the floor) within 5 minutes. The harness
build is timed apart (it happens once per machine and Fast DDS).

Harness overhead (with --workspace, a `perfgate build` workspace, whose colcon build holds Fast
DDS' own LatencyTest): on that one Fast DDS build, the upstream engine (LatencyTest, loopback
profiles, 10000 samples at 16 and 16384 B) and the harness at the same settings, alternating
rounds (--rounds, default 5; --pin-cpus pins both engines alike; which engine goes first alternates
too) so that drift of the machine hits both alike. LatencyTest records half the round trip minus
one clock read ((end - start) / 2 - overhead, the overhead it prints); its medians are put back on
the harness's footing, 2 * (half + overhead), to compare. The harness's medians must not be above
LatencyTest's. Each round also gives a paired ratio (harness / LatencyTest, run back to back); their
median comes with a distribution-free confidence interval (order statistics of the binomial), so a
ratio above 1 that the rounds do not support is told apart from a harness that is slower in
nearly every round. --against-itself runs LatencyTest in both columns (an A/A run): the ratios two
identical engines get on this machine, the yardstick for the harness's.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfgate import files
from perfgate.fastdds import harness
from perfgate.latency import process
from perfgate.measure import options as run_options
from perfgate import schema as s

QUICK_SAMPLES = 200
QUICK_TARGET_S = 60.0
FULL_TARGET_S = 300.0
OVERHEAD_SUBEXPERIMENTS = ("intraprocess_best_effort", "intraprocess_reliable", "interprocess_best_effort",
                           "interprocess_reliable")
OVERHEAD_PAYLOADS = (16, 16384)  # what Fast DDS' latency tests measure (their payloads_demands.csv)
OVERHEAD_ROUNDS = 5


def timed_run(output: Path, samples: int | None) -> tuple[float, int]:
    command = [sys.executable, "-m", "perfgate.cli", "run", "--output", str(output)]
    if samples is not None:
        command += ["--samples", str(samples)]
    started = time.monotonic()
    completed = subprocess.run(command)
    return time.monotonic() - started, completed.returncode


def print_breakdown(output: Path) -> None:
    metadata = files.read_metadata(output) or {}
    entries = metadata.get("subexperiments", {})
    for name in metadata.get("requested_subexperiments", []):
        entry = entries.get(name)
        if entry is None:
            continue
        median = ", ".join(f"{p} B median {m:.3f} us" for p, m in entry.get("median_us", {}).items())
        print(f"    {name:40s} {entry.get('duration_s', 0):7.1f} s  {entry['outcome']}  {median}")


def verdict(elapsed: float, target: float) -> str:
    return "within target" if elapsed <= target else "OVER TARGET"


def medians(experiment: Path) -> dict[tuple[str, int], float]:
    """(sub-experiment, payload) -> median of the round trip, from the raw measurements."""
    metadata = files.read_metadata(experiment) or {}
    half = metadata.get("latency_definition") == s.HALF_ROUND_TRIP
    found = {}
    for sub, raw_csv in files.raw_files(experiment).items():
        entry = metadata.get("subexperiments", {}).get(sub, {})
        subtracted = entry.get("clock_overhead_subtracted_us") or 0.0
        summary = process.summarise(files.read_raw(raw_csv))
        for payload, median in zip(summary[s.BYTES], summary[s.MEDIAN]):
            found[(sub, int(payload))] = 2.0 * (float(median) + subtracted) if half else float(median)
    return found


def harness_overhead(workspace: Path, folder: Path, rounds: int, pin_cpus: str | None, against_itself: bool) -> None:
    subs = ",".join(OVERHEAD_SUBEXPERIMENTS)
    pinning = ["--pin-cpus", pin_cpus] if pin_cpus else []
    latency_test = ["--engine", "upstream", "--workspace", str(workspace), "--subexperiments", subs, *pinning]
    engines = {
        "LatencyTest": latency_test,
        # An A/A run: how far apart the comparison puts two identical engines on this machine.
        "harness": latency_test if against_itself else [
            "--workspace", str(workspace), "--subexperiments", subs, "--samples", str(s.DEFAULT_SAMPLES),
            "--payloads", ",".join(map(str, OVERHEAD_PAYLOADS)), *pinning],
    }
    found: dict[str, list[dict[tuple[str, int], float]]] = {name: [] for name in engines}
    for round_index in range(rounds):
        order = list(engines) if round_index % 2 == 0 else list(reversed(engines))
        for name in order:
            options = engines[name]
            output = folder / f"{name}-{round_index}"
            command = [sys.executable, "-m", "perfgate.cli", "run", "--output", str(output), *options]
            completed = subprocess.run(command, capture_output=True, text=True)
            if completed.returncode != 0:
                print(f"harness overhead: {name} exited {completed.returncode}: {completed.stderr.strip()[-500:]}")
                return
            found[name].append(medians(output))
    if against_itself:
        print("A/A: the 'harness' column below is LatencyTest again")
    print(f"harness overhead on {workspace}, {'pinned to CPUs ' + pin_cpus if pin_cpus else 'not pinned'}: median "
          f"round trip in us over {rounds} alternating rounds of each engine (LatencyTest's half round trip plus "
          "the clock read it subtracts, doubled); [lowest-highest] of the rounds' medians")
    low, high, coverage = median_interval_ranks(rounds)
    print(f"    paired: median of the rounds' harness/LT ratios, [{coverage:.0%} confidence interval of that median]")
    print(f"    {'sub-experiment':26s} {'bytes':>6s} {'LatencyTest':>24s} {'harness':>24s} {'harness/LT':>10s} "
          f"{'paired':>22s}")
    for sub in OVERHEAD_SUBEXPERIMENTS:
        for payload in OVERHEAD_PAYLOADS:
            reference = [r[(sub, payload)] for r in found["LatencyTest"]]
            ours = [r[(sub, payload)] for r in found["harness"]]
            ratio = statistics.median(ours) / statistics.median(reference)
            paired = sorted(o / r for o, r in zip(ours, reference))
            interval = (paired[low], paired[high])
            if ratio <= 1.0:
                verdict_text = "ok"
            elif interval[0] <= 1.0:
                verdict_text = "above, within the rounds' spread"
            else:
                verdict_text = "HARNESS SLOWER"
            print(f"    {sub:26s} {payload:6d} {spread(reference):>24s} {spread(ours):>24s} {ratio:9.3f}x "
                  f"{statistics.median(paired):6.3f} [{interval[0]:.3f}-{interval[1]:.3f}]  {verdict_text}")


def median_interval_ranks(count: int) -> tuple[int, int, float]:
    """0-based ranks (low, high) of the sorted values that bound a confidence interval for their median,
    and its coverage: the narrowest one symmetric in rank that covers at least 90 %, else the widest."""
    def below(k: int) -> float:  # P(Binomial(count, 1/2) < k)
        return sum(math.comb(count, i) for i in range(k)) / 2 ** count
    k = 1
    while k + 1 <= count // 2 and 1 - 2 * below(k + 1) >= 0.90:
        k += 1
    return k - 1, count - k, 1 - 2 * below(k)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.2f}-{max(values):.2f}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick-only", action="store_true", help="skip the full default run")
    parser.add_argument("--workspace", type=Path, default=None,
                        help="a `perfgate build` workspace: also compare the harness with Fast DDS' LatencyTest")
    parser.add_argument("--rounds", type=int, default=OVERHEAD_ROUNDS,
                        help=f"alternating rounds of each engine for the overhead (default {OVERHEAD_ROUNDS})")
    parser.add_argument("--pin-cpus", default=None, metavar="PUB,SUB",
                        help="pin both engines' publisher and subscriber (the overhead comparison only)")
    parser.add_argument("--against-itself", action="store_true",
                        help="compare LatencyTest with LatencyTest (A/A): the spread the comparison itself has")
    arguments = parser.parse_args()
    if arguments.rounds < 1:
        parser.error(f"--rounds {arguments.rounds}: needs at least one round")

    started = time.monotonic()
    built = harness.ensure_harness()
    print(f"harness ready in {time.monotonic() - started:.1f} s ({built.latency})")
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} CPUs")

    with tempfile.TemporaryDirectory(prefix="bench-run-") as folder:
        quick = Path(folder) / "quick"
        elapsed, code = timed_run(quick, QUICK_SAMPLES)
        subs = len(run_options.DEFAULT_RUN_SUBEXPERIMENTS)
        print(f"quick run ({QUICK_SAMPLES} samples x {len(s.PAYLOADS)} payloads x {subs} sub-experiments): "
              f"{elapsed:.1f} s, exit {code}, {verdict(elapsed, QUICK_TARGET_S)} ({QUICK_TARGET_S:.0f} s)")
        print_breakdown(quick)
        if not arguments.quick_only:
            full = Path(folder) / "full"
            elapsed, code = timed_run(full, None)
            print(f"full default run ({s.DEFAULT_SAMPLES} samples x {len(s.PAYLOADS)} payloads x {subs} "
                  f"sub-experiments): {elapsed:.1f} s, exit {code}, {verdict(elapsed, FULL_TARGET_S)} "
                  f"({FULL_TARGET_S:.0f} s)")
            print_breakdown(full)
        if arguments.workspace is not None:
            harness_overhead(arguments.workspace, Path(folder), arguments.rounds, arguments.pin_cpus,
                             arguments.against_itself)
        else:
            print("harness overhead: not measured (needs --workspace: a `perfgate build` workspace, whose build "
                  "holds Fast DDS' LatencyTest; Debian's libfastrtps-dev does not ship it)")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
