"""`perfgate determine-requirements`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import non_negative_float, percentile

NAME = "determine-requirements"
HANDLER = "perfgate.latency.requirements:command_determine_requirements"
HELP = "derive requirements from many runs of one commit"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--experiments-results", required=True, metavar="D",
           help="folder of experiment folders (runs of one commit), or a results store")
    option(parser, "--output-file", required=True, metavar="F")
    option(parser, "--percentile", type=percentile, default=99.0)
    option(parser, "--margin", type=non_negative_float, default=0.0,
           help="raise every requirement by this fraction of itself (0.25 = +25%%); the printed false-alarm "
                "figures say what it buys")
