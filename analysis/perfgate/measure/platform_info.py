"""The platform fingerprint and the reference-machine state recorded in metadata.json.

Latency numbers only mean something next to the machine that produced them, so every run records
what the machine is (CPU model, cores, memory, kernel, hostname, a stable platform id) and in what
state it was (frequency governor per CPU, turbo/boost, SMT, isolated CPUs, ASLR). A reference
machine is expected to be pinned: `performance` governor, turbo off, SMT off, some CPUs isolated
for the measurement. A machine that is not pinned still measures; it only gets warnings.

`read_readings` is the thin reader of /proc and /sys (under any root, so a copied tree reads the
same); everything else is a pure function of its `PlatformReadings`.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..model import Platform

CPU_SYS = Path("sys/devices/system/cpu")

# Fields that identify the hardware. The hostname is recorded but not hashed (a renamed machine is
# the same platform), nor is the kernel (a kernel update is exactly what the history must show on
# one platform, not start a new one). Memory is hashed in whole GiB because MemTotal moves by a
# few MiB between kernels.
STABLE_FIELDS = ("machine", "cpu_model", "cores", "logical_cpus", "memory_gib")

PINNED_GOVERNOR = "performance"


@dataclass(frozen=True)
class PlatformReadings:
    """The raw text of every /proc and /sys file the fingerprint uses; None where a file is absent."""

    machine: str
    cpuinfo: str
    meminfo: str
    kernel: str
    hostname: str
    online_cpus: str | None = None
    governors: dict[int, str] = field(default_factory=dict)  # CPU -> scaling_governor
    boost: tuple[str, ...] = ()  # cpufreq/boost and cpufreq/policy*/boost values
    intel_no_turbo: str | None = None
    smt_control: str | None = None
    smt_active: str | None = None
    isolated: str | None = None
    aslr: str | None = None


# --- the reader ---------------------------------------------------------------------------------
def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def read_readings(root: Path = Path("/"), machine: str | None = None) -> PlatformReadings:
    """Read the machine's /proc and /sys files under `root` (a copy of the tree reads the same)."""
    root = Path(root)
    cpu = root / CPU_SYS
    governors = {}
    for path in cpu.glob("cpu[0-9]*/cpufreq/scaling_governor"):
        value = _text(path)
        if value:
            governors[int(path.parent.parent.name[3:])] = value
    boost_files = [cpu / "cpufreq" / "boost", *sorted(cpu.glob("cpufreq/policy[0-9]*/boost"))]
    boost = tuple(v for v in (_text(p) for p in boost_files) if v is not None)
    return PlatformReadings(
        machine=machine if machine is not None else platform.machine(),
        cpuinfo=_text(root / "proc/cpuinfo") or "",
        meminfo=_text(root / "proc/meminfo") or "",
        kernel=_text(root / "proc/sys/kernel/osrelease") or "unknown",
        hostname=_text(root / "proc/sys/kernel/hostname") or "unknown",
        online_cpus=_text(cpu / "online"),
        governors=dict(sorted(governors.items())),
        boost=boost,
        intel_no_turbo=_text(cpu / "intel_pstate" / "no_turbo"),
        smt_control=_text(cpu / "smt" / "control"),
        smt_active=_text(cpu / "smt" / "active"),
        isolated=_text(cpu / "isolated"),
        aslr=_text(root / "proc/sys/kernel/randomize_va_space"),
    )


# --- pure parsing -------------------------------------------------------------------------------
def parse_cpu_list(text: str | None) -> list[int]:
    """The kernel's CPU list format ("0-3,8,10-11") as CPU numbers; empty for "" or None."""
    cpus: list[int] = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus.extend(range(int(first), int(last or first) + 1))
    return cpus


def _cpuinfo_records(cpuinfo: str) -> list[dict[str, str]]:
    records = []
    for block in re.split(r"\n\s*\n", cpuinfo.strip()):
        record = {}
        for line in block.splitlines():
            key, separator, value = line.partition(":")
            if separator:
                record[key.strip()] = value.strip()
        if record:
            records.append(record)
    return records


def cpu_model(cpuinfo: str) -> str:
    # x86 says "model name"; many ARM kernels give only "Hardware", "Processor" or "CPU part".
    for record in _cpuinfo_records(cpuinfo):
        for key in ("model name", "Processor", "cpu model", "Hardware", "CPU part"):
            if record.get(key):
                return record[key]
    return "unknown"


def core_counts(cpuinfo: str) -> tuple[int, int]:
    """(logical CPUs, physical cores); without topology fields every logical CPU counts as a core."""
    processors = [r for r in _cpuinfo_records(cpuinfo) if "processor" in r]
    logical = len(processors)
    cores = {(r.get("physical id"), r.get("core id")) for r in processors if "core id" in r}
    return logical, (len(cores) if cores else logical)


