"""Both arms of an A/B measure one sub-experiment at the same time, taking turns.

Measured one after the other, each arm's run sees its own few seconds of the machine: where the
host happens to run the vCPUs, a neighbour's burst, a timer storm. On the development VM that state
moves a run's median by 5-15 % between two runs started a second apart, while two halves of one
run, interleaved in blocks of 50 round trips, agree to within 1 % (docs/verdict.md). So both arms'
processes are started together and their publishers pass a turn back and forth over a Unix socket
pair (native/src/turns.hpp): one block of round trips each, so a state lasting longer than a block
hits both arms alike. Only one arm measures at any moment; the other's processes sleep.
"""
from __future__ import annotations

import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from .. import schema as s
from ..fastdds.harness import HarnessPaths
from ..measure import commands, subexperiment
from ..measure import options as run_options
from ..measure import supervise as supervision

# The turn's length: long enough that passing it (two wake-ups, tens of microseconds here) is
# nothing next to the block, short enough that the machine's state rarely changes within one.
DEFAULT_TURN_SAMPLES = 50
# The first round trips of a turn find what the other arm's turn left: cold caches, threads asleep.
# Measured here with no warm-up: the first 1.8-2.6x the turn's median, the second 1.2x, the fourth
# 1.02x; so each turn after the payload's first begins with this many unrecorded round trips.
TURN_WARMUP = 5


def turn_timeout(options: run_options.RunOptions) -> float:
    """A side waits while the other measures, and while the other retries a failed discovery."""
    return 2 * options.timeout_s + subexperiment.DISCOVERY_ATTEMPTS * supervision.DISCOVERY_WATCHDOG_S


Arm = tuple[run_options.RunOptions, HarnessPaths]
Result = subexperiment.SubexperimentResult


def measure_in_turns(sub: s.SubExperiment, first: Arm, second: Arm, environment: dict[str, str], workdir: Path,
                     turn_samples: int) -> tuple[Result, Result]:
    """`first` takes the first turn. A side that fails ends the other's run too (its end of the
    socket closes, so the other's wait fails): a round counts only when both arms finished."""
    first_end, second_end = socket.socketpair()
    cancel = threading.Event()
    # The first turn: a byte waiting at the first arm's end before either process exists.
    second_end.send(b"t")

    def measure(arm: Arm, end: socket.socket) -> Result:
        options, paths = arm
        turns = commands.Turns(end.fileno(), turn_samples, TURN_WARMUP)
        try:
            return subexperiment.run_subexperiment(sub, replace(options, timeout_s=turn_timeout(options)), paths,
                                                   environment, workdir, turns=turns, cancel=cancel)
        finally:
            end.close()  # our copy: with the process gone, the partner's wait now ends

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="perfgate-turns") as pool:
        futures = [pool.submit(measure, first, first_end), pool.submit(measure, second, second_end)]
        try:
            return futures[0].result(), futures[1].result()
        except BaseException:
            # Ctrl-C or SIGTERM (as KeyboardInterrupt) reaches this thread only: stop both sides'
            # processes before the pool's exit waits for them.
            cancel.set()
            raise
