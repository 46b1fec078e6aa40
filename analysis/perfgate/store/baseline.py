"""promote-baseline: make one experiment the stored baseline of a platform (baselines/<platform>/).

A baseline is what the gate compares every later run of that platform with, so it is replaced as a
whole or not at all: the summaries and metadata.json (never raw data) are copied into a temporary
folder beside the target, then renamed into place. Only a complete experiment can become a
baseline: a sub-experiment that did not finish would silently drop out of every later comparison.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from .. import files, outputs
from .. import schema as s
from ..errors import InputError
from ..model import Metadata, read_metadata

# Platforms and labels name folders (baselines/<platform>/, <store>/experiments/<label>/) and files.
FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


MAX_FOLDER_NAME = 200  # a file system's 255, less room for the suffixes of files named after it


def require_folder_name(name: str, what: str) -> str:
    if not FOLDER_NAME.fullmatch(name or ""):
        raise InputError(f"{what} {name!r} must be letters, digits, '.', '_' or '-' (it names a folder)")
    if len(name) > MAX_FOLDER_NAME:
        raise InputError(f"{what} {name[:20]!r}... is {len(name)} characters long, more than {MAX_FOLDER_NAME} "
                         "(it names a folder)")
    return name


def require_platform_name(platform: str) -> str:
    return require_folder_name(platform, "platform name")


def incomplete_subexperiments(metadata: Metadata, summaries: dict[str, Path]) -> list[str]:
    """Sub-experiments the run was asked for that did not end well or have no summary."""
    problems = []
    for sub, entry in (metadata.subexperiments or {}).items():
        outcome = entry.status
        if outcome != s.OUTCOME_OK:
            problems.append(f"{sub} ({outcome})")
        elif sub not in summaries:
            problems.append(f"{sub} (no summary)")
    return problems


def baseline_files(experiment_dir: Path) -> list[Path]:
    """The files a baseline keeps, validated: metadata.json and every summary."""
    experiment_dir = files.require_dir(experiment_dir, "experiment folder")
    metadata = read_metadata(experiment_dir)
    if metadata is None:
        raise InputError(f"no {s.METADATA_FILE}: a baseline must record its platform and Fast DDS", experiment_dir)
    summaries = files.summary_files(experiment_dir)
    for path in summaries.values():
        files.read_summary(path)
    problems = incomplete_subexperiments(metadata, summaries)
    if problems:
        raise InputError(f"the experiment is incomplete, a baseline must be complete: {', '.join(problems)}",
                         experiment_dir)
    return [experiment_dir / s.METADATA_FILE, *summaries.values()]


def replace_folder(target: Path, sources: list[Path]) -> None:
    """Copy `sources` into a fresh folder and put it in place of `target` (renames, never a half copy)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.new.", dir=target.parent))
    retired = None
    try:
        for source in sources:
            shutil.copy2(source, staging / source.name)
        if target.exists():
            # os.rename cannot replace a non-empty folder: move the old one aside first, and back on failure.
            retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
            os.rename(target, retired / target.name)
            try:
                os.rename(staging, target)
            except OSError:
                os.rename(retired / target.name, target)
                raise
        else:
            os.rename(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
        if retired is not None and retired.exists():
            shutil.rmtree(retired)


def promote(experiment_dir: Path, platform: str, baselines_dir: Path) -> Path:
    require_platform_name(platform)
    sources = baseline_files(Path(experiment_dir))
    target = Path(baselines_dir) / platform
    outputs.require_writable(target, "baseline folder", folder=True)
    if target.resolve().is_relative_to(Path(experiment_dir).resolve()):
        raise InputError(f"the baseline folder would be inside the experiment {experiment_dir} it is made from",
                         target)
    if target.exists() and not target.is_dir():
        raise InputError("baseline path exists and is not a folder", target)
    replace_folder(target, sources)
    return target


def _previous_metadata(folder: Path) -> Metadata | None:
    # A broken old baseline is exactly what a promotion repairs: its metadata only feeds a note.
    try:
        return read_metadata(folder) if folder.is_dir() else None
    except InputError:
        return None


def command_promote_baseline(experiment: str, platform: str, baselines_dir: str) -> int:
    require_platform_name(platform)
    previous = _previous_metadata(Path(baselines_dir) / platform)
    target = promote(Path(experiment), platform, Path(baselines_dir))
    metadata = read_metadata(target) or Metadata()
    label = metadata.label if metadata.label is not None else Path(experiment).name
    new_id = metadata.platform_id
    old_id = previous.platform_id if previous is not None else None
    if previous is not None and old_id != new_id:
        print(f"note: the baseline of {platform!r} was measured on platform id {old_id}; the new one on {new_id}")
    print(f"baseline of {platform!r} is now {label!r}: {target}")
    return s.EXIT_OK