def memory_bytes(meminfo: str) -> int | None:
    match = re.search(r"^MemTotal:\s*(\d+)\s*kB", meminfo, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def governor_summary(governors: dict[int, str]) -> str:
    """One word for the fingerprint: the common governor, "mixed", or "unknown" without cpufreq."""
    values = set(governors.values())
    if not values:
        return "unknown"
    return values.pop() if len(values) == 1 else "mixed"


def turbo_state(boost: tuple[str, ...], intel_no_turbo: str | None) -> str:
    """"on", "off" or "unknown": cpufreq boost (acpi-cpufreq, amd-pstate) or intel_pstate no_turbo."""
    if any(v == "1" for v in boost) or intel_no_turbo == "0":
        return "on"
    if boost or intel_no_turbo == "1":
        return "off"
    return "unknown"


def smt_state(control: str | None, active: str | None) -> str:
    """"on", "off", "unsupported" (no SMT in this CPU or kernel) or "unknown"."""
    if active == "1":
        return "on"
    if control in ("notsupported", "notimplemented"):
        return "unsupported"
    if active == "0" or control in ("off", "forceoff"):
        return "off"
    return "unknown"


def aslr_state(value: str | None) -> str:
    return {"0": "off", "1": "on (conservative)", "2": "on (full)"}.get(value or "", "unknown")


# --- the fingerprint ----------------------------------------------------------------------------
def platform_id(stable: dict) -> str:
    """A short hash of the stable fields: equal for the same hardware, whatever its name."""
    text = json.dumps({k: stable[k] for k in STABLE_FIELDS}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def machine_state(readings: PlatformReadings) -> dict:
    """The reference-machine state: what decides whether a measurement is as quiet as it can be."""
    return {
        "governors": {str(cpu): governor for cpu, governor in readings.governors.items()},
        "turbo": turbo_state(readings.boost, readings.intel_no_turbo),
        "smt": smt_state(readings.smt_control, readings.smt_active),
        "isolated_cpus": parse_cpu_list(readings.isolated),
        "online_cpus": parse_cpu_list(readings.online_cpus),
        "aslr": aslr_state(readings.aslr),
    }


def pinning_warnings(state: dict) -> list[str]:
    """What keeps the machine from the pinned reference state; empty when it is pinned."""
    warnings = []
    governors = state["governors"]
    if not governors:
        warnings.append("CPU frequency governor unknown (no cpufreq): frequency scaling cannot be verified")
    else:
        others = {cpu: g for cpu, g in governors.items() if g != PINNED_GOVERNOR}
        if others:
            listed = ", ".join(f"cpu{cpu}={g}" for cpu, g in others.items())
            warnings.append(f"CPU frequency governor is not {PINNED_GOVERNOR}: {listed}")
    if state["turbo"] == "on":
        warnings.append("turbo/boost is on: clock speed varies with temperature and load")
    if state["smt"] == "on":
        warnings.append("SMT (hyper-threading) is on: sibling threads share a core with the measurement")
    if not state["isolated_cpus"]:
        warnings.append("no isolated CPUs (isolcpus): the scheduler may run other work beside the measurement")
    return warnings


def fingerprint(readings: PlatformReadings) -> dict:
    """The metadata.json "platform" entry: identity, stable id, machine state and its warnings."""
    logical, cores = core_counts(readings.cpuinfo)
    memory = memory_bytes(readings.meminfo)
    identity = {
        "machine": readings.machine,
        "cpu_model": cpu_model(readings.cpuinfo),
        "cores": cores,
        "logical_cpus": logical,
        "memory_gib": round(memory / 2**30) if memory is not None else None,
    }
    state = machine_state(readings)
    return {
        "id": platform_id(identity),
        **identity,
        "memory_bytes": memory,
        "kernel": readings.kernel,
        "hostname": readings.hostname,
        "governor": governor_summary(readings.governors),
        "state": state,
        "warnings": pinning_warnings(state),
    }


def this_machine() -> Platform:
    """The fingerprint of the machine this process runs on."""
    return Platform.from_json(fingerprint(read_readings()))


def pinnable_cpus(root: Path = Path("/")) -> set[int]:
    """CPUs a harness process may be pinned to: every online CPU. Not this process's own affinity:
    with isolcpus that leaves out exactly the isolated CPUs a reference machine keeps for measuring."""
    online = set(parse_cpu_list(_text(Path(root) / CPU_SYS / "online")))
    return online or set(os.sched_getaffinity(0))


def isolated_cpus(root: Path = Path("/")) -> list[int]:
    return parse_cpu_list(_text(Path(root) / CPU_SYS / "isolated"))


def choose_pinned_cpus(pinnable: set[int], isolated: list[int]) -> tuple[int, int] | None:
    """Two distinct CPUs for publisher and subscriber, or None with fewer than two.

    Isolated CPUs first (nothing else is scheduled there); otherwise the highest-numbered ones, since
    CPU 0 takes most of the kernel's housekeeping and interrupts.
    """
    preferred = [c for c in sorted(isolated) if c in pinnable]
    preferred += sorted(pinnable - set(preferred), reverse=True)
    return (preferred[0], preferred[1]) if len(preferred) >= 2 else None
