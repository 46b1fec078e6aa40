"""`perfgate check-throughput`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from .common import no_plots

NAME = "check-throughput"
HANDLER = "perfgate.throughput.check:command_check_throughput"
HELP = "check throughput tables against throughput requirements (a minimum per test); JUnit, plots"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--requirements", required=True, metavar="CSV",
           help="Experiment type,Bytes,Demand,Recovery time,Subscription throughput[,Lost [%%]]")
    option(parser, "--experiment-directory", required=True, metavar="DIR", help="a perfgate throughput folder")
    option(parser, "--junit", default=None, metavar="FILE", help="also write JUnit (testcases Throughput[16 B x 1000])")
    option(parser, "--plots-directory", default=None, metavar="DIR", help="default: <experiment>/plots")
    no_plots(parser, option)
