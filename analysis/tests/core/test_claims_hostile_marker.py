"""Issue 23's adversarial pass over output-folder claiming: a FIFO (or a device) named like the claim
marker in an output folder is refused in one line (exit 2 for the command) and left where it is; it was
opened, locked, then ftruncate'd: OSError EINVAL, a traceback, and the FIFO removed on the way out."""
from __future__ import annotations

import os
import stat

import pytest

from perfgate import claims
from perfgate.errors import InputError


def test_a_fifo_named_like_the_marker_is_refused_and_left(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    os.mkfifo(folder / claims.MARKER_FILE)
    with pytest.raises(InputError, match="is not a regular file") as raised:
        with claims.claimed(folder):
            pass
    assert str(folder) in str(raised.value) and "\n" not in str(raised.value)
    assert stat.S_ISFIFO(os.lstat(folder / claims.MARKER_FILE).st_mode)
