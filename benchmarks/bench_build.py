"""How long `perfgate build` takes: a first colcon build of a Fast DDS source, then rebuilds after one
source file changed, against the target (a rebuild at least 5 times faster than the first build).

    .venv/bin/python benchmarks/bench_build.py --source DIR --workspace WS [--file FILE]

The build is of a copy of DIR (DIR itself is never changed). WS must be absent or empty: a first
build means an empty workspace and an empty compiler cache (WS/ccache; CCACHE_DIR is unset here).
FILE (relative to the source; default a file of the core library, whose change relinks the library
and everything linked to it) is then
  1. touched (new modification time, same content): make recompiles it, ccache serves the object;
  2. changed (a new definition appended): a real compile of that file, the relinks, the install.
Prints the three times and the ratios; exits 1 when the changed-file rebuild misses the target.
ci/slow-test.sh runs it on Debian's Fast DDS 2.9.1 source and then reuses WS for the slow test.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfgate import schema as s

TARGET_RATIO = 5.0
DEFAULT_FILE = "src/cpp/fastdds/publisher/DataWriterImpl.cpp"


def timed_build(source: Path, workspace: Path) -> float:
    environment = {k: v for k, v in os.environ.items() if k != "CCACHE_DIR"}
    command = [sys.executable, "-m", "perfgate.cli", "build", "--workspace", str(workspace), "--source", str(source)]
    started = time.monotonic()
    completed = subprocess.run(command, env=environment)
    elapsed = time.monotonic() - started
    if completed.returncode != 0:
        sys.exit(f"perfgate build failed (exit {completed.returncode})")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--file", default=DEFAULT_FILE)
    options = parser.parse_args()
    if options.workspace.exists() and any(options.workspace.iterdir()):
        sys.exit(f"{options.workspace}: not empty; a first build needs an empty workspace")
    if not (options.source / options.file).is_file():
        sys.exit(f"{options.source / options.file}: no such file")
    with tempfile.TemporaryDirectory(prefix="perfgate-bench-build-") as scratch:
        source = Path(scratch) / "source"
        shutil.copytree(options.source, source, symlinks=True)  # keeps modification times
        changed = source / options.file
        first = timed_build(source, options.workspace)
        os.utime(changed)
        touched = timed_build(source, options.workspace)
        with open(changed, "a") as code:
            code.write(f"\nnamespace {{ [[maybe_unused]] const int perfgate_bench_change = {int(time.time())}; }}\n")
        edited = timed_build(source, options.workspace)
    record = json.loads((options.workspace / s.BUILD_RECORD_FILE).read_text())
    print(f"Fast DDS {record['fastdds']['version']} ({record['fastdds']['package']}), {os.cpu_count()} cores, "
          f"ccache {'on' if record['ccache']['enabled'] else 'off'}")
    print(f"first build (empty workspace and cache): {first:8.1f} s")
    print(f"after touching {options.file}:  {touched:8.1f} s  ({first / touched:.1f} times faster)")
    print(f"after changing {options.file}:  {edited:8.1f} s  ({first / edited:.1f} times faster; "
          f"target: at least {TARGET_RATIO:.0f})")
    return 0 if first / edited >= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
