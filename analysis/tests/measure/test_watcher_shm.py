"""Issue 44: a `perfgate run` killed as a shared-memory harness started left the harness's Fast DDS segments in
/dev/shm for good (perfgate's record of them died with it; the next run removes only what appears while it
runs). The scratch folder's watcher stops each of the run's processes, notes the Fast DDS files it holds,
kills it and removes those files and their companions once no live process holds them; a file no process of
the run held stays. Real processes and real files in /dev/shm: a Python process holding a scratch folder
and a process of its run that makes segments as Fast DDS does (a mapped segment, its named mutex, a lock
file held open, one closed), the holder killed by SIGKILL at several moments of the segments' making."""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import wait_until
from perfgate.measure import watcher
from perfgate.measure.environment import RUN_ID_ENV

SHM = Path("/dev/shm")  # where Fast DDS makes its files (watcher.SHM_DIR)
FOLLOW_LIMIT_S = 20.0  # for the watcher to act on a loaded machine; not a timing assertion

# the run's process: makes its segments one by one (a pause between each), holding them as Fast DDS does
MAKER = textwrap.dedent("""\
    import mmap, os, sys, time
    stem, pause = sys.argv[1], float(sys.argv[2])
    held = []
    for name, hold in ((stem, "map"), (f"sem.{stem}_mutex", "map"), (f"{stem}_el", "open"), (f"{stem}_sl", None)):
        fd = os.open(f"/dev/shm/{name}", os.O_CREAT | os.O_RDWR, 0o600)
        os.ftruncate(fd, 4096)
        if hold == "map":
            held.append(mmap.mmap(fd, 4096))
        if hold != "open":
            os.close(fd)
        print(name, flush=True)
        time.sleep(pause)
    time.sleep(600)
""")
HOLDER = textwrap.dedent("""\
    import os, subprocess, sys, time
    from perfgate.measure import scratch
    run_id, stem, pause, maker = sys.argv[1:5]
    with scratch.scratch_folder("test", run_id) as folder:
        print(folder, flush=True)  # before the maker starts: its lines share this stdout
        # a session of its own and no parent-death signal: only the watcher ends it
        subprocess.Popen([sys.executable, "-c", maker, stem, pause], env={**os.environ, "%s": run_id},
                         start_new_session=True, stdout=sys.stdout)
        time.sleep(600)
""" % RUN_ID_ENV)


def files_of(stem: str) -> list[str]:
    return sorted(p.name for p in SHM.glob(f"*{stem}*"))


@pytest.mark.skipif(not SHM.is_dir() or not os.access(SHM, os.W_OK), reason="no writable /dev/shm")
@pytest.mark.heavy
@pytest.mark.parametrize("made", [1, 2, 3, 4])
def test_the_segments_of_a_killed_runs_process_are_removed_and_no_other(tmp_path, made):
    """Killed once `made` of the four files exist; the maker goes on making the others meanwhile, and the
    watcher stops it wherever it is."""
    stem = f"fastrtps_perfgatetest{secrets.token_hex(6)}"
    other = SHM / f"fastrtps_perfgatetest{secrets.token_hex(6)}"  # no process of the run holds it: not the run's
    other.write_bytes(b"")
    run_id = f"test-{secrets.token_hex(6)}"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, run_id, stem, "0.2", MAKER],
                              stdout=subprocess.PIPE, text=True)
    try:
        folder = Path(holder.stdout.readline().strip())
        for _ in range(made):
            holder.stdout.readline()  # the maker made one more file
        assert folder.is_dir() and len(files_of(stem)) >= made
    finally:
        holder.kill()
        holder.wait()
    try:
        assert wait_until(lambda: not folder.exists() and files_of(stem) == [], FOLLOW_LIMIT_S), files_of(stem)
        assert other.exists()
    finally:
        for name in files_of(stem):
            (SHM / name).unlink(missing_ok=True)
        other.unlink(missing_ok=True)
        for pid in watcher.carriers(f"{RUN_ID_ENV}={run_id}".encode()):
            os.kill(pid, signal.SIGKILL)


def test_left_segments_are_the_held_ones_and_their_companions_unless_in_use():
    held = {"fastrtps_a1", "fastrtps_port7411", "ca_key.pem"}
    present = {"fastrtps_a1", "fastrtps_a1_el", "sem.fastrtps_a1_mutex", "fastrtps_b2", "fastrtps_port7411",
               "sem.fastrtps_port7411_mutex"}
    assert watcher.left_segments(held, present, in_use={"fastrtps_port7411"}) == {
        "fastrtps_a1", "fastrtps_a1_el", "sem.fastrtps_a1_mutex", "sem.fastrtps_port7411_mutex"}
    assert watcher.left_segments(set(), present, set()) == set()
