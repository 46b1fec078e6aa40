"""`perfgate pr-comment`: the sticky pull-request comment of one platform, printed as Markdown.

The trusted pull-request workflow (.github/workflows/pull-request.yml, docs/ci.md "The pull-request
comment") runs it on a hosted runner over the gate's report artifact and posts what it prints. Its
options are commands/pr_comment.py's; the work is report.comment's.
"""
from __future__ import annotations

import sys


def command_pr_comment(gate_output: str, platform: str, report_url: str, commit: str | None = None,
                       history_url: str | None = None) -> int:
    from ..outputs import require_paths
    from . import comment

    require_paths(gate_output=gate_output)
    # everything is read and checked before a line is printed: nothing half-written on stdout
    gate = comment.read_gate_output(gate_output)
    text = comment.comment_markdown(gate, platform, report_url, commit, history_url)
    _, disagreeing = comment.disagreement(gate)
    if disagreeing:  # the job's log says it too: fixed words and counts only
        sys.stderr.write(f"perfgate pr-comment: warning: {disagreeing}\n")
    sys.stdout.write(text)
    return 0
