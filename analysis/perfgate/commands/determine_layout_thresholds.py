"""`perfgate determine-layout-thresholds`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import path_name

NAME = "determine-layout-thresholds"
HANDLER = "perfgate.ab.layout_derivation:command_determine_layout_thresholds"
HELP = ("derive per-sub-experiment regression thresholds above what code layout alone moves, from A/Bs of "
        "builds that differ only in layout")


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--ab-directory", action="append", type=path_name, metavar="DIR",
           help="a finished `perfgate ab --all-rounds` folder of two layout-only builds; A/Bs of the same two "
                "builds are pooled as one pair")
    option(parser, "--previous", type=path_name, metavar="FILE",
           help="an earlier layout file whose A/Bs (their rounds, kept in its provenance) count as given again")
    option(parser, "--platform", required=True, metavar="P", help="the platform the thresholds are for")
    option(parser, "--output", required=True, metavar="FILE", help="requirements/<platform>_layout.json")
