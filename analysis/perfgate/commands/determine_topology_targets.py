"""`perfgate determine-topology-targets`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import non_negative_float, percentile

NAME = "determine-topology-targets"
HANDLER = "perfgate.topology.targets:command_determine_topology_targets"
HELP = "a topology's performance target (cpu, rss, late, too late, lost) from several runs of one Fast DDS"
DEFAULT_MARGIN = 0.25


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--experiments-results", required=True, metavar="DIR",
           help="folder of `perfgate topology` runs of one topology, made the same way")
    option(parser, "--output-file", required=True, metavar="FILE.json",
           help="the target to write; <stem>_provenance.json beside it")
    option(parser, "--percentile", type=percentile, default=99.0)
    option(parser, "--margin", type=non_negative_float, default=DEFAULT_MARGIN,
           help=f"raise every figure by this fraction of itself (default {DEFAULT_MARGIN:g}: +25%%); the printed "
                f"leave-one-out false-alarm figures say what it buys")
