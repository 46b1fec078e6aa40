"""`perfgate verdict`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import non_negative_float
from .common import no_plots

NAME = "verdict"
HANDLER = "perfgate.ab.report:command_verdict"
HELP = ("decide from the stored rounds of an A/B folder (latency or throughput): exact paired sign "
        "test, Holm-corrected")


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--ab-directory", required=True, metavar="DIR")
    option(parser, "--threshold", type=non_negative_float, default=None,
           help="relative change that is not yet a regression (default 0.01 = 1 %%)")
    option(parser, "--alpha", type=non_negative_float, default=None,
           help="family-wise false-alarm level of the whole verdict (default 0.02)")
    option(parser, "--layout-thresholds", default=None, metavar="FILE",
           help="latency: per-sub-experiment thresholds above what code layout moves (default: "
                "requirements/<$PERFGATE_PLATFORM>_layout.json when it exists); each is tested at the larger bound")
    no_plots(parser, option)
