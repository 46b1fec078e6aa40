"""`perfgate promote-baseline`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable



NAME = "promote-baseline"
HANDLER = "perfgate.store.baseline:command_promote_baseline"
HELP = "make an experiment the baseline of a platform (summaries and metadata, replaced atomically)"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--experiment", required=True, metavar="DIR")
    option(parser, "--platform", required=True, metavar="NAME")
    option(parser, "--baselines-dir", default="baselines", metavar="DIR")
