#!/usr/bin/env bash
# README step 1: installs what the gate needs (nothing for the tests), quietly, and runs it in quick mode
# on this machine with the system Fast DDS, decided by an A/B of the system Fast DDS against itself (an
# A/A run: it must pass); ends with the verdict and the path of the HTML report. Extra arguments go to
# `perfgate gate`. Installation logs: .cache/install-*.log.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
ci/install-system.sh ci/debian-packages.txt
ci/install-python.sh
# vm-2core-x64: the requirements derived for the 2-core machine class this quick run was tuned on
export PERFGATE_PLATFORM="${PERFGATE_PLATFORM:-vm-2core-x64}"
run="quickstart-$(date -u +%Y%m%dT%H%M%SZ)"
echo "gate: an A/B of the system Fast DDS against itself, its samples checked against the requirements (about 2 minutes)"
exec .venv/bin/perfgate gate --quick --baseline-build system --output "out/$run" --label "$run" "$@"
