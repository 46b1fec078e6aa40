"""ci/runner/ and ci/gate.sh: shellcheck passes, and the pinning scripts leave a copy of /sys and
/proc in the state that perfgate's own platform check (perfgate.measure.platform_info) calls pinned."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from perfgate.measure import platform_info
from conftest import REPO_ROOT

RUNNER = REPO_ROOT / "ci" / "runner"
SHELL_SCRIPTS = [REPO_ROOT / "ci" / "gate.sh", RUNNER / "pin-machine.sh", RUNNER / "irq-affinity.sh"]


def test_shell_scripts_pass_shellcheck():
    shellcheck = shutil.which("shellcheck")
    assert shellcheck, "shellcheck not found: ci/install-system.sh installs it"
    for script in SHELL_SCRIPTS:
        assert os.access(script, os.X_OK), f"{script} is not executable"
        assert "set -euo pipefail" in script.read_text()
        result = subprocess.run([shellcheck, str(script)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout


def unpinned_machine(root: Path, cpus: int, smt: str, turbo: str) -> Path:
    """A /sys and /proc tree as a freshly booted desktop-like machine shows it."""
    cpu = root / "sys/devices/system/cpu"
    for n in range(cpus):
        (cpu / f"cpu{n}/cpufreq").mkdir(parents=True)
        (cpu / f"cpu{n}/cpufreq/scaling_governor").write_text("powersave\n")
    (cpu / "smt").mkdir()
    (cpu / "smt/control").write_text(f"{smt}\n")
    (cpu / "smt/active").write_text("1\n" if smt == "on" else "0\n")
    if turbo == "intel":
        (cpu / "intel_pstate").mkdir()
        (cpu / "intel_pstate/no_turbo").write_text("0\n")
    else:
        for n in range(cpus):
            (cpu / f"cpufreq/policy{n}").mkdir(parents=True)
            (cpu / f"cpufreq/policy{n}/boost").write_text("1\n")
    (cpu / "isolated").write_text("2-3\n")
    (root / "proc").mkdir()
    (root / "proc/cpuinfo").write_text("".join(f"processor\t: {n}\nmodel name\t: Test CPU\n\n" for n in range(cpus)))
    return root


def run_pin(root: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PERFGATE_SYSFS": str(root / "sys")}
    return subprocess.run([RUNNER / "pin-machine.sh"], env=environment, capture_output=True, text=True)


@pytest.mark.parametrize("turbo", ["intel", "boost"])
def test_pin_machine_leaves_the_state_the_platform_check_calls_pinned(tmp_path, turbo):
    root = unpinned_machine(tmp_path, cpus=4, smt="on", turbo=turbo)
    before = platform_info.machine_state(platform_info.read_readings(root))
    assert before["turbo"] == "on" and before["smt"] == "on"
    assert len(platform_info.pinning_warnings(before)) == 3

    result = run_pin(root)
    assert result.returncode == 0, result.stderr
    assert "scaling_governor = performance on 4 CPUs" in result.stdout

    # The kernel would flip smt/active itself once control is off; the copy needs it done by hand.
    (root / "sys/devices/system/cpu/smt/active").write_text("0\n")
    after = platform_info.machine_state(platform_info.read_readings(root))
    assert after["governors"] == {str(n): "performance" for n in range(4)}
    assert after["turbo"] == "off" and after["smt"] == "off"
    assert platform_info.pinning_warnings(after) == []


def test_pin_machine_leaves_smt_alone_where_the_kernel_does_not_offer_it(tmp_path):
    root = unpinned_machine(tmp_path, cpus=2, smt="notsupported", turbo="boost")
    result = run_pin(root)
    assert result.returncode == 0, result.stderr
    assert "SMT control: notsupported (left as it is)" in result.stdout
    assert (root / "sys/devices/system/cpu/smt/control").read_text() == "notsupported\n"
    assert (root / "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor").read_text() == "performance\n"


def test_irq_affinity_moves_what_the_kernel_allows(tmp_path):
    irq = tmp_path / "irq"
    for number in (0, 9, 24):
        (irq / str(number)).mkdir(parents=True)
        (irq / str(number) / "smp_affinity_list").write_text("0-3\n")
    # A per-CPU interrupt refuses a new affinity; a folder in the file's place fails the same way.
    (irq / "120" / "smp_affinity_list").mkdir(parents=True)
    environment = {**os.environ, "PERFGATE_PROCFS": str(tmp_path)}
    result = subprocess.run([RUNNER / "irq-affinity.sh", "0-1"], env=environment, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "interrupts on CPUs 0-1: 3 moved, 1 refused by the kernel"
    assert [(irq / str(n) / "smp_affinity_list").read_text() for n in (0, 9, 24)] == ["0-1\n"] * 3


def test_irq_affinity_needs_the_housekeeping_cpus():
    result = subprocess.run([RUNNER / "irq-affinity.sh"], capture_output=True, text=True)
    assert result.returncode != 0 and "usage: irq-affinity.sh CPU_LIST" in result.stderr
