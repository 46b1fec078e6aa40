"""store push / pull: a results store kept in a branch of a git repository, so it outlives its runner.

    <remote> branch perfgate-results:   experiments/<label>/<file>   (store.is_kept files only)

The store on a runner's disk is lost with the machine, and several reference machines cannot share
one history page; the branch (the convention of GitHub's benchmark actions) is the copy that stays.
`perfgate store push` after a run adds the store's experiments that the branch lacks; `perfgate store
pull` before history adds the branch's experiments that the store lacks. Neither ever replaces or
removes an experiment: they only add, as the store itself does (store.add_experiment).

Two runners may push at once. A push builds one commit on top of the branch as fetched; when the
branch moved meanwhile, the remote refuses it, and the push fetches again and rebuilds on the new tip
(a merge that only adds folders), at most PUSH_ATTEMPTS times. An experiment is a folder named by its
label, so it is in a commit once or not at all; the same label with different content on the two
sides is skipped with a warning, never an overwrite, and never a reason to stop the others (one
rewritten experiment on the branch stopped every later push and pull: issue 23). Push never uploads
an experiment store_check calls damaged; pull (store/pull.py) judges the untrusted branch entry by
entry (store/branch.py).

Git is driven through its command line, without a work tree: a bare repository `<store>/.perfgate-git`
keeps the fetched objects between runs, blobs are compared by id (`git hash-object`), commits are
built with `git mktree` (the base's entries kept verbatim, new experiment folders added) and `commit-tree`,
and pushed by id.
The pure parts (what to add, what conflicts) are `plan_*`; the git calls are in `Git`.
"""
from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from .. import schema as s
from . import experiments as results_store
from . import branch as store_branch, check as store_check
from ..errors import IncompleteError, InputError
from ..escape.workflow import log_text

CACHE_DIR = ".perfgate-git"  # in the store's root, beside experiments/: never pushed, never an experiment
SYNC_LOCK = ".perfgate-sync.lock"  # one push or pull of a store at a time (the cache's refs and index)
PUSH_ATTEMPTS = 10
MAX_WARNINGS = 100
FETCHED_REF = "refs/perfgate/fetched"
FILE_MODE = "100644"
# label -> {path inside the experiment: blob id}
Tree = dict[str, dict[str, str]]


# --- pure parts -----------------------------------------------------------------------------------
def differences(mine: dict[str, str], theirs: dict[str, str]) -> list[str]:
    """The paths whose content differs, or that only one side has."""
    return sorted(path for path in set(mine) | set(theirs) if mine.get(path) != theirs.get(path))


def plan_transfer(source: Tree, target: Tree) -> tuple[list[str], dict[str, list[str]]]:
    """(labels of `source` that `target` lacks, label -> differing paths of those both have but unequal)."""
    missing = sorted(label for label in source if label not in target)
    conflicts = {label: differences(source[label], target[label]) for label in sorted(source) if label in target}
    return missing, {label: paths for label, paths in conflicts.items() if paths}


def conflict_reason(paths: list[str], remote: str, branch: str) -> str:
    shown = ", ".join(ascii(path) for path in paths[:3]) + (", ..." if len(paths) > 3 else "")
    return (f"differs between the store and {remote} branch {branch} ({shown}): an experiment is never "
            "replaced; give one of them another label")


def warn(skipped: dict[str, str], what: str) -> None:
    """One stderr line per experiment left out, at most MAX_WARNINGS (a crafted branch may hold
    thousands); labels and paths are printed with ascii()."""
    for label, reason in list(skipped.items())[:MAX_WARNINGS]:
        print(f"perfgate store: warning: experiment {ascii(label)} {what}: {log_text(reason)}", file=sys.stderr)
    if len(skipped) > MAX_WARNINGS:
        print(f"perfgate store: warning: and {len(skipped) - MAX_WARNINGS} more experiment(s) {what}",
              file=sys.stderr)


