"""`perfgate compare-subexperiments`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from .common import no_plots

NAME = "compare-subexperiments"
HANDLER = "perfgate.latency.process:command_compare_subexperiments"
HELP = "plot min, median, max and 99%% against payload, one line per sub-experiment"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--plots-directory", required=True, metavar="D")
    option(parser, "--subexperiment-summaries", required=True, nargs="+", metavar="F")
    no_plots(parser, option)
