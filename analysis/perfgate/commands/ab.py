"""`perfgate ab`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import label, name_list, non_negative_float, payload_list, pin_request, positive_int
from ..measure import cpu_latency
from .common import CPU_LATENCY_AB_HELP, LAYOUTS_AB_HELP, no_plots

NAME = "ab"
HANDLER = "perfgate.ab.latency:command_ab"
HELP = "measure a candidate Fast DDS against a baseline in interleaved, pinned rounds, then decide"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--output", required=True, metavar="DIR", help="A/B folder to write (absent or empty)")
    option(parser, "--baseline", required=True, metavar="SPEC",
           help="'system' (the system Fast DDS), a colcon install prefix, or a `perfgate build` workspace")
    option(parser, "--candidate", required=True, metavar="SPEC", help="as --baseline")
    option(parser, "--rounds", type=positive_int, default=None,
           help="rounds, both arms each (default 16; 10 with --quick)")
    option(parser, "--samples", type=positive_int, default=None,
           help="round trips per payload, arm and round (default 1000; 100 with --quick)")
    option(parser, "--quick", action="store_true", help="10 rounds of 100 samples (warm-up 10): about 2 minutes for the ten")
    option(parser, "--subexperiments", type=name_list, default=None,
           help="comma-separated sub-experiment names (default: the ten of the contract)")
    option(parser, "--payloads", type=payload_list, default=None, help="e.g. 16,32,64 (default: all eleven)")
    option(parser, "--pin-cpus", type=pin_request, default=None, metavar="auto|none|PUB,SUB",
           help="as for run (default auto)")
    option(parser, "--cpu-latency", dest="cpu_latency_request", choices=cpu_latency.CHOICES, default=None,
           help=CPU_LATENCY_AB_HELP)
    option(parser, "--turn-samples", type=int, default=None, metavar="K",
           help="both arms measure at once, taking turns of K round trips (default 50); 0: one run after the other")
    option(parser, "--inject-delay-ns", default=None, metavar="D|name=D,...",
           help="the candidate's echo busy-waits D ns: a known regression to calibrate the gate (recorded)")
    option(parser, "--threshold", type=non_negative_float, default=None,
           help="relative change that is not yet a regression (default 0.01 = 1 %%)")
    option(parser, "--alpha", type=non_negative_float, default=None,
           help="family-wise false-alarm level of the whole verdict (default 0.02)")
    option(parser, "--layout-thresholds", default=None, metavar="FILE",
           help="per-sub-experiment thresholds above what code layout moves (default: "
                "requirements/<$PERFGATE_PLATFORM>_layout.json when it exists); each is tested at the larger bound")
    option(parser, "--layouts", type=int, default=None, metavar="N", help=LAYOUTS_AB_HELP)
    option(parser, "--all-rounds", action="store_true",
           help="measure every sub-experiment in every round (default: stop measuring one once its tests are "
                "decided, which gives the same verdict)")
    option(parser, "--label", type=label, default=None, help="label (default: the output folder's name)")
    no_plots(parser, option)
