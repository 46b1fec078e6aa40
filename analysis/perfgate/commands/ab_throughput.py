"""`perfgate ab-throughput`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import (demand_list, label, millisecond_list, name_list, non_negative_float, payload_list,
                         pin_request, positive_float, positive_int)
from ..measure import cpu_latency
from .common import CPU_LATENCY_HELP, LAYOUTS_AB_HELP, no_plots

NAME = "ab-throughput"
HANDLER = "perfgate.ab.throughput:command_ab_throughput"
HELP = "measure two Fast DDS builds' throughput in interleaved rounds and decide (a drop is a regression)"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--output", required=True, metavar="DIR", help="A/B folder to write (absent or empty)")
    option(parser, "--baseline", required=True, metavar="SPEC", help="as for ab")
    option(parser, "--candidate", required=True, metavar="SPEC", help="as for ab")
    option(parser, "--rounds", type=positive_int, default=None, help="interleaved rounds (default 13; --quick 10)")
    option(parser, "--quick", action="store_true", help="10 rounds of 0.5 s tests")
    option(parser, "--subexperiments", type=name_list, default=None, help="as for throughput (default: the ten)")
    option(parser, "--payloads", type=payload_list, default=None, help="default 16,16384")
    option(parser, "--demands", type=demand_list, default=None, help="as for throughput (default 1000: saturating)")
    option(parser, "--recovery-times", type=millisecond_list, default=None, metavar="MS", help="as for throughput (default 0)")
    option(parser, "--time", type=positive_float, default=None, metavar="SECONDS", help="per test (default 1; --quick 0.5)")
    option(parser, "--pin-cpus", type=pin_request, default=None, metavar="auto|none|PUB,SUB", help="as for ab")
    option(parser, "--layouts", type=int, default=None, metavar="N", help=LAYOUTS_AB_HELP)
    option(parser, "--cpu-latency", dest="cpu_latency_request", choices=cpu_latency.CHOICES, default=None,
           help=CPU_LATENCY_HELP)
    option(parser, "--threshold", type=non_negative_float, default=None,
           help="relative drop that is not yet a regression (default 0.01: below baseline / 1.01)")
    option(parser, "--alpha", type=non_negative_float, default=None,
           help="family-wise false-alarm level of the whole verdict (default 0.02)")
    option(parser, "--all-rounds", action="store_true",
           help="measure every sub-experiment in every round (default: stop measuring one once its tests are "
                "decided, which gives the same verdict)")
    option(parser, "--label", type=label, default=None, help="label (default: the output folder's name)")
    no_plots(parser, option)
