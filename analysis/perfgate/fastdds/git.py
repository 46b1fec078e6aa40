"""fastdds.git: what `--commit` asks for (a commit, tag or branch, `parent:<rev>`,
`merge-base:<rev>,<other>`) and the workspace's git checkout of it, fetched shallow and deepened only
as far as a merge base needs."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import IncompleteError, InputError
from ..process_group import own_group
from .logs import printable

GIT_TIMEOUT_S = 1800
# What git runs with. A repository URL comes from outside: only transports that move data are allowed
# (git's remote helpers `ext::` and `fd::` run a command or read an inherited descriptor: `fd::17`
# hung for ever), it never prompts (no terminal: its own session has none; stdin closed), and git's
# automatic gc after a fetch runs in the foreground, inside the process group ended with perfgate
GIT_PROTOCOLS = ("file", "git", "http", "https", "ssh")
GIT_ENVIRONMENT = {"GIT_ALLOW_PROTOCOL": ":".join(GIT_PROTOCOLS), "GIT_TERMINAL_PROMPT": "0"}
GIT_CONFIG = ("-c", "gc.autoDetach=false", "-c", "maintenance.autoDetach=false")
# `scheme://...` git takes as one of GIT_PROTOCOLS (git+ssh and ssh+git are ssh); any other scheme, and
# `<transport>::<address>`, would start the remote helper git-remote-<transport>
URL_SCHEMES = GIT_PROTOCOLS + ("git+ssh", "ssh+git")
_SCHEME = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)(?P<separator>://|::)")

# --- which commit: what --commit asks for ----------------------------------------------------------
PARENT_PREFIX = "parent:"
MERGE_BASE_PREFIX = "merge-base:"
MERGE_BASE_DEPTHS = (100, 1000, 10000)  # history fetched, deeper and deeper, until the two meet
COMMIT_FORMS = "a commit, tag or branch, parent:<rev> or merge-base:<rev>,<other>"
# a revision fetch can take: no character git forbids in ref names, nothing git could read as an option
_PLAIN_REF = re.compile(r"[^\s~^:?*\[\\-][^\s~^:?*\[\\]*")
# and none of the rest of git's rules for a ref name (git check-ref-format): `..`, `@{`, `//`, a control
# character, a part starting with `.` or ending with `.lock`, an end in `/` or `.`, `@` alone; git
# would refuse them only at fetch, as a failed fetch (exit 3) rather than a bad option (exit 2)
_REFUSED_BY_GIT = re.compile(r"\.\.|@\{|//|[\x00-\x1f\x7f]|(?:^|/)\.|\.lock(?:/|$)|[/.]$|^@$")


@dataclass(frozen=True)
class Revision:
    """What `--commit` asks for: kind "ref" (refs[0] as is), "parent" (the first parent of refs[0]) or
    "merge-base" (where refs[0] and refs[1] meet)."""
    kind: str
    refs: tuple[str, ...]


def parse_revision(text: str) -> Revision:
    """The --commit text as a Revision; InputError (nothing fetched yet) when it is none of the forms."""
    if text.startswith(PARENT_PREFIX):
        kind, refs, form = "parent", [text[len(PARENT_PREFIX):]], "parent:<rev> (<rev> a commit, tag or branch)"
    elif text.startswith(MERGE_BASE_PREFIX):
        kind, refs = "merge-base", text[len(MERGE_BASE_PREFIX):].split(",")
        form = "merge-base:<rev>,<other> (each a commit, tag or branch)"
    else:
        kind, refs, form = "ref", [text], COMMIT_FORMS
    plain = all(_PLAIN_REF.fullmatch(ref) and not _REFUSED_BY_GIT.search(ref) for ref in refs)
    if len(refs) != (2 if kind == "merge-base" else 1) or not plain:
        raise InputError(f"--commit {text!r} is not {form}")
    return Revision(kind, tuple(refs))


# --- which repository: --git-url, --fastcdr-url ------------------------------------------------------
def check_git_url(url: str, option: str) -> str:
    """A repository option as git will be given it; InputError (nothing fetched yet) for what git would
    misread. A local folder (a path, not `scheme://...` or `host:path`) is made absolute: git fetches in
    the workspace's checkout, where a relative path would name another folder."""
    if not url.strip():
        raise InputError(f"{option} is empty; give a repository URL or folder")
    if url.startswith("-"):
        raise InputError(f"{option} {url!r} starts with '-', which git would read as an option")
    if any(ord(c) < 32 or 0x7f <= ord(c) <= 0x9f or c.isspace() and c != " " for c in url):
        raise InputError(f"{option} {ascii(url)} holds a control character")
    scheme = _SCHEME.match(url)
    if scheme and (scheme["separator"] == "::" or scheme["scheme"].lower() not in URL_SCHEMES):
        raise InputError(f"{option} {url!r} starts with {scheme[0]!r}, git's remote helper "
                         f"git-remote-{scheme['scheme']}, which can run commands or read open descriptors; give an "
                         "http(s)://, ssh://, git:// or file:// URL, host:path or a local folder")
    if "://" not in url and Path(url).exists():
        return str(Path(url).resolve())
    return url


