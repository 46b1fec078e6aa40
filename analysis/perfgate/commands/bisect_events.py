"""`perfgate bisect-events`: its options (HANDLER names the function that does the work).

Its own command rather than a mode of `perfgate bisect`: it takes a history's events.csv, not a good
and a bad commit, chooses what to bisect, and keeps a record per event; `perfgate bisect` stays the
one bisect a maintainer runs by hand."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import non_negative_float, positive_int
from .common import no_plots

NAME = "bisect-events"
HANDLER = "perfgate.history.bisect_events:command_bisect_events"
HELP = "run `perfgate bisect` for each new regression event of a history (events.csv), bounded in number and time"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--events", required=True, metavar="F", help="the history's events.csv (perfgate history)")
    option(parser, "--workspace", required=True, metavar="WS", help="the `perfgate build` workspace, as for bisect")
    option(parser, "--git-url", required=True, metavar="URL", help="the Fast DDS repository (a URL or a local folder)")
    option(parser, "--output", required=True, metavar="DIR",
           help="one bisect folder per event, <good 12>-<bad 12>/ (its record: an event is bisected once); "
                "the history links it from <plots>/bisect/")
    option(parser, "--max", dest="max_events", type=positive_int, required=True, metavar="N",
           help="bisect at most N events, the largest regressions first")
    option(parser, "--time-budget", type=non_negative_float, required=True, metavar="S",
           help="start no bisect after S seconds; those left wait for the next run")
    option(parser, "--rounds", type=positive_int, default=None, help="rounds of each A/B, as for bisect")
    option(parser, "--samples", type=positive_int, default=None, help="samples of each A/B, as for bisect")
    option(parser, "--quick", action="store_true", help="each A/B as `perfgate ab --quick`")
    option(parser, "--threshold", type=non_negative_float, default=None, help="each A/B's verdict, as for bisect")
    option(parser, "--alpha", type=non_negative_float, default=None, help="each A/B's verdict, as for bisect")
    option(parser, "--fastcdr-url", default=None, metavar="URL", help="as for bisect")
    option(parser, "--jobs", type=positive_int, default=None, help="parallel compile jobs of each build")
    no_plots(parser, option)
