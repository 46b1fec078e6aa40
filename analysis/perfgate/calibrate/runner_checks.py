"""calibrate.runner_checks: is this machine set up as ci/runner/README.md sets a reference runner up?

One finding per setting, each a line: `ok`, `fix` (what to change before spending hours measuring) or
`unknown` (the setting cannot be read here, as on a VM without cpufreq). `findings` is pure, over
platform_info's machine state plus the load and the clock source; `read_findings` reads them.
A calibration goes on after `fix` lines (the files then describe the machine as it is) unless
--require-tuned, with which any `fix` stops it before it measures (exit 2).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..measure import platform_info

OK, FIX, UNKNOWN = "ok", "fix", "unknown"
STEADY_CLOCK_SOURCES = ("tsc",)  # the others (hpet, acpi_pm, a hypervisor's) cost microseconds per reading
QUIET_LOAD = 0.5  # 1-minute load above this: something else runs beside the measurement
CLOCK_SOURCE = Path("sys/devices/system/clocksource/clocksource0/current_clocksource")


@dataclass(frozen=True)
class Finding:
    status: str
    setting: str
    text: str

    def line(self) -> str:
        return f"{self.status:7s} {self.setting}: {self.text}"


def findings(state: dict, load_1min: float | None, clock_source: str | None) -> list[Finding]:
    """What keeps the machine from the reference runner's tuning, setting by setting."""
    found = []
    isolated = state["isolated_cpus"]
    found.append(Finding(OK, "isolated CPUs", f"{_cpus(isolated)} (isolcpus)") if len(isolated) >= 2 else
                 Finding(FIX, "isolated CPUs", f"{len(isolated)} isolated; isolate two CPUs for publisher and "
                                               "subscriber (isolcpus=, nohz_full=, rcu_nocbs= on the kernel line)"))
    governors = state["governors"]
    others = sorted({g for g in governors.values() if g != platform_info.PINNED_GOVERNOR})
    found.append(Finding(UNKNOWN, "governor", "no cpufreq on this machine: frequency scaling cannot be read")
                 if not governors else
                 Finding(FIX, "governor", f"{', '.join(others)} on some CPUs; set "
                                          f"{platform_info.PINNED_GOVERNOR} on every CPU (ci/runner/pin-machine.sh)")
                 if others else Finding(OK, "governor", f"{platform_info.PINNED_GOVERNOR} on every CPU"))
    turbo = state["turbo"]
    found.append(Finding(FIX, "turbo", "on: switch turbo/boost off (ci/runner/pin-machine.sh)") if turbo == "on" else
                 Finding(OK, "turbo", "off") if turbo == "off" else
                 Finding(UNKNOWN, "turbo", f"{turbo}: no boost control can be read on this machine"))
    smt = state["smt"]
    found.append(Finding(FIX, "SMT", "on: switch it off (nosmt, or ci/runner/pin-machine.sh)") if smt == "on" else
                 Finding(OK, "SMT", smt) if smt in ("off", "unsupported", "forceoff", "notsupported") else
                 Finding(UNKNOWN, "SMT", f"{smt}: its control cannot be read on this machine"))
    found.append(Finding(UNKNOWN, "load", "cannot be read") if load_1min is None else
                 Finding(FIX, "load", f"{load_1min:.2f} over the last minute: stop what else runs here")
                 if load_1min > QUIET_LOAD else Finding(OK, "load", f"{load_1min:.2f} over the last minute"))
    found.append(Finding(UNKNOWN, "clock source", "cannot be read") if not clock_source else
                 Finding(OK, "clock source", clock_source) if clock_source in STEADY_CLOCK_SOURCES else
                 Finding(FIX, "clock source", f"{clock_source}: reading it costs more than tsc; use tsc "
                                              "(clocksource=tsc tsc=reliable) where the CPU's is invariant"))
    return found


def _cpus(cpus: list[int]) -> str:
    return "CPUs " + ",".join(map(str, cpus))


def read_findings(root: Path = Path("/")) -> list[Finding]:
    state = platform_info.machine_state(platform_info.read_readings(root))
    try:
        load = os.getloadavg()[0] if root == Path("/") else None
    except OSError:
        load = None
    try:
        clock = (Path(root) / CLOCK_SOURCE).read_text(encoding="utf-8").strip()
    except OSError:
        clock = None
    return findings(state, load, clock)
