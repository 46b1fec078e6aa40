"""perfgate ab and perfgate verdict: options, the stored-rounds decision and its files, and real A/B
runs on the system Fast DDS (A/A passes; a known injected delay fails, naming its sub-experiment)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from ab_inputs import PAYLOADS, SUBS, write_rounds
from conftest import live_processes_of
from perfgate.ab import latency as ab
from perfgate.ab import arms as ab_arms
from perfgate import cli, files
from perfgate.measure import commands, cpu_latency
from perfgate.measure import options as run_options
from perfgate import schema as s
from perfgate.ab import verdict as v

def perfgate(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfgate.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


# --- options --------------------------------------------------------------------------------------
def test_arm_specs(tmp_path):
    assert ab_arms.parse_arm("baseline", "system").fastdds_prefix is None
    prefix = tmp_path / "install"
    (prefix / "lib").mkdir(parents=True)
    assert ab_arms.parse_arm("candidate", str(prefix)).fastdds_prefix == prefix.resolve()


@pytest.mark.parametrize("arguments, message", [
    (["--baseline", "/nonexistent/fastdds"], "--baseline: not 'system' and not a folder"),
    (["--candidate", "{empty}"], "--candidate: neither a `perfgate build` workspace"),
    (["--rounds", "0"], "must be positive"),
    (["--rounds", "1000000000"], "--rounds must be from 1 to 1000 (each round measures both builds)"),
    (["--inject-delay-ns", "-5"], "whole nanoseconds"),
    (["--inject-delay-ns", "interprocess_reliable=100"], "names 'interprocess_reliable', which this A/B does not"),
    (["--subexperiments", "nonsense"], "unknown sub-experiment 'nonsense'"),
    (["--threshold", "1.5"], "--threshold is a fraction"),
    (["--pin-cpus", "0,4096"], "CPU 4096 is not available"),
])
def test_bad_options_are_one_line_and_exit_2_before_anything_is_written(tmp_path, capsys, arguments, message):
    empty = tmp_path / "empty"
    empty.mkdir()
    given = {"--baseline": "system", "--candidate": "system", "--subexperiments": ",".join(SUBS)}
    pairs = [a.replace("{empty}", str(empty)) for a in arguments]
    given.update(dict(zip(pairs[::2], pairs[1::2])))
    argv = ["ab", "--output", str(tmp_path / "out")] + [x for kv in given.items() for x in kv]
    try:
        code = cli.main(argv)
    except SystemExit as exit_:  # argparse's own type errors
        code = exit_.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == s.EXIT_USAGE
    assert any(message in line for line in err), err
    assert not (tmp_path / "out").exists()


def test_delays_for_all_or_named_sub_experiments():
    subs = tuple(s.KNOWN_SUBEXPERIMENTS[n] for n in SUBS + ["floor_udp"])
    assert ab.parse_delays("300", subs) == {SUBS[0]: 300, SUBS[1]: 300}  # never the floor
    assert ab.parse_delays(f"{SUBS[1]}=2500", subs) == {SUBS[1]: 2500}
    assert ab.parse_delays(None, subs) == {}
    with pytest.raises(Exception, match="floor"):
        ab.parse_delays("floor_udp=10", subs)


def test_arms_alternate_per_round_and_sub_experiment():
    firsts = np.array([[ab.first_arm(r, i) for i in range(10)] for r in range(16)])
    assert (firsts.sum(axis=0) == 8).all()  # each sub-experiment: each arm first in half the rounds
    assert (firsts.sum(axis=1) == 5).all()  # each round: each arm first for half the sub-experiments


def test_echo_delay_reaches_only_the_echoing_process(tmp_path):
    from dataclasses import replace


    options = replace(run_options.resolve_options(output=tmp_path / "o", samples=10, payloads=[16], subexperiments=SUBS,
                                          label=None, warmup=None, harness=None, fastdds_prefix=None, pin_cpus="none",
                                          timeout=None), echo_delay_ns={SUBS[1]: 700})
    udp = commands.latency_commands(s.KNOWN_SUBEXPERIMENTS[SUBS[1]], options, tmp_path / "h", 5, tmp_path / "c", tmp_path / "r",
                               None)
    assert "--echo-delay-ns" not in udp[0].argv
    assert udp[1].argv[udp[1].argv.index("--echo-delay-ns") + 1] == "700"
    intra = commands.latency_commands(s.KNOWN_SUBEXPERIMENTS[SUBS[0]], options, tmp_path / "h", 5, tmp_path / "c",
                                 tmp_path / "r", None)
    assert "--echo-delay-ns" not in intra[0].argv


# --- verdict from stored rounds ------------------------------------------------------------------------
def test_verdict_on_stored_rounds_fails_the_slower_sub_experiment(tmp_path, capsys):
    write_rounds(tmp_path, 16, {SUBS[1]: 0.05})
    assert cli.main(["verdict", "--ab-directory", str(tmp_path)]) == s.EXIT_REGRESSION
    out = capsys.readouterr().out
    assert f"REGRESSION: {SUBS[1]} Median +5.0 %" in out or f"REGRESSION: {SUBS[1]} Median +4.9 %" in out
    table = pd.read_csv(tmp_path / s.VERDICT_CSV, dtype=str)
    assert tuple(table.columns) == v.VERDICT_COLUMNS + v.EXPLAINED_COLUMNS
    assert table[s.EXPERIMENT_TYPE].tolist() == [SUBS[0], SUBS[0], SUBS[1], SUBS[1]]
    assert table[s.STATUS].tolist() == ["passed", "passed", "failed", "failed"]
    assert table[v.ROUNDS].tolist() == ["16"] * 4
    assert all(len(x.split(".")[1]) == 3 for x in table[v.RATIO])  # three decimals
    assert float(table.loc[2, v.RATIO]) == pytest.approx(1.05, abs=0.003)
    assert float(table.loc[2, v.LOWER_BOUND]) > 1.01
    assert float(table.loc[2, v.ADJUSTED_P]) <= 0.02 < float(table.loc[0, v.ADJUSTED_P])
    drill = pd.read_csv(tmp_path / s.VERDICT_PAYLOADS_CSV)
    assert tuple(drill.columns) == v.PAYLOAD_COLUMNS and len(drill) == 2 * 2 * len(PAYLOADS)
    record = json.loads((tmp_path / s.VERDICT_JSON).read_text())
    assert record["status"] == "REGRESSION" and record["exit_code"] == 1
    assert [f["subexperiment"] for f in record["failed"]] == [SUBS[1], SUBS[1]]
    junit = ET.parse(tmp_path / s.JUNIT_FILE).getroot()
    failures = [c.get("name") for c in junit.iter("testcase") if c.find("failure") is not None]
    assert failures == [f"{SUBS[1]} Median vs baseline", f"{SUBS[1]} 90% vs baseline"]
    assert (tmp_path / s.PLOTS_DIR / s.VERDICT_HEATMAP_PNG).stat().st_size > 5000
    page = (tmp_path / s.REPORT_HTML).read_text()
    assert "REGRESSION" in page and "data:image/png;base64," in page
    assert (tmp_path / s.REPORT_MARKDOWN).read_text().startswith("## perfgate A/B verdict: **REGRESSION**")


def test_verdict_passes_equal_builds_and_reports_improvements(tmp_path, capsys):
    write_rounds(tmp_path, 12, {SUBS[0]: -0.2})
    assert cli.main(["verdict", "--ab-directory", str(tmp_path), "--no-plots"]) == s.EXIT_OK
    out = capsys.readouterr().out
    assert f"improved: {SUBS[0]} Median -20." in out and f"improved: {SUBS[0]} 90% -20." in out
    assert "PASS: no regression above +1.0% in 4 tests" in out
    assert not (tmp_path / s.PLOTS_DIR).exists()


def test_too_few_usable_rounds_is_incomplete_and_says_how_many(tmp_path, capsys):
    # 9 rounds; one lacks the candidate's UDP run and one the whole candidate arm: 8 usable rounds for
    # intra-process (enough: 8 are needed for 4 tests at 0.02), 7 for UDP
    write_rounds(tmp_path, 9, {SUBS[1]: 0.5}, skip={(3, "candidate", SUBS[1])})
    (tmp_path / s.AB_ROUNDS_DIR / "05" / "candidate").rename(tmp_path / "aside")  # a round cut short
    assert cli.main(["verdict", "--ab-directory", str(tmp_path), "--no-plots"]) == s.EXIT_INCOMPLETE
    err = capsys.readouterr().err
    assert "too few usable rounds for interprocess_best_effort (7)" in err
    assert "needs at least 8" in err


def test_rounds_with_raw_files_only_are_summarised(tmp_path):
    rng = np.random.default_rng(1)
    for r in range(10):
        for arm in s.AB_ARMS:
            folder = tmp_path / s.AB_ROUNDS_DIR / f"r{r}" / arm
            folder.mkdir(parents=True)
            scale = 1.3 if arm == "candidate" else 1.0
            raw = pd.DataFrame({s.SAMPLE: range(1, 401), s.PAYLOAD: [16] * 200 + [64] * 200,
                                s.LATENCY: np.round(rng.uniform(10, 11, 400) * scale, 3)})
            files.write_csv(folder / s.raw_csv_name(SUBS[0]), raw)
    assert cli.main(["verdict", "--ab-directory", str(tmp_path), "--no-plots"]) == s.EXIT_REGRESSION
    assert (tmp_path / s.AB_ROUNDS_DIR / "r0" / "baseline" / s.summary_csv_name(SUBS[0])).is_file()
    ratio = float(pd.read_csv(tmp_path / s.VERDICT_CSV)[v.RATIO].iloc[0])
    assert ratio == pytest.approx(1.3, abs=0.02)


def test_bad_stored_rounds_are_exit_2_with_one_line(tmp_path, capsys):
    assert cli.main(["verdict", "--ab-directory", str(tmp_path / "missing")]) == s.EXIT_USAGE
    write_rounds(tmp_path, 10, {})
    broken = tmp_path / s.AB_ROUNDS_DIR / "03" / "baseline" / s.summary_csv_name(SUBS[0])
    broken.write_text("Bytes,Samples\n16,x\n")
    capsys.readouterr()
    assert cli.main(["verdict", "--ab-directory", str(tmp_path)]) == s.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(broken) in err
    assert not (tmp_path / s.VERDICT_CSV).exists()


# --- real A/B runs ------------------------------------------------------------------------------
@pytest.mark.fastdds
def test_a_a_passes_and_an_injected_delay_fails_naming_its_sub_experiment(harness_paths, tmp_path):
    # every round of every sub-experiment (--all-rounds): what this test looks at is each round's folders;
    # curtailed rounds, the default, are tested in tests/ab/test_ab_curtailed.py
    common = ["--baseline", "system", "--candidate", "system", "--subexperiments", ",".join(SUBS),
              "--payloads", ",".join(map(str, PAYLOADS)), "--rounds", "12", "--samples", "200", "--all-rounds"]
    same = perfgate("ab", "--output", str(tmp_path / "aa"), *common)
    assert same.returncode == s.EXIT_OK, same.stdout + same.stderr
    assert "PASS: no regression above +1.0% in 4 tests" in same.stdout
    metadata = files.read_metadata(tmp_path / "aa")
    assert metadata["cpu_pinning"]["requested"] == "auto"
    # a latency A/B keeps idle CPUs awake unless told otherwise (measure/cpu_latency.py), where it may
    held = 0 if os.access(cpu_latency.PM_QOS_DEVICE, os.W_OK) else None
    assert metadata["cpu_latency"]["requested"] == "awake" and metadata["cpu_latency"]["held_us"] == held
    idle = ("idle CPUs kept awake (0 us wake-up latency held)" if held == 0 else
            "idle CPUs the system's policy (awake was asked for, not held)")
    assert idle in (tmp_path / "aa" / s.REPORT_MARKDOWN).read_text()  # the report says what it measured under
    assert metadata["turn_samples"] == 50  # both arms at once, in turns (ab/turns.py)
    assert live_processes_of(metadata["run_id"]) == []
    rounds = sorted((tmp_path / "aa" / s.AB_ROUNDS_DIR).iterdir())
    assert [r.name for r in rounds] == [f"{i:02d}" for i in range(1, 13)]
    for arm in s.AB_ARMS:  # an ordinary experiment folder per arm and round
        arm_meta = files.read_metadata(rounds[0] / arm)
        assert arm_meta["fastdds"]["version"] == "2.9.1"
        assert arm_meta["cpu_latency"] == metadata["cpu_latency"]
        assert sorted(arm_meta["subexperiments"]) == sorted(SUBS)
        for sub in SUBS:
            assert files.read_raw(rounds[0] / arm / s.raw_csv_name(sub)).shape[0] == 200 * len(PAYLOADS)

    # +20 % of the intra-process round trip, measured by the A/A run's baseline (the check).
    # Measured in turns (the default), with both arms' intra-process process on one CPU, the two
    # speeds this round trip runs at on the development VM (about 1.7x apart, one per vCPU,
    # docs/verdict.md) are shared by both arms; run one after the other, +20 % was caught in only
    # about a third of 12-round A/Bs there.
    medians = [files.read_summary(r / "baseline" / s.summary_csv_name(SUBS[0]))[s.MEDIAN] for r in rounds]
    delay_ns = int(0.2 * 1000 * float(np.median(pd.concat(medians))))
    slower = perfgate("ab", "--output", str(tmp_path / "delay"), *common,
                      "--inject-delay-ns", f"{SUBS[0]}={delay_ns}")
    assert slower.returncode == s.EXIT_REGRESSION, slower.stdout + slower.stderr
    table = pd.read_csv(tmp_path / "delay" / s.VERDICT_CSV)
    assert set(table.loc[table[s.STATUS] == "failed", s.EXPERIMENT_TYPE]) == {SUBS[0]}
    assert f"REGRESSION: {SUBS[0]} Median" in slower.stdout
    recorded = files.read_metadata(tmp_path / "delay")["arms"]
    assert recorded["candidate"]["injected_echo_delay_ns"] == {SUBS[0]: delay_ns}
    assert recorded["baseline"]["injected_echo_delay_ns"] == {}
