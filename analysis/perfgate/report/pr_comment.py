"""`perfgate pr-comment`: the sticky pull-request comment of one platform, printed as Markdown.

The trusted pull-request workflow (.github/workflows/pull-request.yml, docs/ci.md "The pull-request
comment") runs it on a hosted runner over the gate's report artifact and posts what it prints. Its
parser is added here so that cli.py stays a dispatcher; the work is report.comment's.
"""
from __future__ import annotations

import sys


def add_command(command, option) -> None:
    """The sub-command, with cli's `command(name, handler, help)` and `_option(parser, name, ...)`."""
    parser = command("pr-comment", "perfgate.report.pr_comment:command_pr_comment",
                     "print the pull-request comment (Markdown) of one platform from a gate's report files")
    option(parser, "--gate-output", required=True, metavar="DIR",
           help="the gate's output folder, or its perfgate-report-<platform> artifact (report.md, junit.xml, ab/, ...)")
    option(parser, "--platform", required=True, metavar="NAME", help="the platform (its comment's hidden marker)")
    option(parser, "--report-url", required=True, metavar="URL", help="https link to the full report (the run)")
    option(parser, "--commit", default=None, metavar="SHA", help="the commit measured, named in the comment")


def command_pr_comment(gate_output: str, platform: str, report_url: str, commit: str | None = None) -> int:
    from ..outputs import require_paths
    from . import comment

    require_paths(gate_output=gate_output)
    # everything is read and checked before a line is printed: nothing half-written on stdout
    text = comment.comment_markdown(comment.read_gate_output(gate_output), platform, report_url, commit)
    sys.stdout.write(text)
    return 0
