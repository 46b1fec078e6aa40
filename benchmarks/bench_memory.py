"""Peak memory of `perfgate process` against the size of its raw file, and of `perfgate check` against
a requirements file of a million rows (issue 23: memory bounded by design).

    .venv/bin/python benchmarks/bench_memory.py [--rows 1,5,20] [--requirement-rows 1000000]
                                                [--plots] [--workdir D]

For each size (millions of rows) it writes a raw CSV of that many rows (eleven payloads, one block
each, lognormal latencies with 3 decimals, as the harness writes them), then runs the real
`perfgate process --raw-csv F --output-csv O --no-plots` (and with --plots, drawing the plots) as a
subprocess of a fresh Python process that reports the peak resident memory of its children
(ru_maxrss of RUSAGE_CHILDREN: the largest single process of the tree, workers included). The
baseline is the same command on a raw file of 100 rows: the interpreter, pandas and numpy. It prints
peak RSS, (peak - baseline) / file size, and wall time. Then `perfgate check` of a one-sub-experiment
experiment against a requirements file of --requirement-rows rows: exit code, peak RSS, wall time,
stderr lines and the JUnit file's size. Timing figures are only meaningful on an idle machine;
memory figures hold on a busy one.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from perfgate import schema as s

PAYLOADS = s.PAYLOADS
CHUNK_ROWS = 1_000_000
PERFGATE = str(Path(sys.executable).with_name("perfgate"))
# run in a fresh interpreter: RUSAGE_CHILDREN's maximum is over every child that process ever waited for
MEASURE = ("import json, resource, subprocess, sys, time\n"
           "start = time.monotonic()\n"
           "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
           "print(json.dumps({'code': done.returncode, 'wall': time.monotonic() - start,\n"
           "                  'peak_kib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,\n"
           "                  'stderr_lines': len(done.stderr.splitlines()),\n"
           "                  'stderr_head': done.stderr.decode(errors='replace')[:400]}))\n")


def measure(command: list[str]) -> dict:
    """Exit code, wall time (s), peak RSS (MB) and stderr lines of one command, in a fresh process."""
    done = subprocess.run([sys.executable, "-c", MEASURE, *command], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    result["peak_mb"] = result.pop("peak_kib") / 1024
    return result


def write_raw(path: Path, rows: int, seed: int = 1) -> int:
    """A raw CSV of `rows` rows, the payloads one block after another; returns its size in bytes."""
    rng = np.random.default_rng(seed)
    per_payload = np.full(len(PAYLOADS), rows // len(PAYLOADS))
    per_payload[: rows % len(PAYLOADS)] += 1
    payloads = np.repeat(np.asarray(PAYLOADS), per_payload)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(",".join(s.RAW_COLUMNS) + "\n")
        for start in range(0, rows, CHUNK_ROWS):
            end = min(rows, start + CHUNK_ROWS)
            base = 20.0 + payloads[start:end] / 1024.0
            chunk = pd.DataFrame({s.SAMPLE: np.arange(start + 1, end + 1), s.PAYLOAD: payloads[start:end],
                                  s.LATENCY: base * rng.lognormal(0.0, 0.2, end - start)})
            handle.write(chunk.to_csv(index=False, header=False, float_format="%.3f", lineterminator="\n"))
    return path.stat().st_size


def write_requirements(path: Path, rows: int) -> None:
    """`rows` requirement rows: the eleven payloads of intraprocess_best_effort, then payloads 1, 2, ...
    of it and of made-up sub-experiments, none measured."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(",".join(s.REQUIREMENT_COLUMNS) + "\n")
        for payload in PAYLOADS:
            handle.write(f"intraprocess_best_effort,{payload},100.000,200.000,300.000\n")
        for index in range(rows - len(PAYLOADS)):
            handle.write(f"sub_{index // 60000},{index % 60000 + 1},100.000,200.000,300.000\n")


def process_figures(workdir: Path, millions: list[float], plots: bool) -> None:
    tiny = workdir / "measurements_tiny.csv"
    write_raw(tiny, 100)
    modes = [("--no-plots", ["--no-plots"])] + ([("plots", ["--plots-directory", str(workdir / "plots")])]
                                                 if plots else [])
    for label, options in modes:
        base = measure([PERFGATE, "process", "--raw-csv", str(tiny), "--output-csv", str(workdir / "tiny.csv"),
                        *options])
        print(f"process {label}: baseline (100 rows) peak {base['peak_mb']:.0f} MB")
        for amount in millions:
            rows = int(amount * 1_000_000)
            raw = workdir / f"measurements_bench_{rows}.csv"
            size = write_raw(raw, rows)
            figures = measure([PERFGATE, "process", "--raw-csv", str(raw), "--output-csv",
                               str(workdir / f"summary_{rows}.csv"), *options])
            shutil.rmtree(workdir / "plots", ignore_errors=True)
            raw.unlink()
            print(f"process {label}: {rows:>10,} rows, file {size / 1e6:7.1f} MB: exit {figures['code']}, "
                  f"peak RSS {figures['peak_mb']:7.0f} MB = {figures['peak_mb'] * 2**20 / size:.2f} x file, "
                  f"above baseline {(figures['peak_mb'] - base['peak_mb']) * 2**20 / size:.2f} x file, "
                  f"wall {figures['wall']:6.1f} s")
            if figures["code"] != 0:
                print(f"  stderr: {figures['stderr_head']}")


def check_figures(workdir: Path, rows: int) -> None:
    experiment = workdir / "experiment"
    experiment.mkdir(exist_ok=True)
    raw = experiment / s.raw_csv_name("intraprocess_best_effort")
    write_raw(raw, 2000)
    subprocess.run([PERFGATE, "process", "--experiment-directory", str(experiment), "--no-plots"], check=True,
                   stdout=subprocess.DEVNULL)
    requirements = workdir / "requirements.csv"
    write_requirements(requirements, rows)
    junit = workdir / "junit.xml"
    figures = measure([PERFGATE, "check", "--requirements", str(requirements), "--experiment-directory",
                       str(experiment), "--plots-directory", str(workdir / "check-plots"), "--no-plots",
                       "--junit", str(junit)])
    junit_size = junit.stat().st_size if junit.exists() else 0
    print(f"check: {rows:,} requirement rows ({requirements.stat().st_size / 1e6:.1f} MB): exit {figures['code']}, "
          f"peak RSS {figures['peak_mb']:.0f} MB, wall {figures['wall']:.1f} s, {figures['stderr_lines']} stderr "
          f"line(s), JUnit {junit_size:,} bytes")
    print(f"  stderr: {figures['stderr_head'].strip()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1,5,20", help="raw file sizes in millions of rows, comma separated "
                                                         "(empty: none)")
    parser.add_argument("--requirement-rows", type=int, default=1_000_000)
    parser.add_argument("--plots", action="store_true", help="also measure process drawing its plots")
    parser.add_argument("--workdir", type=Path, default=None)
    arguments = parser.parse_args()
    workdir = arguments.workdir or Path(tempfile.mkdtemp(prefix="perfgate-bench-memory-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"load {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; working in {workdir}")
    process_figures(workdir, [float(item) for item in arguments.rows.split(",") if item], arguments.plots)
    if arguments.requirement_rows:
        check_figures(workdir, arguments.requirement_rows)
    if arguments.workdir is None:
        shutil.rmtree(workdir)
    return 0


if __name__ == "__main__":
    start = time.monotonic()
    code = main()
    print(f"done in {time.monotonic() - start:.0f} s")
    sys.exit(code)
