"""Shared-memory files Fast DDS processes left behind: found and removed after each sub-experiment.

A Fast DDS process killed (SIGKILL, a crash) unlinks none of its files in /dev/shm. After a run, a
file is its own to remove only when it appeared during the run, no live process holds it, and it is
known to be the run's: a port file of a domain the run leased, or a segment one of the run's own
processes was seen holding (the `ShmWitness`). Another run on the machine, whose processes died
while this one ran, leaves files that meet the first two conditions but never the third, so each
run removes, and records, only its own.
"""
from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Iterable

from .domains import RTPS_DOMAIN_GAIN, RTPS_PORT_BASE


# Shared-memory files Fast DDS creates: SHM transport segments, their mutexes and lock files,
# and data-sharing pools.
SHM_DIR = Path("/dev/shm")
SHM_PREFIXES = ("fastrtps_", "fastdds_", "fast_datasharing_", "sem.fastrtps_", "sem.fastdds_", "sem.fast_datasharing_")
# A segment's companions: its named mutex (sem.<name>_mutex) and its robust lock files (<name>_el, <name>_sl).
_COMPANION = re.compile(r"^(?:sem\.)?(?P<stem>.+?)(?:_el|_sl|_mutex)?$")
_PORT_FILE = re.compile(r"^(?:fastrtps|fastdds)_port(?P<port>\d+)$")


# --- who holds what -----------------------------------------------------------------------------
def fastdds_shm_files(shm_dir: Path = SHM_DIR) -> set[str]:
    try:
        return {p.name for p in shm_dir.iterdir() if p.name.startswith(SHM_PREFIXES)}
    except OSError:
        return set()


def shm_files_held_by(pid: int, shm_dir: Path = SHM_DIR) -> set[str]:
    """Names of the files under shm_dir that process `pid` has mapped or open (none once it is gone)."""
    held: set[str] = set()
    prefix = f"{shm_dir}/"
    proc = Path(f"/proc/{pid}")
    with contextlib.suppress(OSError):
        for line in (proc / "maps").read_text(errors="replace").splitlines():
            fields = line.split(maxsplit=5)  # address perms offset dev inode [path]
            if len(fields) == 6 and fields[5].startswith(prefix):
                held.add(fields[5][len(prefix):].removesuffix(" (deleted)"))
    with contextlib.suppress(OSError):
        for fd in (proc / "fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith(prefix):
                    held.add(target[len(prefix):])
    return held


def shm_files_in_use(shm_dir: Path = SHM_DIR) -> set[str]:
    """Names of the files under shm_dir that a live process has mapped or open."""
    in_use: set[str] = set()
    for proc in Path("/proc").glob("[0-9]*"):
        in_use |= shm_files_held_by(int(proc.name), shm_dir)
    return in_use


# --- whose a file is ----------------------------------------------------------------------------
def segment_stem(name: str) -> str:
    """The segment a file belongs to: itself, or the segment whose mutex or lock file it is."""
    return _COMPANION.match(name)["stem"]


def is_port_file_of(name: str, domains: Iterable[int]) -> bool:
    """Whether `name` (or its mutex or lock file) is a Fast DDS port segment of one of `domains`:
    its port lies in the domain's block of RTPS ports."""
    matched = _PORT_FILE.match(segment_stem(name))
    if matched is None:
        return False
    port = int(matched["port"])
    return any(0 <= port - (RTPS_PORT_BASE + RTPS_DOMAIN_GAIN * d) < RTPS_DOMAIN_GAIN for d in domains)


class ShmWitness:
    """The Fast DDS segments a run's own processes were seen holding: looked at while they live
    (once each is ready, and before they are stopped), so that what they leave when killed is
    known to be theirs."""

    def __init__(self, shm_dir: Path = SHM_DIR):
        self.shm_dir = shm_dir
        self.stems: set[str] = set()

    def look(self, pids: Iterable[int]) -> None:
        for pid in pids:
            self.stems |= {segment_stem(name) for name in shm_files_held_by(pid, self.shm_dir)
                           if name.startswith(SHM_PREFIXES)}


def orphaned_shm_files(before: set[str], after: set[str], in_use: set[str], own_stems: set[str],
                       domains: Iterable[int]) -> set[str]:
    """Files that appeared during the run, that no live process holds, and that are the run's own."""
    domains = tuple(domains)
    return {name for name in (after - before) - in_use
            if segment_stem(name) in own_stems or is_port_file_of(name, domains)}


def remove_orphaned_shm(before: set[str], witness: ShmWitness, domains: Iterable[int]) -> list[str]:
    shm_dir = witness.shm_dir
    removed = sorted(orphaned_shm_files(before, fastdds_shm_files(shm_dir), shm_files_in_use(shm_dir),
                                        witness.stems, domains))
    for name in removed:
        with contextlib.suppress(FileNotFoundError):
            (shm_dir / name).unlink()
    return removed
