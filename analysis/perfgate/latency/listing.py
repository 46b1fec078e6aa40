"""A few of many: how a message names a long list (payloads, lines, sub-experiments) and how many
lines a list of problems may print, so that output stays bounded whatever the input (a requirements
file of 10000 rows none of which was measured is a few lines on stderr, not 10000)."""
from __future__ import annotations

from collections.abc import Sequence

SHOWN = 5  # items of a list named in one line
MAX_LINES = 10  # problem lines printed before the rest is summed up in one


def some(values: Sequence, shown: int = SHOWN) -> str:
    """`16, 32, 64`, or `16, 32, 64, 128, 256, ... (40 in all)` when there are more than `shown`."""
    head = ", ".join(str(value) for value in values[:shown])
    return head if len(values) <= shown else f"{head}, ... ({len(values)} in all)"


def first_lines(lines: list[str], rest: str) -> list[str]:
    """The first MAX_LINES lines, then `rest` (formatted with {count}, the lines left out) when any are."""
    if len(lines) <= MAX_LINES:
        return lines
    return lines[:MAX_LINES] + [rest.format(count=len(lines) - MAX_LINES)]
