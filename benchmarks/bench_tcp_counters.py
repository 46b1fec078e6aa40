"""TCP best effort's run-to-run spread against the kernel's TCP counters: is it Nagle, delayed ACKs, corking?

    .venv/bin/python benchmarks/bench_tcp_counters.py --runs 12 --output /tmp/tcp [--fastdds-prefix PREFIX]

Runs `perfgate run` of interprocess_best_effort_tcp `--runs` times (2000 round trips of 16, 1024 and 16384 B
each), reads the system's TCP counters (`nstat -a -z --json`) before and after each run, and prints per run
the median round trip per payload beside the segments, pure ACKs, delayed ACKs, fast-path hits, autocorking
and coalescing per round trip, then the correlation of the 16 B median with each counter that varied.
Nothing else may send TCP meanwhile (the counters are the machine's); run it alone.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

SUB = "interprocess_best_effort_tcp"
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
    return merged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--output", type=Path, required=True, help="folder for the runs")
    parser.add_argument("--fastdds-prefix", default=None, help="a colcon install prefix (default: the system's)")
    options = parser.parse_args()
    perfgate = Path(sys.executable).with_name("perfgate")
    rows = []
    for run in range(options.runs):
        folder = options.output / f"run-{run:02d}"
        command = [str(perfgate), "run", "--output", str(folder), "--subexperiments", SUB, "--samples", str(SAMPLES),
                   "--payloads", ",".join(map(str, PAYLOADS))]
        command += ["--fastdds-prefix", options.fastdds_prefix] if options.fastdds_prefix else []
        before = counters()
        done = subprocess.run(command, capture_output=True, text=True)
        after = counters()
        if done.returncode != 0:
            print(f"run {run}: exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        raw = pd.read_csv(folder / f"measurements_{SUB}.csv")
        medians = raw.groupby("Payload [Bytes]")["Latency [us]"].median()
        trips = len(raw) + WARMUP * len(PAYLOADS)
        row = {"run": run, **{f"{payload} B [us]": round(float(median), 1) for payload, median in medians.items()}}
        row.update({name.removeprefix("TcpExt").removeprefix("Tcp"): round((after.get(name, 0) - before.get(name, 0))
                                                                          / trips, 2) for name in COUNTERS})
        rows.append(row)
        print(f"run {run} done", flush=True)
    table = pd.DataFrame(rows)
    pd.set_option("display.width", 250)
    print(table.to_string(index=False))
    print("per round trip; correlation of the 16 B median with each counter that varied:")
    for column in table.columns[1 + len(PAYLOADS):]:
        if table[column].std() > 0:
            print(f"  {column}: {table['16 B [us]'].corr(table[column]):+.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