def one_line(text: str) -> str:
    """git's whole message on one line (the contract's error is one line)."""
    return " / ".join(line.strip() for line in text.splitlines() if line.strip()) or "no message"


# git's fsck checks of tree entries (fsck.c's message ids): their names (`.git`, `..`, `a/b`, ''),
# modes and order. On a runner that asks git to check what it fetches (transfer.fsckObjects), one
# such entry anywhere on the branch made every fetch fail, so pull and push stopped for good (issue
# 23). Off for the store's fetch only, and no weakening there: `.perfgate-git` is never checked out
# nor served, and store_branch judges every entry itself (a regular file under a valid label with a
# kept name) before anything of it is written, quarantining the experiment that holds a bad one.
# Every other check the runner asks for (a malformed commit or tree object) still stops the fetch.
TREE_ENTRY_CHECKS = ("hasDot", "hasDotdot", "hasDotgit", "emptyName", "fullPathname", "badFilemode",
                     "zeroPaddedFilemode", "duplicateEntries", "treeNotSorted")
# What git's pack-objects says on the remote when the branch's tree names an object it cannot use
UNSENDABLE = re.compile(r"(?:bad tree object|unable to read|Object) ([0-9a-f]{40,64})\b")


def unfetchable_message(error: str, remote: str, branch: str, last_fetched: str | None) -> str:
    """The one line for a fetch that failed. A tree entry naming an object the remote cannot send (a
    blob under a folder's mode 040000, an object it lacks) fails on the remote's side, where no option
    of this fetch reaches: every fetch of the branch fails until the branch is repaired there, so the
    line names the object and how to find and drop its entry."""
    found = UNSENDABLE.search(error)
    if found is None:
        return f"git fetch failed: {one_line(error)}"
    object_id = found.group(1)
    before = f" (this store last fetched {last_fetched})" if last_fetched else ""
    return (f"git fetch of {remote} branch {branch} failed: the remote cannot send the branch, whose tree names "
            f"object {object_id} as what it is not (e.g. a blob under a folder's mode 040000) or lacks it; nothing "
            f"was fetched. Repair the branch in the repository {remote} itself: `git ls-tree -r -t {branch} | grep "
            f"{object_id}` names the entry; commit the branch's tree without that experiment, or reset the branch to "
            f"a commit before it{before}, then pull or push again (push adds back what a reset dropped). "
            f"git said: {one_line(error)}")


