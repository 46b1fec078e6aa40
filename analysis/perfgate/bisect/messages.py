"""bisect.messages: an error of several lines (git's stderr: an `error:` line naming the cause, then
`fatal: ...`) printed as several console lines, each escaped as untrusted text, as `perfgate gate`
prints a failed build's (gate.failed_build), rather than one line holding `\\n` sequences."""
from __future__ import annotations

import sys

from ..errors import PerfgateError
from ..escape.workflow import log_text


def message_lines(error: PerfgateError) -> list[str]:
    """The error's text by lines, its path (and line) before the first; each line still raw."""
    where = "" if error.path is None else f"{error.path}:{error.line}: " if error.line is not None else f"{error.path}: "
    first, *more = [line for line in str(error.message).splitlines() if line.strip()] or [""]
    return [where + first, *more]


def print_lines(lead: str, error: PerfgateError, program: str = "perfgate bisect:") -> None:
    """`lead` and the error's first line on one stderr line, each further line on its own after
    `program`, indented; every line escaped (log_text): no line of the message starts a workflow command."""
    first, *more = message_lines(error)
    print(f"{lead}{log_text(first)}", file=sys.stderr, flush=True)
    for line in more:
        print(f"{program}   {log_text(line)}", file=sys.stderr, flush=True)
