"""Where a command's outputs go, tried before anything is written: an option given as "", a folder
where a file goes, a place no file can be made, an output that is one of the command's inputs; and
write errors as bad usage. Each is exit 2 with one line naming the path (docs/formats.md section 13).
"""
from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import InputError


def require_paths(**options) -> None:
    """A path option given as "" (a CI variable that was not set) would name the working folder and
    write there: refused, by its option name (`plots_directory` -> --plots-directory)."""
    for name, value in options.items():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if item is not None and not str(item).strip():
                raise InputError(f"--{name.replace('_', '-')} is empty; give a path")


def require_writable(path: Path, what: str, *, folder: bool = False) -> Path:
    """Before anything is written: `path` can become the output file (or folder) `what`, else
    InputError naming it. A file in the way, a folder where a file goes, a parent that is a file, a
    file system that refuses files (read-only, /proc) are found here rather than after the first
    output is written. Creates nothing: a probe file is made and removed by the system at once."""
    path = Path(path)
    if path.exists() and path.is_dir() != folder:
        raise InputError(f"the {what} is {'a file' if folder else 'a folder'}", path)
    existing = path if folder else path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"the {what} cannot be made: {existing} is not a folder", path)
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        raise InputError(f"the {what} cannot be written in {existing}: {error.strerror or error}", path) from None
    return path


def require_not_input(output: Path, inputs, what: str) -> None:
    """An output named like one of the command's own inputs (the JUnit file over the requirements,
    the summary over its raw data) would destroy that input: InputError naming both."""
    output = Path(output)
    target = output.resolve()
    for given in inputs:
        if given is not None and Path(given).resolve() == target:
            raise InputError(f"the {what} would overwrite {given}, an input of this command", output)


@contextmanager
def write_errors_as_input_errors() -> Iterator[None]:
    """A file or folder that cannot be read or written (permissions, a full disk, a file in the way)
    is bad usage (exit 2, one line naming it), not a crash."""
    try:
        yield
    except OSError as error:
        raise InputError(str(error.strerror or error), error.filename) from None
