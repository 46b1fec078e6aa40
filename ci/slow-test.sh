#!/usr/bin/env bash
# The slow integration test, outside the default test run (docs/build.md "Testing with a real Fast
# DDS source"): installs what a colcon build of Fast DDS needs, fetches Debian's Fast DDS 2.9.1 source
# (`apt-get source fastdds`, adding a deb-src entry for the installed suite if there is none), builds
# it from scratch and again after touching one file (benchmarks/bench_build.py prints both times),
# then runs `pytest -m slow` on that workspace: both engines, two sub-experiments each. Then Fast DDS
# master and v2.14.6 (test_fastdds_versions_source_build.py: from eProsima's repository unless
# PERFGATE_FASTDDS_<MASTER|2_14>_SOURCE or _GIT_URL/_COMMIT, and PERFGATE_FASTCDR_URL, say otherwise),
# Fast CDR 2 from each commit's submodule pin, every sub-experiment each defines through both engines,
# each in its own workspace (kept: a second run rebuilds nothing).
# First, the wheel test: perfgate installed from a wheel into a fresh venv builds its harness and runs;
# then `perfgate bisect` end to end on twelve real commits of a stand-in (docs/bisect.md "Tests").
# About 12 minutes on 2 cores, plus 30 to 60 for master and 2.14 the first time.
# Work folder: $PERFGATE_SLOW_DIR (default ~/.cache/perfgate/slow-test).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
work="${PERFGATE_SLOW_DIR:-$HOME/.cache/perfgate/slow-test}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

# Fast DDS' build dependencies (Debian's source uses the system's JSON, PEGTL, Boost and SQLite),
# colcon with its CMake support, ccache, and dpkg-dev for apt-get source; then the test tools.
ci/install-system.sh ci/debian-packages.txt ci/fastdds-build-packages.txt ci/debian-test-packages.txt
ci/install-python.sh test
# the package as a user installs it: a wheel in a fresh venv building its harness (test_packaging.py)
.venv/bin/python -m pytest -m slow -v analysis/tests/repository/test_packaging.py "$@"
.venv/bin/python -m pytest -m slow -v analysis/tests/bisect/test_bisect_end_to_end.py "$@"

if [ -z "$(apt-cache showsrc fastdds 2>/dev/null)" ]; then
  codename="$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release)"
  printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$codename" | $sudo tee /etc/apt/sources.list.d/perfgate-deb-src.sources >/dev/null
  $sudo apt-get update -qq
fi
mkdir -p "$work/source"
source_dir="$(find "$work/source" -maxdepth 1 -type d -name 'fastdds-2.9.1*' | head -n 1)"
if [ -z "$source_dir" ]; then
  (cd "$work/source" && apt-get source -qq fastdds)
  source_dir="$(find "$work/source" -maxdepth 1 -type d -name 'fastdds-2.9.1*' | head -n 1)"
fi

workspace="$work/workspace"
rm -rf "$workspace"
.venv/bin/python benchmarks/bench_build.py --source "$source_dir" --workspace "$workspace"
PERFGATE_FASTDDS_SOURCE="$source_dir" PERFGATE_FASTDDS_WORKSPACE="$workspace" \
  .venv/bin/python -m pytest -m slow -v analysis/tests/fastdds/test_fastdds_source_build.py "$@"
PERFGATE_FASTDDS_MASTER_WORKSPACE="${PERFGATE_FASTDDS_MASTER_WORKSPACE:-$work/workspace-master}" \
PERFGATE_FASTDDS_2_14_WORKSPACE="${PERFGATE_FASTDDS_2_14_WORKSPACE:-$work/workspace-2.14}" \
  .venv/bin/python -m pytest -m slow -v -s analysis/tests/fastdds/test_fastdds_versions_source_build.py "$@"
