"""Whole gates while another job loads the machine: does the verdict hold?

    .venv/bin/python benchmarks/bench_gate_under_load.py --output /tmp/load \
        --gate regressed:--fastdds=WS/installs/regressed,--baseline-build=WS/installs/master \
        --gate aa:--fastdds=WS/installs/master,--baseline-build=WS/installs/master \
        --spinners 24 --kill-first throughput@throughput/ab/rounds \
        -- --experiments latency,throughput --platform vm-2core-x64

Each `--gate NAME:ARG,ARG,...` is one `perfgate gate` (its arguments, `=` for a space, plus everything after
`--`), run one after the other into OUTPUT/NAME while `--spinners` busy processes (the bounded second job:
plain `while true` shells at the gate's own priority, started before and killed after each gate, in their
own process group) keep the run queue long. A gate that already holds a proven regression must say
REGRESSION (exit 1) even when a round or a step failed on the way (docs/verdict.md, "A round that fails");
an unchanged build must pass. Printed per gate: exit code, headline, wall time, the load average sampled
every 5 s (min, median, max), the A/B rounds measured again and what could not finish. `--kill-first WORD`
SIGKILLs, once per gate, the first harness process of the gate whose command line has WORD (for example
`throughput`: the gate's throughput run loses a sub-experiment; `throughput@throughput/ab/rounds`: the first
such process once the throughput A/B's rounds have begun, so one of its rounds fails for sure, as one did by
itself at load 47).
Runs one gate at a time; nothing else should run on the machine meanwhile (the spinners are the load).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from perfgate import schema as s


def parse_gate(text: str) -> tuple[str, list[str]]:
    name, _, arguments = text.partition(":")
    args = []
    for item in filter(None, arguments.split(",")):
        args += item.split("=", 1)
    return name, args


class Spinners:
    """`count` busy shells in one process group: the second job, killed whatever ends the gate."""

    def __init__(self, count: int) -> None:
        self.count, self.group = count, None

    def __enter__(self) -> Spinners:
        if self.count:
            leader = subprocess.Popen(
                ["sh", "-c", f"for i in $(seq {self.count}); do (while :; do :; done) & done; wait"],
                start_new_session=True)
            self.group = leader.pid
        return self

    def __exit__(self, *exc) -> None:
        if self.group is not None:
            try:
                os.killpg(self.group, signal.SIGKILL)
            except ProcessLookupError:
                pass


def sample_load(stop: threading.Event, into: list[float]) -> None:
    while not stop.wait(5.0):
        into.append(os.getloadavg()[0])


def descendants(root: int) -> dict[int, list[bytes]]:
    """The processes under `root`, with their command lines."""
    children: dict[int, list[int]] = {}
    argv: dict[int, list[bytes]] = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv[int(proc.name)] = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(proc.name))
    found, stack = {}, [root]
    while stack:
        for child in children.get(stack.pop(), []):
            stack.append(child)
            found[child] = argv.get(child, [])
    return found


def kill_first(gate: subprocess.Popen, what: str, folder: Path, stop: threading.Event, killed: list[str]) -> None:
    """SIGKILL the first harness process under `gate` whose command line has WORD, once; `WORD@PATH`: the first
    once PATH (relative to the gate's output folder) exists, e.g. `throughput@throughput/ab/rounds`."""
    word, _, after = what.partition("@")
    needle = word.encode()
    while not killed and not stop.wait(0.2):
        if after and not (folder / after).exists():
            continue
        for pid, argv in descendants(gate.pid).items():
            if argv and argv[0].endswith(b"perfgate-latency") and any(needle in a for a in argv):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                killed.append(" ".join(a.decode(errors="replace") for a in argv[:12]))
                break


def gate_figures(folder: Path) -> dict:
    """What the gate's A/B folders say of rounds measured again and of what could not finish."""
    figures = {"retried": 0, "failures": []}
    for ab_dir in (folder / s.AB_DIR, folder / s.THROUGHPUT_DIR / s.AB_DIR):
        path = ab_dir / s.METADATA_FILE
        if path.is_file():
            data = json.loads(path.read_text())
            figures["retried"] += len(data.get("retried") or [])
            figures["failures"] += list(data.get("failures") or [])
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--gate", action="append", required=True, help="NAME:ARG,ARG=VALUE,...")
    parser.add_argument("--spinners", type=int, default=24)
    parser.add_argument("--kill-first", default=None, help="SIGKILL the first harness process with this word, once")
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    common = [a for a in options.rest if a != "--"]
    options.output.mkdir(parents=True, exist_ok=True)
    perfgate = Path(sys.executable).with_name("perfgate")
    for text in options.gate:
        name, args = parse_gate(text)
        folder = options.output / name
        loads: list[float] = []
        stop = threading.Event()
        sampler = threading.Thread(target=sample_load, args=(stop, loads), daemon=True)
        started = time.monotonic()
        killed: list[str] = []
        log = options.output / f"{name}.log"
        with Spinners(options.spinners), open(log, "w") as output:
            sampler.start()
            gate = subprocess.Popen([str(perfgate), "gate", "--output", str(folder), "--label", name, *args, *common],
                                    stdout=subprocess.PIPE, stderr=output, text=True)
            killer = threading.Thread(target=kill_first, args=(gate, options.kill_first, folder, stop, killed),
                                      daemon=True)
            if options.kill_first:
                killer.start()
            stdout, _ = gate.communicate()
            output.write(stdout)
        stop.set()
        sampler.join()
        if killer.is_alive():
            killer.join()
        done = subprocess.CompletedProcess(gate.args, gate.returncode, stdout, "")
        headline = next((line for line in reversed(done.stdout.splitlines())
                         if line.startswith("perfgate gate: ") and not line.startswith("perfgate gate: report")), "")
        figures = gate_figures(folder)
        spread = (f"load {min(loads):.1f} / {statistics.median(loads):.1f} / {max(loads):.1f} (min/median/max "
                  f"every 5 s)" if loads else "load not sampled")
        print(f"{name}: exit {done.returncode}, {time.monotonic() - started:.0f} s, {options.spinners} spinners, "
              f"{spread}; {figures['retried']} attempt(s) measured again, {len(figures['failures'])} given up")
        print(f"  {headline}")
        for line in killed:
            print(f"  killed once: {line}")
        for line in figures["failures"]:
            print(f"  could not finish: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
