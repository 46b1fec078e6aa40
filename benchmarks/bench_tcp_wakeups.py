"""Who is woken, and by an IPI, per message: TCP best effort's slow runs traced with `perf`.

    .venv/bin/python benchmarks/bench_tcp_wakeups.py --runs 8 --output /tmp/wakeups [--fastdds-prefix PREFIX]
        [--subexperiment interprocess_best_effort_tcp] [--samples 3000]

Runs `perfgate run` of one sub-experiment (16 B, the A/B's `--cpu-latency awake`) `--runs` times under
`perf record -a -e sched:sched_waking -e ipi:ipi_send_cpu`, then prints per run the median round trip beside,
per message (two per round trip), how often each harness thread was woken and how often a wake-up reached its
CPU by an inter-processor interrupt: through the remote CPU's wake list (`ttwu_queue_wakelist`: the CPU was
idle and not polling) or to preempt what it ran (`wakeup_preempt`). Thread names are Fast DDS's with the port
numbers dropped (`dds.tcp.N`: a TCP channel's receive thread; `dds.tcp_accept`: the TCP transport's I/O
thread) and `main` for the harness's measuring thread. The trace slows every round trip (about 2x): compare
runs with each other, not with untraced figures. Needs root (or perf_event_paranoid <= -1) and tracefs;
run it alone.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd

EVENT = re.compile(r"^\s*(?P<comm>.+?)\s+(?P<tid>\d+)\s+\[\d+\]\s+[\d.]+:\s+(?P<event>[\w:]+):\s+(?P<rest>.*)$")
WAKEE = re.compile(r"comm=(?P<comm>.+?) pid=\d+")
CALLSITE = re.compile(r"callsite=(?P<site>\w+)")


def thread_name(comm: str) -> str:
    if comm.startswith("perfgate-latenc"):
        return "main"
    return re.sub(r"^dds\.tcp\.\d+$", "dds.tcp.N", comm)


def count(script: str, harness_tids: set[str]) -> tuple[Counter, Counter]:
    """Wake-ups of the harness's threads, and IPIs sent for them (by the call site that sent each)."""
    wakeups: Counter = Counter()
    ipis: Counter = Counter()
    last_woken: dict[str, str] = {}  # per waking thread, whom it woke last
    for line in script.splitlines():
        match = EVENT.match(line)
        if not match or match["tid"] not in harness_tids:
            continue
        if match["event"].endswith("sched_waking"):
            wakee = WAKEE.search(match["rest"])
            if wakee:
                last_woken[match["tid"]] = thread_name(wakee["comm"])
                wakeups[last_woken[match["tid"]]] += 1
        elif match["event"].endswith("ipi_send_cpu") and match["tid"] in last_woken:
            site = CALLSITE.search(match["rest"])
            ipis[(last_woken[match["tid"]], site["site"] if site else "?")] += 1
    return wakeups, ipis


def harness_threads(script: str) -> set[str]:
    """The thread ids of the harness's processes: those named perfgate-latenc* or dds.*."""
    tids = set()
    for line in script.splitlines():
        match = EVENT.match(line)
        if match and (match["comm"].startswith("perfgate-latenc") or match["comm"].startswith("dds.")):
            tids.add(match["tid"])
    return tids


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--output", type=Path, required=True, help="folder for the runs and their traces")
    parser.add_argument("--fastdds-prefix", default=None, help="a colcon install prefix (default: the system's)")
    parser.add_argument("--subexperiment", default="interprocess_best_effort_tcp")
    parser.add_argument("--samples", type=int, default=3000)
    options = parser.parse_args()
    perfgate = Path(sys.executable).with_name("perfgate")
    options.output.mkdir(parents=True, exist_ok=True)
    rows = []
    for run in range(options.runs):
        folder = options.output / f"run-{run:02d}"
        trace = options.output / f"run-{run:02d}.perf.data"
        command = ["perf", "record", "-q", "-a", "-e", "sched:sched_waking", "-e", "ipi:ipi_send_cpu",
                   "-o", str(trace), "--", str(perfgate), "run", "--output", str(folder), "--subexperiments",
                   options.subexperiment, "--samples", str(options.samples), "--payloads", "16",
                   "--cpu-latency", "awake"]
        command += ["--fastdds-prefix", options.fastdds_prefix] if options.fastdds_prefix else []
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"run {run}: exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        script = subprocess.run(["perf", "script", "-i", str(trace), "-F", "comm,tid,cpu,time,event,trace"],
                                capture_output=True, text=True, check=True).stdout
        wakeups, ipis = count(script, harness_threads(script))
        raw = pd.read_csv(folder / f"measurements_{options.subexperiment}.csv")
        messages = 2 * (len(raw) + 100)  # two per round trip, the 100 warm-up round trips included
        row: dict[str, object] = {"run": run, "median [us]": round(float(raw["Latency [us]"].median()), 1)}
        row.update({f"woken {name}": round(n / messages, 2) for name, n in sorted(wakeups.items())
                    if n / messages >= 0.05})
        row.update({f"IPI {name} ({site})": round(n / messages, 2) for (name, site), n in sorted(ipis.items())
                    if n / messages >= 0.01})
        rows.append(row)
        print(f"run {run} done", flush=True)
    if not rows:
        print("no run finished", file=sys.stderr)
        return 1
    table = pd.DataFrame(rows).fillna(0.0)
    pd.set_option("display.width", 250)
    print(f"{options.subexperiment}, 16 B, traced; per message:")
    print(table.to_string(index=False))
    if len(table) > 2:
        print("correlation of the median with each column:")
        for column in table.columns[2:]:
            if table[column].std() > 0:
                print(f"  {column}: {table['median [us]'].corr(table[column]):+.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
