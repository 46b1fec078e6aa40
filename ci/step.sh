# shellcheck shell=bash
# Sourced by the install scripts: `step CMD...` runs CMD with its output appended to "$log" (set by the
# caller); when CMD fails it names CMD, shows the end of the log and exits 1, so that a quiet install
# still says why it stopped.
# shellcheck disable=SC2154  # log is the caller's
step() {
  if ! "$@" >>"$log" 2>&1; then
    echo "failed: $*; the end of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
}
