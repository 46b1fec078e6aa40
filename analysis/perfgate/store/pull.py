"""`perfgate store pull`: the branch's experiments the store lacks, read as git objects, never as an archive.

The branch is untrusted (store_branch). An archive extracted into the store (`git archive` and
tarfile, as pull did) writes whatever the tree says: symlinks, executables, names past PATH_MAX
through links (CVE-2025-4517's shape wrote outside the store). Here nothing the branch says becomes
a path until store_branch accepted it (a kept file's plain name under a valid label), every file is
created new (O_EXCL | O_NOFOLLOW) inside a staging folder that this pull made inside the store, its
blob streamed from `git cat-file --batch` up to its kind's size limit, and an experiment lands with
one rename under the store's lock once it reads as history would read it (store_check), and is
marked pulled (`<store>/.perfgate-pulled/<label>`: a gate may take its label, results_store). Nothing
else outside `<store>/experiments/` is opened for writing (git writes its objects into `<store>/.perfgate-git`).

An experiment of another platform id or latency definition than the store's (or than the first
pulled, into an empty store) is quarantined too: history and the gate refuse a store that mixes them.
A bad experiment is quarantined: skipped, with its reason on stderr, and the others pulled (exit 0):
one crafted folder on the branch must not stop every later pull, and the gate and history skip what
was never pulled. The same holds for a label the store has with other content: never replaced.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from ..latency import experiments as ex
from .. import schema as s
from . import experiments as results_store
from . import branch as store_branch, check as store_check
from ..errors import InputError
from .sync import Git, conflict_reason, copy_blob, local_tree, plan_transfer, warn

MAX_IGNORED_SHOWN = 5


def stage(reader, folder: Path, found: dict[str, tuple[str, int]]) -> str | None:
    """Write one experiment's files into `folder` (new); the first problem, naming the branch's path."""
    folder.mkdir()
    for relative, (blob, _) in sorted(found.items()):
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)  # ab/, throughput/ab/: names store_branch accepted
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(descriptor, "wb") as handle:
            problem = copy_blob(reader, blob, handle, store_branch.size_limit(relative))
        if problem is not None:
            return f"{ascii(f'{s.STORE_EXPERIMENTS_DIR}/{folder.name}/{relative}')} {problem}"
    damage = store_check.experiment_damage(folder)
    return None if damage is None else damage.problem.replace(str(folder.parent), s.STORE_EXPERIMENTS_DIR)


def kind(experiment: ex.Experiment) -> tuple:
    return experiment.platform_id, experiment.latency_definition, experiment.latency_definition_recorded


def representatives(folders: list[Path]) -> dict[tuple, ex.Experiment]:
    """One experiment per platform id and latency definition among the folders that read: what a new
    one must be comparable with (experiments.require_comparable, which history and the gate apply to
    the whole store: one experiment of another platform would stop both for good)."""
    found: dict[tuple, ex.Experiment] = {}
    for folder in folders:
        try:
            experiment = ex.describe_experiment(folder)
        except InputError:  # damaged: history and the gate skip it
            continue
        found.setdefault(kind(experiment), experiment)
    return found


def incomparable(folder: Path, accepted: dict[tuple, ex.Experiment]) -> str | None:
    """Why the staged experiment cannot join the store's (another platform id or latency definition),
    or None, after which it is one of `accepted`."""
    staged = ex.describe_experiment(folder)
    try:
        ex.require_comparable([*accepted.values(), staged])
    except InputError as error:
        return str(error).replace(str(folder.parent), s.STORE_EXPERIMENTS_DIR)
    accepted.setdefault(kind(staged), staged)
    return None


def label_elsewhere(folder: Path) -> str | None:
    """Why a staged experiment whose metadata names another run than its folder cannot land: the
    branch's folder name is what pull checks against the store's labels (never replaced), while
    history, the page and the gate show metadata's label; `evil/` holding `"label": "good-1"` would
    be a second good-1 beside the real one. (A gate writes both from one --label.)"""
    label = ex.describe_experiment(folder).label
    if label == folder.name:
        return None
    return (f"{s.STORE_EXPERIMENTS_DIR}/{folder.name}/{s.METADATA_FILE}: its label {ascii(label)} is not its "
            f"folder's name {ascii(folder.name)}")


def report_ignored(ignored: list[str], remote: str, branch: str) -> None:
    if ignored:
        shown = "; ".join(ignored[:MAX_IGNORED_SHOWN]) + ("; ..." if len(ignored) > MAX_IGNORED_SHOWN else "")
        print(f"perfgate store: warning: {len(ignored)} entr(ies) of {remote} branch {branch} outside any "
              f"experiment ignored: {shown}", file=sys.stderr)


def pull(store_dir: Path, remote: str, branch: str) -> str:
    git = Git(store_dir, remote)
    if git.remote_tip(branch) is None:
        return f"{remote} has no branch {branch} yet: nothing to pull"
    experiments = store_dir / s.STORE_EXPERIMENTS_DIR
    experiments.mkdir(parents=True, exist_ok=True)
    git.init()
    commit = git.fetch(branch)
    theirs = git.branch(commit)
    report_ignored(theirs.ignored, remote, branch)
    skipped = dict(theirs.bad)
    mine, _ = local_tree(git, experiments, labels=list(theirs.good))
    missing, conflicts = plan_transfer(theirs.blobs(), mine)
    skipped.update({label: conflict_reason(paths, remote, branch) for label, paths in conflicts.items()})
    landed = []
    accepted = representatives([folder for folder in sorted(experiments.iterdir())
                                if folder.is_dir() and not folder.name.startswith(".")])
    staging = Path(tempfile.mkdtemp(prefix=".pull.", dir=experiments))
    try:
        with git.blobs() as reader:
            for label in missing:
                try:
                    problem = stage(reader, staging / label, theirs.good[label])
                except OSError as error:  # a full disk: the pull stops, nothing of it lands
                    raise InputError(f"cannot write the pulled experiment {label!r}: {error.strerror or error}",
                                     staging / label) from None
                problem = problem or label_elsewhere(staging / label) or incomparable(staging / label, accepted)
                if problem is not None:
                    skipped[label] = problem
                    shutil.rmtree(staging / label)
        with results_store.locked(store_dir):  # a history reading the store sees whole experiments only
            for label in (label for label in missing if label not in skipped):
                if (experiments / label).exists():  # added here (a gate) while this pulled: never replaced
                    skipped[label] = "added to the store meanwhile: never replaced"
                    continue
                os.rename(staging / label, experiments / label)
                results_store.mark_pulled(experiments / label, branch, commit)  # a gate may take its label
                landed.append(label)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    warn(dict(sorted(skipped.items())), "not pulled")
    quarantined = f"; {len(skipped)} not pulled (above)" if skipped else ""
    if not landed:
        return (f"the store already has the {len(theirs.good) - len(conflicts)} experiment(s) of {remote} branch "
                f"{branch}: nothing to pull{quarantined}")
    return f"pulled {len(landed)} experiment(s) from {remote} branch {branch} into {experiments}{quarantined}"
