#!/usr/bin/env bash
# Creates .venv at the repository root and installs perfgate into it (with extras given as $1, e.g. "test").
# The interpreter: $PERFGATE_PYTHON, else the distribution's /usr/bin/python3 (Debian 12's 3.11.2 is the
# oldest Python the project declares and is tested on), else python3 from PATH; the first line names it.
# An existing .venv is kept with the interpreter it was made with (remove it to change).
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
interpreter="${PERFGATE_PYTHON:-}"
if [ -z "$interpreter" ]; then
  if [ -x /usr/bin/python3 ]; then interpreter=/usr/bin/python3; else interpreter=python3; fi
fi
if [ -x "$root/.venv/bin/python" ]; then
  made_with="the existing .venv"
else
  made_with="$interpreter"
  step "$interpreter" -m venv "$root/.venv"
fi
version="$("$root/.venv/bin/python" -c 'import sys; print(sys.version.split()[0])')"
echo "python: perfgate${extras:+[$extras]} into $root/.venv, Python $version from $made_with (log: $log)"
step "$root/.venv/bin/python" -m pip install -q --upgrade pip
step "$root/.venv/bin/python" -m pip install -q -e "$target"
