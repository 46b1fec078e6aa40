"""process_group: a group ended by SIGKILL is waited for until none of its members runs, not only its
leader (a stopped harness build left the linker of a try-compile running for a moment: CI saw it)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from perfgate import process_group

# a leader that starts a grandchild ignoring SIGTERM and sleeping: SIGKILL alone ends it
LEADER = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
          "'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)']); time.sleep(60)")


def test_living_members_lists_a_group_and_nothing_after_it_ended():
    leader = subprocess.Popen([sys.executable, "-c", LEADER], start_new_session=True)
    try:
        while len(process_group.living_members(leader.pid)) < 2:
            pass
        assert leader.pid in process_group.living_members(leader.pid)
    finally:
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()
    process_group.wait_until_group_ended(leader.pid)
    assert process_group.living_members(leader.pid) == []


def test_a_body_that_raises_leaves_no_member_of_the_group_running():
    try:
        with process_group.own_group([sys.executable, "-c", LEADER]) as leader:
            while len(process_group.living_members(leader.pid)) < 2:
                pass
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert process_group.living_members(leader.pid) == []
