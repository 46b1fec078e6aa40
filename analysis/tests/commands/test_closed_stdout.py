"""A command whose reader goes away (`perfgate ... | head -1`) ends as a process killed by SIGPIPE would:
exit 141, no traceback (before: BrokenPipeError's traceback, exit 1)."""
from __future__ import annotations

import signal
import subprocess
import sys

from perfgate import schema as s

SUB = "intraprocess_best_effort"
SUMMARY_LINE = "{payload},10000,3.000,1.000,1.500,1.500,1.000,0.500,3.000,2.000,2.000,3.000"


def test_a_closed_stdout_is_exit_141_without_a_traceback(tmp_path):
    requirements = tmp_path / "platform.csv"
    requirements.write_text("Experiment type,Bytes,Median,99%,Max\n"
                            + "".join(f"{SUB},{payload},2.000,4.000,9.000\n" for payload in s.PAYLOADS))
    experiment = tmp_path / "experiment"
    experiment.mkdir()
    (experiment / s.summary_csv_name(SUB)).write_text(
        ",".join(s.SUMMARY_COLUMNS) + "\n" + "".join(SUMMARY_LINE.format(payload=p) + "\n" for p in s.PAYLOADS))
    command = subprocess.Popen([sys.executable, "-m", "perfgate", "check", "--requirements", str(requirements),
                                "--experiment-directory", str(experiment), "--plots-directory", str(tmp_path / "plots"),
                                 "--no-plots"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    command.stdout.close()  # the reader is gone before the command prints its first line
    _, error = command.communicate(timeout=120)
    assert "Traceback" not in error, error
    assert command.returncode == 128 + signal.SIGPIPE, error
