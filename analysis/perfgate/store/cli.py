"""`perfgate store push|pull|check`: the dispatch (its options: commands/store.py).

push and pull keep a results store in a git branch (sync, pull); check lists the
store's damaged experiments, each judged whole as push and pull judge one (check). The heavy
modules are imported by the handler, so `perfgate --help` stays fast.
"""
from __future__ import annotations

import os
from pathlib import Path

from .. import schema as s
from ..errors import InputError
from ..escape.workflow import log_text

DEFAULT_BRANCH = "perfgate-results"


def command_store(action: str, store: str | None, remote: str | None = None, branch: str = DEFAULT_BRANCH) -> int:
    if action == "check":
        if remote is not None or branch != DEFAULT_BRANCH:
            raise InputError("store check reads the store only: --remote and --branch are for push and pull")
        return command_check(store)
    from . import pull as store_pull, sync as store_sync
    from . import experiments as results_store
    from ..fastdds.git import check_git_url

    if store is None:
        raise InputError(f"store {action}: give --store DIR, the results store")
    source = "--remote" if remote else f"${s.STORE_REMOTE_ENV}"
    remote = remote or os.environ.get(s.STORE_REMOTE_ENV) or None
    if remote is None:
        raise InputError(f"give --remote URL (or set {s.STORE_REMOTE_ENV}): the git repository that keeps the store")
    remote = check_git_url(remote, source)  # git would read `-o...` as an option of ls-remote
    store_sync.require_branch_name(branch)
    store_dir = Path(store)
    if action == "pull":
        store_dir.mkdir(parents=True, exist_ok=True)
    elif not store_dir.is_dir():
        raise InputError("results store not found", store_dir)
    with results_store.locked(store_dir, store_sync.SYNC_LOCK), store_sync.terminate_as_interrupt():
        print(log_text((store_sync.push if action == "push" else store_pull.pull)(store_dir, remote, branch)))
    return s.EXIT_OK


def command_check(store: str | None) -> int:
    """One line per damaged experiment (the file and the problem), then the count; exit 1 if any."""
    from . import check as store_check

    chosen = store if store is not None else os.environ.get(s.STORE_ENV) or None
    if chosen is None:
        raise InputError(f"give --store DIR (or set {s.STORE_ENV}): the results store to check")
    store_dir = Path(chosen)
    if not (store_dir / s.STORE_EXPERIMENTS_DIR).is_dir():
        raise InputError(f"not a results store (no {s.STORE_EXPERIMENTS_DIR}/ folder)", store_dir)
    count, damaged = store_check.damaged_folders(store_dir)
    for damage in damaged:
        print(f"damaged: {log_text(damage.problem)} (experiment {ascii(damage.folder.name)})")
    print(f"perfgate store check: {count} experiment(s), {len(damaged)} damaged"
          + (" (history and the gate skip them; push and pull never carry them)" if damaged else ""))
    return s.EXIT_REGRESSION if damaged else s.EXIT_OK
