"""Options of a run: validated before anything is built or written (InputError: exit 2)."""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping


from .. import claims, outputs
from . import cpu_latency, platform_info
from .. import schema as s
from ..cli_types import label_problem
from ..errors import InputError

# The default run: the ten of the contract, then the machine's floor (plain sockets), so that every
# report can say how much of the latency is Fast DDS and how much the machine. `check` only checks
# what the requirements list, so the floor is measured but never gated.
DEFAULT_RUN_SUBEXPERIMENTS: tuple[str, ...] = s.DEFAULT_SUBEXPERIMENT_NAMES + s.FLOOR_SUBEXPERIMENT_NAMES
DEFAULT_WARMUP = 100

# Time limits. A sub-experiment's default limit is a fixed allowance for start-up and discovery
# plus a budget per round trip far above any loopback round trip (even 16 KiB over TCP with
# security stays well under a millisecond), so only a hang reaches it.
STARTUP_ALLOWANCE_S = 60.0
ROUND_TRIP_BUDGET_S = 0.002
# a throughput test's own time, plus the harness's waits for acknowledgements (5 s) and a report (3 s)
TEST_ALLOWANCE_S = 10.0


# --- options ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ThroughputSettings:
    """The throughput experiment's tests: every payload x demand x recovery time, for time_s each."""

    demands: tuple[int, ...]
    recovery_times_ms: tuple[int, ...]
    time_s: float

    def timeout_s(self, payloads: int) -> float:
        """Start-up, then per test its time, its recovery and the wait for its report and acknowledgements."""
        tests = payloads * len(self.demands) * len(self.recovery_times_ms)
        return STARTUP_ALLOWANCE_S + tests * (self.time_s + max(self.recovery_times_ms) / 1000 + TEST_ALLOWANCE_S)


@dataclass(frozen=True)
class RunOptions:
    output: Path
    label: str
    samples: int
    payloads: tuple[int, ...]
    subexperiments: tuple[s.SubExperiment, ...]
    warmup: int
    timeout_s: float
    pin_cpus: tuple[int, int] | None  # (publisher's CPU, subscriber's CPU)
    pin_request: str  # as asked: auto, none, or the CPUs
    harness: Path | None
    fastdds_prefix: Path | None
    # sub-experiment -> ns the echoing side busy-waits before each echo (perfgate ab --inject-delay-ns)
    echo_delay_ns: Mapping[str, int] = field(default_factory=dict)
    cpu_latency: str = cpu_latency.LATENCY_SYSTEM  # awake: idle CPUs kept polling while measuring (cpu_latency.py)
    throughput: ThroughputSettings | None = None  # bursts instead of round trips (perfgate throughput)
    command: str = "run"  # the perfgate command measuring, which every message names (`perfgate <command>: ...`)


MAX_HARNESS_COUNT = 100_000_000  # samples and warm-up round trips the harness takes (native/src/options.cpp)


def default_timeout(samples: int, warmup: int, payloads: int, subscribers: int = 1) -> float:
    """One-to-many: the publisher writes to every subscriber, and the round trip grew with them here
    (16 subscribers with security, under load: 5 ms, 17 times one subscriber's), so the budget scales."""
    return STARTUP_ALLOWANCE_S + (samples + warmup) * payloads * ROUND_TRIP_BUDGET_S * subscribers


def parse_pin_cpus(text: str | None, allowed: set[int], isolated: list[int] | None = None) -> tuple[int, int] | None:
    """--pin-cpus -> (publisher's CPU, subscriber's CPU), or None for not pinned.

    "auto" (the default, also for None): two distinct CPUs, isolated ones first, when the machine
    has two (unpinned, publisher and subscriber share a CPU in some runs and not in others, the
    largest noise source measured here); "none": not pinned; "PUB,SUB" or one CPU for both.
    """
    text = s.PIN_AUTO if text is None else str(text).strip()
    if text == s.PIN_NONE:
        return None
    if text == s.PIN_AUTO:
        pin = platform_info.choose_pinned_cpus(allowed, isolated if isolated is not None else [])
        if pin is not None and shutil.which("taskset") is None:
            return None  # auto never fails a run: it pins where it can
        return pin
    parts = [p.strip() for p in text.split(",")]
    if "" in parts:  # `0,` from $PERFGATE_PIN_CPUS (which no option parser sees) would pin both sides to CPU 0
        raise InputError(f"--pin-cpus {text!r} has an empty item (one or two CPU numbers separated by a comma)")
    if not 1 <= len(parts) <= 2 or not all(p.isdigit() for p in parts):
        raise InputError(f"--pin-cpus takes auto, none, or one or two CPU numbers (PUB,SUB), got {text!r}")
    cpus = [int(p) for p in parts]
    unavailable = [c for c in cpus if c not in allowed]
    if unavailable:
        raise InputError(f"--pin-cpus: CPU {unavailable[0]} is not available to this process "
                         f"(available: {','.join(map(str, sorted(allowed)))})")
    if shutil.which("taskset") is None:
        raise InputError("--pin-cpus needs taskset (util-linux), which is not on PATH")
    return (cpus[0], cpus[-1])


def machine_pin_cpus(text: str | None) -> tuple[int, int] | None:
    """parse_pin_cpus on this machine's CPUs."""
    return parse_pin_cpus(text, platform_info.pinnable_cpus(), platform_info.isolated_cpus())


def cpu_pinning_metadata(pin: tuple[int, int] | None, requested: str | None = None) -> dict:
    return {"pinned": pin is not None, "publisher_cpu": pin[0] if pin else None,
            "subscriber_cpu": pin[1] if pin else None,
            "requested": s.PIN_AUTO if requested is None else str(requested)}


