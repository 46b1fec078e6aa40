#!/usr/bin/env bash
# The project's test command (README.md "Two commands"): installs what the gate and the tests need (the
# test tools only here, never in ci/quickstart.sh), then runs them all.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
ci/install-system.sh ci/debian-packages.txt ci/fastdds-build-packages.txt ci/debian-test-packages.txt
ci/install-python.sh test
# the native harness: built with warnings as errors, its GoogleTest unit tests run through ctest
.venv/bin/python -m perfgate.fastdds.harness build --test
.venv/bin/python -m pytest -n 2 -q "$@"
