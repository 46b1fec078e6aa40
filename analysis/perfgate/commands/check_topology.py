"""`perfgate check-topology`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from .common import no_plots

NAME = "check-topology"
HANDLER = "perfgate.topology.check:command_check_topology"
HELP = "check a topology experiment against a performance target: CPU, RSS, late, too-late and lost shares; JUnit"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--target", required=True, metavar="FILE.json",
           help="performance target: resources {cpu[%%], rss[KB]}, latency_total {late[%%], too_late[%%], lost[%%]}")
    option(parser, "--experiment-directory", required=True, metavar="DIR", help="a perfgate topology folder")
    option(parser, "--junit", default=None, metavar="FILE", help="also write JUnit: a testcase per limit, on its line")
    option(parser, "--plots-directory", default=None, metavar="DIR",
           help="where the resources plot with the target's limits goes (default: <experiment>/plots)")
    no_plots(parser, option)
