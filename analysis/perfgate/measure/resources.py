"""resources: the CPU and memory of each harness process, sampled from /proc while a sub-experiment runs.

Every SAMPLE_INTERVAL_S a thread reads /proc/<pid>/stat (CPU time, start time, state) and
/proc/<pid>/statm (memory) of every process the supervisor started, from the moment it exists until
it is gone. A row is one interval of one process: cpu[%] is the CPU time the process spent in it
(user + system, summed over all its threads, as the kernel keeps it per thread group) over the
interval's length, 100 % being one CPU; rss[KB] and vsz[KB] are its resident and virtual memory at
the interval's end. time[ms] is the interval's end, from the start of the supervision (the first
harness process's start). The interval before a process ended is not seen: once reaped, it has no
/proc entry left to read.

Only `perfgate run` (and `perfgate throughput`, through run.run_all) samples: it opens
`collecting()` around each sub-experiment, and supervise() samples only inside one. The A/B's rounds
(perfgate ab) do not: their two arms take turns on the same CPUs, and the verdict needs nothing a
sampler could add to them.

PERFGATE_RESOURCE_SAMPLING=off turns sampling off, for benchmarks/bench_resources.py: the latency
measured with and without it, interleaved (docs/formats.md section 16 has its figures).

No dependency beyond /proc (psutil is not one of perfgate's): the parsing below is pure and tested on
real /proc text.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pandas as pd

from .. import schema as s

# 5 readings a second: several in an inter-process sub-experiment of --samples 1000 (2 s and more),
# while a reading of a publisher and a subscriber costs the sampler some 150 us of CPU (measured on
# the 2-core VM under load), 0.07 % of one CPU; benchmarks/bench_resources.py measures whether that
# moves the latency.
SAMPLE_INTERVAL_S = 0.2
# The first reading comes sooner: a sub-experiment can end within 0.2 s (intra-process, 200 samples:
# 0.25 s under load), and one that was never read would have no resources at all (a missing result).
FIRST_READING_S = 0.05
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # the unit of utime and stime in /proc/<pid>/stat
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024  # the unit of /proc/<pid>/statm
SAMPLING_ENV = "PERFGATE_RESOURCE_SAMPLING"
GONE_STATES = ("Z", "X")  # exited: a zombie's memory reads as zero, which it no longer uses


# --- /proc text (pure) -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Stat:
    state: str
    cpu_ticks: int  # utime + stime, in CLOCK_TICKS
    start_ticks: int  # starttime: ticks after boot; tells a reused pid from the process we watch


def parse_stat(text: str) -> Stat:
    """/proc/<pid>/stat (proc(5)). The command name, field 2, is in parentheses and may itself hold
    spaces and parentheses, so the fields are counted from after the last ')'."""
    end = text.rfind(")")
    if end < 0:
        raise ValueError("no ')' after the command name")
    fields = text[end + 2:].split()  # fields[0] is field 3, state
    if len(fields) < 20:
        raise ValueError(f"{len(fields) + 2} fields, expected at least 22")
    utime, stime, starttime = int(fields[11]), int(fields[12]), int(fields[19])
    return Stat(fields[0], utime + stime, starttime)


def parse_statm(text: str) -> tuple[int, int]:
    """/proc/<pid>/statm: (vsz, rss) in KB, from its first two fields, size and resident, in pages."""
    fields = text.split()
    if len(fields) < 2:
        raise ValueError(f"{len(fields)} fields, expected at least 2")
    return int(fields[0]) * PAGE_KB, int(fields[1]) * PAGE_KB


def cpu_percent(ticks_before: int, ticks_after: int, seconds: float) -> float:
    """CPU time over wall time, 100 % = one CPU busy for the whole interval."""
    return (ticks_after - ticks_before) / CLOCK_TICKS / seconds * 100.0


# --- reading and sampling ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Reading:
    stat: Stat
    vsz_kb: int
    rss_kb: int
    at: float  # time.monotonic() of the reading


def read_process(pid: int, proc: Path = Path("/proc")) -> Reading | None:
    """One reading, or None when the process is gone (or exited and not yet reaped)."""
    try:
        stat = parse_stat((proc / str(pid) / "stat").read_text())
        vsz_kb, rss_kb = parse_statm((proc / str(pid) / "statm").read_text())
    except (OSError, ValueError):
        return None
    # a process that is exiting gives up its address space before it turns zombie: read between the two,
    # its memory is zero (statm of a task without one), which is no measurement of what it used
    if stat.state in GONE_STATES or vsz_kb == 0:
        return None
    return Reading(stat, vsz_kb, rss_kb, time.monotonic())


@dataclass(frozen=True)
class Sample:
    time_ms: float
    role: str
    cpu_percent: float
    rss_kb: int
    vsz_kb: int


@dataclass
class _Watched:
    pid: int
    role: str
    last: Reading


class ResourceSampler:
    """Samples the processes it is told about, in a daemon thread, until stop()."""

    def __init__(self, started: float, interval_s: float = SAMPLE_INTERVAL_S):
        self.started = started  # time.monotonic() that time[ms] counts from
        self.interval_s = interval_s
        self.samples: list[Sample] = []
        self._watched: list[_Watched] = []
        self._lock = threading.Lock()  # watch() comes from the supervising thread
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="perfgate-resources", daemon=True)
        self._thread.start()

    def watch(self, pid: int, role: str) -> None:
        """From now on, until the process is gone. The first reading is the start of its first interval."""
        first = read_process(pid)
        if first is not None:
            with self._lock:
                self._watched.append(_Watched(pid, role, first))

    def stop(self) -> list[Sample]:
        self._stop.set()
        self._thread.join()
        return self.samples

    def _run(self) -> None:
        if self._stop.wait(max(0.0, self.started + min(FIRST_READING_S, self.interval_s) - time.monotonic())):
            return
        self.sample_once()
        ticks = 1
        # then deadlines on a fixed grid from the start: a late wake-up does not shift every later reading
        while not self._stop.wait(max(0.0, self.started + ticks * self.interval_s - time.monotonic())):
            self.sample_once()
            ticks = max(ticks + 1, int((time.monotonic() - self.started) / self.interval_s) + 1)

    def sample_once(self) -> None:
        with self._lock:
            watched = list(self._watched)
        gone = []
        for entry in watched:
            reading = read_process(entry.pid)
            if reading is None or reading.stat.start_ticks != entry.last.stat.start_ticks:
                gone.append(entry)
                continue
            seconds = reading.at - entry.last.at
            if seconds <= 0:
                continue
            self.samples.append(Sample(
                round((reading.at - self.started) * 1000.0, 3), entry.role,
                cpu_percent(entry.last.stat.cpu_ticks, reading.stat.cpu_ticks, seconds),
                reading.rss_kb, reading.vsz_kb))
            entry.last = reading
        if gone:
            with self._lock:
                self._watched = [entry for entry in self._watched if entry not in gone]


def samples_frame(samples: list[Sample]) -> pd.DataFrame:
    """resources_<sub>.csv's table (docs/formats.md section 16), in the order sampled."""
    return pd.DataFrame({
        s.RESOURCE_TIME: [sample.time_ms for sample in samples],
        s.RESOURCE_ROLE: [sample.role for sample in samples],
        s.RESOURCE_CPU: [sample.cpu_percent for sample in samples],
        s.RESOURCE_RSS: pd.Series([sample.rss_kb for sample in samples], dtype="int64"),
        s.RESOURCE_VSZ: pd.Series([sample.vsz_kb for sample in samples], dtype="int64"),
    }, columns=list(s.RESOURCE_COLUMNS))


