"""`perfgate junit`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable



NAME = "junit"
HANDLER = "perfgate.latency.junit:command_junit"
HELP = "JUnit XML from an experiment folder's check reports"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--experiment-directory", required=True, metavar="D")
    option(parser, "--output", required=True, metavar="F")
    option(parser, "--requirements", default=None, metavar="F",
           help="requirements CSV for file/line annotations (default: the one recorded by check)")
