"""The scratch folder of a measurement: the harness's CSV and report, and DDS Security key material.

The keys are private keys of a throw-away CA and its participants, made for one run. They must
not outlive it, and perfgate may be killed by SIGKILL, which runs no clean-up. So the scratch
folder lives in RAM (/dev/shm, a tmpfs, where the system has one): nothing in it ever reaches a
persistent file system, and a reboot clears it. A watcher process started with it (perfgate.measure.watcher)
removes it, and kills the run's harness processes, within moments of perfgate's death however it
died. Its name carries the owner's process id, and every new scratch folder first removes those
whose owner is gone: what a watcher could not remove (it was killed too) lasts until the next run.

`abandoned` is pure; `scratch_folder` is the thin part.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from . import watcher
from .environment import RUN_ID_ENV

RAM_ROOT = Path("/dev/shm")
PREFIX = "perfgate-scratch-"
_NAME = re.compile(rf"^{re.escape(PREFIX)}(\d+)-")


def owner_pid(name: str) -> int | None:
    match = _NAME.match(name)
    return int(match.group(1)) if match else None


def abandoned(names: Iterable[str], alive: set[int]) -> list[str]:
    """The scratch folders among `names` whose owning process is not in `alive`."""
    return sorted(n for n in names if (pid := owner_pid(n)) is not None and pid not in alive)


def _live_pids() -> set[int]:
    return {int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()}


def root() -> Path | None:
    """RAM when there is a writable /dev/shm, else None (the system's temporary folder)."""
    return RAM_ROOT if RAM_ROOT.is_dir() and os.access(RAM_ROOT, os.W_OK | os.X_OK) else None


def remove_abandoned(folder: Path) -> list[str]:
    try:
        names = [p.name for p in folder.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return []
    removed = abandoned(names, _live_pids())
    for name in removed:
        shutil.rmtree(folder / name, ignore_errors=True)
    return removed


@contextlib.contextmanager
def scratch_folder(purpose: str, run_id: str | None = None, in_ram: bool = True) -> Iterator[Path]:
    """A private (0700) folder for one command, removed when it ends, in RAM where possible (`in_ram`
    False: the system's temporary folder, for files that grow with a run and hold no secret); watched,
    so that it is removed, and the processes of the run `run_id` killed, if perfgate dies outright."""
    base = root() if in_ram else None
    remove_abandoned(base if base is not None else Path(tempfile.gettempdir()))
    # the watcher removes the folder as the block ends; the cleanup after it finds nothing, or what a
    # watcher that could not start left
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-{purpose}-", dir=base,
                                     ignore_cleanup_errors=True) as folder, \
            watcher.watching(Path(folder), f"{RUN_ID_ENV}={run_id}" if run_id else None):
        yield Path(folder)