# --- git ------------------------------------------------------------------------------------------
class Git:
    """git commands on the store's cache repository; a failure is an InputError with git's message."""

    def __init__(self, store_dir: Path, remote: str):
        self.git_dir = store_dir / CACHE_DIR
        self.remote = remote
        self.environment = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}  # never wait for a password
        for name, value in (("GIT_AUTHOR_NAME", "perfgate"), ("GIT_AUTHOR_EMAIL", "perfgate@localhost")):
            self.environment.setdefault(name, value)  # a runner may have no git identity
        self.environment.setdefault("GIT_COMMITTER_NAME", self.environment["GIT_AUTHOR_NAME"])
        self.environment.setdefault("GIT_COMMITTER_EMAIL", self.environment["GIT_AUTHOR_EMAIL"])

    def run(self, *arguments: str, stdin: str | bytes | None = None, check: bool = True, env: dict | None = None,
            text: bool = True) -> subprocess.CompletedProcess:
        try:
            done = subprocess.run(["git", f"--git-dir={self.git_dir}", *arguments], input=stdin, capture_output=True,
                                  text=text, env={**self.environment, **(env or {})})
        except FileNotFoundError:
            raise InputError("git is not installed (perfgate store needs the git command line)") from None
        if check and done.returncode != 0:
            message = done.stderr if text else done.stderr.decode(errors="replace")
            raise InputError(f"git {arguments[0]} failed: {one_line(message)}")
        return done

    def init(self) -> None:
        if not (self.git_dir / "HEAD").is_file():
            self.run("init", "--quiet", "--bare")

    def remote_tip(self, branch: str) -> str | None:
        """The branch's commit on the remote, None when the remote has no such branch."""
        done = self.run("ls-remote", "--exit-code", "--heads", self.remote, f"refs/heads/{branch}", check=False)
        if done.returncode == 2:  # the repository answered, without that branch
            return None
        if done.returncode != 0:
            raise InputError(f"git ls-remote {self.remote} failed: {one_line(done.stderr)}")
        return done.stdout.split()[0]

    def fetch(self, branch: str) -> str:
        """The branch's tip, fetched into FETCHED_REF. git's checks of the tree entries that
        store_branch judges itself are off for this fetch only (TREE_ENTRY_CHECKS); a branch the
        remote cannot send is an InputError naming the object to repair (unfetchable_message)."""
        relaxed = [option for check in TREE_ENTRY_CHECKS for option in ("-c", f"fetch.fsck.{check}=ignore")]
        done = subprocess.run(["git", f"--git-dir={self.git_dir}", *relaxed, "fetch", "--quiet", "--no-tags",
                               self.remote, f"+refs/heads/{branch}:{FETCHED_REF}"],
                              capture_output=True, text=True, env=self.environment)
        if done.returncode != 0:
            raise InputError(unfetchable_message(done.stderr, self.remote, branch, self.last_fetched()))
        return self.run("rev-parse", FETCHED_REF).stdout.strip()

    def last_fetched(self) -> str | None:
        """The branch's commit this store fetched last (a pull or push before), if any."""
        done = self.run("rev-parse", "--verify", "--quiet", f"{FETCHED_REF}^{{commit}}", check=False)
        return done.stdout.strip() or None if done.returncode == 0 else None

    def popen(self, *arguments: str) -> subprocess.Popen:
        try:
            return subprocess.Popen(["git", f"--git-dir={self.git_dir}", *arguments], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.environment)
        except FileNotFoundError:
            raise InputError("git is not installed (perfgate store needs the git command line)") from None

    def branch(self, commit: str | None) -> store_branch.Branch:
        """The commit's whole tree judged entry by entry (store_branch), read as git lists it."""
        if commit is None:
            return store_branch.Branch()
        entries = []
        with self.popen("ls-tree", "-r", "-z", "-l", "--full-tree", commit) as lister:
            lister.stdin.close()
            pending = b""
            while piece := lister.stdout.read(1 << 16):
                *records, pending = (pending + piece).split(b"\0")
                entries += [entry for entry in map(store_branch.parse_entry, records) if entry is not None]
            error = lister.stderr.read().decode(errors="replace")
        if lister.returncode != 0:
            raise InputError(f"git ls-tree failed: {one_line(error)}")
        return store_branch.judge(entries)

    def hash_files(self, paths: list[Path], write: bool) -> list[str]:
        if not paths:
            return []
        listed = "".join(f"{path}\n" for path in paths)
        ids = self.run("hash-object", *(["-w"] if write else []), "--stdin-paths", stdin=listed).stdout.split()
        assert len(ids) == len(paths)
        return ids

    def mktree(self, records: list[bytes]) -> str:
        """A tree of `ls-tree -z` records, taken verbatim (mktree sorts them)."""
        return self.run("mktree", "-z", stdin=b"".join(record + b"\0" for record in records), text=False) \
            .stdout.decode().strip()

    def records(self, tree: str) -> list[bytes]:
        """The entries of one tree (not recursive), as `ls-tree -z` writes them."""
        return [record for record in self.run("ls-tree", "-z", tree, text=False).stdout.split(b"\0") if record]

    def write_tree(self, files: dict[str, str]) -> str:
        """A tree of `files` (path inside it, `/`-separated -> blob id), its folders made as trees."""
        folders: dict[str, dict[str, str]] = {}
        records = []
        for path, blob in files.items():
            first, slash, rest = path.partition("/")
            if slash:
                folders.setdefault(first, {})[rest] = blob
            else:
                records.append(f"{FILE_MODE} blob {blob}\t{first}".encode())
        records += [f"040000 tree {self.write_tree(inner)}\t{name}".encode() for name, inner in folders.items()]
        return self.mktree(records)

    def commit(self, base: str | None, additions: Tree, message: str) -> str:
        """A commit of `base`'s tree plus the experiments `additions`, its parent `base`. Built with
        mktree, every entry of the base kept verbatim: an index (read-tree) refuses a tree an attacker
        wrote (a `..` entry), which stopped every later push for good."""
        experiments, others = [], []
        for record in self.records(base) if base else []:
            meta, _, name = record.partition(b"\t")
            if name == s.STORE_EXPERIMENTS_DIR.encode() and meta.split()[1:2] == [b"tree"]:
                experiments += self.records(meta.split()[2].decode())
            else:
                others.append(record)
        experiments += [f"040000 tree {self.write_tree(found)}\t{label}".encode() for label, found in additions.items()]
        root = self.mktree(others + [f"040000 tree {self.mktree(experiments)}\t{s.STORE_EXPERIMENTS_DIR}".encode()])
        parents = ["-p", base] if base else []
        return self.run("commit-tree", root, *parents, "-m", message).stdout.strip()

    def push(self, commit: str, branch: str) -> subprocess.CompletedProcess:
        return self.run("push", "--quiet", "--porcelain", self.remote, f"{commit}:refs/heads/{branch}", check=False)

    @contextlib.contextmanager
    def blobs(self) -> Iterator[subprocess.Popen]:
        """`git cat-file --batch`, for copy_blob; stopped on the way out."""
        reader = self.popen("cat-file", "--batch")
        try:
            yield reader
        finally:
            reader.kill()
            reader.wait()
            for stream in (reader.stdin, reader.stdout, reader.stderr):
                stream.close()


