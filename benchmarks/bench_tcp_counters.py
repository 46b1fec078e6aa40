"""TCP best effort's run-to-run spread against what the kernel counts: Nagle, delayed ACKs, wake-ups, IPIs?

    .venv/bin/python benchmarks/bench_tcp_counters.py --runs 12 --output /tmp/tcp [--fastdds-prefix PREFIX ...]
        [--subexperiments interprocess_best_effort_tcp,interprocess_best_effort] [--cpu-latency awake]

Runs `perfgate run` of each sub-experiment and each build (`--fastdds-prefix` again for another, for example
two layouts of one commit: `WS/installs/NAME/layouts/K`) in turn, `--runs` times (2000 round trips of 16, 1024 and
16384 B each, the A/B's `--cpu-latency awake` by default), and reads around each run the system's TCP
counters (`nstat`), its context switches (/proc/stat) and its inter-processor interrupts (/proc/interrupts).
It prints per run the median round trip per payload beside, per round trip, the segments, pure ACKs,
delayed ACKs, fast-path hits, autocorking and coalescing, the context switches, the function-call IPIs
that are not TLB shootdowns (how a wake-up reaches a CPU that is not polling) and the rescheduling IPIs;
then per sub-experiment the correlation of the 16 B median with each of those that varied, and with several
builds each build's mean of every column.
The counters are the machine's: nothing else may run meanwhile; run it alone.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

SUBS = ("interprocess_best_effort_tcp", "interprocess_best_effort")
PAYLOADS = (16, 1024, 16384)
SAMPLES = 2000
WARMUP = 100  # the harness's unrecorded round trips per payload
COUNTERS = ("TcpInSegs", "TcpOutSegs", "TcpExtTCPPureAcks", "TcpExtDelayedACKs", "TcpExtTCPHPAcks",
            "TcpExtTCPHPHits", "TcpExtTCPAutoCorking", "TcpExtTCPOrigDataSent", "TcpExtTCPBacklogCoalesce",
            "TcpExtTCPRcvCoalesce", "TcpExtTCPAckCompressed", "TcpExtTCPWantZeroWindowAdv")


def counters() -> dict[str, int]:
    tables = json.loads(subprocess.run(["nstat", "-a", "-z", "--json"], capture_output=True, text=True,
                                       check=True).stdout)
    merged: dict[str, int] = {}
    for table in tables.values():
        merged.update(table)
    with open("/proc/stat") as stat:
        merged["ContextSwitches"] = next(int(line.split()[1]) for line in stat if line.startswith("ctxt "))
    with open("/proc/interrupts") as interrupts:
        for line in interrupts:
            fields = line.split()
            if fields and fields[0] in ("CAL:", "TLB:", "RES:"):
                merged[fields[0][:-1]] = sum(int(x) for x in fields[1:] if x.isdigit())
    # on x86 a TLB shootdown is a function call IPI too; what is left of CAL are wake-ups and the like
    merged["WakeupIPIs"] = merged.get("CAL", 0) - merged.get("TLB", 0)
    merged["ReschedIPIs"] = merged.get("RES", 0)
    return merged


def measure(perfgate: Path, sub: str, prefix: str | None, folder: Path,
            options: argparse.Namespace) -> dict[str, float] | None:
    command = [str(perfgate), "run", "--output", str(folder), "--subexperiments", sub, "--samples", str(SAMPLES),
               "--payloads", ",".join(map(str, PAYLOADS)), "--cpu-latency", options.cpu_latency]
    command += ["--fastdds-prefix", prefix] if prefix else []
    before = counters()
    done = subprocess.run(command, capture_output=True, text=True)
    after = counters()
    if done.returncode != 0:
        print(f"{folder.name}: exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}", flush=True)
        return None
    raw = pd.read_csv(folder / f"measurements_{sub}.csv")
    medians = raw.groupby("Payload [Bytes]")["Latency [us]"].median()
    trips = len(raw) + WARMUP * len(PAYLOADS)
    names = (COUNTERS if sub.endswith("_tcp") else ()) + ("ContextSwitches", "WakeupIPIs", "ReschedIPIs")
    row: dict[str, float] = {f"{payload} B [us]": round(float(median), 1) for payload, median in medians.items()}
    row.update({name.removeprefix("TcpExt").removeprefix("Tcp"): round((after.get(name, 0) - before.get(name, 0))
                                                                      / trips, 2) for name in names})
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--output", type=Path, required=True, help="folder for the runs")
    parser.add_argument("--fastdds-prefix", action="append", default=None,
                        help="a colcon install prefix (default: the system's); again for another build")
    parser.add_argument("--subexperiments", default=",".join(SUBS), help="measured in turn, run after run")
    parser.add_argument("--cpu-latency", default="awake", choices=("system", "awake"))
    options = parser.parse_args()
    perfgate = Path(sys.executable).with_name("perfgate")
    tables: dict[str, list[dict[str, float]]] = {}
    prefixes = options.fastdds_prefix or [None]
    for run in range(options.runs):
        for sub in options.subexperiments.split(","):
            for build, prefix in enumerate(prefixes):
                row = measure(perfgate, sub, prefix, options.output / f"{sub}-{build}-{run:02d}", options)
                if row is not None:
                    tables.setdefault(sub, []).append({"run": run, "build": build, **row})
        print(f"run {run} done", flush=True)
    pd.set_option("display.width", 250)
    for sub, rows in tables.items():
        table = pd.DataFrame(rows)
        print(f"{sub}, per round trip (--cpu-latency {options.cpu_latency}):")
        print(table.to_string(index=False))
        print("correlation of the 16 B median with each counter that varied:")
        for column in table.columns[2 + len(PAYLOADS):]:
            if table[column].std() > 0:
                print(f"  {column}: {table['16 B [us]'].corr(table[column]):+.2f}")
        if len(prefixes) > 1:
            print("mean per build (" + ", ".join(f"{n}: {p}" for n, p in enumerate(prefixes)) + "):")
            varied = [c for c in table.columns[1:] if c == "build" or table[c].std() > 0]
            print(table[varied].groupby("build").mean().round(2).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
