"""events.csv streamed: the processes' discovery, then every late, too-late and lost message by time,
merged from the harness's events_<node>.csv files (each written by one node's executor thread as it
takes its messages, so already in time order) without holding them: memory does not grow with the
number of events. A harness line is `received_ns,subscription,code,sequence,value` (code 1 late and
2 too late: value the latency in ns; 3 lost: sequence the first lost, value how many)."""
from __future__ import annotations

import csv
import heapq
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pandas as pd

from . import names as n
from .classify import Rules
from .model import Topology

FLOAT_FORMAT = "%.3f"


def discovery_frame(discovered_ns: list[tuple[str, int]], start_ns: int) -> pd.DataFrame:
    """The discovery events alone (what publishing_start_ms reads)."""
    rows = [_discovery(who, at, start_ns) for who, at in discovered_ns]
    return pd.DataFrame(rows, columns=list(n.EVENTS_COLUMNS))


def _discovery(who: str, at_ns: int, start_ns: int) -> list:
    return [(at_ns - start_ns) / 1e6, n.SYSTEM_CALLER, n.CODE_SYSTEM, f"[discovery] {who}: every endpoint matched"]


def harness_events(path: Path, handle: Iterable[str]) -> Iterator[tuple[int, int, int, int, int]]:
    """The lines of one events_<node>.csv as (received_ns, subscription, code, sequence, value)."""
    for number, line in enumerate(handle, 1):
        fields = line.split(",")
        try:
            received_ns, subscription, code, sequence, value = map(int, fields)
        except ValueError:
            raise ValueError(f"{path}: line {number} is not received_ns,subscription,code,sequence,value") from None
        yield received_ns, subscription, code, sequence, value


def write_events(target: Path, topology: Topology, rules: Rules, start_ns: int,
                 discovered_ns: list[tuple[str, int]], harness_files: list[Path]) -> None:
    """events.csv: by time (ms from start_ns, the run's start on the same clock); at one instant the
    discovery first, then by subscription, late or too late before lost (the order of the files)."""
    subscriptions = topology.subscriptions()
    thresholds = [(rules.late_us(s.publisher.period_ms), rules.too_late_us(s.publisher.period_ms))
                  for s in subscriptions]
    discovery = sorted((at, -1, n.CODE_SYSTEM, order, 0) for order, (_, at) in enumerate(discovered_ns))
    with ExitStack() as stack, target.open("w", newline="") as out:
        streams = [harness_events(path, stack.enter_context(path.open())) for path in harness_files]
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(n.EVENTS_COLUMNS)
        for at, subscription, code, sequence, value in heapq.merge(discovery, *streams):
            if subscription < 0:
                row = _discovery(discovered_ns[sequence][0], at, start_ns)
            else:
                if not 0 <= subscription < len(subscriptions):
                    raise ValueError(f"an event of subscription {subscription}: the topology has {len(subscriptions)}")
                where = subscriptions[subscription]
                row = [(at - start_ns) / 1e6, f"{where.publisher.topic}->{where.node}", code,
                       _description(code, sequence, value, *thresholds[subscription])]
            row[0] = FLOAT_FORMAT % row[0]
            writer.writerow(row)


def _description(code: int, sequence: int, value: int, late_us: float, too_late_us: float) -> str:
    if code == n.CODE_LATE:
        return f"msg {sequence} late. {value / 1000.0:.0f}us > {late_us:.0f}us"
    if code == n.CODE_TOO_LATE:
        return f"msg {sequence} too late. {value / 1000.0:.0f}us > {too_late_us:.0f}us"
    if code == n.CODE_LOST:
        return f"msg {sequence} lost" if value == 1 else f"msgs {sequence} to {sequence + value - 1} lost ({value})"
    raise ValueError(f"an event of code {code}: not 1 late, 2 too late or 3 lost")
