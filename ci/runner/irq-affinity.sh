#!/usr/bin/env bash
# Steers every interrupt the kernel lets us move to the housekeeping CPUs, so that the isolated
# CPUs (isolcpus) only run the measurement (ci/runner/README.md). Run as root after boot and after
# a device comes up; the kernel parameter irqaffinity= sets the same default for new interrupts.
# Usage: irq-affinity.sh CPU_LIST   (the housekeeping CPUs in the kernel's list format, e.g. 0-1)
# PERFGATE_PROCFS (default /proc) points the tests at a copy.
set -euo pipefail
housekeeping="${1:?usage: irq-affinity.sh CPU_LIST (housekeeping CPUs, e.g. 0-1)}"
irq="${PERFGATE_PROCFS:-/proc}/irq"

moved=0
refused=0
for affinity in "$irq"/[0-9]*/smp_affinity_list; do
  [ -e "$affinity" ] || continue
  # Per-CPU and kernel-managed interrupts refuse a new affinity; they are counted, not fatal.
  if { echo "$housekeeping" > "$affinity"; } 2>/dev/null; then
    moved=$((moved + 1))
  else
    refused=$((refused + 1))
  fi
done
echo "interrupts on CPUs $housekeeping: $moved moved, $refused refused by the kernel"
