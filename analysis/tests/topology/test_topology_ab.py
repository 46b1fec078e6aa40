"""The topology A/B (topology.ab) on real Fast DDS: the light topology with the system Fast DDS as both
arms is an A/A that passes and writes every file; a candidate whose every publish busy-waits (the
harness's --publish-delay-ns, a real slow-down of the whole system) fails its mean and 99 % latency."""
from __future__ import annotations

import json
import os
import signal
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO_ROOT, perfgate_in_process
from perfgate import schema as s
from perfgate.ab import verdict as v
from perfgate.topology import ab as topology_ab
from perfgate.topology import ab_verdict
from perfgate.topology import names as n
from perfgate.topology import run as topology_run
from perfgate.topology.run import plan_from_options

LIGHT = REPO_ROOT / "topologies" / "light.json"
A_A_ROUNDS, A_A_ALPHA = topology_ab.DEFAULT_ROUNDS, 0.002


def light_ab(tmp_path, delays: dict[str, int] | None = None, rounds: int | None = None) -> topology_ab.TopologyAbPlan:
    run = plan_from_options(topology=str(LIGHT), time=2, output=str(tmp_path / "light"), ipc="on", processes="one",
                            transport="udpv4", reliability="reliable", sampling=100, late_percentage=20,
                            late_absolute=5000, too_late_percentage=100, too_late_absolute=50000, history_depth=10,
                            label="ab-test")
    plan = topology_ab.plan_topology_ab(run, name="light", output=tmp_path / "light" / s.AB_DIR, baseline="system",
                                        candidate="system", quick=True, rounds=rounds)
    return topology_ab.TopologyAbPlan(plan.name, plan.run, plan.output, plan.rounds, plan.arms, delays or {})


@pytest.mark.fastdds
def test_an_a_a_of_the_light_topology_passes_and_writes_every_file(tmp_path, harness_paths, capsys):
    # An A/A fails in at most alpha of runs by design: at the quick 8 rounds and 0.02 that is up to 2 % of CI
    # runs (it happened once, beside a load whose period was two rounds). At 12 rounds and 0.002 a test can
    # still reject (all 12 rounds agree: 1/4096 <= 0.002/5), and an A/A fails in at most 0.2 % of runs.
    plan = light_ab(tmp_path, rounds=A_A_ROUNDS)
    code = topology_ab.measure_topology_ab(plan, alpha=A_A_ALPHA)
    captured = capsys.readouterr()
    assert code == s.EXIT_OK, captured.out + captured.err
    ab_dir = plan.output
    for name in (s.METADATA_FILE, ab_verdict.ROUNDS_CSV, s.VERDICT_CSV, s.VERDICT_JSON, s.JUNIT_FILE, s.REPORT_MARKDOWN):
        assert (ab_dir / name).stat().st_size > 0, name
    rounds = pd.read_csv(ab_dir / ab_verdict.ROUNDS_CSV)
    assert len(rounds) == 2 * A_A_ROUNDS and set(rounds[v.ARM]) == set(s.AB_ARMS)
    assert (rounds[n.MEAN] > 0).all() and (rounds[n.RESOURCE_RSS] > 0).all()
    for index in range(A_A_ROUNDS):  # every arm's round an ordinary topology folder, its order alternating
        for arm in s.AB_ARMS:
            assert (ab_dir / s.AB_ROUNDS_DIR / f"{index + 1:02d}" / arm / n.LATENCY_ALL_CSV).is_file()
    record = json.loads((ab_dir / s.VERDICT_JSON).read_text())
    assert record["status"] == "PASS" and record["failed"] == [] and record["tests"] == 5
    assert record["rounds"] == [f"{index + 1:02d}" for index in range(A_A_ROUNDS)] and record["failures"] == []
    verdict = pd.read_csv(ab_dir / s.VERDICT_CSV)
    assert list(verdict[v.STATISTIC]) == list(ab_verdict.ROUND_STATISTICS) and set(verdict[s.STATUS]) == {s.PASSED}
    cases = list(ET.parse(ab_dir / s.JUNIT_FILE).getroot().iter("testcase"))
    assert len(cases) == 5 and not [c for c in cases if c.find("failure") is not None or c.find("error") is not None]
    metadata = json.loads((ab_dir / s.METADATA_FILE).read_text())
    assert metadata["kind"] == ab_verdict.KIND and set(metadata["arms"]) == set(s.AB_ARMS)


