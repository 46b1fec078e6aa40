"""gate.request: `perfgate gate`'s options as one typed object, built once from the command line
(commands/gate.py's parser) and passed down. Planning (gate.plan) resolves and validates it; running
(gate.run) reads it; no function takes the options one by one."""
from __future__ import annotations

from dataclasses import dataclass

DEFAULT_FAIL_THRESHOLD = 0.1  # as `perfgate compare`


@dataclass(frozen=True)
class GateRequest:
    """What the maintainer asked for, as given: None where an option was left out (planning decides the
    default: the platform from the environment, the requirements from requirements/, ...)."""

    output: str
    quick: bool = False
    samples: int | None = None
    payloads: list[int] | None = None
    subexperiments: list[str] | None = None
    experiments: list[str] | None = None
    platform: str | None = None
    requirements: str | None = None
    requirements_directory: str | None = None  # None: requirements/
    strict_platform: bool = False  # also $PERFGATE_STRICT_PLATFORM=1: platform files of another machine are exit 3
    throughput_requirements: str | None = None
    topologies: list[str] | None = None  # None: every topologies/<name>.json
    topology_time: float | None = None  # None: the quick or the default time
    topology_ipc: str | None = None  # on | off; None: on (perfgate topology's default)
    topology_transport: str | None = None  # udpv4 | shm; None: udpv4
    baseline: str | None = None
    fail_threshold: float = DEFAULT_FAIL_THRESHOLD
    baseline_build: str | None = None
    layouts: int | None = None  # the A/Bs' rounds through this many layouts of each build (perfgate ab --layouts)
    store: str | None = None
    history: bool | None = None  # None: add to the store when there is one
    fastdds: str | None = None
    fastdds_prefix: str | None = None
    workspace: str | None = None
    pin_cpus: str | None = None
    cpu_latency_request: str | None = None
    label: str | None = None
    summary_markdown: str | None = None
    annotations: bool = False
