"""`perfgate store push|pull|check`: its options (HANDLER names the function that does the work).

One flat parser, so that `perfgate store --help` shows every option (the CI scripts' options are
checked against it)."""
from __future__ import annotations

import argparse
from typing import Callable

from .. import schema as s
from ..store.cli import DEFAULT_BRANCH

NAME = "store"
HANDLER = "perfgate.store.cli:command_store"
HELP = "push a results store's experiments to a git branch, pull the branch's into the store, or check the store"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    parser.add_argument("action", choices=("push", "pull", "check"),
                        help="push: add the store's experiments the branch lacks; pull: add the branch's the store "
                             "lacks (creates the store); check: list the store's damaged experiments (exit 1 if any)")
    option(parser, "--store", default=None, metavar="DIR",
           help=f"the results store (required for push and pull; check's default: ${s.STORE_ENV})")
    option(parser, "--remote", default=None, metavar="URL",
           help=f"push, pull: git repository keeping the store (default: ${s.STORE_REMOTE_ENV})")
    option(parser, "--branch", default=DEFAULT_BRANCH, help=f"push, pull: its branch (default {DEFAULT_BRANCH})")
