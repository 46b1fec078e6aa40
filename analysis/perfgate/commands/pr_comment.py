"""`perfgate pr-comment`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

NAME = "pr-comment"
HANDLER = "perfgate.report.pr_comment:command_pr_comment"
HELP = "print the pull-request comment (Markdown) of one platform from a gate's report files"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--gate-output", required=True, metavar="DIR",
           help="the gate's output folder, or its perfgate-report-<platform> artifact (report.md, junit.xml, ab/, ...)")
    option(parser, "--platform", required=True, metavar="NAME", help="the platform (its comment's hidden marker)")
    option(parser, "--report-url", required=True, metavar="URL", help="https link to the full report (the run)")
    option(parser, "--commit", default=None, metavar="SHA", help="the commit measured, named in the comment")
    option(parser, "--history-url", default=None, metavar="URL",
           help="https link to this platform's published history.html: each sub-experiment the A/B failed is "
                "linked to its chart there")
