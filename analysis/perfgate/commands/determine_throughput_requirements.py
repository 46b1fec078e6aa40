"""`perfgate determine-throughput-requirements`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import non_negative_float

NAME = "determine-throughput-requirements"
HANDLER = "perfgate.throughput.requirements:command_determine_throughput_requirements"
HELP = "throughput minimums from several runs of one build (smallest / (1 + margin))"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--experiments-results", required=True, metavar="DIR", help="folder of perfgate throughput runs")
    option(parser, "--output-file", required=True, metavar="CSV")
    option(parser, "--margin", type=non_negative_float, default=1.0,
           help="requirement = smallest measured / (1 + margin) (default 1.0: half)")
