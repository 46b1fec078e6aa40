"""Issue 44's hostile git URLs: `--git-url fd::17` hung `perfgate bisect` for ever and left git behind. A
repository URL from outside names no git remote helper (`<transport>::`, a scheme git does not move data
with), refused in one line (exit 2) before anything is made by every command that takes one; git itself
runs with only data-moving transports allowed (a URL read from a fetched .gitmodules is not checked by
the option), never prompts, and in a process group of its own that a stopped perfgate kills whole."""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import perfgate_in_process, terminal_signals, wait_until
from perfgate import schema as s
from perfgate.errors import InputError
from perfgate.fastdds import git

HOSTILE_URLS = ["fd::17", "ext::sh -c touch% pwned", "EXT::sh", "fd::0,1/x", "github.com::x", "foo://host/repo",
                "testgit::/srv/repo"]
WAIT_LIMIT_S = 60.0  # for a process to get going on a loaded machine; not a timing assertion


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_a_remote_helper_url_is_refused_by_the_shared_check(url):
    with pytest.raises(InputError, match="git's remote helper") as refused:
        git.check_git_url(url, "--git-url")
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("url", ["https://github.com/eProsima/Fast-DDS.git", "ssh://git@github.com/e/F.git",
                                 "git@github.com:eProsima/Fast-DDS.git", "git://host/repo", "file:///srv/repo",
                                 "git+ssh://host/repo", "/srv/a::b", "./x::y"])
def test_a_data_moving_url_or_a_folder_passes(url):
    assert git.check_git_url(url, "--git-url") == url


@pytest.mark.parametrize("command", ["bisect", "build", "bisect-events"])
@pytest.mark.parametrize("url", ["fd::17", "ext::sh -c touch% pwned"])
def test_every_command_refuses_it_in_one_line_before_anything_is_made(tmp_path, command, url):
    options = {"bisect": ["--good", "main", "--bad", "dev", "--output", str(tmp_path / "out")],
               "build": ["--commit", "main"],
               "bisect-events": ["--events", str(tmp_path / "events.csv"), "--output", str(tmp_path / "out"),
                                 "--max", "1", "--time-budget", "60"]}[command]
    done = perfgate_in_process(command, "--workspace", str(tmp_path / "ws"), "--git-url", url, *options, cwd=tmp_path)
    assert done.returncode == s.EXIT_USAGE, done.stderr
    assert done.stderr.count("\n") == 1 and f"--git-url {url!r} starts with" in done.stderr, done.stderr
    assert sorted(tmp_path.iterdir()) == []  # no workspace, no output, no `pwned`


def processes_naming(text: str) -> list[int]:
    """Live (not zombie) processes whose command line holds `text`."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            if text.encode() in (proc / "cmdline").read_bytes() and state not in ("Z", "X"):
                found.append(int(proc.name))
    return found


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def test_git_refuses_a_remote_helper_the_option_never_saw(tmp_path):
    """A URL that reaches git by another way (a fetched commit's .gitmodules): git-remote-fd is not run, so
    git ends at once rather than waiting for a descriptor. Run in a child, whose end is bounded, as the
    unfixed git hung."""
    url = f"fd::17/{tmp_path.name}"  # what follows the `/` only names the remote, for processes_naming
    code = f"from perfgate.fastdds import git; done = git.run_git(['ls-remote', {url!r}]); print(done.stderr)"
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT_LIMIT_S)
    finally:
        kill_all(processes_naming(url))
    assert done.returncode == 0, done.stderr
    assert "transport 'fd' not allowed" in done.stdout


@pytest.fixture
def silent_server():
    """A TCP port that accepts connections (the kernel's backlog) and never answers: a git fetch from it
    waits in git-remote-http until killed."""
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(8)
        yield f"http://127.0.0.1:{listening.getsockname()[1]}/silent.git"


@pytest.mark.heavy
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_bisect_leaves_no_git_behind(tmp_path, silent_server, stop):
    bisect = subprocess.Popen([sys.executable, "-m", "perfgate.cli", "bisect", "--workspace", str(tmp_path / "ws"),
                               "--git-url", silent_server, "--good", "main", "--bad", "dev",
                               "--output", str(tmp_path / "out")],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              preexec_fn=terminal_signals)  # SIGINT passed on ignored by a background runner
    try:
        # git fetch, and the git-remote-http it started, waiting for the silent server's answer
        assert wait_until(lambda: len(processes_naming(silent_server)) >= 2, WAIT_LIMIT_S), \
            bisect.stderr.read() if bisect.poll() is not None else processes_naming(silent_server)
        bisect.send_signal(stop)
        _, stderr = bisect.communicate(timeout=WAIT_LIMIT_S)
        left = processes_naming(silent_server)
    finally:
        bisect.kill()
        bisect.wait()
        kill_all(processes_naming(silent_server))
    assert bisect.returncode == 130 and stderr.strip().splitlines() == ["perfgate bisect: interrupted"], stderr
    assert left == []
