"""bisect.commits: the first-parent commits from good to bad, with what a report shows of each.

The history is fetched into a bare repository of the workspace's own (WS/perfgate/bisect.git), by
commit and deeper and deeper until good is reached, as `perfgate build --commit merge-base:` does;
git only reads there (fetch, rev-list, log): nothing of the fetched history runs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import IncompleteError, InputError
from ..fastdds.git import check_git_url, git_message, parse_revision, run_git

# Only the commit graph is read here (perfgate build fetches each source itself): a server that filters
# sends no trees or blobs (10000 commits of Fast DDS with their trees are hundreds of MB); one that does
# not sends everything, as before.
COMMITS_ONLY = ("--filter=tree:0",)
DEPTHS = (100, 1000, 10000)  # history fetched, deeper and deeper, until good is on bad's first parents
# `git log -z`: one NUL-ended record per commit, its fields on lines, the subject last. The subject and
# the author come from the repository bisected (untrusted) and may hold any character but a line feed
# (a header line's end; a subject's lines are joined) and NUL, so the subject is all after the third line
# feed: a commit is never dropped or mis-split (a \x1f between fields was, in a subject: issue 23)
FORMAT = "%H%n%aI%n%an%n%s"
# a revision that may be an abbreviated commit: git fetches a commit by its full sha only (a server
# lists no abbreviation), so one that names no branch or tag of the repository is refused (exit 2)
# rather than resolved: resolving it needs the repository's whole object list, which a fetch of one
# line of history does not give, and a prefix unique in what was fetched may not be unique upstream
ABBREVIATED = re.compile(r"[0-9a-fA-F]{4,39}")


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    author: str
    date: str

    @property
    def short(self) -> str:
        return self.sha[:10]


def require_ref(text: str, option: str) -> str:
    """A --good/--bad revision as `perfgate build --commit` takes a plain one; InputError otherwise."""
    try:
        revision = parse_revision(text)
    except InputError:
        revision = None
    if revision is None or revision.kind != "ref":
        raise InputError(f"{option} {text!r} is not a commit, tag or branch")
    return text


def parse_log(text: str) -> list[Commit]:
    """Commits from `git log -z --format=FORMAT` output, in its order."""
    commits = []
    for record in text.split("\0"):
        parts = record.lstrip("\n").split("\n", 3)
        if len(parts) == 4 and re.fullmatch(r"[0-9a-f]{40}", parts[0]):
            sha, date, author, subject = parts
            commits.append(Commit(sha, subject, author, date))
    return commits


def first_parent_range(newest_first: list[Commit], good: str) -> list[Commit] | None:
    """From bad's first-parent history (newest first, as `git log --first-parent` gives it): good, then
    every commit after it up to bad, oldest first. None when good is not on that history."""
    shas = [commit.sha for commit in newest_first]
    if good not in shas:
        return None
    return list(reversed(newest_first[:shas.index(good) + 1]))


def commit_link(url: str, sha: str) -> str | None:
    """The commit's page for a GitHub repository URL; None for any other (a local mirror)."""
    match = re.fullmatch(r"(?:https://|git@|ssh://git@)github\.com[:/]([\w.-]+)/([\w.-]+?)(?:\.git)?/?", url)
    return f"https://github.com/{match.group(1)}/{match.group(2)}/commit/{sha}" if match else None


# --- git (thin) ------------------------------------------------------------------------------------
def _git(repository: Path, *args: str) -> str:
    done = run_git(list(args), repository)
    if done.returncode != 0:
        raise IncompleteError(f"git {args[0]} failed: {git_message(done)}", repository)
    return done.stdout


def _fetch_one(repository: Path, url: str, ref: str, option: str) -> str:
    done = run_git(["fetch", "--quiet", *COMMITS_ONLY, "--depth", "1", "origin", ref], repository)
    if done.returncode != 0:
        raise IncompleteError(f"cannot fetch {option} {ref} from {url}: {git_message(done)}", repository)
    return _git(repository, "rev-parse", "--verify", "FETCH_HEAD^{commit}").strip()


def require_fetchable(url: str, ref: str, option: str) -> None:
    """A revision that looks like an abbreviated commit must name a branch or tag of `url` (listed, not
    fetched: nothing is written); InputError saying to give the full sha otherwise."""
    if not ABBREVIATED.fullmatch(ref):
        return
    listed = run_git(["ls-remote", url, ref])
    if listed.returncode != 0:
        raise IncompleteError(f"cannot list the branches and tags of {url}: {git_message(listed)}")
    if not listed.stdout.strip():
        raise InputError(f"{option} {ref} is no branch or tag of {url} and not a full commit: git fetches a commit "
                         "only by its full 40-hex sha; give that, or a branch or tag")


def fetch_range(url: str, good: str, bad: str, repository: Path, depths: tuple[int, ...] = DEPTHS) -> list[Commit]:
    """good, then bad's first-parent commits after it up to bad (oldest first), fetched from `url`."""
    require_fetchable(url, good, "--good")
    require_fetchable(url, bad, "--bad")
    if not (repository / "HEAD").is_file():
        repository.mkdir(parents=True, exist_ok=True)
        _git(repository, "init", "--quiet", "--bare")
    run_git(["remote", "remove", "origin"], repository)
    _git(repository, "remote", "add", "origin", url)
    good_sha, bad_sha = _fetch_one(repository, url, good, "--good"), _fetch_one(repository, url, bad, "--bad")
    if good_sha == bad_sha:
        raise InputError(f"--good {good} and --bad {bad} are the same commit {good_sha}")
    for depth in depths:
        _git(repository, "fetch", "--quiet", *COMMITS_ONLY, "--depth", str(depth), "origin", bad_sha)
        log = _git(repository, "log", "-z", "--first-parent", f"--format={FORMAT}", bad_sha)
        found = first_parent_range(parse_log(log), good_sha)
        if found is not None:
            return found
        if len(parse_log(log)) < depth:  # the whole history is here: good is not on it
            break
    raise InputError(f"--good {good} ({good_sha}) is not on the first-parent history of --bad {bad} ({bad_sha}) "
                     f"within {depths[-1]} commits")


def range_size(url: str, good: str, bad: str, workspace: Path) -> int:
    """How many first-parent commits follow good up to bad (1: bad's own commit is the only one), from
    the workspace's bare repository, as `perfgate bisect` will see them (`perfgate bisect-events`)."""
    url = check_git_url(url, "--git-url")
    return len(fetch_range(url, require_ref(good, "--good"), require_ref(bad, "--bad"), repository(workspace))) - 1


def repository(workspace: Path) -> Path:
    return workspace / "perfgate" / "bisect.git"