# --- who samples: only inside collecting() -----------------------------------------------------------
@dataclass
class Collected:
    """The samples of the last supervision inside collecting(): a sub-experiment tried again in a fresh
    domain (measure.subexperiment) keeps the attempt that measured."""

    samples: list[Sample] = field(default_factory=list)
    interval_s: float = SAMPLE_INTERVAL_S  # perfgate topology --sampling sets its own


_COLLECTING: ContextVar[Collected | None] = ContextVar("perfgate_resources", default=None)


def sampling_on() -> bool:
    return os.environ.get(SAMPLING_ENV, "on") != "off"


def sampling_metadata() -> dict:
    """metadata.json's `resource_sampling`."""
    if not sampling_on():
        return {"interval_s": None, "source": None, "off_by": f"{SAMPLING_ENV}=off"}
    return {"interval_s": SAMPLE_INTERVAL_S, "source": "/proc"}


@contextlib.contextmanager
def collecting(interval_s: float = SAMPLE_INTERVAL_S) -> Iterator[Collected]:
    collected = Collected(interval_s=interval_s)
    token = _COLLECTING.set(collected)
    try:
        yield collected
    finally:
        _COLLECTING.reset(token)


@contextlib.contextmanager
def sampling() -> Iterator[ResourceSampler | None]:
    """A sampler for one supervision when inside collecting(), else None; its samples go to the
    collection when the supervision ends, however it ends."""
    collected = _COLLECTING.get()
    if collected is None or not sampling_on():
        yield None
        return
    sampler = ResourceSampler(time.monotonic(), collected.interval_s)
    try:
        yield sampler
    finally:
        collected.samples = sampler.stop()
