"""The harness's command lines for one sub-experiment: pure, options in, process specs out."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


from .. import schema as s
from .domains import own_port
from .options import RunOptions

DISCOVERY_TIMEOUT_S = 10  # passed to the harness, which reports the failure itself (exit 3)
SAMPLE_TIMEOUT_MS = 1000  # one round trip waiting longer than this counts as lost


# --- the harness command lines ------------------------------------------------------------------
@dataclass(frozen=True)
class ProcessSpec:
    """One harness process: started in list order, each after the previous printed "ready"."""

    role: str
    argv: tuple[str, ...]
    measures: bool  # writes the CSV and the report; the sub-experiment ends when it does
    cpus: tuple[int, ...] | None = None
    expects_match: bool = True  # prints "matched" once discovery completed
    pass_fds: tuple[int, ...] = ()  # inherited descriptors (the turn-taking socket)


@dataclass(frozen=True)
class Turns:
    """Measuring in turns with another build's publisher (perfgate ab, turns.hpp in the harness):
    this side's end of the socket pair, the recorded round trips per turn, and the unrecorded ones
    that begin each turn after the payload's first."""

    socket: int
    samples: int
    warmup: int = 0


def _payload_text(values: tuple[int, ...]) -> str:
    return ",".join(str(v) for v in values)


def latency_commands(sub: s.SubExperiment, options: RunOptions, harness: Path, domain: int,
                     csv: Path, report: Path, security_dir: Path | None, turns: Turns | None = None) -> list[ProcessSpec]:
    """perfgate-latency: one "both" process for intra-process delivery (its N subscribers inside), else the
    publisher, then its N subscribers (their order is their index; the last echoes)."""
    common = [
        str(harness),
        "--transport", sub.transport,
        "--reliability", sub.reliability,
        "--domain", str(domain),
        "--shm", "on" if sub.transport == "shm" else "off",
        "--data-sharing", "on" if sub.zero_copy else "off",
        *(["--loans", "on"] if sub.zero_copy else []),
        "--discovery-timeout-s", str(DISCOVERY_TIMEOUT_S),
        "--sample-timeout-ms", str(SAMPLE_TIMEOUT_MS),
    ]
    if sub.transport == "tcpv4":
        common += ["--tcp-port", str(own_port(domain))]
    experiment: list[str] = []
    if options.throughput is not None:  # both sides: the subscriber's reader keeps a whole burst
        experiment = ["--experiment", "throughput", "--burst-sizes", _payload_text(options.throughput.demands),
                      "--recovery-times-ms", _payload_text(options.throughput.recovery_times_ms)]
        measuring = experiment + ["--test-time-ms", str(round(options.throughput.time_s * 1000)),
                                  "--payloads", _payload_text(options.payloads), "--output", str(csv)]
    else:
        measuring = [
            "--samples", str(options.samples),
            "--warmup", str(options.warmup),
            "--payloads", _payload_text(options.payloads),
            "--output", str(csv),
            "--report", str(report),
        ]
    fds: tuple[int, ...] = ()
    if turns is not None:
        measuring += ["--take-turns", str(turns.socket), "--turn-samples", str(turns.samples),
                      "--turn-warmup", str(turns.warmup)]
        fds = (turns.socket,)
    pin = options.pin_cpus

    def security(name: str) -> list[str]:
        return ["--security-dir", str(security_dir), "--security-name", name] if security_dir else []

    delay = options.echo_delay_ns.get(sub.name, 0)
    echo_delay = ["--echo-delay-ns", str(delay)] if delay else []
    if sub.transport == "intraprocess":
        # Taking turns, the two arms' processes must share one CPU: free to use both, each sat on
        # one of them for seconds, and one vCPU here runs the round trip 1.7x slower than the other
        # (docs/verdict.md, "The intra-process round trip").
        cpus = (pin[0],) if pin and turns is not None else tuple(sorted(set(pin))) if pin else None
        return [ProcessSpec("both", tuple(common + ["--role", "both", "--subscribers", str(sub.subscribers)]
                                          + measuring + echo_delay),
                            measures=True, cpus=cpus, pass_fds=fds)]
    publisher = ProcessSpec("publisher", tuple(common + ["--role", "publisher", "--subscribers", str(sub.subscribers)]
                                               + measuring + security("publisher")),
                            measures=True, cpus=(pin[0],) if pin else None, pass_fds=fds)
    subscribers = []
    for index, name in enumerate(subscriber_names(sub)):
        echoes = index == sub.subscribers - 1  # the round trip is to the last subscriber
        subscribers.append(ProcessSpec(name, tuple(
            common + ["--role", "subscriber", "--subscribers", str(sub.subscribers), "--subscriber-index", str(index),
                      "--echo", "on" if echoes else "off"]
            + experiment + (echo_delay if echoes else []) + security(name)
            # zero copy: the plain type's size is the largest payload, and both sides must name one type
            + (["--payloads", _payload_text(options.payloads)] if sub.zero_copy else [])),
            measures=False, cpus=(pin[1],) if pin else None))
    if sub.transport == "tcpv4" and sub.subscribers > 1:
        # A TCP subscriber that connects once the publisher listens loses Fast DDS 2.9.1's bind race
        # now and then and starts over after 2 s (docs/harness.md); with several, most starts had one
        # (3 subscribers: 3.7 to 6.9 s, against 1.1 s for each of 6 starts with the subscribers first).
        return subscribers + [publisher]
    return [publisher] + subscribers


def subscriber_names(sub: s.SubExperiment) -> list[str]:
    """The subscriber processes' roles, which are also their security identities' names."""
    if sub.subscribers == 1:
        return ["subscriber"]
    return [f"subscriber-{index}" for index in range(sub.subscribers)]


def participant_names(sub: s.SubExperiment) -> list[str]:
    """Every identity a secure sub-experiment needs (perfgate.fastdds.security.generate_security_files)."""
    return ["publisher"] + subscriber_names(sub)


def floor_commands(sub: s.SubExperiment, options: RunOptions, harness: Path, port: int,
                   csv: Path) -> list[ProcessSpec]:
    """perfgate-floor: the echoing server first (it must listen), then the measuring client."""
    common = [str(harness), "--transport", sub.transport, "--port", str(port)]
    pin = options.pin_cpus
    return [
        ProcessSpec("server", tuple(common + ["--role", "server"]), measures=False,
                    cpus=(pin[1],) if pin else None, expects_match=False),
        ProcessSpec("client", tuple(common + [
            "--role", "client", "--samples", str(options.samples), "--warmup", str(options.warmup),
            "--payloads", _payload_text(options.payloads), "--output", str(csv)]),
                    measures=True, cpus=(pin[0],) if pin else None, expects_match=False),
    ]


def describe(sub: s.SubExperiment) -> str:
    """How a sub-experiment is named in errors: name, transport, reliability, security."""
    parts = [sub.transport, sub.reliability] + (["security"] if sub.security else [])
    return f"{sub.name} ({', '.join(parts)})"
