"""Platform fingerprint: pure parts on /proc and /sys trees built in tmp_path; the reader on this machine."""
from __future__ import annotations

import os
import platform
import socket
from pathlib import Path

from perfgate.measure import platform_info as pi

CPUINFO_SMT = """\
processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz
physical id\t: 0
core id\t\t: 0

processor\t: 1
model name\t: Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz
physical id\t: 0
core id\t\t: 1

processor\t: 2
model name\t: Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz
physical id\t: 0
core id\t\t: 0

processor\t: 3
model name\t: Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz
physical id\t: 0
core id\t\t: 1
"""

CPUINFO_ARM = """\
processor\t: 0
BogoMIPS\t: 108.00
CPU part\t: 0xd08

processor\t: 1
BogoMIPS\t: 108.00
CPU part\t: 0xd08

Hardware\t: BCM2835
"""


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return root


def noisy_machine(root: Path, hostname: str = "bench-1") -> Path:
    """A 2-core, 4-thread Intel box as a desktop leaves it: powersave, turbo on, SMT on, nothing isolated."""
    cpu = "sys/devices/system/cpu"
    return write_tree(root, {
        "proc/cpuinfo": CPUINFO_SMT,
        "proc/meminfo": "MemTotal:       16314080 kB\nMemFree:         1000000 kB",
        "proc/sys/kernel/osrelease": "6.1.0-18-amd64",
        "proc/sys/kernel/hostname": hostname,
        "proc/sys/kernel/randomize_va_space": "2",
        f"{cpu}/online": "0-3",
        f"{cpu}/isolated": "",
        f"{cpu}/smt/control": "on",
        f"{cpu}/smt/active": "1",
        f"{cpu}/intel_pstate/no_turbo": "0",
        **{f"{cpu}/cpu{n}/cpufreq/scaling_governor": "powersave" for n in range(4)},
    })


def pinned_machine(root: Path) -> Path:
    """The same box set up as a reference machine."""
    cpu = "sys/devices/system/cpu"
    noisy_machine(root)
    return write_tree(root, {
        f"{cpu}/isolated": "2-3",
        f"{cpu}/smt/control": "off",
        f"{cpu}/smt/active": "0",
        f"{cpu}/intel_pstate/no_turbo": "1",
        "proc/sys/kernel/randomize_va_space": "0",
        **{f"{cpu}/cpu{n}/cpufreq/scaling_governor": "performance" for n in range(4)},
    })


