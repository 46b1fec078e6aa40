"""What a results branch may hold, judged entry by entry: the pure half of `perfgate store pull`.

The branch is untrusted: anyone who can push to its repository (or a compromised runner) shapes its
tree, with hand-written tree objects if they like. It holds exactly `experiments/<label>/<file>`
(docs/formats.md section 9), so every entry of `git ls-tree -r -z -l --full-tree` is judged here:

- a regular file (mode 100644; never a symlink 120000, an executable 100755 or a submodule 160000);
- under `experiments/<label>/`, where the label is a name the gate gives a stored experiment
  (baseline.FOLDER_NAME: letters, digits, `.`, `_`, `-`; at most 200 bytes) and passes `--label`'s
  validator (cli_types.label_problem);
- a file the store keeps (store.is_kept), each part of its path a plain file name, listed once,
  with one form of each sub-experiment's raw measurements;
- at most the size its kind needs (SIZE_LIMITS; a `.csv.gz` is also checked inflated, while pulled).

An experiment with one bad entry is quarantined whole: pull writes nothing of it and names the first
bad path. Entries outside any experiment (another folder, a dot-named one such as a summary index)
are ignored and reported. Names are printed with ascii(): a label may hold line breaks or terminal
escapes, and the report is one line per problem.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import schema as s
from . import experiments as results_store
from .baseline import FOLDER_NAME, MAX_FOLDER_NAME
from ..cli_types import label_problem
from ..csv_lines import GZIP_SUFFIX, MAX_INFLATED

REGULAR_FILE = "100644"
MODE_NAMES = {"120000": "a symbolic link", "100755": "an executable file", "160000": "a submodule (a commit)",
              "040000": "a folder"}
MiB = 1 << 20
# The largest blob of each kind of kept file (bytes). A gate's files are far smaller: metadata.json
# about 10 KiB, a summary or check report a few KiB, junit.xml some 200 KiB, the raw measurements of
# 11 payloads x 10000 samples about 1 MB gzip'd (3 MB inflated). A raw file is bounded by its
# inflated size (csv_lines.MAX_INFLATED, 128 MiB: 4 million rows of at most 32 bytes), which gzip
# never exceeds by more than a few bytes per 16 KiB block: the `.csv.gz` blob has the same bound.
METADATA_LIMIT = 1 * MiB
TABLE_LIMIT = 16 * MiB  # summaries, check reports, junit.xml, throughput tables, A/B verdicts
RAW_LIMIT = MAX_INFLATED  # measurements_<sub>.csv.gz (and .csv of older tooling)
PATH_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MAX_NAME = 255  # bytes of one file name (NAME_MAX of Linux's file systems)


def size_limit(relative: str) -> int:
    name = relative.rsplit("/", 1)[-1]
    if name == s.METADATA_FILE:
        return METADATA_LIMIT
    if "/" not in relative and s.sub_from_raw_csv(Path(name)) is not None:
        return RAW_LIMIT
    return TABLE_LIMIT


def store_label_problem(label: str) -> str | None:
    """Why `label` cannot name a stored experiment's folder, or None: the gate's rule for --label with
    --store (baseline.require_folder_name) and --label's own validator."""
    problem = label_problem(label)
    if problem is not None:
        return f"names an experiment whose label {problem}"
    if not FOLDER_NAME.fullmatch(label):
        return "names an experiment whose label is not letters, digits, '.', '_' or '-' (from a letter or digit)"
    if len(label.encode()) > MAX_FOLDER_NAME:
        return f"names an experiment whose label is {len(label.encode())} bytes long, more than {MAX_FOLDER_NAME}"
    return None


@dataclass(frozen=True)
class Entry:
    """One line of `git ls-tree -r -z -l --full-tree`."""
    mode: str
    kind: str
    object_id: str
    size: int | None  # None for a submodule ('-')
    path: str  # decoded as UTF-8, undecodable bytes as surrogates (surrogateescape)


def parse_entry(record: bytes) -> Entry | None:
    """`<mode> SP <type> SP <object> SP+ <size> TAB <path>`; None for a record git would never write."""
    meta, tab, raw_path = record.partition(b"\t")
    fields = meta.decode("ascii", "replace").split()
    if not tab or len(fields) != 4:
        return None
    mode, kind, object_id, size = fields
    return Entry(mode, kind, object_id, int(size) if size.isdigit() else None,
                 raw_path.decode("utf-8", "surrogateescape"))


@dataclass
class Branch:
    """A branch's tree as pull sees it."""
    good: dict[str, dict[str, tuple[str, int]]] = field(default_factory=dict)  # label -> {file: (blob, size)}
    bad: dict[str, str] = field(default_factory=dict)  # label -> the first problem (naming the path)
    ignored: list[str] = field(default_factory=list)  # entries outside any experiment: why each is ignored

    def blobs(self) -> dict[str, dict[str, str]]:
        """label -> {file: blob id} of the good experiments (store_sync.Tree)."""
        return {label: {path: blob for path, (blob, _) in found.items()} for label, found in self.good.items()}


def file_problem(entry: Entry, relative: str) -> str | None:
    """Why the entry cannot be the file `relative` of a stored experiment, or None."""
    if entry.mode != REGULAR_FILE or entry.kind != "blob":
        return f"is {MODE_NAMES.get(entry.mode, f'of mode {entry.mode}')}, not a regular file (mode 100644)"
    if any(not PATH_PART.fullmatch(part) for part in relative.split("/")):
        return "is not a plain file name (letters, digits, '.', '_', '-')"
    if any(len(part) > MAX_NAME for part in relative.split("/")):
        return f"has a name longer than {MAX_NAME} bytes, which no file system takes"
    if not results_store.is_kept(relative):
        return "is not a file the store keeps"
    limit = size_limit(relative)
    if entry.size is None or entry.size > limit:
        return f"is {entry.size} bytes, more than the {limit} its kind may hold"
    return None


def judge(entries: list[Entry]) -> Branch:
    """Sort the branch's entries into good experiments, quarantined ones and ignored entries."""
    branch = Branch()
    prefix = f"{s.STORE_EXPERIMENTS_DIR}/"
    seen: set[str] = set()
    for entry in entries:
        shown = ascii(entry.path)
        label, slash, relative = entry.path[len(prefix):].partition("/")
        if not entry.path.startswith(prefix) or not slash:
            branch.ignored.append(f"{shown} is not in an experiment folder ({prefix}<label>/)")
            continue
        if label.startswith("."):  # a summary index or staging folder: never an experiment
            branch.ignored.append(f"{shown} is in a dot-named folder, which is no experiment")
            continue
        if label in branch.bad:
            continue
        label_problem = store_label_problem(label)
        problem = ("is listed twice" if entry.path in seen else file_problem(entry, relative)) \
            if label_problem is None else None
        seen.add(entry.path)
        if label_problem is not None or problem is not None:
            branch.bad[label] = f"{ascii(f'{prefix}{label}/')} {label_problem}" if label_problem else f"{shown} {problem}"
            branch.good.pop(label, None)
            continue
        branch.good.setdefault(label, {})[relative] = (entry.object_id, entry.size or 0)
    for label, found in list(branch.good.items()):
        subs = [s.sub_from_raw_csv(Path(name)) for name in found if "/" not in name]
        twice = sorted({sub for sub in subs if sub is not None and subs.count(sub) > 1})
        if twice:
            branch.bad[label] = (f"{ascii(f'{prefix}{label}/')} holds both {s.raw_csv_name(twice[0])} and its "
                                 f"{GZIP_SUFFIX} form")
            del branch.good[label]
    return branch
