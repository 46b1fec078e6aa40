"""`perfgate process`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import positive_int
from .common import no_plots

NAME = "process"
HANDLER = "perfgate.latency.process:command_process"
HELP = "raw measurements -> summary CSV and per-payload plots"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--raw-csv", metavar="F", help="one raw measurements CSV")
    option(parser, "--output-csv", metavar="F", help="the summary CSV to write")
    option(parser, "--plots-directory", metavar="D", help="where the plots go")
    option(parser, "--experiment-directory", metavar="D", help="process every raw CSV of an experiment folder")
    option(parser, "--jobs", type=positive_int, default=None, help="parallel workers (default: all cores)")
    no_plots(parser, option)
