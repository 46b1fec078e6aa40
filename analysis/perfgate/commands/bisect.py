"""`perfgate bisect`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import name_list, non_negative_float, payload_list, pin_request, positive_int
from ..measure import cpu_latency
from .common import CPU_LATENCY_AB_HELP, no_plots

NAME = "bisect"
HANDLER = "perfgate.bisect.driver:command_bisect_lines"
HELP = "find the commit between a good and a bad one that made Fast DDS slower: builds and A/Bs, binary search"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--workspace", required=True, metavar="WS",
           help="the `perfgate build` workspace to build each commit in (kept installs and ccache reused)")
    option(parser, "--git-url", required=True, metavar="URL", help="the Fast DDS repository (a URL or a local folder)")
    option(parser, "--good", required=True, metavar="REV", help="a commit, tag or branch without the regression")
    option(parser, "--bad", required=True, metavar="REV",
           help="a commit, tag or branch with it; good must be on its first-parent history")
    option(parser, "--output", required=True, metavar="DIR",
           help="folder to write (absent or empty): bisect.json, report.md, report.html, steps/<NN>-<sha>-vs-<sha>/")
    option(parser, "--subexperiments", type=name_list, default=None,
           help="sub-experiments of the first A/B (default: the ten); the steps measure those that regressed")
    option(parser, "--payloads", type=payload_list, default=None, help="e.g. 16,1024 (default: all eleven)")
    option(parser, "--rounds", type=positive_int, default=None,
           help="rounds of each A/B (default 16; 10 with --quick); an ambiguous step measures 2x, then 4x")
    option(parser, "--samples", type=positive_int, default=None,
           help="round trips per payload, arm and round (default 1000; 100 with --quick)")
    option(parser, "--quick", action="store_true", help="each A/B as `perfgate ab --quick`")
    option(parser, "--threshold", type=non_negative_float, default=None,
           help="relative change that is not yet a regression (default 0.01 = 1 %%)")
    option(parser, "--alpha", type=non_negative_float, default=None,
           help="family-wise false-alarm level of each A/B's verdict (default 0.02)")
    option(parser, "--layout-thresholds", default=None, metavar="FILE",
           help="per-sub-experiment thresholds above what code layout moves, for every A/B and step, as for ab "
                "(default: requirements/<$PERFGATE_PLATFORM>_layout.json when it exists)")
    option(parser, "--pin-cpus", type=pin_request, default=None, metavar="auto|none|PUB,SUB",
           help="as for run (default auto)")
    option(parser, "--cpu-latency", dest="cpu_latency_request", choices=cpu_latency.CHOICES, default=None,
           help=CPU_LATENCY_AB_HELP)
    option(parser, "--fastcdr-url", default=None, metavar="URL",
           help="as for build: where the Fast CDR commit each Fast DDS commit pins is fetched from (a mirror)")
    option(parser, "--jobs", type=positive_int, default=None, help="parallel compile jobs of each build")
    no_plots(parser, option)
