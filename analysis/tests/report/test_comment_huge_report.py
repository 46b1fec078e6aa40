"""Issue 23's adversarial pass over `perfgate pr-comment`: the gate's report files are the code under test's,
of any size. Only report.md's first line (its verdict) is read, so a report.md of hundreds of megabytes
costs no more memory than a small one: the comment is written, and the command's peak memory stays far
below the file's size (it read the whole file, then split a copy of it, before)."""
from __future__ import annotations

import os
import subprocess
import sys

from perfgate import schema as s

FILE_BYTES = 400 << 20  # sparse: no disk used
JUNIT = '<testsuites><testsuite name="s"><testcase name="c"/></testsuite></testsuites>'


def test_a_huge_report_md_is_read_for_its_first_line_only(tmp_path):
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / s.JUNIT_FILE).write_text(JUNIT)
    report = gate / s.REPORT_MARKDOWN
    report.write_text("## perfgate latency gate: **PASS**\n")
    os.truncate(report, FILE_BYTES)
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "perfgate", "pr-comment", "--gate-output", str(gate),
                                    "--platform", "linux", "--report-url", "https://example.org/run"],
                                   stdout=stdout, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)  # this child's own peak memory (ru_maxrss, KiB)
    assert os.waitstatus_to_exitcode(status) == s.EXIT_OK, err.read_text()
    assert out.read_text().startswith("<!-- perfgate:linux -->\n## perfgate on linux: **PASS**")
    assert usage.ru_maxrss * 1024 < FILE_BYTES / 2
