"""A topology experiment folder as `perfgate topology` writes it (latency_total.csv, events.csv, resources.csv),
with the totals a test chooses: for the tests of `perfgate check-topology`'s reading of it."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from perfgate.topology import names as n


def write_topology_experiment(folder: Path, totals: dict[str, str]) -> Path:
    """`folder` made, its latency_total.csv one row of `totals` (column -> text as written), one discovery event
    and two resource samples of one process."""
    folder.mkdir()
    (folder / n.LATENCY_TOTAL_CSV).write_text(",".join(totals) + "\n" + ",".join(totals.values()) + "\n")
    pd.DataFrame({n.EVENT_TIME: [400.0], n.EVENT_CALLER: ["SYSTEM"], n.EVENT_CODE: [0],
                  n.EVENT_DESCRIPTION: ["[discovery] a"]}).to_csv(folder / n.EVENTS_CSV, index=False)
    pd.DataFrame({n.RESOURCE_TIME: [500, 1000], n.PROCESS: ["a", "a"], n.RESOURCE_CPU: [3.0, 5.0],
                  n.RESOURCE_RSS: [10000, 20000], n.RESOURCE_VSZ: [1, 1]}).to_csv(folder / n.RESOURCES_CSV, index=False)
    return folder
