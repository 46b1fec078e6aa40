"""`perfgate topology-ab`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import label, non_negative_float, positive_float, positive_int
from ..topology import names as n

NAME = "topology-ab"
HANDLER = "perfgate.topology.ab:command_topology_ab"
HELP = "run a topology with two Fast DDS builds in interleaved rounds and decide (the gate's topology A/B)"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--topology", required=True, metavar="FILE.json", help="as for topology")
    option(parser, "--output", required=True, metavar="DIR", help="A/B folder to write (absent or empty)")
    option(parser, "--baseline", required=True, metavar="SPEC", help="as for ab")
    option(parser, "--candidate", required=True, metavar="SPEC", help="as for ab")
    option(parser, "--rounds", type=positive_int, default=None, help="interleaved rounds (default 12; --quick 8)")
    option(parser, "--quick", action="store_true", help=f"8 rounds of {n.QUICK_TIME_S:g} s per arm")
    option(parser, "--time", type=positive_float, default=None, metavar="SECONDS",
           help=f"each arm's run per round (default {n.DEFAULT_TIME_S:g}; --quick {n.QUICK_TIME_S:g})")
    option(parser, "--ipc", choices=n.IPC_CHOICES, default="on", help="as for topology (default on)")
    option(parser, "--transport", choices=n.TRANSPORT_CHOICES, default="udpv4", help="as for topology (default udpv4)")
    option(parser, "--threshold", type=non_negative_float, default=None,
           help="relative change that is not yet a regression (default 0.01: above baseline x 1.01)")
    option(parser, "--alpha", type=non_negative_float, default=None,
           help="family-wise false-alarm level of the topology's five tests (default 0.02)")
    option(parser, "--label", type=label, default=None, help="label (default: the output folder's name)")
