"""Text cells of a CSV file a spreadsheet opens (the Otava export, change_points.csv).

A spreadsheet reads a cell starting with `=`, `+`, `-` or `@` as a formula (`=HYPERLINK(...)`,
`=cmd|' /C calc'!A0`), and one starting with a tab or a carriage return the same after trimming it.
Such a text cell from untrusted input (a label, a commit, a version) gets a leading `'`, which
spreadsheets read as "text follows" and do not show. Only text cells: a number is never changed,
so -3.5 stays a number. A lone surrogate is shown as U+FFFD so the file can be written as UTF-8.

A carriage return inside a cell is written as a line feed: the CSV writer (lines end with `\n`)
quotes a cell holding a line feed but not one holding only a CR, which every reader then takes for
the end of the row, the rest of the label starting a row of its own (`\r=1` a formula in column A).
"""
from __future__ import annotations

import re

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
TEXT_MARK = "'"
_SURROGATE = re.compile("[\ud800-\udfff]")


def cell(value):
    """A text cell that no spreadsheet runs; anything but text (a number, None) as it is."""
    if not isinstance(value, str):
        return value
    value = _SURROGATE.sub("\ufffd", value)
    mark = TEXT_MARK if value.startswith(FORMULA_STARTS) else ""
    return mark + value.replace("\r\n", "\n").replace("\r", "\n")


def cells(values) -> list:
    """`cell` of each value (a column of text cells)."""
    return [cell(value) for value in values]