@pytest.mark.fastdds
def test_a_candidate_that_publishes_slower_fails_its_latency(tmp_path, harness_paths, capsys):
    # 400 us of busy-waiting per publish: the light topology's latencies are a few hundred us, so
    # the candidate's mean and 99 % latency grow far beyond the 1 % threshold. The full 12 rounds: at the
    # quick 8 every round must agree, and one round whose baseline stalled (a 99 % of several ms beside a
    # busy CI worker) kept the 99 % test from rejecting; at 12, 11 of 12 still reject (13/4096 <= 0.02/5)
    plan = light_ab(tmp_path, {"candidate": 400_000}, rounds=topology_ab.DEFAULT_ROUNDS)
    code = topology_ab.measure_topology_ab(plan)
    captured = capsys.readouterr()
    assert code == s.EXIT_REGRESSION, captured.out + captured.err
    record = json.loads((plan.output / s.VERDICT_JSON).read_text())
    failed = {row["statistic"] for row in record["failed"]}
    assert {n.MEAN, n.P99} <= failed, record["headline"]
    mean = next(row for row in record["failed"] if row["statistic"] == n.MEAN)
    assert mean["lower_bound"] > 1.01 and mean["candidate_median"] > mean["baseline_median"]
    assert "REGRESSION" in captured.out
    cases = {c.get("name"): c for c in ET.parse(plan.output / s.JUNIT_FILE).getroot().iter("testcase")}
    assert cases[f"light {n.MEAN} vs baseline"].find("failure") is not None
    delays = json.loads((plan.output / s.METADATA_FILE).read_text())["arms"]
    assert (delays["baseline"]["publish_delay_ns"], delays["candidate"]["publish_delay_ns"]) == (0, 400_000)


def test_topology_ab_refuses_a_bad_build_or_topology_before_measuring(tmp_path):
    for arguments, message in ((["--topology", str(LIGHT), "--baseline", str(tmp_path / "nothing")],
                                "--baseline: not 'system' and not a folder"),
                               (["--topology", str(tmp_path / "none.json"), "--baseline", "system"],
                                "none.json: cannot read the topology file")):
        result = perfgate_in_process("topology-ab", *arguments, "--candidate", "system", "--output",
                                     str(tmp_path / "ab"))
        assert result.returncode == s.EXIT_USAGE and message in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
        assert not (tmp_path / "ab").exists()


def own_topology_harnesses() -> list[int]:
    """The perfgate-topology processes this test process started (its descendants), by pid."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(proc.name))
            names[int(proc.name)] = (proc / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
    found, stack = [], [os.getpid()]
    while stack:
        for child in children.get(stack.pop(), []):
            stack.append(child)
            if names.get(child, "").endswith(topology_run.EXECUTABLE):
                found.append(child)
    return found


@pytest.mark.fastdds
def test_a_topology_run_killed_mid_round_is_measured_again_both_arms(tmp_path, harness_paths, capsys):
    plan = light_ab(tmp_path, rounds=A_A_ROUNDS)
    killed: list[int] = []
    stop = threading.Event()

    def kill_the_first_one() -> None:
        while not killed and not stop.wait(0.05):
            for pid in own_topology_harnesses():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                break

    killer = threading.Thread(target=kill_the_first_one, daemon=True)
    killer.start()
    try:
        code = topology_ab.measure_topology_ab(plan, alpha=A_A_ALPHA)
    finally:
        stop.set()
        killer.join()
    captured = capsys.readouterr()
    assert len(killed) == 1
    assert code == s.EXIT_OK, captured.out + captured.err
    assert "round 01: " in captured.err and "measuring both arms again (attempt 2 of 3)" in captured.err
    metadata = json.loads((plan.output / s.METADATA_FILE).read_text())
    assert metadata["failures"] == [] and len(metadata["retried"]) == 1
    assert metadata["retried"][0].startswith("round 01: attempt 1 of 3: ")
    rounds = pd.read_csv(plan.output / ab_verdict.ROUNDS_CSV)
    assert len(rounds) == 2 * A_A_ROUNDS  # every round a pair, the first of its second attempt
