"""perfgate topology on real Fast DDS: the light topology's received counts against time x frequency
per subscription, nothing lost on reliable, every subscription present; and a subscriber stalled on
purpose, whose late, too-late and lost messages are counted by the rules."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys

import pandas as pd

from conftest import REPO_ROOT, perfgate_in_process, processes_working_in, terminal_signals, wait_until
from perfgate import schema as s
from perfgate.measure.domains import LOCK_DIR
from perfgate.topology import names as n
from perfgate.topology.classify import Rules
from perfgate.topology.model import read_topology
from perfgate.topology.run import TopologyPlan, measure_topology

LIGHT = REPO_ROOT / "topologies" / "light.json"


def _sent(folder) -> dict[str, int]:
    return {row["topic"]: row["sent"] for row in json.loads((folder / s.METADATA_FILE).read_text())["sent"]}


def test_the_light_topology_in_one_process_per_node_receives_time_times_frequency(tmp_path, harness_paths):
    time_s = 3.0
    output = tmp_path / "light"
    result = perfgate_in_process("topology", "--topology", str(LIGHT), "--time", str(time_s), "--output", str(output),
                                 "--processes", "per-node")
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(output / n.LATENCY_ALL_CSV)
    topology = read_topology(LIGHT)
    # every subscription of the file, in its order
    assert list(zip(table[n.NODE], table[n.TOPIC])) == [(sub.node, sub.publisher.topic)
                                                         for sub in topology.subscriptions()]
    sent = _sent(output)
    for _, row in table.iterrows():
        # a publisher publishes on a grid of its period from its start for time_s: ceil(time x frequency)
        # messages; the tolerance is the period's, one message either side, never a time bound
        expected = time_s * row[n.FREQUENCY]
        assert math.floor(expected) <= sent[row[n.TOPIC]] <= math.ceil(expected) + 1, row[n.TOPIC]
        assert row[n.RECEIVED] == sent[row[n.TOPIC]], (row[n.NODE], row[n.TOPIC])  # reliable: all of them
        assert row[n.LOST] == 0
    total = pd.read_csv(output / n.LATENCY_TOTAL_CSV).iloc[0]
    assert total[n.RECEIVED] == table[n.RECEIVED].sum() and total[n.LOST] == 0
    usage = pd.read_csv(output / n.RESOURCES_CSV)
    assert set(usage[n.PROCESS]) == {node.name for node in topology.nodes}  # one process per node, each sampled
    assert (usage[n.RESOURCE_RSS] > 0).all()
    # each process's own allocator statistics beside /proc's: in use is part of what the heap holds
    assert list(usage.columns) == list(n.RESOURCES_COLUMNS)
    assert (usage[n.RESOURCE_IN_USE] > 0).all() and (usage[n.RESOURCE_IN_USE] <= usage[n.RESOURCE_ARENA]).all()
    metadata = json.loads((output / s.METADATA_FILE).read_text())
    assert metadata["outcome"] == s.OUTCOME_OK and metadata["options"]["processes"] == "per-node"


def test_a_stalled_subscriber_has_late_too_late_and_lost_messages_counted_by_the_rules(tmp_path, harness_paths):
    # monitor's executor sleeps 500 ms, 500 ms into the run: its 100 Hz clock_tick (history depth 10)
    # overflows, its 10 Hz motor_state waits; nobody else is touched
    stall_ms, depth = 500, 10
    plan = TopologyPlan(LIGHT, read_topology(LIGHT), tmp_path / "stalled", 3.0, Rules(), ipc=False,
                        history_depth=depth, stall=("monitor", 500, stall_ms))
    assert measure_topology(plan) == 0
    table = pd.read_csv(plan.output / n.LATENCY_ALL_CSV).set_index([n.NODE, n.TOPIC])
    sent = _sent(plan.output)
    tick = table.loc[("monitor", "clock_tick")]
    # the stall lets stall/period messages arrive; the reader keeps `depth` of them, the rest is lost
    assert tick[n.LOST] >= stall_ms / 10 - depth - 10
    assert tick[n.RECEIVED] + tick[n.LOST] == sent["clock_tick"]  # each message either arrived or is counted lost
    assert tick[n.TOO_LATE] >= 1
    motor = table.loc[("monitor", "motor_state")]
    # 10 Hz: too late above min(100 ms, 50 ms); at least (500 - 50) / 100 of the waiting ones
    assert motor[n.LOST] == 0 and motor[n.TOO_LATE] >= 4
    others = table.drop(index="monitor", level=n.NODE)
    assert (others[n.LOST] == 0).all() and (others[n.RECEIVED] > 0).all()
    # every late, too-late and lost message is in events.csv, with its caller, as the table counts it
    events = pd.read_csv(plan.output / n.EVENTS_CSV)
    for (node, topic), row in table.iterrows():
        mine = events[events[n.EVENT_CALLER] == f"{topic}->{node}"]
        assert (mine[n.EVENT_CODE] == n.CODE_LATE).sum() == row[n.LATE]
        assert (mine[n.EVENT_CODE] == n.CODE_TOO_LATE).sum() == row[n.TOO_LATE]
    too_late = events[(events[n.EVENT_CALLER] == "motor_state->monitor") & (events[n.EVENT_CODE] == n.CODE_TOO_LATE)]
    latencies = too_late[n.EVENT_DESCRIPTION].str.extract(r"late\. (\d+)us > (\d+)us").astype(int)
    assert (latencies[1] == 50000).all() and (latencies[0] > latencies[1]).all()
    assert (events[n.EVENT_CODE] == n.CODE_SYSTEM).sum() == 1


def test_sigterm_ends_a_topology_run_with_no_process_folder_or_file_left(tmp_path, harness_paths):
    scratch = tmp_path / "tmp"  # the run's temporary folder, the harness's working folder, goes here
    scratch.mkdir()
    output = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "perfgate", "topology", "--topology", str(LIGHT), "--time", "60",
                                "--output", str(output), "--processes", "per-node"],
                               env=dict(os.environ, TMPDIR=str(scratch)), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=terminal_signals)
    try:
        assert wait_until(lambda: len(processes_working_in(scratch)) >= 3, 120), process.stderr.read()
    finally:
        process.send_signal(signal.SIGTERM)
        _, error = process.communicate(timeout=60)
    assert process.returncode == 130 and "perfgate topology: interrupted" in error
    assert wait_until(lambda: processes_working_in(scratch) == {}, 10)
    # only the DDS domains' lock folder, shared by every run and kept, is left in the temporary folder
    assert not output.exists() and [path.name for path in scratch.iterdir()] == [LOCK_DIR.name]
