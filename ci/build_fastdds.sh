#!/usr/bin/env bash
# Builds one Fast DDS commit (and perfgate's harness) in a persistent colcon workspace: brings .venv
# up to date (ci/install-python.sh), then runs `perfgate build` with the arguments given, e.g.
#   ci/build_fastdds.sh --workspace /var/lib/perfgate/workspace --git-url URL --commit SHA --junit F
# Exit code is perfgate's: 0 built, 2 bad input or usage, 3 the build failed (docs/build.md).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/ci/install-python.sh"
exec "$root/.venv/bin/perfgate" build "$@"
