"""`perfgate run`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from .. import schema as s
from ..cli_types import label, name_list, payload_list, pin_request, positive_float, positive_int
from ..measure import cpu_latency
from .common import CPU_LATENCY_HELP

NAME = "run"
HANDLER = "perfgate.latency.run:command_run"
HELP = "run the latency experiment on a real Fast DDS"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--output", required=True, metavar="DIR", help="experiment folder to write")
    option(parser, "--samples", type=positive_int, default=s.DEFAULT_SAMPLES, help="round trips per payload")
    option(parser, "--payloads", type=payload_list, default=list(s.PAYLOADS), help="e.g. 16,32,64")
    option(parser, "--subexperiments", type=name_list, default=None,
           help="comma-separated sub-experiment names (default: the ten of the contract, then the machine's "
                "floor: " + ",".join(s.FLOOR_SUBEXPERIMENT_NAMES) + ")")
    option(parser, "--subscribers", type=positive_int, default=None, metavar="N",
           help="also <sub>_1to<N> for each selected latency sub-experiment: N subscribers (2 to 16)")
    option(parser, "--label", type=label, default=None, help="experiment label (default: the output folder's name)")
    option(parser, "--warmup", type=int, default=None, help="unrecorded round trips before each payload (default 100)")
    option(parser, "--harness", default=None, metavar="PATH", help="harness executable (default: build native/ on first use)")
    option(parser, "--fastdds-prefix", default=None, metavar="DIR",
           help="install prefix of the Fast DDS to build against (a colcon install); default: the system's")
    option(parser, "--pin-cpus", type=pin_request, default=None, metavar="auto|none|PUB,SUB",
           help="pin publisher and subscriber (and their Fast DDS threads) to two CPUs; default auto: two "
                "distinct CPUs, isolated ones first, when the machine has two; none: not pinned")
    option(parser, "--cpu-latency", dest="cpu_latency_request", choices=cpu_latency.CHOICES, default=None,
           help=CPU_LATENCY_HELP)
    option(parser, "--timeout", type=positive_float, default=None, metavar="SECONDS",
           help="per sub-experiment time limit (default scales with samples)")
    option(parser, "--engine", choices=s.ENGINES, default=s.ENGINE_HARNESS,
           help="harness: perfgate's own (round trip); upstream: Fast DDS' performance.latency tests of a "
                "--workspace build (half round trip)")
    option(parser, "--workspace", default=None, metavar="WS",
           help="a `perfgate build` workspace: measure its Fast DDS (and record its commit and build options)")
