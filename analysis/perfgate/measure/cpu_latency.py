"""Optionally keeping idle CPUs awake while perfgate measures: a CPU wake-up latency request of 0 us.

A round trip is mostly two wake-ups: the echoing process sleeps until the ping arrives, the
publisher sleeps until the pong does. When a CPU has nothing to run it enters an idle state, and
leaving it costs time that has nothing to do with Fast DDS. On a virtual machine the cost is large:
a halted vCPU goes back to the host, which must schedule it again. The kernel's PM QoS interface
bounds it: while a process keeps /dev/cpu_dma_latency open with a 32-bit value written to it, the
cpuidle governor only chooses idle states that wake within that many microseconds; 0 means
polling (tuned's latency-performance profile does the same, force_latency). The request belongs
to the open file, so it ends when perfgate closes it or dies, even by SIGKILL.

Whole runs and latency A/Bs differ here (docs/verdict.md, "Keeping idle CPUs awake in turns"):
- A single run (`perfgate run`, the gate's own run, throughput) keeps the system's idle policy by
  default: its absolute figures are compared with requirements and history recorded that way.
- A latency A/B (`perfgate ab`, `perfgate bisect`, the gate's A/B against a baseline build) keeps idle
  CPUs awake by default (AB_DEFAULT). Its arms take turns, so they share whatever state the wake-ups
  are in; keeping the CPUs awake removes the wake-up time and the tail it made. Measured interleaved
  on the 2-vCPU development VM: a round of the ten sub-experiments 76 s instead of 122 s, and the
  verdict's d less noisy (robust sd 0.65 times as large, median over its 20 tests). Measured before
  turns, with whole runs one after the other, it had made the relative spread grow.

`request_metadata` is pure; `hold_awake` is the thin part that opens the device.
"""
from __future__ import annotations

import contextlib
import os
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

from ..errors import InputError
from ..model import IDLE_AWAKE, IDLE_SYSTEM, CpuLatency

PM_QOS_DEVICE = Path("/dev/cpu_dma_latency")
CPUIDLE_SYS = Path("/sys/devices/system/cpu/cpuidle")
LATENCY_SYSTEM = IDLE_SYSTEM  # the default: the system's idle policy, untouched
LATENCY_AWAKE = IDLE_AWAKE  # hold 0 us when the device can be opened, else warn and measure anyway
CHOICES = (LATENCY_SYSTEM, LATENCY_AWAKE)
AB_DEFAULT = LATENCY_AWAKE  # a latency A/B's, when --cpu-latency is not given (see above)
AWAKE_US = 0


def parse_request(text: str | None, default: str = LATENCY_SYSTEM) -> str:
    value = default if text is None else text.strip()
    if value not in CHOICES:
        raise InputError(f"--cpu-latency must be one of {', '.join(CHOICES)}, not {text!r}")
    return value


def request_metadata(requested: str, held_us: int | None, idle_driver: str | None, problem: str | None) -> dict:
    """The metadata.json "cpu_latency" entry."""
    entry = {"requested": requested, "held_us": held_us, "idle_driver": idle_driver}
    if problem is not None:
        entry["problem"] = problem
    return entry


def held_mode(requested: str | None, held_us: int | None) -> str:
    """What a measurement ran under: awake only when the request was held (a record without the entry,
    from before the option existed, measured under the system's policy)."""
    return CpuLatency(requested=requested, held_us=held_us).mode()


def warning_text(entry: dict) -> str | None:
    """A line for stderr when awake was asked for and could not be held."""
    if entry["requested"] != LATENCY_AWAKE or entry["held_us"] is not None:
        return None
    return (f"could not keep idle CPUs awake ({entry.get('problem')}): wake-up latency of idle CPUs adds "
            f"to every round trip and varies (grant the runner write access to {PM_QOS_DEVICE}, see ci/runner/README.md)")


def idle_driver(cpuidle: Path = CPUIDLE_SYS) -> str | None:
    with contextlib.suppress(OSError):
        return (cpuidle / "current_driver").read_text().strip() or None
    return None


@contextlib.contextmanager
def hold_awake(requested: str, device: Path = PM_QOS_DEVICE) -> Iterator[dict]:
    """While open: idle CPUs poll instead of halting (awake), or the system decides (system).

    Yields the metadata entry. A device that cannot be opened is not an error: the run measures and
    the entry (and a warning) say so.
    """
    driver = idle_driver()
    if requested == LATENCY_SYSTEM:
        yield request_metadata(requested, None, driver, None)
        return
    try:
        handle = os.open(device, os.O_WRONLY | os.O_CLOEXEC)
    except OSError as error:
        yield request_metadata(requested, None, driver, f"{device}: {error.strerror}")
        return
    try:
        os.write(handle, struct.pack("i", AWAKE_US))
        yield request_metadata(requested, AWAKE_US, driver, None)
    finally:
        os.close(handle)


def warn(command: str, entry: dict) -> None:
    text = warning_text(entry)
    if text is not None:
        print(f"{command}: warning: {text}", file=sys.stderr, flush=True)
