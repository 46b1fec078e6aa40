"""How long `perfgate build` takes: a first colcon build of a Fast DDS source, then a rebuild after
touching one source file, against the target (the rebuild at least 5 times faster).

    .venv/bin/python benchmarks/bench_build.py --source DIR --workspace WS [--touch FILE]

WS must be absent or empty (a first build means an empty workspace and an empty compiler cache: the
cache lives in WS/ccache, and CCACHE_DIR is unset for this run). FILE is relative to the source;
default: a file of the core library, whose change relinks the library and everything linked to it.
Prints both times and their ratio; exits 1 when the ratio misses the target. ci/slow-test.sh runs it
on Debian's Fast DDS 2.9.1 source and then reuses WS for the slow integration test.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from perfgate import schema as s

TARGET_RATIO = 5.0
DEFAULT_TOUCHED = "src/cpp/fastdds/publisher/DataWriterImpl.cpp"


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
    parser.add_argument("--touch", default=DEFAULT_TOUCHED)
    options = parser.parse_args()
    if options.workspace.exists() and any(options.workspace.iterdir()):
        sys.exit(f"{options.workspace}: not empty; a first build needs an empty workspace")
    touched = options.source / options.touch
    if not touched.is_file():
        sys.exit(f"{touched}: no such file")
    first = timed_build(options.source, options.workspace)
    os.utime(touched)
    second = timed_build(options.source, options.workspace)
    record = json.loads((options.workspace / s.BUILD_RECORD_FILE).read_text())
    ratio = first / second
    print(f"Fast DDS {record['fastdds']['version']} ({record['fastdds']['package']}), {os.cpu_count()} cores")
    print(f"first build:                 {first:8.1f} s")
    print(f"rebuild after touching {options.touch}: {second:8.1f} s")
    print(f"ratio:                       {ratio:8.1f} (target: at least {TARGET_RATIO:.0f})")
    return 0 if ratio >= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
