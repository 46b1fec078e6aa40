"""Where a command's outputs go, tried before anything is written: an option given as "", a folder
where a file goes, a place no file can be made, an output that is one of the command's inputs; and
write errors as bad usage. Each is exit 2 with one line naming the path (docs/formats.md section 13).
And the one way an input file is opened (`open_input`, perfgate.files' readers): no named pipe or device.
"""
from __future__ import annotations

import fcntl
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .errors import InputError


def require_paths(**options) -> None:
    """A path option given as "" (a CI variable that was not set) would name the working folder and
    write there: refused, by its option name (`plots_directory` -> --plots-directory)."""
    for name, value in options.items():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if item is not None and not str(item).strip():
                raise InputError(f"--{name.replace('_', '-')} is empty; give a path")


NAME_MAX = 255  # bytes in one file or folder name (Linux's file systems)
PATH_MAX = 4095  # bytes in a path the system accepts (4096 with its terminating NUL)


def length_problem(path: str) -> str | None:
    """Why the system would refuse `path` for its length (ENAMETOOLONG, a traceback wherever it is first
    used), or None. Pure: the bytes of the path as the system receives them."""
    encoded = os.fsencode(path)
    if len(encoded) > PATH_MAX:
        return f"the path is {len(encoded)} bytes; a path has at most {PATH_MAX}"
    longest = max(encoded.split(b"/"), key=len)
    if len(longest) > NAME_MAX:
        shown = os.fsdecode(longest[:24]) + "..."
        return f"the name {shown!r} is {len(longest)} bytes; a file or folder name has at most {NAME_MAX}"
    return None


def require_writable(path: Path, what: str, *, folder: bool = False) -> Path:
    """Before anything is written: `path` can become the output file (or folder) `what`, else
    InputError naming it. A file in the way, a folder where a file goes, a parent that is a file, a
    file system that refuses files (read-only, /proc), a name too long are found here rather than after
    the first output is written. Creates nothing: a probe file is made and removed by the system at once."""
    path = Path(path)
    too_long = length_problem(str(path))
    if too_long is not None:
        raise InputError(f"the {what} cannot be made: {too_long}", path)
    if path.exists() and path.is_dir() != folder:
        raise InputError(f"the {what} is {'a file' if folder else 'a folder'}", path)
    if path.exists() and not folder and not path.is_file():
        raise InputError(f"the {what} is {special_kind(path)}, not a file", path)
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


def require_appendable(path: str, option: str) -> Path:
    """A file that is appended to (GitHub's $GITHUB_STEP_SUMMARY, shared by a job's steps), given by
    `option` (`summary_markdown`): an existing file or device (/dev/stdout) is used as it is; "", a
    folder, or a new file where none can be made, is InputError before anything is measured."""
    require_paths(**{option: path})
    what = f"--{option.replace('_', '-')} file"
    if Path(path).is_dir():
        raise InputError(f"the {what} is a folder", path)
    if not Path(path).exists():
        require_writable(Path(path), what)
    return Path(path)


def special_kind(path: Path) -> str:
    """What a path that exists but is neither a regular file nor a folder is: a device (/dev/full,
    /dev/null), a named pipe or a socket. Outputs are written beside and renamed over: as root, the
    rename would replace the device itself with a regular file."""
    path = Path(path)
    if path.is_char_device() or path.is_block_device():
        return "a device"
    if path.is_fifo():
        return "a named pipe"
    return "a socket" if path.is_socket() else "not a regular file"


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


@contextmanager
def open_input(path: Path, what: str, max_bytes: int | None = None) -> Iterator[BinaryIO]:
    """`path` opened for reading its bytes; InputError naming it when it is no regular file (a folder, a
    named pipe, a device) or, with `max_bytes`, larger than that. Opened without waiting and judged on the
    open descriptor: a named pipe would hold the open until some writer came (for ever), a device such as
    /dev/zero never ends, and a check of the path before the open could be raced. A missing file is
    FileNotFoundError, as from open(), for the caller to say what its absence means."""
    path = Path(path)
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        status = os.fstat(descriptor)
        if stat.S_ISDIR(status.st_mode):
            raise InputError(f"{what} is not a file", path)
        if not stat.S_ISREG(status.st_mode):
            raise InputError(f"{what} is {special_kind(path)}, not a regular file", path)
        if max_bytes is not None and status.st_size > max_bytes:
            raise InputError(f"{what} is over {max_bytes} bytes, more than any such file holds", path)
        fcntl.fcntl(descriptor, fcntl.F_SETFL, fcntl.fcntl(descriptor, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        handle = os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise
    with handle:
        yield handle
