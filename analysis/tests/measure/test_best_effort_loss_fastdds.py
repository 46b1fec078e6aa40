"""Round trips the real harness loses, read by the run's reader (measure.subexperiment.read_measured).

Real Fast DDS cannot be made to lose exactly one round trip on purpose: the injected echo delay
applies to every echo, and a sample timeout of at least 1 ms against round trips of tens of
microseconds loses either every round trip or, by chance, some. So this test makes every round trip
late (an echo delay of 3 ms against a sample timeout of 1 ms): the harness's own report counts each
attempt lost, the reader takes those counts, and a payload that lost all its round trips is short
whatever its reliability (the partial losses are tested on harness-format files in test_completeness.py).
"""
from __future__ import annotations

import subprocess

import pytest

from perfgate.measure import completeness, domains
from perfgate.measure.subexperiment import read_measured

SAMPLES, WARMUP, PAYLOADS = 3, 1, (16, 32)  # 8 attempts: below the harness's 20 consecutive losses (peer lost)


@pytest.mark.fastdds
@pytest.mark.parametrize("reliability", ["best_effort", "reliable"])
def test_round_trips_the_harness_loses_are_counted_and_a_payload_that_lost_them_all_is_short(
        harness_paths, tmp_path, reliability):
    csv, report = tmp_path / "measurements.csv", tmp_path / "report.json"
    with domains.lease_domain() as domain:
        run = subprocess.run([str(harness_paths.latency), "--role", "both", "--transport", "udpv4",
                              "--reliability", reliability, "--domain", str(domain), "--discovery-timeout-s", "10",
                              "--sample-timeout-ms", "1", "--echo-delay-ns", "3000000",
                              "--samples", str(SAMPLES), "--warmup", str(WARMUP),
                              "--payloads", ",".join(map(str, PAYLOADS)), "--output", str(csv), "--report", str(report)],
                             capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert f"payload 16: {SAMPLES} of {SAMPLES} samples lost" in run.stderr
    measured = read_measured(csv, report, PAYLOADS, SAMPLES, reliability)
    assert measured.lost == {16: SAMPLES, 32: SAMPLES}  # recorded attempts only, not the warm-up's
    assert measured.frame is None and measured.problem == "the harness wrote no measurements"
    assert completeness.complete_payloads(reliability, {16: 0, 32: 0}, measured.lost, SAMPLES) == []
