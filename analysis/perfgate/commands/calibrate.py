"""`perfgate calibrate`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import name_list, positive_float

NAME = "calibrate"
HANDLER = "perfgate.calibrate.command:command_calibrate"
HELP = ("a new reference machine in one command: check the runner's tuning, measure a known-good Fast DDS and "
        "derive every requirements file of the platform (resumable; docs/verdict.md)")


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--platform", required=True, metavar="NAME", help="the platform the files are for")
    option(parser, "--output-directory", required=True, metavar="DIR",
           help="where the files go (its .calibration/ keeps the runs; the same arguments again go on)")
    option(parser, "--fastdds", default=None, metavar="PREFIX",
           help="the known-good Fast DDS: a colcon install prefix (default: the system's)")
    option(parser, "--workspace", default=None, metavar="WS",
           help="the known-good Fast DDS: a `perfgate build` workspace")
    option(parser, "--time-budget", type=positive_float, default=None, metavar="SECONDS",
           help="start no run that would end after this; stopped early, the next call goes on (exit 3 until done)")
    option(parser, "--quick", action="store_true",
           help="a smoke calibration of minutes: the fewest runs that derive every file")
    option(parser, "--require-tuned", action="store_true",
           help="stop before measuring (exit 2) when a runner check says to fix something")
    option(parser, "--subexperiments", type=name_list, default=None,
           help="calibrate these of the ten only (default: the ten a gate checks)")
    option(parser, "--steps", type=name_list, default=None,
           metavar="latency,resources,aa,gross,layout,throughput,topology",
           help="derive only these files (with what they need); default: every one")
