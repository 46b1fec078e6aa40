"""`perfgate check`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from .common import no_plots

NAME = "check"
HANDLER = "perfgate.latency.check:command_check"
HELP = "check summaries against a requirements CSV"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--requirements", required=True, metavar="F")
    option(parser, "--experiment-directory", required=True, metavar="D")
    option(parser, "--plots-directory", required=True, metavar="D")
    option(parser, "--print-summaries", action="store_true", help="print each check report")
    option(parser, "--junit", default=None, metavar="F", help="also write the JUnit file")
    option(parser, "--resources-requirements", default=None, metavar="F",
           help="also check the harness processes' resources (requirements/<platform>_resources.json)")
    no_plots(parser, option)
