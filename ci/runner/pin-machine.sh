#!/usr/bin/env bash
# Puts a reference machine in its pinned state for measuring (ci/runner/README.md): SMT off, turbo
# and boost off, every online CPU's frequency governor to "performance". Run as root, at boot
# (perfgate-pin.service): none of this survives a reboot. Settings the kernel does not offer are
# skipped; perfgate records the resulting state in metadata.json and warns when it is not pinned
# (analysis/perfgate/measure/platform_info.py). PERFGATE_SYSFS (default /sys) points the tests at a copy.
set -euo pipefail
cpu="${PERFGATE_SYSFS:-/sys}/devices/system/cpu"

set_value() {  # FILE VALUE
  echo "$2" > "$1"
  echo "${1#"${PERFGATE_SYSFS:-/sys}"} = $2"
}

# SMT first: switching it off takes the sibling CPUs offline, and with them their governors.
smt="$(cat "$cpu/smt/control" 2>/dev/null || echo absent)"
case "$smt" in
  on) set_value "$cpu/smt/control" off ;;
  *) echo "SMT control: $smt (left as it is)" ;;
esac

[ ! -e "$cpu/intel_pstate/no_turbo" ] || set_value "$cpu/intel_pstate/no_turbo" 1
for boost in "$cpu/cpufreq/boost" "$cpu"/cpufreq/policy[0-9]*/boost; do
  [ ! -e "$boost" ] || set_value "$boost" 0
done

governors=0
for governor in "$cpu"/cpu[0-9]*/cpufreq/scaling_governor; do
  [ -e "$governor" ] || continue
  echo performance > "$governor"
  governors=$((governors + 1))
done
echo "scaling_governor = performance on $governors CPUs"
