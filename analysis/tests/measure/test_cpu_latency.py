"""Keeping idle CPUs awake: the request's metadata and warning, and the real PM QoS device."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from perfgate.measure import cpu_latency as cl
from perfgate.errors import InputError


def open_targets() -> set[str]:
    return {os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
            if os.path.exists(f"/proc/self/fd/{fd}")}


def test_a_latency_ab_keeps_idle_cpus_awake_unless_told_while_a_run_keeps_the_systems_policy(tmp_path):
    from perfgate.ab import latency as ab
    from perfgate.measure import options

    def planned(**given):
        return ab.plan_ab(output=tmp_path / "ab", baseline="system", candidate="system", **given).options.cpu_latency
    assert planned() == "awake" and planned(cpu_latency_request="system") == "system"
    run = options.resolve_options(output=tmp_path / "run", samples=10, payloads=None, subexperiments=None, label=None,
                                  warmup=None, harness=None, fastdds_prefix=None, pin_cpus=None, timeout=None)
    assert run.cpu_latency == "system"
    assert not (tmp_path / "ab").exists() and not (tmp_path / "run").exists()  # planning writes nothing


def test_what_a_measurement_ran_under_is_awake_only_where_the_request_was_held():
    assert cl.held_mode("awake", 0) == "awake"
    assert cl.held_mode("awake", None) == "system"  # asked for, not held: the device was not writable
    assert cl.held_mode("system", None) == "system" and cl.held_mode(None, None) == "system"


def test_request_parses_system_by_default_and_refuses_other_words():
    assert cl.parse_request(None) == "system"
    assert cl.parse_request(" awake ") == "awake"
    with pytest.raises(InputError, match="--cpu-latency must be one of system, awake, not 'poll'"):
        cl.parse_request("poll")


def test_a_request_that_could_not_be_held_warns_and_says_why():
    entry = cl.request_metadata("awake", None, "haltpoll", "/dev/cpu_dma_latency: Permission denied")
    assert entry == {"requested": "awake", "held_us": None, "idle_driver": "haltpoll",
                     "problem": "/dev/cpu_dma_latency: Permission denied"}
    assert "could not keep idle CPUs awake (/dev/cpu_dma_latency: Permission denied)" in cl.warning_text(entry)
    assert cl.warning_text(cl.request_metadata("awake", 0, None, None)) is None
    assert cl.warning_text(cl.request_metadata("system", None, None, None)) is None


def test_a_device_that_cannot_be_opened_is_recorded_not_raised(tmp_path):
    with cl.hold_awake("awake", device=tmp_path / "absent") as entry:
        assert entry["held_us"] is None
        assert entry["problem"] == f"{tmp_path / 'absent'}: No such file or directory"


def test_system_leaves_the_device_alone():
    with cl.hold_awake("system") as entry:
        assert entry["held_us"] is None and "problem" not in entry
        assert str(cl.PM_QOS_DEVICE) not in open_targets()


@pytest.mark.skipif(not os.access(cl.PM_QOS_DEVICE, os.W_OK), reason="needs write access to /dev/cpu_dma_latency")
def test_the_request_is_held_while_open_and_released_after():
    with cl.hold_awake("awake") as entry:
        assert entry["held_us"] == 0 and "problem" not in entry
        assert str(cl.PM_QOS_DEVICE) in open_targets()
        # the kernel reads back the strictest request in force: ours
        assert int.from_bytes(Path(cl.PM_QOS_DEVICE).read_bytes()[:4], "little") == 0
    assert str(cl.PM_QOS_DEVICE) not in open_targets()


@pytest.mark.fastdds
def test_a_run_asked_to_keep_cpus_awake_holds_the_request_while_measuring(harness_paths, tmp_path):
    """A real `perfgate run --cpu-latency awake`: metadata says what was held, and nothing is held after."""
    import subprocess
    import sys

    from perfgate import files

    done = subprocess.run([sys.executable, "-m", "perfgate.cli", "run", "--output", str(tmp_path / "out"),
                           "--subexperiments", "interprocess_best_effort", "--payloads", "16,1024",
                           "--samples", "50", "--harness", str(harness_paths.latency), "--cpu-latency", "awake"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    entry = files.read_metadata(tmp_path / "out")["cpu_latency"]
    assert entry["requested"] == "awake" and entry["idle_driver"] == cl.idle_driver()
    if os.access(cl.PM_QOS_DEVICE, os.W_OK):
        assert entry["held_us"] == 0 and "could not keep idle CPUs awake" not in done.stderr
    else:
        assert entry["held_us"] is None and "could not keep idle CPUs awake" in done.stderr