def test_cpu_list_format():
    assert pi.parse_cpu_list("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert pi.parse_cpu_list("") == []
    assert pi.parse_cpu_list(None) == []
    assert pi.parse_cpu_list("5") == [5]


def test_noisy_machine_fingerprint_and_warnings(tmp_path):
    entry = pi.fingerprint(pi.read_readings(noisy_machine(tmp_path), machine="x86_64"))
    assert entry["cpu_model"] == "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz"
    assert (entry["cores"], entry["logical_cpus"]) == (2, 4)
    assert entry["memory_bytes"] == 16314080 * 1024
    assert entry["memory_gib"] == 16
    assert entry["kernel"] == "6.1.0-18-amd64"
    assert entry["hostname"] == "bench-1"
    assert entry["governor"] == "powersave"
    state = entry["state"]
    assert state == {
        "governors": {"0": "powersave", "1": "powersave", "2": "powersave", "3": "powersave"},
        "turbo": "on",
        "smt": "on",
        "isolated_cpus": [],
        "online_cpus": [0, 1, 2, 3],
        "aslr": "on (full)",
    }
    warnings = entry["warnings"]
    assert len(warnings) == 4
    assert "not performance: cpu0=powersave, cpu1=powersave" in warnings[0]
    assert warnings[1].startswith("turbo/boost is on")
    assert warnings[2].startswith("SMT")
    assert warnings[3].startswith("no isolated CPUs")


def test_pinned_machine_has_no_warnings(tmp_path):
    entry = pi.fingerprint(pi.read_readings(pinned_machine(tmp_path), machine="x86_64"))
    assert entry["warnings"] == []
    assert entry["state"]["isolated_cpus"] == [2, 3]
    assert entry["state"]["turbo"] == "off"
    assert entry["state"]["smt"] == "off"
    assert entry["state"]["aslr"] == "off"
    assert entry["governor"] == "performance"


def test_one_cpu_off_the_performance_governor_is_named(tmp_path):
    root = pinned_machine(tmp_path)
    (root / "sys/devices/system/cpu/cpu2/cpufreq/scaling_governor").write_text("schedutil\n")
    entry = pi.fingerprint(pi.read_readings(root, machine="x86_64"))
    assert entry["governor"] == "mixed"
    assert entry["warnings"] == ["CPU frequency governor is not performance: cpu2=schedutil"]


def test_platform_id_is_the_hardware_not_the_hostname_or_kernel(tmp_path):
    first = pi.fingerprint(pi.read_readings(noisy_machine(tmp_path / "a", hostname="bench-1"), machine="x86_64"))
    renamed = noisy_machine(tmp_path / "b", hostname="bench-renamed")
    (renamed / "proc/sys/kernel/osrelease").write_text("6.5.0-1-amd64\n")
    (renamed / "proc/meminfo").write_text("MemTotal:       16290000 kB\n")  # a newer kernel reserves more
    second = pi.fingerprint(pi.read_readings(renamed, machine="x86_64"))
    assert first["id"] == second["id"]
    assert len(first["id"]) == 16

    bigger = noisy_machine(tmp_path / "c")
    (bigger / "proc/meminfo").write_text("MemTotal:       32628160 kB\n")
    assert pi.fingerprint(pi.read_readings(bigger, machine="x86_64"))["id"] != first["id"]
    other_cpu = noisy_machine(tmp_path / "d")
    (other_cpu / "proc/cpuinfo").write_text(CPUINFO_SMT.replace("Gold 6230", "Gold 6240"))
    assert pi.fingerprint(pi.read_readings(other_cpu, machine="x86_64"))["id"] != first["id"]
    assert pi.fingerprint(pi.read_readings(tmp_path / "a", machine="aarch64"))["id"] != first["id"]


def test_arm_box_without_cpufreq_or_smt(tmp_path):
    root = write_tree(tmp_path, {
        "proc/cpuinfo": CPUINFO_ARM,
        "proc/meminfo": "MemTotal:        3884464 kB",
        "proc/sys/kernel/osrelease": "6.1.21-v8+",
        "proc/sys/kernel/hostname": "pi4",
        "sys/devices/system/cpu/smt/control": "notsupported",
        "sys/devices/system/cpu/smt/active": "0",
        "sys/devices/system/cpu/isolated": "1",
    })
    entry = pi.fingerprint(pi.read_readings(root, machine="aarch64"))
    assert entry["cpu_model"] == "0xd08"
    assert (entry["cores"], entry["logical_cpus"]) == (2, 2)
    assert entry["state"]["smt"] == "unsupported"
    assert entry["state"]["turbo"] == "unknown"
    assert entry["governor"] == "unknown"
    assert entry["warnings"] == ["CPU frequency governor unknown (no cpufreq): frequency scaling cannot be verified"]


def test_amd_per_policy_boost(tmp_path):
    root = pinned_machine(tmp_path)
    (root / "sys/devices/system/cpu/intel_pstate/no_turbo").unlink()
    write_tree(root, {"sys/devices/system/cpu/cpufreq/policy0/boost": "0",
                      "sys/devices/system/cpu/cpufreq/policy1/boost": "1"})
    assert pi.fingerprint(pi.read_readings(root))["state"]["turbo"] == "on"
    (root / "sys/devices/system/cpu/cpufreq/policy1/boost").write_text("0\n")
    assert pi.fingerprint(pi.read_readings(root))["state"]["turbo"] == "off"


def test_reader_on_this_machine():
    entry = pi.this_machine()  # metadata.json's platform, as the model reads it
    assert entry.hostname == socket.gethostname()
    assert entry.kernel == platform.release()
    assert entry.machine == platform.machine()
    assert entry.logical_cpus == os.cpu_count()
    assert 1 <= entry.cores <= entry.logical_cpus
    assert entry.memory_bytes == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert entry.cpu_model != "unknown"
    assert len(entry.state["online_cpus"]) == os.sysconf("SC_NPROCESSORS_ONLN")
    assert pi.this_machine().id == entry.id


def test_isolated_cpus_can_be_pinned_to_though_this_process_may_not_run_there(tmp_path):
    # a reference machine booted with isolcpus=2,3: processes run on 0-1, measurements are pinned to 2-3
    cpu = tmp_path / pi.CPU_SYS
    cpu.mkdir(parents=True)
    (cpu / "online").write_text("0-3\n")
    (cpu / "isolated").write_text("2-3\n")
    assert pi.pinnable_cpus(tmp_path) == {0, 1, 2, 3}
    # unreadable: fall back to where this process may run
    assert pi.pinnable_cpus(tmp_path / "elsewhere") == set(os.sched_getaffinity(0))
