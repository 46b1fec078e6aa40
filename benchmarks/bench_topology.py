"""Whether `perfgate topology` keeps up on this machine, and what the measurement itself costs:

- the heavy topology (topologies/heavy.json: 20 nodes, a 250 kB topic at 40 Hz, 100 Hz control
  topics) for --time seconds (default 60) in one process: every publisher's kept rate against its
  requested one (target: within 1 %), the late, too-late and lost shares, CPU while publishing and RSS;
- the same nodes and endpoints idle (every period one hour: each publisher sends once): the CPU the
  harness's executors, timers and Fast DDS' own threads cost with nothing to carry.

    .venv/bin/python benchmarks/bench_topology.py --output /tmp/bench-topology [--time 60]

- --memory: 40 publishers every 0.1 ms (one subscriber each, one process) for --time seconds and for
  3 x --time, the peak RSS of each side by side: the harness's (resources.csv, as check-topology
  measures it) and perfgate's own (its peak, and that of every process it waited for); bounded by
  design, the longer run's is the shorter's, not three times it.

    .venv/bin/python benchmarks/bench_topology.py --output /tmp/bench-topology-memory --memory --time 200

Prints the machine's load before and after each run: figures taken on a loaded machine say so.
One run at a time; nothing else should measure on the machine meanwhile.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
HEAVY = REPO / "topologies" / "heavy.json"
PERFGATE = [sys.executable, "-m", "perfgate"]
IDLE_PERIOD_MS = 3_600_000
RATE_TOLERANCE = 0.01


def run(topology: Path, output: Path, time_s: float) -> int:
    command = PERFGATE + ["topology", "--topology", str(topology), "--time", f"{time_s:g}", "--output", str(output)]
    return subprocess.run(command, check=False).returncode


def idle_copy(folder: Path) -> Path:
    document = json.loads(HEAVY.read_text())
    for node in document["nodes"]:
        for publisher in node.get("publishers", []):
            publisher["period_ms"] = IDLE_PERIOD_MS
    path = folder / "heavy_idle.json"
    path.write_text(json.dumps(document))
    return path


def describe(output: Path) -> list[str]:
    metadata = json.loads((output / "metadata.json").read_text())
    topology = {p["topic_name"]: p["period_ms"] for node in json.loads((output / "topology.json").read_text())["nodes"]
                for p in node["publishers"]}
    lines = []
    worst = 0.0
    for sent in metadata.get("sent", []):
        requested = 1000.0 / topology[sent["topic"]]
        if sent["rate_hz"] is not None and topology[sent["topic"]] < IDLE_PERIOD_MS:
            off = sent["rate_hz"] / requested - 1
            worst = max(worst, abs(off))
            lines.append(f"  {sent['topic']:<12} {sent['sent']:>6} sent, {sent['rate_hz']:9.3f} Hz of {requested:g} "
                         f"({off:+.3%})")
    if lines:
        lines.append(f"  worst rate {worst:.3%} off (target within {RATE_TOLERANCE:.0%}: "
                     f"{'met' if worst <= RATE_TOLERANCE else 'NOT met'})")
    total = pd.read_csv(output / "latency_total.csv").iloc[0]
    lines.append(f"  received {int(total['received[#]'])}, late {total['late[%]']:.3f} %, too late "
                 f"{total['too_late[%]']:.3f} %, lost {total['lost[%]']:.3f} %, mean {total['mean[us]']:.0f} us")
    return lines


def resources_line(output: Path) -> str:
    # the figures check-topology limits: CPU while publishing, peak RSS
    sys.path.insert(0, str(REPO / "analysis"))
    from perfgate.topology.target import measured_resources, publishing_start_ms
    usage = pd.read_csv(output / "resources.csv")
    figures = measured_resources(usage, publishing_start_ms(pd.read_csv(output / "events.csv")))
    return (f"  CPU {figures['cpu[%]']:.2f} % of all {os.cpu_count()} cores while publishing, "
            f"RSS {figures['rss[KB]']:.0f} KB")


FAST_PUBLISHERS = 40
FAST_PERIOD_MS = 0.1


def fast_topology(folder: Path) -> Path:
    """40 publishers every 0.1 ms, each with one subscriber on another node (the adversarial load of issue 44)."""
    nodes = [{"node_name": f"pub{i}", "publishers": [{"topic_name": f"t{i}", "msg_type": "int64",
                                                      "period_ms": FAST_PERIOD_MS}]} for i in range(FAST_PUBLISHERS)]
    nodes.append({"node_name": "sink", "subscribers": [{"topic_name": f"t{i}", "msg_type": "int64"}
                                                       for i in range(FAST_PUBLISHERS)]})
    path = folder / "fast.json"
    path.write_text(json.dumps({"nodes": nodes}))
    return path


def peak_rss_kb(topology: Path, output: Path, time_s: float) -> tuple[int, float, float]:
    """Exit code, perfgate's peak RSS (its own and its waited-for children's, KB), the harness's (KB)."""
    command = PERFGATE + ["topology", "--topology", str(topology), "--time", f"{time_s:g}", "--output", str(output)]
    process = subprocess.Popen(command)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    harness = float("nan")
    if (output / "resources.csv").exists():
        harness = float(pd.read_csv(output / "resources.csv").groupby("process")["rss[KB]"].max().sum())
    return process.returncode, usage.ru_maxrss, harness


def memory(output: Path, time_s: float) -> int:
    topology = fast_topology(output)
    rows = []
    for factor in (1, 3):
        code, perfgate_kb, harness_kb = peak_rss_kb(topology, output / f"fast_{factor}x", time_s * factor)
        rows.append(f"  {time_s * factor:8g} s: exit {code}, perfgate peak RSS {perfgate_kb / 1024:8.1f} MB, "
                    f"harness peak RSS {harness_kb / 1024:8.1f} MB")
    print(f"\n{FAST_PUBLISHERS} publishers every {FAST_PERIOD_MS} ms, load {os.getloadavg()[0]:.2f} after:")
    print("\n".join(rows))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--time", type=float, default=60.0)
    parser.add_argument("--memory", action="store_true", help="peak RSS of 40 publishers every 0.1 ms, T and 3T")
    options = parser.parse_args()
    options.output.mkdir(parents=True, exist_ok=True)
    if options.memory:
        return memory(options.output, options.time)
    for name, topology in (("heavy", HEAVY), ("idle", idle_copy(options.output))):
        folder = options.output / name
        load_before = os.getloadavg()[0]
        code = run(topology, folder, options.time)
        print(f"\n{name}: exit {code}, load {load_before:.2f} before / {os.getloadavg()[0]:.2f} after")
        if code == 0:
            print("\n".join(describe(folder) + [resources_line(folder)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
