"""`perfgate history`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import probability
from .common import no_plots

NAME = "history"
HANDLER = "perfgate.history.latency:command_history"
HELP = "redraw the history plots of a results store"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--requirements", required=True, metavar="F")
    option(parser, "--experiments-results", required=True, metavar="D",
           help="results store, or its experiments/ folder: one experiment folder per run")
    option(parser, "--plots-directory", required=True, metavar="D",
           help="where the plots, change_points.csv and the Otava export go")
    option(parser, "--alpha", type=probability, default=0.01,
           help="family-wise false-alarm level of the change points over all series (default 0.01)")
    option(parser, "--baseline", action="append", default=None, metavar="D",
           help="a stored baseline (baselines/<platform>/) drawn as a reference line; repeat for release baselines")
    option(parser, "--all-plots", action="store_true",
           help="draw every payload's PNG too (330 for ten sub-experiments); by default only those of the series "
                "that moved (a change point or an event) beside each sub-experiment's plots of all payloads")
    no_plots(parser, option)
