"""How long `perfgate throughput` takes on this machine, against the issue's targets, and what it
measured: the quick run (payloads 16 and 16384 B x demands 100 and 1000 x 1 s, the ten) within 60 s,
the full default (11 payloads x 2 demands x 1 s, the ten) within 15 minutes.

    .venv/bin/python benchmarks/bench_throughput.py --output /tmp/bench-tp              # quick, then full
    .venv/bin/python benchmarks/bench_throughput.py --output /tmp/bench-tp --quick-only

Prints each run's wall time (the harness already built: a first run builds it, timed apart), the
machine's load before and after, per sub-experiment its outcome and its largest subscription
throughput, and the reliable sub-experiments' losses (there must be none). One run at a time;
nothing else should measure on the machine meanwhile.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from perfgate import files
from perfgate import schema as s
from perfgate.fastdds.harness import ensure_harness
from perfgate.throughput.files import read_throughput

TARGETS_S = {"quick": 60.0, "full": 15 * 60.0}


def run(output: Path, quick: bool) -> tuple[float, int]:
    command = [sys.executable, "-m", "perfgate.cli", "throughput", "--output", str(output)] + (["--quick"] if quick else [])
    started = time.monotonic()
    completed = subprocess.run(command, capture_output=True, text=True)
    return time.monotonic() - started, completed.returncode


def describe(output: Path) -> list[str]:
    metadata = files.read_metadata(output) or {}
    lines = []
    for sub, entry in (metadata.get("subexperiments") or {}).items():
        path = output / s.throughput_csv_name(sub)
        if not path.is_file():
            lines.append(f"  {sub:<40} {entry.get('outcome')}: {str(entry.get('error'))[:100]}")
            continue
        table = read_throughput(path)
        best = table.loc[table[s.SUBSCRIPTION_THROUGHPUT].idxmax()]
        lost = int(table[s.LOST].sum())
        lines.append(f"  {sub:<40} {entry.get('outcome')}: {len(table)} tests, up to "
                     f"{best[s.SUBSCRIPTION_THROUGHPUT]:9.1f} Mb/s ({int(best[s.PAYLOAD])} B x {int(best[s.DEMAND])}), "
                     f"lost {lost} of {int(table[s.SENT].sum())}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, required=True, help="a folder for the runs (absent or empty)")
    parser.add_argument("--quick-only", action="store_true")
    options = parser.parse_args()
    options.output.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    ensure_harness()
    print(f"harness ready in {time.monotonic() - started:.1f} s (built once per machine and Fast DDS)")
    for name in ["quick"] + ([] if options.quick_only else ["full"]):
        folder = options.output / name
        load_before = os.getloadavg()[0]
        wall, code = run(folder, quick=name == "quick")
        verdict = "met" if wall <= TARGETS_S[name] else "NOT met"
        print(f"\n{name}: {wall:.1f} s (target {TARGETS_S[name]:.0f} s: {verdict}), exit {code}, "
              f"load {load_before:.2f} before / {os.getloadavg()[0]:.2f} after")
        print("\n".join(describe(folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
