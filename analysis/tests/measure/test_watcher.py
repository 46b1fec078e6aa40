"""The watcher of a scratch folder (issue 23): a perfgate killed by SIGKILL left its run's keys and
certificates in /dev/shm until the next run. Real processes: a Python process holding a scratch
folder with a key in it and a process carrying its run id (one that does not die with its parent,
as a harness does), killed outright; and the same ended normally, which leaves no watcher."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from perfgate.measure import scratch, watcher
from perfgate.measure.environment import RUN_ID_ENV
from conftest import wait_until

HOLDER = textwrap.dedent("""\
    import os, subprocess, sys, time
    from perfgate.measure import scratch
    with scratch.scratch_folder("test", sys.argv[1]) as folder:
        (folder / "ca_key.pem").write_text("private")
        # in a session of its own and without a parent-death signal: nothing ends it but the watcher
        left = subprocess.Popen(["sleep", "600"], env={**os.environ, "PERFGATE_RUN_ID": sys.argv[1]},
                                start_new_session=True)
        print(folder, left.pid, flush=True)
        if sys.argv[2] == "stay":
            time.sleep(600)
        sys.stdin.readline()  # "end": once the test has seen the watcher (else it may be gone before it looks)
        left.kill()
        left.wait()
""")


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def watchers_of(pid: int) -> list[int]:
    """The watcher processes started for `pid`'s scratch folders (their command line names watcher.py)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        parent = next((line.split()[1] for line in status.splitlines() if line.startswith("PPid:")), None)
        if parent == str(pid) and any(part.endswith(b"watcher.py") for part in command):
            found.append(int(entry.name))
    return found


def start_holder(run_id: str, mode: str) -> tuple[subprocess.Popen, Path, int, list[int]]:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, run_id, mode], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    folder, left = holder.stdout.readline().split()
    wait_until(lambda: watchers_of(holder.pid), 10.0)
    return holder, Path(folder), int(left), watchers_of(holder.pid)


def test_a_killed_commands_scratch_folder_and_run_processes_are_gone_within_moments(tmp_path):
    run_id = f"watcher-test-{os.getpid()}-{time.monotonic_ns()}"
    holder, folder, left, watchers = start_holder(run_id, "stay")
    try:
        assert (folder / "ca_key.pem").is_file() and alive(left)
        holder.kill()
        holder.wait()
        # bounds for a loaded machine, not timings: unwatched, the key stayed until the next run started
        assert wait_until(lambda: not folder.exists(), 20.0), list(folder.iterdir())
        assert wait_until(lambda: not alive(left), 20.0)
        assert len(watchers) == 1 and wait_until(lambda: not alive(watchers[0]), 20.0)  # its job done, it is gone
    finally:
        for pid in (left, *watchers):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(folder, ignore_errors=True)
        holder.stdin.close()
        holder.stdout.close()


def test_a_command_that_ends_normally_leaves_no_watcher_and_no_folder():
    holder, folder, left, watchers = start_holder(f"watcher-test-{os.getpid()}-{time.monotonic_ns()}", "end")
    assert len(watchers) == 1
    holder.stdin.write("end\n")
    holder.stdin.close()
    assert holder.wait(timeout=60) == 0
    holder.stdout.close()
    assert not folder.exists() and not alive(left)
    assert not alive(watchers[0])


def test_the_watcher_of_this_process_ends_with_the_block_and_a_forked_child_does_not_hold_it():
    with scratch.scratch_folder("test") as folder:
        wait_until(lambda: watchers_of(os.getpid()), 10.0)
        [started] = watchers_of(os.getpid())
        child = os.fork()
        if child == 0:  # a forked worker: it must not keep the watcher's pipe open
            time.sleep(600)
            os._exit(0)
    try:
        assert not folder.exists()
        assert not alive(started)  # ended and reaped while the forked child still lives
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


def test_carriers_are_the_processes_with_the_variable_whole(tmp_path):
    for pid, environ in {"10": b"A=1\0PERFGATE_RUN_ID=abc\0", "11": b"PERFGATE_RUN_ID=abcd\0", "12": b"",
                         "self": b"PERFGATE_RUN_ID=abc\0"}.items():
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "environ").write_bytes(environ)
    assert watcher.carriers(f"{RUN_ID_ENV}=abc".encode(), tmp_path) == [10]
    assert watcher.carriers(f"{RUN_ID_ENV}=abc".encode(), tmp_path, own=10) == []


def test_a_watcher_given_a_relative_folder_removes_nothing(tmp_path):
    (tmp_path / "keep").mkdir()
    ended = subprocess.run([sys.executable, watcher.__file__, "keep"], cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert ended.returncode == 2 and (tmp_path / "keep").is_dir()