def copy_blob(reader: subprocess.Popen, object_id: str, handle, limit: int) -> str | None:
    """Stream one blob into the open file `handle`, in 1 MiB pieces; the problem, or None. Never more
    than `limit` bytes are written (ls-tree's sizes are checked first; this holds even if not)."""
    reader.stdin.write(f"{object_id}\n".encode())
    reader.stdin.flush()
    header = reader.stdout.readline(200).split()
    if len(header) != 3 or not header[2].isdigit():  # `<id> missing`: no content follows
        return f"is no object git can read ({b' '.join(header[1:]).decode('ascii', 'replace')})"
    kind, size = header[1].decode("ascii", "replace"), int(header[2])
    problem = (f"is a {kind} object, not a blob" if kind != "blob"
               else f"is {size} bytes, more than the {limit} its kind may hold" if size > limit else None)
    left = size
    while left:  # a refused object is read through too: the next answer starts after it
        piece = reader.stdout.read(min(left, 1 << 20))
        if not piece:
            return "was cut short by git"
        if problem is None:
            handle.write(piece)
        left -= len(piece)
    reader.stdout.read(1)  # the newline after each object
    return problem


def local_tree(git: Git, experiments: Path, labels: list[str] | None = None,
               write: bool = False) -> tuple[Tree, dict[str, str]]:
    """(label -> {path: blob id} of the store's experiments, only `labels` when given; the folders
    whose name no experiment may have, with the reason: never hashed, since a line break in a name
    would split git's list of paths)."""
    folders = [folder for folder in sorted(experiments.iterdir()) if folder.is_dir() and not folder.name.startswith(".")] \
        if experiments.is_dir() else []
    if labels is not None:
        folders = [folder for folder in folders if folder.name in set(labels)]
    unnamed = {folder.name: problem for folder in folders
               for problem in [store_branch.store_label_problem(folder.name)] if problem is not None}
    kept = {folder.name: {relative: path for relative, path in results_store.kept_files(folder).items()
                          if all(store_branch.PATH_PART.fullmatch(part) for part in relative.split("/"))}
            for folder in folders if folder.name not in unnamed}
    order = [(label, relative) for label, found in kept.items() for relative in found]
    ids = git.hash_files([kept[label][relative] for label, relative in order], write)
    tree: Tree = {label: {} for label in kept if kept[label]}
    for (label, relative), blob in zip(order, ids):
        tree[label][relative] = blob
    return tree, {label: f"{experiments / label}: the folder {problem}" for label, problem in unnamed.items()}


