"""`perfgate gate`: its options (HANDLER names the function that does the work)."""
from __future__ import annotations

import argparse
from typing import Callable

from .. import schema as s
from ..cli_types import label, name_list, non_negative_float, payload_list, pin_request, positive_float, positive_int
from ..gate.request import DEFAULT_FAIL_THRESHOLD
from ..measure import cpu_latency
from ..topology import names as tn
from .common import CPU_LATENCY_GATE_HELP

NAME = "gate"
HANDLER = "perfgate.gate.run:command_gate"
HELP = "run, process, check, compare with the baseline, add to history and report: one verdict"


def add_arguments(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--output", required=True, metavar="DIR", help="experiment folder to write (absent or empty)")
    option(parser, "--experiments", type=name_list, default=None,
           metavar="latency[,throughput][,resources][,topology]",
           help="besides latency: throughput (quick with --quick; checked against requirements/<platform>_throughput.csv "
                "where it exists), resources (checked against requirements/<platform>_resources.json), topology "
                "(topologies/<name>.json, checked against requirements/<platform>_topology_<name>.json where it "
                "exists); default latency")
    option(parser, "--topologies", type=name_list, default=None, metavar="NAMES",
           help="with --experiments ...,topology: which of topologies/<name>.json (default: every one)")
    option(parser, "--topology-time", type=positive_float, default=None, metavar="SECONDS",
           help=f"with --experiments ...,topology: how long each topology publishes (default {tn.DEFAULT_TIME_S:g}; "
                f"{tn.QUICK_TIME_S:g} with --quick)")
    option(parser, "--topology-ipc", choices=("on", "off"), default=None,
           help="with --experiments ...,topology: intra-process delivery between the nodes of one process "
                "(perfgate topology --ipc; default on)")
    option(parser, "--topology-transport", choices=("udpv4", "shm"), default=None,
           help="with --experiments ...,topology: the nodes' transport (perfgate topology --transport; default udpv4)")
    option(parser, "--quick", action="store_true", help=f"200 samples per payload instead of {s.DEFAULT_SAMPLES}")
    option(parser, "--samples", type=positive_int, default=None, help="round trips per payload (overrides --quick)")
    option(parser, "--payloads", type=payload_list, default=None, help="e.g. 16,32,64 (default: all eleven)")
    option(parser, "--subexperiments", type=name_list, default=None,
           help="comma-separated sub-experiment names (default: the ten of the contract and the machine's floor)")
    option(parser, "--platform", default=None, metavar="NAME|auto",
           help="reference platform name, or auto: the platform whose files carry this machine's fingerprint "
                "(default: $PERFGATE_PLATFORM, else 'local')")
    option(parser, "--requirements-directory", default=None, metavar="DIR",
           help=f"where the platforms' files are (default: {s.REQUIREMENTS_DIR}/)")
    option(parser, "--strict-platform", action="store_true",
           help="exit 3 before measuring when a platform file the gate uses was derived on another machine "
                f"(default: ${s.STRICT_PLATFORM_ENV}=1)")
    option(parser, "--requirements", default=None, metavar="F", help="default: <requirements directory>/<platform>.csv")
    option(parser, "--throughput-requirements", metavar="F", help="default: requirements/<platform>_throughput.csv")
    option(parser, "--baseline", metavar="DIR", help="baseline experiment (default: baselines/<platform>/, skipped when absent)")
    option(parser, "--fail-threshold", type=non_negative_float, default=DEFAULT_FAIL_THRESHOLD,
           help="baseline comparison: fail above baseline * (1 + threshold)")
    option(parser, "--store", default=None, metavar="DIR",
           help=f"results store to add the run to and redraw the history of (default: ${s.STORE_ENV}, else none)")
    option(parser, "--history", dest="history", action="store_const", const=True, default=None,
           help=f"add the run to the store (--store or ${s.STORE_ENV}); an error when there is none")
    option(parser, "--no-history", dest="history", action="store_const", const=False,
           help=f"do not add the run to a store, even with --store or ${s.STORE_ENV}")
    option(parser, "--fastdds", default=None, metavar="system|workspace|DIR",
           help=f"the Fast DDS to measure: system (the system's, whatever ${s.WORKSPACE_ENV} says), workspace "
                f"(${s.WORKSPACE_ENV}'s build), or a `perfgate build` workspace or colcon install prefix; default: "
                f"${s.WORKSPACE_ENV} when set, else the system's (the gate says which, and why)")
    option(parser, "--fastdds-prefix", default=None, metavar="DIR",
           help="install prefix of the Fast DDS to measure (a colcon install)")
    option(parser, "--pin-cpus", type=pin_request, default=None, metavar="auto|none|PUB,SUB",
           help="pin publisher and subscriber to these CPUs (isolated CPUs of a reference machine included; "
                "default: $PERFGATE_PIN_CPUS, else auto)")
    option(parser, "--cpu-latency", dest="cpu_latency_request", choices=cpu_latency.CHOICES, default=None,
           help=CPU_LATENCY_GATE_HELP)
    option(parser, "--workspace", default=None, metavar="WS",
           help="a `perfgate build` workspace: measure its Fast DDS; a failed build is the JUnit error \"build\" (exit 3) "
                f"(default: ${s.WORKSPACE_ENV}, see --fastdds)")
    option(parser, "--baseline-build", default=None, metavar="SPEC",
           help="decide by an A/B against this Fast DDS ('system', a colcon install prefix or a `perfgate build` "
                "workspace): interleaved pinned rounds, exact paired test (perfgate ab); the requirement checks "
                "still run as a gross-failure check")
    option(parser, "--layouts", type=int, default=None, metavar="N",
           help="with --baseline-build: the A/Bs rotate their rounds through N code layouts of both builds (kept by "
                "`perfgate build --layouts N`; perfgate ab --layouts)")
    option(parser, "--label", type=label, default=None, help="experiment label (default: <output name>-<UTC time>)")
    option(parser, "--summary-markdown", default=None, metavar="F",
           help="append the Markdown summary to F (e.g. $GITHUB_STEP_SUMMARY)")
    option(parser, "--annotations", action="store_true",
           help="print ::error annotations for the worst regressions (always on when GITHUB_ACTIONS=true)")
