#!/usr/bin/env bash
# Creates .venv at the repository root and installs perfgate into it (with extras given as $1, e.g. "test").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
extras="${1:-}"
[ -x "$root/.venv/bin/python" ] || python3 -m venv "$root/.venv"
"$root/.venv/bin/python" -m pip install -q --upgrade pip
if [ -n "$extras" ]; then
  "$root/.venv/bin/python" -m pip install -q -e "$root[$extras]"
else
  "$root/.venv/bin/python" -m pip install -q -e "$root"
fi
