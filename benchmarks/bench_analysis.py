"""Speed and memory of the analysis commands on synthetic data of realistic size.

    .venv/bin/python benchmarks/bench_analysis.py [--experiments 200] [--samples 10000] [--workdir D]

Generates one full experiment (10 sub-experiments x 11 payloads x N samples of raw measurements)
and a results store of many experiments (summaries and metadata only), then runs, each as its own
`perfgate` process so that nothing is shared or cached between steps:
  1. perfgate process --experiment-directory D --no-plots      target  2 s
  2. perfgate process --experiment-directory D (all plots)     target 15 s
  3. perfgate history over the store with all plots            target 60 s, peak memory < 500 MB
Wall clock, CPU time (user + system of the process and its workers) and the peak resident memory of
the whole process tree (proportional set size, sampled from /proc every 50 ms) and the largest
single process's resident memory are printed against the targets. On a shared
machine wall clock includes waiting for other work; CPU / cores is the time on dedicated cores.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synthetic  # noqa: E402  (beside this file)

from perfgate import files  # noqa: E402
from perfgate import schema as s  # noqa: E402

MEMORY_TARGET_MB = 500
SAMPLE_INTERVAL = 0.05


@dataclass
class Measurement:
    name: str
    exit_code: int
    wall: float
    cpu: float
    peak_tree_mb: float
    largest_process_mb: float
    target_seconds: float


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def _tree_pss_mb(root: int) -> float:
    """Proportional set size of a process and its descendants: pages shared by forked workers are
    counted once in total, not once per worker as a sum of RSS would."""
    children = _children_map()
    total_kb, pending = 0, [root]
    while pending:
        pid = pending.pop()
        pending.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as handle:
                for line in handle:
                    if line.startswith("Pss:"):
                        total_kb += int(line.split()[1])
                        break
        except OSError:
            continue
    return total_kb / 1024


def measure(name: str, command: list[str], target_seconds: float) -> Measurement:
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = [0.0]
    stderr: list[str] = []

    def sample():
        while process.returncode is None:
            peak[0] = max(peak[0], _tree_pss_mb(process.pid))
            time.sleep(SAMPLE_INTERVAL)

    reader = threading.Thread(target=lambda: stderr.append(process.stderr.read()), daemon=True)
    sampler = threading.Thread(target=sample, daemon=True)
    reader.start()
    sampler.start()
    # wait4: this child's own resource use, workers it waited for included (CPU summed, RSS the largest)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    reader.join()
    sampler.join()
    if process.returncode not in (s.EXIT_OK, s.EXIT_REGRESSION):
        print(f"{name}: exit {process.returncode}: {''.join(stderr).strip()}", file=sys.stderr)
    return Measurement(name, process.returncode, wall, usage.ru_utime + usage.ru_stime, peak[0],
                       usage.ru_maxrss / 1024, target_seconds)


def perfgate_command() -> list[str]:
    script = Path(sys.executable).parent / "perfgate"
    return [str(script)] if script.exists() else [sys.executable, "-m", "perfgate.cli"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=200, help="experiments in the results store")
    parser.add_argument("--samples", type=int, default=s.DEFAULT_SAMPLES, help="samples per payload")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the generated data here")
    parser.add_argument("--skip-process", action="store_true", help="only the history benchmark")
    options = parser.parse_args()

    workdir = options.workdir or Path(tempfile.mkdtemp(prefix="perfgate-bench-"))
    experiment, store = workdir / "experiment", workdir / "store"
    requirements = workdir / "requirements.csv"
    cores = len(os.sched_getaffinity(0))
    started = time.perf_counter()
    shutil.rmtree(experiment, ignore_errors=True)
    shutil.rmtree(store, ignore_errors=True)
    if not options.skip_process:
        synthetic.write_raw_experiment(experiment, samples=options.samples)
    synthetic.write_store(store, experiments=options.experiments)
    files.write_csv(requirements, synthetic.requirements_for())
    print(f"generated in {time.perf_counter() - started:.1f} s under {workdir} ({cores} cores)")

    perfgate = perfgate_command()
    results = []
    if not options.skip_process:
        results.append(measure("process --no-plots", [*perfgate, "process", "--experiment-directory", str(experiment),
                                                      "--no-plots"], 2))
        results.append(measure("process (all plots)", [*perfgate, "process", "--experiment-directory",
                                                       str(experiment)], 15))
    results.append(measure(f"history, {options.experiments} experiments", [
        *perfgate, "history", "--requirements", str(requirements), "--experiments-results", str(store),
        "--plots-directory", str(store / s.STORE_HISTORY_DIR)], 60))

    print(f"\n{'step':<28} {'exit':>4} {'wall s':>8} {'cpu s':>8} {'cpu/cores':>9} {'target s':>9} "
          f"{'peak MB':>8} {'1 proc MB':>9}  verdict")
    for m in results:
        on_dedicated_cores = m.cpu / cores
        verdict = "ok" if m.exit_code in (0, 1) and m.wall <= m.target_seconds else "OVER" if m.exit_code in (0, 1) \
            else "FAILED"
        if verdict == "OVER" and on_dedicated_cores <= m.target_seconds:
            verdict = "over on wall clock only (shared machine?)"
        if m.peak_tree_mb > MEMORY_TARGET_MB:
            verdict += f"; memory over {MEMORY_TARGET_MB} MB"
        print(f"{m.name:<28} {m.exit_code:>4} {m.wall:>8.1f} {m.cpu:>8.1f} {on_dedicated_cores:>9.1f} "
              f"{m.target_seconds:>9.0f} {m.peak_tree_mb:>8.0f} {m.largest_process_mb:>9.0f}  {verdict}")
    print(f"\nload average now: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if options.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if all(m.exit_code in (0, 1) for m in results) else 1


if __name__ == "__main__":
    sys.exit(main())