# --- the git checkout -----------------------------------------------------------------------------
def run_git(args: list[str], cwd: Path | None = None,
            timeout_s: float = GIT_TIMEOUT_S) -> subprocess.CompletedProcess:
    """git ARGS in a process group of its own (process_group: it and what it starts, git-remote-https, ssh,
    are killed when perfgate is stopped or the timeout passes), stdin closed, with GIT_ENVIRONMENT."""
    command = ["git", *GIT_CONFIG, *args]
    try:
        with own_group(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env={**os.environ, **GIT_ENVIRONMENT}) as process:
            stdout, stderr = process.communicate(timeout=timeout_s)
    except OSError as error:
        raise IncompleteError(f"git {args[0]} failed: {error}") from None
    except subprocess.TimeoutExpired:  # own_group killed its group
        raise IncompleteError(f"git {args[0]} did not end within {timeout_s:g} s") from None
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def git_message(done: subprocess.CompletedProcess) -> str:
    """All git said on stderr (its last line alone often hides the cause: `fatal: ...` after an
    `error:` naming the real problem), or a note that it said nothing."""
    lines = [line.rstrip() for line in printable(done.stderr or "").splitlines() if line.strip()]
    return "\n".join(lines) or f"git exited {done.returncode} saying nothing"


def _fetch(checkout: Path, url: str, refs: list[str], depth: int, what: str) -> None:
    fetched = run_git(["fetch", "--quiet", "--depth", str(depth), "origin", *refs], checkout)
    if fetched.returncode != 0:
        raise IncompleteError(f"cannot fetch {what} from {url}: {git_message(fetched)}", checkout)


def _fetch_commit(checkout: Path, url: str, ref: str, depth: int = 1) -> str:
    """Fetch `ref` with `depth` commits of its history; returns its commit (a tag's too)."""
    _fetch(checkout, url, [ref], depth, ref)
    commit = run_git(["rev-parse", "--verify", "--quiet", "FETCH_HEAD^{commit}"], checkout)
    if commit.returncode != 0:
        raise IncompleteError(f"{ref} from {url} is not a commit", checkout)
    return commit.stdout.strip()


def _shallow_boundary(checkout: Path) -> set[str]:
    """The commits whose parents a shallow fetch left out."""
    shallow = checkout / ".git" / "shallow"
    return set(shallow.read_text().split()) if shallow.is_file() else set()


def first_parent(checkout: Path, url: str, ref: str) -> str:
    """The first parent of `ref`: fetched two commits deep; IncompleteError for a root commit."""
    commit = _fetch_commit(checkout, url, ref, depth=2)
    parent = run_git(["rev-parse", "--verify", "--quiet", f"{commit}^1"], checkout)
    if parent.returncode == 0:
        return parent.stdout.strip()
    if commit in _shallow_boundary(checkout):
        raise IncompleteError(f"parent:{ref}: cannot fetch the parent of {commit} from {url}", checkout)
    raise IncompleteError(f"parent:{ref}: {commit} has no parent (a root commit)", checkout)


def merge_base(checkout: Path, url: str, ref: str, other: str, depths: tuple[int, ...] = MERGE_BASE_DEPTHS) -> str:
    """`git merge-base` of `ref` and `other`, their histories fetched deeper and deeper (depths) until
    they meet; IncompleteError when they do not within the deepest."""
    commits = [_fetch_commit(checkout, url, ref), _fetch_commit(checkout, url, other)]
    for depth in depths:
        # by commit, not by name: a branch that moves meanwhile changes nothing
        _fetch(checkout, url, commits, depth, f"the history of {ref} and {other}")
        found = run_git(["merge-base", *commits], checkout)
        if found.returncode == 0:
            return found.stdout.strip()
        if found.returncode != 1:  # 1: no common ancestor (yet)
            raise IncompleteError(f"git merge-base failed: {git_message(found)}", checkout)
    raise IncompleteError(f"merge-base:{ref},{other}: no merge base of {commits[0]} and {commits[1]} within "
                          f"{depths[-1]} commits", checkout)


def resolve_revision(revision: Revision, url: str, checkout: Path) -> str:
    """The commit a Revision names, fetched from `url` (the remote origin of `checkout`)."""
    if revision.kind == "parent":
        return first_parent(checkout, url, revision.refs[0])
    if revision.kind == "merge-base":
        return merge_base(checkout, url, *revision.refs)
    return _fetch_commit(checkout, url, revision.refs[0])


def init_checkout(url: str, checkout: Path) -> None:
    """`checkout` as a git repository (created once) whose remote origin is `url`."""
    if checkout.exists() and not (checkout / ".git").exists():
        shutil.rmtree(checkout)  # a mirror of a local folder before: replaced by the checkout
    if not checkout.exists():
        checkout.parent.mkdir(parents=True, exist_ok=True)
        done = run_git(["init", "--quiet", str(checkout)])
        if done.returncode != 0:
            raise IncompleteError(f"git init failed: {git_message(done)}", checkout)
    for args in (["remote", "remove", "origin"], ["remote", "add", "origin", url]):
        run_git(args, checkout)


def fetch_git(url: str, ref: str, checkout: Path) -> str:
    """Check out what `ref` names (a --commit text: a commit, tag or branch, parent:<rev> or
    merge-base:<rev>,<other>) of `url` in `checkout` (cloned once, then fetched); returns the commit."""
    revision = parse_revision(ref)
    init_checkout(url, checkout)
    commit = resolve_revision(revision, url, checkout)
    # --force: the checkout is the workspace's own; files that did not change keep their mtime
    for args in (["checkout", "--quiet", "--force", "--detach", commit], ["clean", "-ffdq"]):
        done = run_git(args, checkout)
        if done.returncode != 0:
            raise IncompleteError(f"git {args[0]} failed: {git_message(done)}", checkout)
    return run_git(["rev-parse", "HEAD"], checkout).stdout.strip()


def local_commit(folder: Path) -> tuple[str | None, bool | None]:
    """(HEAD, has uncommitted changes) of a local source that is a git checkout; (None, None) otherwise."""
    if not (Path(folder) / ".git").exists():
        return None, None
    head = run_git(["rev-parse", "HEAD"], folder)
    if head.returncode != 0:
        return None, None
    status = run_git(["status", "--porcelain", "--untracked-files=no"], folder)
    return head.stdout.strip(), bool(status.stdout.strip())
