"""`perfgate build`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from ..cli_types import positive_int

NAME = "build"
HANDLER = "perfgate.fastdds.build:command_build"
HELP = ("build a Fast DDS source and the harness in a persistent colcon workspace (Release, security, "
        "performance tests)")


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--workspace", required=True, metavar="WS", help="colcon workspace, kept between builds")
    option(parser, "--source", default=None, metavar="DIR", help="a local Fast DDS source folder (mirrored into WS)")
    option(parser, "--git-url", default=None, metavar="URL", help="a Fast DDS repository (with --commit)")
    option(parser, "--commit", default=None, metavar="REF",
           help="what of --git-url to build: a commit, tag or branch; parent:<rev> (the first parent of <rev>); "
                "merge-base:<rev>,<other> (where <rev> branched off <other>)")
    option(parser, "--fastcdr-source", default=None, metavar="DIR",
           help="build Fast CDR from this source (default: the system's, when its major version fits)")
    option(parser, "--fastcdr-url", default=None, metavar="URL",
           help="fetch the Fast CDR commit the Fast DDS commit pins (thirdparty/fastcdr) from this repository "
                "instead of the URL its .gitmodules gives (a mirror; used where that pin is built)")
    option(parser, "--foonathan-memory-source", default=None, metavar="DIR",
           help="build foonathan_memory_vendor from this source (default: the system's)")
    option(parser, "--jobs", type=positive_int, default=None, help="parallel compile jobs (default: all cores)")
    option(parser, "--no-ccache", action="store_true", help="compile without ccache")
    option(parser, "--junit", default=None, metavar="F", help="also write a JUnit file with the testcase \"build\"")
    option(parser, "--keep-installs", type=int, default=None, metavar="N",
           help="keep the installs of the last N commits built in WS/installs/<commit> (a copy with its own record, "
                "usable as a workspace), the least recently built or used removed; a commit kept with the same "
                "harness sources and CMake arguments is not built again; 0 keeps none (default: 3)")
    option(parser, "--keep-as", default=None, metavar="NAME",
           help="also make WS/installs/NAME (a plain name, e.g. baseline) point at this commit's kept install; "
                "pruning keeps what a name points to")
    option(parser, "--layouts", type=int, default=None, metavar="N",
           help="also link the Fast DDS library N more times with its object files in other orders, kept as "
                "WS/installs/<commit>/layouts/1..N, for `perfgate ab --layouts N` (default 0; needs --keep-installs)")
    option(parser, "--align-functions", type=int, default=None, metavar="N",
           help="compile every function aligned to N bytes (-falign-functions=N, e.g. 64: the cache line), so that "
                "code added or removed elsewhere moves a function by whole lines only (default 64; 0: the compiler's "
                "own alignment)")
