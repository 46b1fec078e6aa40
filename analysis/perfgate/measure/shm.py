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
import re
from pathlib import Path
from typing import Iterable

from .domains import RTPS_DOMAIN_GAIN, RTPS_PORT_BASE
# the names of Fast DDS's files and who holds what: defined where the watcher (standard library only)
# removes what a killed run's processes held
from .watcher import SHM_DIR, SHM_PREFIXES, fastdds_shm_files, segment_stem, shm_files_held_by, shm_files_in_use

_PORT_FILE = re.compile(r"^(?:fastrtps|fastdds)_port(?P<port>\d+)$")


# --- whose a file is ----------------------------------------------------------------------------
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
