"""`perfgate topology`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import label, positive_float, positive_int
from ..topology import names as n

NAME = "topology"
HANDLER = "perfgate.topology.run:command_topology"
HELP = "run a whole system (a ros2-performance topology file) on Fast DDS: late, too late and lost messages, CPU, RSS"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--topology", required=True, metavar="FILE.json", help="nodes with their publishers and subscribers")
    option(parser, "--output", required=True, metavar="DIR", help="experiment folder to write (absent or empty)")
    option(parser, "--time", type=positive_float, default=None, metavar="SECONDS",
           help=f"how long every publisher publishes once all endpoints matched (default {n.DEFAULT_TIME_S:g}; "
                f"{n.QUICK_TIME_S:g} for a quick run)")
    option(parser, "--ipc", choices=n.IPC_CHOICES, default="on",
           help="one process: Fast DDS' intra-process delivery on or off (default on)")
    option(parser, "--processes", choices=n.PROCESSES_CHOICES, default="one",
           help="all nodes in one process (default) or one process per node (--ipc then changes nothing)")
    option(parser, "--transport", choices=n.TRANSPORT_CHOICES, default="udpv4",
           help="between participants (default udpv4)")
    option(parser, "--reliability", choices=n.RELIABILITY_CHOICES, default="reliable", help="of every endpoint")
    option(parser, "--history-depth", type=positive_int, default=10, metavar="N",
           help="KEEP_LAST depth of writers and readers (default 10, as ROS 2's default QoS)")
    option(parser, "--sampling", type=positive_int, default=n.DEFAULT_SAMPLING_MS, metavar="MS",
           help=f"CPU and memory sampling period (default {n.DEFAULT_SAMPLING_MS})")
    option(parser, "--late-percentage", type=positive_float, default=n.DEFAULT_LATE_PERCENTAGE, metavar="P",
           help=f"late above P %% of the period ... (default {n.DEFAULT_LATE_PERCENTAGE:g})")
    option(parser, "--late-absolute", type=positive_float, default=n.DEFAULT_LATE_ABSOLUTE_US, metavar="US",
           help=f"... or above US microseconds, whichever is smaller (default {n.DEFAULT_LATE_ABSOLUTE_US:g})")
    option(parser, "--too-late-percentage", type=positive_float, default=n.DEFAULT_TOO_LATE_PERCENTAGE, metavar="P",
           help=f"too late above P %% of the period ... (default {n.DEFAULT_TOO_LATE_PERCENTAGE:g})")
    option(parser, "--too-late-absolute", type=positive_float, default=n.DEFAULT_TOO_LATE_ABSOLUTE_US, metavar="US",
           help=f"... or above US microseconds, whichever is smaller (default {n.DEFAULT_TOO_LATE_ABSOLUTE_US:g})")
    option(parser, "--label", type=label, default=None, help="experiment label (default: the output folder's name)")
