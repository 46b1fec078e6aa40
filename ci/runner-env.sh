# shellcheck shell=bash
# The reference runner's workspace and results store: the one place their default paths are written.
# Sourced (`. ci/runner-env.sh`) by the CI steps (.github/workflows/gate.yml, nightly-history.yml,
# ci/Jenkinsfile); a runner whose environment sets PERFGATE_WORKSPACE or PERFGATE_STORE keeps its own
# (ci/runner/README.md). Not for laptops: `perfgate gate` reads both variables (docs/gate.md).
export PERFGATE_WORKSPACE="${PERFGATE_WORKSPACE:-/var/lib/perfgate/workspace}"
export PERFGATE_STORE="${PERFGATE_STORE:-/var/lib/perfgate/store}"
