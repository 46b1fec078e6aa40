"""The results store: adding one experiment, and the lock that adding and history share.

    STORE/experiments/<label>/   one run: metadata, summaries, check reports, JUnit, raw measurements
                                 (gzip'd), throughput tables, A/B verdict, topology/<name>/ tables
                                 (written once; is_kept)
    STORE/history_plots/         drawn by `perfgate history`
    STORE/.perfgate-store.lock   flock: held while an experiment is added and while history redraws

Two gates may finish at once on one store (two runners on one machine, a re-run beside a run), and
the nightly history may redraw while a gate adds. An experiment is never replaced: a label is
checked before measuring (gate.plan_gate), and again when the run is added, under the lock, since
another run may have taken it in the minutes between.

An experiment `perfgate store pull` brought from a results branch has a marker in PULLED_DIR
(`<store>/.perfgate-pulled/<label>`, naming the folder's inode and change time: an experiment added
later under that label, or the pulled one changed since, is not pulled). The branch is untrusted:
anyone who can push to it could pre-push the label a gate will take (CI labels hold a date and a run
number: guessable), and a pulled experiment holding it made the gate refuse its own run (issue 23).
So a label is taken only by an experiment added here; a pulled one holding the gate's label is set
aside whole into SET_ASIDE_DIR (beside experiments/, as PULLED_DIR: history, push and pull never
read them), with a warning, and the run takes its label. The run is never replaced, nor the
branch's experiment: push then reports that label as differing (`not pushed`).
"""
from __future__ import annotations

import contextlib
import fcntl
import gzip
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .. import schema as s
from ..errors import InputError
from ..escape.workflow import log_text
from ..topology import names as tn
from .baseline import FOLDER_NAME

LOCK_FILE = ".perfgate-store.lock"
PULLED_DIR = ".perfgate-pulled"  # <store>/.perfgate-pulled/<label>: the branch, commit and folder a pull landed
SET_ASIDE_DIR = ".perfgate-set-aside"  # <store>/.perfgate-set-aside/<label>.<random>/: pulled ones a run displaced


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
    tooling), throughput tables, the A/B verdicts (latency and throughput) and each topology's tables and
    metadata (`topology/<name>/`, topology.names.STORED_FILES). Plots or anything else a re-processing may write
    into a stored experiment are not: `perfgate store push` and `pull` carry only these."""
    parts = relative.split("/")
    if len(parts) == 3 and parts[0] == tn.GATE_TOPOLOGY_DIR:  # topology/<name>/<table or metadata.json>
        return FOLDER_NAME.fullmatch(parts[1]) is not None and parts[2] in tn.STORED_FILES
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


def topology_files(experiment_dir: Path) -> dict[str, Path]:
    """What the store keeps of the gate's topology runs (<experiment>/topology/<name>/): each one's
    tables and metadata.json, by their path in the stored experiment; the history's per-run figures."""
    found = {}
    for folder in sorted((Path(experiment_dir) / tn.GATE_TOPOLOGY_DIR).glob("*")):
        for name in tn.STORED_FILES:
            path = folder / name
            relative = f"{tn.GATE_TOPOLOGY_DIR}/{folder.name}/{name}"
            if path.is_file() and not path.is_symlink() and is_kept(relative):
                found[relative] = path
    return found


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


def pulled_marker(folder: Path) -> Path:
    return folder.parent.parent / PULLED_DIR / folder.name


def mark_pulled(folder: Path, branch: str, commit: str) -> None:
    """Record that the experiment folder (landed by pull, under the store's lock) came from a branch.
    The remote is not written: its URL may hold a token."""
    marker = pulled_marker(folder)
    marker.parent.mkdir(exist_ok=True)
    descriptor = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(f"branch {branch} commit {commit} folder {identity(folder)}\n")


def identity(folder: Path) -> str:
    """The folder's inode and change time: a folder made later under that name (an inode number is
    reused at once) or changed since has another."""
    status = folder.stat()
    return f"{status.st_ino}.{status.st_ctime_ns}"


def was_pulled(folder: Path) -> bool:
    """Whether the experiment folder is the one a pull landed, unchanged since (its marker names this
    folder's identity), not one a gate added here: a doubt is an experiment of this store."""
    marker = pulled_marker(folder)
    if not marker.is_file() or marker.is_symlink() or folder.is_symlink() or not folder.is_dir():
        return False
    words = marker.read_text(errors="replace").split()
    return words[-2:] == ["folder", identity(folder)]


def label_taken(store: Path, label: str) -> str | None:
    """Before measuring: an InputError when an experiment added here has `label` (never replaced); the
    warning to give when a pulled one has it (set aside when the run is added); None when it is free."""
    target = store / s.STORE_EXPERIMENTS_DIR / label
    if not target.exists() and not target.is_symlink():
        return None
    if not was_pulled(target):
        raise InputError(f"the results store already has an experiment labelled {label!r}; choose another --label",
                         target)
    return set_aside_note(target, store / SET_ASIDE_DIR)


def set_aside_note(target: Path, aside: Path) -> str:
    return (f"the results store's experiment {target.name!r} was pulled from a results branch, not added here: "
            f"this run takes its label and the pulled one is set aside in {aside} (the branch's copy is never "
            "replaced: perfgate store push reports that label as differing)")


def set_aside(target: Path) -> Path:
    """Move the pulled experiment `target` whole into <store>/.perfgate-set-aside/<label>.<random>/, its
    marker beside it."""
    aside = target.parent.parent / SET_ASIDE_DIR
    aside.mkdir(exist_ok=True)
    place = Path(tempfile.mkdtemp(prefix=f"{target.name}.", dir=aside))
    os.rename(target, place / target.name)
    os.rename(pulled_marker(target), place / PULLED_DIR)
    return place


def add_experiment(store: Path, label: str, sources: dict[str, Path]) -> Path:
    """Copy `sources` (path inside the experiment folder -> file) into STORE/experiments/<label>/, which
    must not exist but as a pulled experiment (then set aside, said on stderr): whole or not at all. A
    name ending `.gz` whose source does not is compressed."""
    experiments = store / s.STORE_EXPERIMENTS_DIR
    target = experiments / label
    with locked(store):
        if target.exists() and not was_pulled(target):
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
            if target.exists():  # a pulled experiment: set aside only once this run is whole
                place = set_aside(target)
                print(f"perfgate store: warning: {log_text(set_aside_note(target, place))}", file=sys.stderr)
            os.rename(staging, target)
        finally:
            if staging.exists():
                shutil.rmtree(staging)
    return target
