"""`perfgate compare`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import non_negative_float
from .common import no_plots

NAME = "compare"
HANDLER = "perfgate.latency.compare:command_compare"
HELP = "compare a target experiment with a reference"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--reference", required=True, metavar="D")
    option(parser, "--results", required=True, metavar="D")
    option(parser, "--plots-directory", required=True, metavar="D")
    option(parser, "--fail-threshold", type=non_negative_float, default=0.1)
    no_plots(parser, option)
