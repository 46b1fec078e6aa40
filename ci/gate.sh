#!/usr/bin/env bash
# The gate in CI: brings .venv up to date with this checkout (ci/install-python.sh), then runs
# `perfgate gate` with the arguments given (see `perfgate gate --help`). The exit code is perfgate's:
# 0 pass, 1 regression, 2 bad input or usage, 3 incomplete experiment.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/ci/install-python.sh"
exec "$root/.venv/bin/perfgate" gate "$@"
