"""fastdds.logs: build and git output made fit for JUnit, JSON and Markdown."""
from __future__ import annotations

import re
from pathlib import Path

LOG_TAIL_LINES = 40
# Terminal escapes (GCC colours: Fast DDS adds -fdiagnostics-color=always under ccache) and control
# characters, which XML 1.0 cannot hold: log tails go into JUnit, JSON and Markdown without them.
_ANSI_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_NOT_PRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def printable(text: str) -> str:
    """Text without terminal escapes and control characters (tabs and newlines kept): valid in XML."""
    return _NOT_PRINTABLE.sub("", _ANSI_ESCAPE.sub("", text))


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(printable(text.replace("\r\n", "\n")).splitlines()[-lines:])


def code_block(text: str) -> str:
    """`text` as a Markdown fenced code block: a log line of backticks (CMake indents its error
    lines by two spaces, so "  ```" is one) closes a fence at least as long, so the fence is one
    backtick longer than the longest run in the text (CommonMark), and at least three."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}\n"


def code_span(text: str) -> str:
    """`text` as inline code: delimited by a backtick run it does not contain (a path may hold one)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    delimiter = "`" * (longest + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{delimiter}{padding}{text}{padding}{delimiter}"
