#!/usr/bin/env bash
# The project's test command (README.md "Run the tests"): installs what the tests need, then runs them all.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
ci/install-system.sh
ci/install-python.sh test
# the native harness: built with warnings as errors, its GoogleTest unit tests run through ctest
.venv/bin/python -m perfgate.harness build --test
.venv/bin/python -m pytest -n 2 -q "$@"
