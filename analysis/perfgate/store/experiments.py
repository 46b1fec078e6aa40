"""The results store: adding one experiment, and the lock that adding and history share.

    STORE/experiments/<label>/   one run: metadata, summaries, check reports, JUnit, raw measurements
                                 (gzip'd), throughput tables, A/B verdict (written once; is_kept)
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
import gzip
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .. import schema as s
from ..errors import InputError

LOCK_FILE = ".perfgate-store.lock"


def is_store(folder: Path) -> bool:
    return (folder / s.STORE_EXPERIMENTS_DIR).is_dir()


@contextlib.contextmanager
def locked(store: Path, name: str = LOCK_FILE) -> Iterator[None]:
    """Exclusive use of the store (or, with another lock file's name, of one of its parts); waits for
    another holder. The kernel drops the lock when its holder dies, so a killed gate never blocks the
    store. A store this user cannot write (a read-only copy) is read without it: nobody can be adding
    to it through this user either."""
    try:
        handle = open(store / name, "a")
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def is_kept(relative: str) -> bool:
    """Whether a file (its path inside an experiment folder, `/`-separated) is one the store keeps:
    metadata, summaries, check reports, JUnit, raw measurements (`.csv.gz`, or `.csv` of older
    tooling), throughput tables and the A/B verdicts (latency and throughput). Plots or anything else a re-processing may write
    into a stored experiment are not: `perfgate store push` and `pull` carry only these."""
    parts = relative.split("/")
    if len(parts) > 1:  # ab/verdict.* and throughput/ab/verdict.*
        return "/".join(parts[:-1]) in (s.AB_DIR, f"{s.THROUGHPUT_DIR}/{s.AB_DIR}") and \
            parts[-1] in (s.VERDICT_CSV, s.VERDICT_JSON)
    if len(parts) != 1:
        return False
    name = parts[0]
    path = Path(name)
    return (name in (s.METADATA_FILE, s.JUNIT_FILE) or s.sub_from_summary_csv(path) is not None
            or s.sub_from_raw_csv(path) is not None or s.sub_from_check_csv(path) is not None
            or (name.startswith(s.THROUGHPUT_PREFIX) and name.endswith(".csv")))


def kept_files(folder: Path) -> dict[str, Path]:
    """The kept files of one stored experiment folder, by their `/`-separated path inside it."""
    found = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_file() and not path.is_symlink() and is_kept(relative):
            found[relative] = path
    return found


def compressed(data: bytes) -> bytes:
    """gzip with no time and no name in its header: the same measurements are the same bytes, so two
    copies of one experiment (two runners, a push and a pull) compare equal (store_sync)."""
    return gzip.compress(data, compresslevel=6, mtime=0)


def add_experiment(store: Path, label: str, sources: dict[str, Path]) -> Path:
    """Copy `sources` (path inside the experiment folder -> file) into STORE/experiments/<label>/, which
    must not exist: whole or not at all. A name ending `.gz` whose source does not is compressed."""
    experiments = store / s.STORE_EXPERIMENTS_DIR
    target = experiments / label
    with locked(store):
        if target.exists():
            raise InputError(f"the results store already has an experiment labelled {label!r} (another run added "
                             "it while this one measured); this run was not added", target)
        experiments.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{label}.new.", dir=experiments))
        try:
            for name, source in sources.items():
                destination = staging / name
                destination.parent.mkdir(parents=True, exist_ok=True)
                if name.endswith(s.COMPRESSED_SUFFIX) and not source.name.endswith(s.COMPRESSED_SUFFIX):
                    destination.write_bytes(compressed(source.read_bytes()))
                    shutil.copystat(source, destination)
                else:
                    shutil.copy2(source, destination)
            os.chmod(staging, 0o777 & ~_umask())  # mkdtemp's 0700 would hide the run from the store's readers
            os.rename(staging, target)
        finally:
            if staging.exists():
                shutil.rmtree(staging)
    return target
