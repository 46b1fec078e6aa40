"""The results store: adding one experiment, and the lock that adding and history share.

    STORE/experiments/<label>/   one run: metadata, summaries, check reports, JUnit (written once)
    STORE/history_plots/         drawn by `perfgate history`
    STORE/.perfgate-store.lock   flock: held while an experiment is added and while history redraws

Two gates may finish at once on one store (two runners on one machine, a re-run beside a run), and
the nightly history may redraw while a gate adds. An experiment is never replaced: a label is
checked before measuring (gate.plan_gate), and again when the run is added, under the lock, since
another run may have taken it in the minutes between.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from . import schema as s
from .errors import InputError

LOCK_FILE = ".perfgate-store.lock"


def is_store(folder: Path) -> bool:
    return (folder / s.STORE_EXPERIMENTS_DIR).is_dir()


@contextlib.contextmanager
def locked(store: Path) -> Iterator[None]:
    """Exclusive use of the store; waits for another holder. The kernel drops the lock when its
    holder dies, so a killed gate never blocks the store. A store this user cannot write (a
    read-only copy) is read without it: nobody can be adding to it through this user either."""
    try:
        handle = open(store / LOCK_FILE, "a")
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def add_experiment(store: Path, label: str, sources: list[Path]) -> Path:
    """Copy `sources` into STORE/experiments/<label>/, which must not exist: whole or not at all."""
    experiments = store / s.STORE_EXPERIMENTS_DIR
    target = experiments / label
    with locked(store):
        if target.exists():
            raise InputError(f"the results store already has an experiment labelled {label!r} (another run added "
                             "it while this one measured); this run was not added", target)
        experiments.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{label}.new.", dir=experiments))
        try:
            for source in sources:
                shutil.copy2(source, staging / source.name)
            os.rename(staging, target)
        finally:
            if staging.exists():
                shutil.rmtree(staging)
    return target