def one_to_many_names(names: list[str], subscribers: int | None) -> list[str]:
    """--subscribers N: `<sub>_1to<N>` of every named latency sub-experiment with one subscriber.

    When none of the named has one subscriber (only floors, or `_1to<M>` names already), the option
    would add nothing: refused rather than ignored, since a run the user asked to measure one-to-many
    that measures none looks like one that did."""
    if subscribers is None:
        return []
    if not 2 <= int(subscribers) <= s.MAX_SUBSCRIBERS:
        raise InputError(f"--subscribers takes 2 to {s.MAX_SUBSCRIBERS} (one subscriber is every other "
                         f"sub-experiment), got {subscribers}")
    bases = [s.KNOWN_SUBEXPERIMENTS[n] for n in names]
    takers = [b for b in bases if not b.is_floor and b.subscribers == 1]
    if not takers:
        raise InputError(f"--subscribers {subscribers} adds nothing: each selected sub-experiment ({', '.join(names)}) "
                         "is a floor or one-to-many already; select one with one subscriber, or drop --subscribers")
    added = [s.one_to_many_name(b.name, int(subscribers)) for b in takers]
    return [name for name in added if name not in names]  # named already: measured once


def resolve_label(label: str | None, output: Path) -> str:
    """The experiment's label: --label, else the output folder's name; InputError when it is not
    printable text (cli_types.label_problem: it ends up in metadata, reports, JUnit and messages)."""
    chosen = Path(output).resolve().name if label is None else str(label)
    problem = label_problem(chosen)
    if problem is None:
        return chosen
    if label is not None:
        raise InputError(f"--label: the label {ascii(chosen)} {problem}")
    raise InputError(f"the output folder's name {ascii(chosen)}, the default label, {problem}: give --label")


def check_output_folder(output: Path) -> None:
    if output.is_symlink() and not output.exists():  # mkdir (or, for a loop, resolve) would be a traceback
        raise InputError("the output folder is a link to nothing (or a loop of links)", output)
    if output.exists() and not output.is_dir():
        raise InputError("output is a file, not a folder", output)
    if output.is_dir() and not claims.is_unclaimed_empty(output):  # a killed command's claim marker alone is empty
        raise InputError("output folder is not empty (a run writes a fresh experiment folder)", output)
    # a parent that is a file, a read-only or virtual file system (/proc): before anything is built or measured
    outputs.require_writable(output, "output folder", folder=True)


def resolve_options(*, output, samples, payloads, subexperiments, label, warmup, harness,
                    fastdds_prefix, pin_cpus, timeout, cpu_latency_request=None, subscribers=None,
                    command="run") -> RunOptions:
    """Validate the command line; InputError (exit 2) before anything is built or written."""
    output = Path(output)
    check_output_folder(output)
    names = list(subexperiments) if subexperiments else list(DEFAULT_RUN_SUBEXPERIMENTS)
    for name in names:
        try:
            s.resolve_subexperiment(name)
        except ValueError as error:
            known = f"; known: {', '.join(s.KNOWN_SUBEXPERIMENTS)}, and <sub>{s.ONE_TO_MANY_INFIX}<N>"
            raise InputError(f"{error}{known if str(error).startswith('unknown') else ''}") from None
    names += one_to_many_names(names, subscribers)
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InputError(f"sub-experiment {duplicated[0]!r} is named twice")
    payloads = tuple(payloads) if payloads else s.PAYLOADS
    if len(set(payloads)) != len(payloads):
        raise InputError(f"--payloads names a payload twice: {','.join(map(str, payloads))}")
    if samples is None or samples < 2:
        raise InputError(f"--samples must be at least 2 (a payload needs two samples), got {samples}")
    if samples > MAX_HARNESS_COUNT:  # the harness would refuse it after the run started: say so before
        raise InputError(f"--samples must be at most {MAX_HARNESS_COUNT} (the harness's limit), got {samples}")
    warmup = DEFAULT_WARMUP if warmup is None else int(warmup)
    if not 0 <= warmup <= MAX_HARNESS_COUNT:
        raise InputError(f"--warmup must be from 0 to {MAX_HARNESS_COUNT} (the harness's limit), got {warmup}")
    if timeout is not None and not float(timeout) > 0:  # 0 is not "no limit": refused, never quietly replaced
        raise InputError(f"--timeout must be more than zero seconds, got {timeout}")
    if harness is not None and not Path(harness).is_file():
        raise InputError("harness executable not found", harness)
    if fastdds_prefix is not None and not Path(fastdds_prefix).is_dir():
        raise InputError("Fast DDS prefix is not a folder", fastdds_prefix)
    subs = tuple(s.KNOWN_SUBEXPERIMENTS[n] for n in names)
    return RunOptions(
        output=output,
        label=resolve_label(label, output),
        samples=int(samples),
        payloads=payloads,
        subexperiments=subs,
        warmup=warmup,
        timeout_s=float(timeout) if timeout is not None else default_timeout(
            samples, warmup, len(payloads), max(sub.subscribers for sub in subs)),
        pin_cpus=machine_pin_cpus(pin_cpus),
        pin_request=s.PIN_AUTO if pin_cpus is None else str(pin_cpus),
        harness=Path(harness).resolve() if harness is not None else None,
        fastdds_prefix=Path(fastdds_prefix).resolve() if fastdds_prefix is not None else None,
        cpu_latency=cpu_latency.parse_request(cpu_latency_request),
        command=command,
    )
