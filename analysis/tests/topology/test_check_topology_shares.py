"""Issue 44 item 4: `perfgate check-topology` judges the shares of latency_total.csv (late[%], too_late[%],
lost[%]) against a target; a share that contradicts the counts beside it (late[#] of received[#]) is a
file the run did not write: one line naming it, exit 2, no JUnit. Shares as perfgate topology writes
them (3 decimals) are checked as before."""
from __future__ import annotations

import json

import pytest

from conftest import perfgate_in_process
from topology_inputs import write_topology_experiment
from perfgate import schema as s
from perfgate.topology import names as n


def experiment(folder, **shares):
    """latency_total.csv, events.csv and resources.csv as `perfgate topology` writes them: 150 late, 5 too
    late and 3 lost of 10000 received, the shares as written (3 decimals) unless given."""
    return write_topology_experiment(folder, {
        n.RECEIVED: "10000", n.MEAN: "300.000", n.LATE: "150", n.LATE_PERCENT: "1.500", n.TOO_LATE: "5",
        n.TOO_LATE_PERCENT: "0.050", n.LOST: "3", n.LOST_PERCENT: "0.030", **shares})


def check(tmp_path, folder):
    target = tmp_path / "target.json"
    target.write_text(json.dumps({n.TARGET_LATENCY_TOTAL: {n.LATE_PERCENT: 2.0, n.TOO_LATE_PERCENT: 0.1,
                                                           n.LOST_PERCENT: 0.1}}))
    junit = tmp_path / "junit.xml"
    return perfgate_in_process("check-topology", "--target", str(target), "--experiment-directory", str(folder),
                               "--junit", str(junit), "--no-plots"), junit


def test_shares_as_written_pass(tmp_path):
    result, junit = check(tmp_path, experiment(tmp_path / "run"))
    assert result.returncode == s.EXIT_OK, result.stdout + result.stderr
    assert junit.exists()


@pytest.mark.parametrize("share, written, said", [
    # 0 late reported while 150 of 10000 were late: the target's 2 % would pass on a figure never measured
    (n.LATE_PERCENT, "0", "late[%] is 0, but late[#] 150 of received[#] 10000 is 1.500 %"),
    (n.LATE_PERCENT, "1.501", "late[%] is 1.501"),
    (n.TOO_LATE_PERCENT, "0.04", "too_late[%] is 0.04"),
    (n.LOST_PERCENT, "0.03", None),  # 3 of 10003 is 0.029991 %: written 0.030, read as 0.03, the same
    (n.LOST_PERCENT, "0", "lost[%] is 0, but lost[#] 3 of received[#] + lost[#] 10003 is 0.030 %"),
])
def test_a_share_that_contradicts_its_counts_is_one_line_and_exit_2(tmp_path, share, written, said):
    result, junit = check(tmp_path, experiment(tmp_path / "run", **{share: written}))
    if said is None:
        assert result.returncode == s.EXIT_OK, result.stdout + result.stderr
        return
    assert result.returncode == s.EXIT_USAGE, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and n.LATENCY_TOTAL_CSV in result.stderr and said in result.stderr
    assert "contradicts itself" in result.stderr and "Traceback" not in result.stderr
    assert not junit.exists()
