"""`perfgate throughput`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from .. import schema as s
from ..cli_types import demand_list, label, millisecond_list, name_list, payload_list, pin_request, positive_float
from ..measure import cpu_latency
from .common import CPU_LATENCY_HELP

NAME = "throughput"
HANDLER = "perfgate.throughput.run:command_throughput"
HELP = "run the throughput experiment on a real Fast DDS: bursts at a pace, counted by the subscriber"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--output", required=True, metavar="DIR", help="experiment folder to write (absent or empty)")
    option(parser, "--subexperiments", type=name_list, default=None,
           help="latency sub-experiment names whose transport, reliability and security to use (default: the ten); "
                "written as throughput_<name>.csv")
    option(parser, "--payloads", type=payload_list, default=None,
           help="e.g. 16,1024 (default: all eleven; " + ",".join(map(str, s.QUICK_THROUGHPUT_PAYLOADS)) + " with --quick)")
    option(parser, "--demands", type=demand_list, default=None,
           help="samples per burst (default " + ",".join(map(str, s.DEFAULT_DEMANDS)) + ")")
    option(parser, "--recovery-times", type=millisecond_list, default=None, metavar="MS",
           help="pause from the start of one burst to the next, in ms (default "
                + ",".join(map(str, s.DEFAULT_RECOVERY_TIMES_MS)) + "; 0: back to back)")
    option(parser, "--time", type=positive_float, default=None, metavar="SECONDS",
           help=f"length of each test (default {s.DEFAULT_THROUGHPUT_TIME_S:g})")
    option(parser, "--quick", action="store_true",
           help="payloads " + ",".join(map(str, s.QUICK_THROUGHPUT_PAYLOADS)) + " only: under a minute for the ten")
    option(parser, "--label", type=label, default=None, help="experiment label (default: the output folder's name)")
    option(parser, "--pin-cpus", type=pin_request, default=None, metavar="auto|none|PUB,SUB",
           help="as for run (default auto)")
    option(parser, "--cpu-latency", dest="cpu_latency_request", choices=cpu_latency.CHOICES, default=None,
           help=CPU_LATENCY_HELP)
    option(parser, "--workspace", default=None, metavar="WS", help="as for run")
    option(parser, "--fastdds-prefix", default=None, metavar="DIR", help="as for run")
