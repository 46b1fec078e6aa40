"""Shared-memory files Fast DDS processes left behind: found and removed after each sub-experiment."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path


# Shared-memory files Fast DDS creates: SHM transport segments, their mutexes and lock files,
# and data-sharing pools.
SHM_DIR = Path("/dev/shm")
SHM_PREFIXES = ("fastrtps_", "fastdds_", "fast_datasharing_", "sem.fastrtps_", "sem.fastdds_", "sem.fast_datasharing_")


# --- shared memory left behind ------------------------------------------------------------------
def fastdds_shm_files(shm_dir: Path = SHM_DIR) -> set[str]:
    try:
        return {p.name for p in shm_dir.iterdir() if p.name.startswith(SHM_PREFIXES)}
    except OSError:
        return set()


def shm_files_in_use(shm_dir: Path = SHM_DIR) -> set[str]:
    """Names of the files under shm_dir that a live process has mapped or open."""
    in_use: set[str] = set()
    prefix = f"{shm_dir}/"
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            for line in (proc / "maps").read_text(errors="replace").splitlines():
                fields = line.split(maxsplit=5)  # address perms offset dev inode [path]
                if len(fields) == 6 and fields[5].startswith(prefix):
                    in_use.add(fields[5][len(prefix):].removesuffix(" (deleted)"))
        with contextlib.suppress(OSError):
            for fd in (proc / "fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith(prefix):
                        in_use.add(target[len(prefix):])
    return in_use


def orphaned_shm_files(before: set[str], after: set[str], in_use: set[str]) -> set[str]:
    """Files that appeared while the sub-experiment ran and that no live process holds: ours, dead.

    A concurrent run's files are mapped by its live processes, so they are never among these.
    """
    return (after - before) - in_use


def remove_orphaned_shm(before: set[str], shm_dir: Path = SHM_DIR) -> list[str]:
    removed = sorted(orphaned_shm_files(before, fastdds_shm_files(shm_dir), shm_files_in_use(shm_dir)))
    for name in removed:
        with contextlib.suppress(FileNotFoundError):
            (shm_dir / name).unlink()
    return removed
