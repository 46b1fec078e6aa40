#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages of the lists given (default: ci/debian-packages.txt, what the gate
# needs) that are not installed yet. Prints one line per step; apt's own output goes to a log file
# ($PERFGATE_INSTALL_LOG, default .cache/install-system.log), whose tail is shown when a step fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lists=("$@")
[ ${#lists[@]} -gt 0 ] || lists=("$here/debian-packages.txt")
wanted=()
for list in "${lists[@]}"; do
  mapfile -t -O "${#wanted[@]}" wanted < <(grep -Ev '^\s*(#|$)' "$list")
done
missing=()
for package in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "system packages: all ${#wanted[@]} installed"
  exit 0
fi
log="${PERFGATE_INSTALL_LOG:-$(dirname "$here")/.cache/install-system.log}"
mkdir -p "$(dirname "$log")"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
# shellcheck source=ci/step.sh
source "$here/step.sh"
echo "system packages: updating the package lists (log: $log)"
step $sudo apt-get update -qq
echo "system packages: installing ${#missing[@]}: ${missing[*]}"
step $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
