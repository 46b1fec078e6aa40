"""How long `perfgate run` takes on this machine, against the targets.

    .venv/bin/python benchmarks/bench_run.py            # quick run, then the full default
    .venv/bin/python benchmarks/bench_run.py --quick-only

Targets (2 cores): quick (200 samples, the default sub-experiments) within 60 s; the full default
(10 sub-experiments x 11 payloads x 10000 samples, plus the floor) within 5 minutes. The harness
build is timed apart (it happens once per machine and Fast DDS). When Fast DDS' own LatencyTest is
on PATH (or named by $LATENCYTEST), its figures for the same payloads are printed beside the
harness's, to see what the harness adds; Debian's libfastrtps-dev does not ship it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfgate import files, harness, run
from perfgate import schema as s

QUICK_SAMPLES = 200
QUICK_TARGET_S = 60.0
FULL_TARGET_S = 300.0
LATENCYTEST_SAMPLES = 10000


def timed_run(output: Path, samples: int | None) -> tuple[float, int]:
    command = [sys.executable, "-m", "perfgate.cli", "run", "--output", str(output)]
    if samples is not None:
        command += ["--samples", str(samples)]
    started = time.monotonic()
    completed = subprocess.run(command)
    return time.monotonic() - started, completed.returncode


def print_breakdown(output: Path) -> None:
    metadata = files.read_metadata(output) or {}
    entries = metadata.get(s.META_SUBEXPERIMENTS, {})
    for name in metadata.get("requested_subexperiments", []):
        entry = entries.get(name)
        if entry is None:
            continue
        median = ", ".join(f"{p} B median {m:.3f} us" for p, m in entry.get("median_us", {}).items())
        print(f"    {name:40s} {entry.get('duration_s', 0):7.1f} s  {entry[s.META_OUTCOME]}  {median}")


def verdict(elapsed: float, target: float) -> str:
    return "within target" if elapsed <= target else "OVER TARGET"


def latencytest_comparison(output: Path) -> None:
    binary = os.environ.get("LATENCYTEST") or shutil.which("LatencyTest")
    if not binary:
        print("LatencyTest: not available (not on PATH, $LATENCYTEST unset; Debian's libfastrtps-dev does not "
              "ship Fast DDS' performance tests): no harness overhead comparison")
        return
    print(f"LatencyTest: {binary}, both roles in one process, best effort, {LATENCYTEST_SAMPLES} samples "
          "(LatencyTest prints half round trips; perfgate's figures are full round trips)")
    completed = subprocess.run([binary, "both", "--reliability=besteffort", f"--samples={LATENCYTEST_SAMPLES}"],
                               capture_output=True, text=True, timeout=600)
    print(completed.stdout[-4000:] or completed.stderr[-2000:])
    metadata = files.read_metadata(output) or {}
    entry = metadata.get(s.META_SUBEXPERIMENTS, {}).get("intraprocess_best_effort", {})
    for payload, median in entry.get("median_us", {}).items():
        print(f"perfgate intraprocess_best_effort {payload} B: median round trip {median:.3f} us, "
              f"half {median / 2:.3f} us")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick-only", action="store_true", help="skip the full default run")
    arguments = parser.parse_args()

    started = time.monotonic()
    built = harness.ensure_harness()
    print(f"harness ready in {time.monotonic() - started:.1f} s ({built.latency})")
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} CPUs")

    with tempfile.TemporaryDirectory(prefix="bench-run-") as folder:
        quick = Path(folder) / "quick"
        elapsed, code = timed_run(quick, QUICK_SAMPLES)
        subs = len(run.DEFAULT_RUN_SUBEXPERIMENTS)
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
        latencytest_comparison(quick)
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
