"""The topology experiment's names: files, columns, defaults (docs/formats.md, "Topology experiments").

schema.py holds the names of the latency and throughput experiments; it is at the 400-line limit, so
the topology experiment's names live here, in its own room, and nowhere else.
"""
from __future__ import annotations

from .. import schema as s

# --- files in a topology experiment's folder ------------------------------------------------------
LATENCY_ALL_CSV = "latency_all.csv"
LATENCY_TOTAL_CSV = "latency_total.csv"
RESOURCES_CSV = "resources.csv"
EVENTS_CSV = "events.csv"
LATENCY_PLOT = "topology_latency.png"  # in plots/ (schema.PLOTS_DIR)
RESOURCES_PLOT = "topology_resources.png"  # in plots/; check-topology draws it again with the target's limits
TOPOLOGY_COPY = "topology.json"  # the topology as parsed (the model, re-serialised: never the raw input)

# --- latency_all.csv: one row per subscription (node, topic) -------------------------------------------
NODE = "node"
TOPIC = "topic"
SIZE = "size[b]"
RECEIVED = "received[#]"
LATE = "late[#]"
TOO_LATE = "too_late[#]"
LOST = "lost[#]"
MEAN = "mean[us]"
SD = "sd[us]"
MIN = "min[us]"
MAX = "max[us]"
MEDIAN = "median[us]"
P99 = "99%[us]"
FREQUENCY = "freq[hz]"
DURATION = "duration[s]"
LATENCY_ALL_COLUMNS = (NODE, TOPIC, SIZE, RECEIVED, LATE, TOO_LATE, LOST, MEAN, SD, MIN, MAX, FREQUENCY, DURATION,
                       MEDIAN, P99)

# --- latency_total.csv: one row, the whole system ---------------------------------------------------------
LATE_PERCENT = "late[%]"
TOO_LATE_PERCENT = "too_late[%]"
LOST_PERCENT = "lost[%]"
LATENCY_TOTAL_COLUMNS = (RECEIVED, MEAN, LATE, LATE_PERCENT, TOO_LATE, TOO_LATE_PERCENT, LOST, LOST_PERCENT)
# written after the seed's columns (as latency_all's): over every message received; absent in older files
LATENCY_TOTAL_WRITTEN = LATENCY_TOTAL_COLUMNS + (MEDIAN, P99)

# --- resources.csv: one row per sample of one process ------------------------------------------------------
RESOURCE_TIME = "time[ms]"
PROCESS = "process"  # "all" (the single process) or the node a per-node process runs
RESOURCE_CPU = "cpu[%]"  # over all cores: 100 % is every core of the machine busy (the seed's definition)
RESOURCE_ARENA = "arena[KB]"  # the process's own allocator (glibc mallinfo2): sbrk'd space
RESOURCE_IN_USE = "in_use[KB]"  # ... of which allocated (uordblks)
RESOURCE_MMAP = "mmap[KB]"  # ... and allocated by mmap (hblkhd)
RESOURCE_RSS = "rss[KB]"
RESOURCE_VSZ = "vsz[KB]"
RESOURCES_COLUMNS = (RESOURCE_TIME, PROCESS, RESOURCE_CPU, RESOURCE_ARENA, RESOURCE_IN_USE, RESOURCE_MMAP, RESOURCE_RSS,
                     RESOURCE_VSZ)
ALLOCATOR_COLUMNS = {"arena_kb": RESOURCE_ARENA, "in_use_kb": RESOURCE_IN_USE, "mmap_kb": RESOURCE_MMAP}
ALL_NODES_PROCESS = "all"

# --- events.csv ----------------------------------------------------------------------------------------------
EVENT_TIME = "time[ms]"
EVENT_CALLER = "caller"
EVENT_CODE = "code"
EVENT_DESCRIPTION = "description"
EVENTS_COLUMNS = (EVENT_TIME, EVENT_CALLER, EVENT_CODE, EVENT_DESCRIPTION)
CODE_SYSTEM = 0  # discovery completed
CODE_LATE = 1
CODE_TOO_LATE = 2
CODE_LOST = 3
SYSTEM_CALLER = "SYSTEM"

# --- defaults (the seed's) ------------------------------------------------------------------------------------
DEFAULT_LATE_PERCENTAGE = 20.0
DEFAULT_LATE_ABSOLUTE_US = 5000.0
DEFAULT_TOO_LATE_PERCENTAGE = 100.0
DEFAULT_TOO_LATE_ABSOLUTE_US = 50000.0
DEFAULT_TIME_S = 60.0
QUICK_TIME_S = 10.0
DEFAULT_SAMPLING_MS = 500
IPC_CHOICES = ("on", "off")
PROCESSES_CHOICES = ("one", "per-node")
TRANSPORT_CHOICES = ("udpv4", "shm")
RELIABILITY_CHOICES = ("reliable", "best_effort")

# --- performance target (JSON) ----------------------------------------------------------------------------------
TARGET_RESOURCES = "resources"
TARGET_LATENCY_TOTAL = "latency_total"
TARGET_RESOURCE_KEYS = (RESOURCE_CPU, RESOURCE_RSS)
TARGET_LATENCY_KEYS = (LATE_PERCENT, TOO_LATE_PERCENT, LOST_PERCENT)

# --- in the gate (gate.topology_step) ----------------------------------------------------------------------------
TOPOLOGIES_DIR = "topologies"  # perfgate's topology files, <name>.json, looked up from the working folder
GATE_TOPOLOGY_DIR = "topology"  # in the gate's output folder: one experiment folder per topology, by name
# what the results store keeps of each: <store>/experiments/<label>/topology/<name>/<file> (docs/formats.md 9)
STORED_FILES = (LATENCY_TOTAL_CSV, LATENCY_ALL_CSV, RESOURCES_CSV, s.METADATA_FILE)


def platform_target_json(requirements_dir, platform: str, name: str):
    """The platform's performance target for topology <name>: requirements/<platform>_topology_<name>.json."""
    return requirements_dir / f"{platform}_topology_{name}.json"
