"""Issue 23's adversarial pass over `perfgate pr-comment`: the gate's report files are the code under test's,
of any size. Only report.md's first line (its verdict) is read, so a report.md of hundreds of megabytes
costs no more memory than a small one: the comment is written, and the command's peak memory stays far
below the file's size (it read the whole file, then split a copy of it, before)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

from perfgate import schema as s

FILE_BYTES = 400 << 20  # sparse: no disk used
PEAK_OF_COMMAND = ("import sys\nfrom perfgate import cli\ncode = cli.main(sys.argv[1:])\n"
                   "sys.stderr.write(''.join(l for l in open('/proc/self/status') if l.startswith('VmHWM')))\n"
                   "sys.exit(code)")
JUNIT = '<testsuites><testsuite name="s"><testcase name="c"/></testsuite></testsuites>'


def test_a_huge_report_md_is_read_for_its_first_line_only(tmp_path):
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / s.JUNIT_FILE).write_text(JUNIT)
    report = gate / s.REPORT_MARKDOWN
    report.write_text("## perfgate latency gate: **PASS**\n")
    os.truncate(report, FILE_BYTES)
    # the command's own peak memory: VmHWM of its process after exec (ru_maxrss would count the forking
    # parent's memory, a pytest worker's, which exec carries into the child's figure)
    done = subprocess.run([sys.executable, "-c", PEAK_OF_COMMAND, "pr-comment", "--gate-output", str(gate),
                           "--platform", "linux", "--report-url", "https://example.org/run"],
                          capture_output=True, text=True)
    assert done.returncode == s.EXIT_OK, done.stderr
    assert done.stdout.startswith("<!-- perfgate:linux -->\n## perfgate on linux: **PASS**")
    peak_kib = int(re.search(r"VmHWM:\s*(\d+) kB", done.stderr).group(1))
    assert peak_kib * 1024 < FILE_BYTES / 2
