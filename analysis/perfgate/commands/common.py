"""What several commands' options share."""
from __future__ import annotations

import argparse
from typing import Callable

CPU_LATENCY_HELP = ("system (default): the system's idle policy; awake: keep idle CPUs polling while measuring "
                    "(a 0 us wake-up latency request on /dev/cpu_dma_latency, where writable; else a warning)")
CPU_LATENCY_AB_HELP = ("awake (default): keep idle CPUs polling while measuring (a 0 us wake-up latency request on "
                       "/dev/cpu_dma_latency, where writable; else a warning); system: the system's idle policy")
CPU_LATENCY_GATE_HELP = ("system (default for the gate's own runs): the system's idle policy; awake: keep idle CPUs "
                         "polling while measuring (/dev/cpu_dma_latency, where writable; else a warning). The latency "
                         "A/B against --baseline-build keeps them awake unless this says system")


def no_plots(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--no-plots", action="store_true", help="skip drawing plots")
