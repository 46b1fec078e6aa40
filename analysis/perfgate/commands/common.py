"""What several commands' options share."""
from __future__ import annotations

import argparse
from typing import Callable

_SYSTEM_IDLE = "the system's idle policy"
_AWAKE_IDLE = ("keep idle CPUs polling while measuring (a 0 us wake-up latency request on /dev/cpu_dma_latency, "
               "where writable; else a warning)")
CPU_LATENCY_HELP = f"system (default): {_SYSTEM_IDLE}; awake: {_AWAKE_IDLE}"
CPU_LATENCY_AB_HELP = f"awake (default): {_AWAKE_IDLE}; system: {_SYSTEM_IDLE}"
LAYOUTS_AB_HELP = ("rotate the rounds through the first N layouts of each arm's kept install (`perfgate build "
                   "--layouts`), the same in both arms of a round: the verdict over N code layouts, not one (default 0)")
CPU_LATENCY_GATE_HELP = (f"system (default for the gate's own runs): {_SYSTEM_IDLE}; awake: {_AWAKE_IDLE}. The latency "
                         "A/B against --baseline-build keeps them awake unless this says system")

def no_plots(parser: argparse.ArgumentParser, option: Callable[..., None]) -> None:
    option(parser, "--no-plots", action="store_true", help="skip drawing plots")
