"""Both arms of an A/B measuring at once, taking turns (ab/turns.py, native/src/turns.cpp): the command
lines, and real runs on the system Fast DDS, whole and with one side failing."""
from __future__ import annotations

import os
from dataclasses import replace

import pytest

from perfgate.ab import turns as ab_turns
from perfgate.measure import commands
from perfgate.measure import environment as run_environment
from perfgate.measure import options as run_options
from perfgate import schema as s
from perfgate.fastdds.harness import HarnessPaths

PAYLOADS = (16, 1024)


def options_for(tmp_path, name: str, samples: int = 120) -> run_options.RunOptions:
    return run_options.resolve_options(output=tmp_path / name, samples=samples, payloads=list(PAYLOADS),
                               subexperiments=["intraprocess_best_effort"], label=None, warmup=10, harness=None,
                               fastdds_prefix=None, pin_cpus="auto", timeout=None)


def test_only_the_measuring_process_takes_turns_and_inherits_the_socket(tmp_path):
    options = options_for(tmp_path, "o")
    turns = commands.Turns(socket=9, samples=40)
    for name in ("interprocess_best_effort", "intraprocess_reliable"):
        specs = commands.latency_commands(s.KNOWN_SUBEXPERIMENTS[name], options, tmp_path / "h", 5, tmp_path / "c",
                                     tmp_path / "r", None, turns)
        measuring = [spec for spec in specs if spec.measures]
        assert len(measuring) == 1
        argv = measuring[0].argv
        assert argv[argv.index("--take-turns") + 1] == "9" and argv[argv.index("--turn-samples") + 1] == "40"
        assert measuring[0].pass_fds == (9,)
        for other in (spec for spec in specs if not spec.measures):
            assert "--take-turns" not in other.argv and other.pass_fds == ()
    both = commands.latency_commands(s.KNOWN_SUBEXPERIMENTS["intraprocess_reliable"], options, tmp_path / "h", 5,
                                     tmp_path / "c", tmp_path / "r", None, turns)
    assert both[0].cpus == ((options.pin_cpus[0],) if options.pin_cpus else None)  # one CPU for both arms
    alone = commands.latency_commands(s.KNOWN_SUBEXPERIMENTS["interprocess_best_effort"], options, tmp_path / "h", 5,
                                 tmp_path / "c", tmp_path / "r", None)
    assert all("--take-turns" not in spec.argv and spec.pass_fds == () for spec in alone)


@pytest.mark.fastdds
@pytest.mark.parametrize("name", ["intraprocess_best_effort", "interprocess_reliable"])
def test_two_arms_in_turns_both_measure_every_sample(harness_paths, tmp_path, name):
    sub = s.KNOWN_SUBEXPERIMENTS[name]
    arms = [(options_for(tmp_path, arm), harness_paths) for arm in s.AB_ARMS]
    environment, _ = run_environment.scrub_environment(os.environ)
    workdir = tmp_path / "work"
    workdir.mkdir()
    results = ab_turns.measure_in_turns(sub, arms[0], arms[1], environment, workdir, turn_samples=25)
    for result in results:
        assert result.outcome == s.OUTCOME_OK, result.error
        counts = result.measured.frame.groupby(s.PAYLOAD).size().to_dict()
        assert counts == {p: 120 for p in PAYLOADS}
    assert list(workdir.iterdir()) == []  # private folders (and any keys) gone


@pytest.mark.fastdds
def test_a_side_that_fails_ends_the_other_sides_run(harness_paths, tmp_path):
    sub = s.KNOWN_SUBEXPERIMENTS["interprocess_best_effort"]
    broken = HarnessPaths(tmp_path / "no-such-harness", harness_paths.floor, harness_paths.build_dir)
    environment, _ = run_environment.scrub_environment(os.environ)
    first = (replace(options_for(tmp_path, "first"), timeout_s=60), harness_paths)
    results = ab_turns.measure_in_turns(sub, first, (options_for(tmp_path, "second"), broken), environment,
                                        tmp_path, turn_samples=25)
    assert results[1].outcome == s.OUTCOME_FAILED_TO_START
    # The working side measured its first turn, then found its partner gone instead of waiting forever.
    assert results[0].outcome == s.OUTCOME_INCOMPLETE
    assert "ended before passing the turn" in results[0].error


@pytest.mark.fastdds
def test_sigterm_during_turns_leaves_no_process_and_no_scratch(harness_paths, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from conftest import live_processes_of
    from perfgate import files
    from perfgate.measure import scratch

    output = tmp_path / "ab"
    process = subprocess.Popen(
        [sys.executable, "-m", "perfgate.cli", "ab", "--output", str(output), "--baseline", "system", "--candidate",
         "system", "--rounds", "1", "--samples", "100000", "--payloads", "16",
         "--subexperiments", "interprocess_best_effort"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    run_id = None
    while time.monotonic() < deadline:  # both arms' publisher and subscriber alive: measuring in turns
        if (output / s.METADATA_FILE).is_file():
            run_id = files.read_metadata(output)["run_id"]
            if len(live_processes_of(run_id)) >= 4:
                break
        time.sleep(0.1)
    assert run_id is not None and len(live_processes_of(run_id)) >= 4
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert live_processes_of(run_id) == []
    assert files.read_metadata(output)["interrupted"] is True
    root = scratch.root()
    assert root is None or not [p for p in root.iterdir() if p.name.startswith(f"{scratch.PREFIX}{process.pid}-")]
