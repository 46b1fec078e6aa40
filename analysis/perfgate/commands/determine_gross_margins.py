"""`perfgate determine-gross-margins`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import positive_int

NAME = "determine-gross-margins"
HANDLER = "perfgate.latency.determine_gross:command_determine_gross_margins"
HELP = ("derive the gross margins of a platform's requirements (what fails a gate with a baseline "
        "build) from stored A/B folders' unchanged arms")


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--ab-directory", required=True, action="append", metavar="DIR",
           help="an A/B folder whose baseline arm is an unchanged Fast DDS (repeat for several)")
    option(parser, "--requirements", required=True, metavar="CSV")
    option(parser, "--output-file", required=True, metavar="F", help="requirements/<platform>_gross.json")
    option(parser, "--pooled-samples", type=positive_int, action="append", metavar="N",
           help="samples per payload a gate's check pools (repeat; default 100, 1000 and 16000: one quick round, the quick and the full A/B)")
    option(parser, "--gates", type=positive_int, default=200, help="simulated unchanged gates per pooled size")
    option(parser, "--seed", type=int, default=28)
    option(parser, "--unchanged-candidates", action="store_true",
           help="the candidate arms are unchanged too (A/A folders only)")