# --- push and pull --------------------------------------------------------------------------------
def push(store_dir: Path, remote: str, branch: str) -> str:
    experiments = store_dir / s.STORE_EXPERIMENTS_DIR
    if not experiments.is_dir():
        raise InputError(f"not a results store (no {s.STORE_EXPERIMENTS_DIR}/ folder)", store_dir)
    git = Git(store_dir, remote)
    git.init()
    mine, skipped = local_tree(git, experiments, write=True)
    judged: set[str] = set()
    for attempt in range(1, PUSH_ATTEMPTS + 1):
        base = git.fetch(branch) if git.remote_tip(branch) else None
        theirs = git.branch(base)
        for label in set(mine) & set(theirs.bad):  # never replaced, even when damaged there
            skipped[label] = f"{remote} branch {branch} holds a damaged experiment of that label: {theirs.bad[label]}"
        missing, conflicts = plan_transfer({k: v for k, v in mine.items() if k not in skipped}, theirs.blobs())
        skipped.update({label: conflict_reason(paths, remote, branch) for label, paths in conflicts.items()})
        for label in (label for label in missing if label not in judged):
            judged.add(label)
            damage = store_check.experiment_damage(experiments / label)  # never uploaded: pull would refuse it
            if damage is not None:
                skipped[label] = damage.problem
        missing = [label for label in missing if label not in skipped]
        if not missing:
            warn(skipped, "not pushed")
            return (f"{remote} branch {branch} already has the store's {len(mine) - len(skipped)} experiment(s): "
                    "nothing to push" + (f" ({len(skipped)} not pushed, above)" if skipped else ""))
        message = (f"perfgate store push: {len(missing)} experiment(s) from {socket.gethostname()}\n\n"
                   + "".join(f"{label}\n" for label in missing))
        commit = git.commit(base, {label: mine[label] for label in missing}, message)
        pushed = git.push(commit, branch)
        if pushed.returncode == 0:
            warn(skipped, "not pushed")
            return (f"pushed {len(missing)} experiment(s) to {remote} branch {branch} ({commit[:12]})"
                    + (f" after {attempt - 1} rejected attempt(s)" if attempt > 1 else "")
                    + (f"; {len(skipped)} not pushed (above)" if skipped else ""))
        if git.remote_tip(branch) == base:  # the branch did not move: refused for another reason
            raise InputError(f"git push to {remote} failed: {one_line(pushed.stderr + pushed.stdout)}")
        print(f"perfgate store: push rejected, {log_text(remote)} branch {log_text(branch)} moved meanwhile (another runner): "
              f"fetching and trying again ({attempt} of {PUSH_ATTEMPTS})", file=sys.stderr)
        time.sleep(random.uniform(0.05, 0.3) * attempt)  # two runners retrying in step would collide again
    raise IncompleteError(f"{remote} branch {branch} kept moving: {PUSH_ATTEMPTS} pushes were rejected; "
                          "nothing was lost, run `perfgate store push` again")


def require_branch_name(branch: str) -> None:
    """--branch as git accepts a branch name (`git check-ref-format --branch`): '' would pull from no
    branch and say there was nothing to pull; `../x`, `a..b` or `-b` are refused before any git call."""
    valid = bool(branch) and not branch.startswith("-") and subprocess.run(
        ["git", "check-ref-format", f"refs/heads/{branch}"], capture_output=True).returncode == 0
    if not valid:
        raise InputError(f"--branch {ascii(branch)} is not a git branch name")


def _interrupt(signum, frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (a cancelled CI job) as Ctrl-C: git's running child is killed (subprocess.run does) and
    pull's staging folder is removed on the way out."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
