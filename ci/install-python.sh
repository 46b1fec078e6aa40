#!/usr/bin/env bash
# Creates .venv at the repository root and installs perfgate into it (with extras given as $1, e.g. "test").
# One line of progress; pip's output goes to a log file ($PERFGATE_INSTALL_LOG, default
# .cache/install-python.log), whose tail is shown when a step fails.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
extras="${1:-}"
log="${PERFGATE_INSTALL_LOG:-$root/.cache/install-python.log}"
mkdir -p "$(dirname "$log")"
target="$root"
[ -z "$extras" ] || target="${root}[$extras]"
# shellcheck source=ci/step.sh
source "$root/ci/step.sh"
echo "python: perfgate${extras:+[$extras]} into $root/.venv (log: $log)"
[ -x "$root/.venv/bin/python" ] || step python3 -m venv "$root/.venv"
step "$root/.venv/bin/python" -m pip install -q --upgrade pip
step "$root/.venv/bin/python" -m pip install -q -e "$target"
