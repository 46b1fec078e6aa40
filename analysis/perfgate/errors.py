"""Errors that end a command with one clear line and a contract exit code (docs/formats.md section 11)."""
from __future__ import annotations

from pathlib import Path

from .schema import EXIT_INCOMPLETE, EXIT_USAGE


class PerfgateError(Exception):
    """An error the user can act on: printed as one line `path:line: message`, never a traceback."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, path: Path | str | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        return one_line(f"{where}{self.message}")


def one_line(text: str) -> str:
    """`text` with every unprintable character escaped (`\\n`, `\\x1b`): a path or a value with a line
    break or a terminal escape in it must not split the one error line or reach the terminal raw."""
    # `##[` anywhere in a line is a workflow command to GitHub's runner (its older form): shown as #\x23[
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text).replace("##[", "#\\x23[")


class InputError(PerfgateError):
    """Bad input or usage: exit 2."""

    exit_code = EXIT_USAGE


class IncompleteError(PerfgateError):
    """The experiment could not run to the end, or expected data is missing: exit 3."""

    exit_code = EXIT_INCOMPLETE
