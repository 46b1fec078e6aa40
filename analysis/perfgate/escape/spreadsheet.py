"""Text cells of a CSV file a spreadsheet opens (the Otava export, change_points.csv).

A spreadsheet reads a cell starting with `=`, `+`, `-` or `@` as a formula (`=HYPERLINK(...)`,
`=cmd|' /C calc'!A0`), and one starting with a tab or a carriage return the same after trimming it.
Such a text cell from untrusted input (a label, a commit, a version) gets a leading `'`, which
spreadsheets read as "text follows" and do not show. Only text cells: a number is never changed,
so -3.5 stays a number. A lone surrogate is shown as U+FFFD so the file can be written as UTF-8.
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
    return TEXT_MARK + value if value.startswith(FORMULA_STARTS) else value


def cells(values) -> list:
    """`cell` of each value (a column of text cells)."""
    return [cell(value) for value in values]
