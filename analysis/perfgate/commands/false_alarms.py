"""`perfgate false-alarms`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import probability
from ..gate.budget import WHOLE_GATE

NAME = "false-alarms"
HANDLER = "perfgate.store.false_alarms:command_false_alarms"
HELP = ("the whole gate's false-alarm rate on the A/A gates of a results store (a Fast DDS gated against itself), "
        "with its exact interval and whether it contradicts the budget")


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--store", required=True, metavar="DIR", help="the results store (its experiments/ folder holds the runs)")
    option(parser, "--platform", default=None, metavar="ID",
           help="only the runs of this machine: metadata.json's platform.id (16 hex digits)")
    option(parser, "--output", default=None, metavar="CSV", help="one row per A/A gate (docs/formats.md section 9)")
    option(parser, "--summary-markdown", dest="summary_markdown_file", default=None, metavar="F",
           help="append the figures and the false alarms as Markdown (e.g. $GITHUB_STEP_SUMMARY)")
    option(parser, "--budget", type=probability, default=WHOLE_GATE,
           help=f"the whole gate's false-alarm budget to test the rate against (default {WHOLE_GATE}, gate.budget)")
