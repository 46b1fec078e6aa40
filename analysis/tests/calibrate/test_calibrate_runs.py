"""`perfgate calibrate` as a user runs it: bad input (exit 2, one line), and a real quick calibration of two
sub-experiments interrupted by SIGINT and finished by a second call that skips what was measured."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import perfgate_in_process, terminal_signals, wait_until
from ab_inputs import kept_with_layouts
from perfgate import files
from perfgate.ab import layout_file
from perfgate.latency import gross, resources_requirements

SUBS = "intraprocess_best_effort,intraprocess_reliable"


@pytest.mark.parametrize("arguments, message", [
    (["--platform", "a b"], "--platform 'a b' is not a platform name"),
    (["--platform", "p", "--fastdds", "/nonexistent-prefix"], "/nonexistent-prefix: --fastdds: not a folder"),
    (["--platform", "p", "--steps", "latency,nothing"], "unknown step 'nothing' in --steps"),
    (["--platform", "p", "--time-budget", "0"], "--time-budget"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, arguments, message):
    result = perfgate_in_process("calibrate", "--output-directory", str(tmp_path / "out"), *arguments)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr
    assert not (tmp_path / "out").exists()


def test_other_arguments_than_the_first_call_are_refused(tmp_path):
    (tmp_path / ".calibration").mkdir()
    (tmp_path / ".calibration" / "arguments.json").write_text(json.dumps({"platform": "other"}))
    result = perfgate_in_process("calibrate", "--platform", "p", "--output-directory", str(tmp_path),
                                 "--steps", "latency", "--quick")
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    assert "started with other fastdds, layout_pairs, platform, quick, steps, subexperiments" in result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == [".calibration"]


def calibrate(output: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "perfgate", "calibrate", "--platform", "tp", "--output-directory",
                             str(output), "--quick", "--subexperiments", SUBS, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            # a test runner started in the background passes SIGINT on ignored
                            preexec_fn=terminal_signals)


@pytest.mark.fastdds
@pytest.mark.heavy
def test_an_interrupted_calibration_goes_on_where_it_stopped(tmp_path, harness_paths):
    output = tmp_path / "calibration"
    steps = ("--steps", "latency,resources,gross,layout")
    first = calibrate(output, *steps)
    assert wait_until(lambda: (output / ".calibration" / "latency" / "run-01").is_dir(), 300)
    first.send_signal(signal.SIGINT)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 130, err
    assert "perfgate calibrate: interrupted" in err
    assert not (output / "tp.csv").exists()  # nothing derived from an unfinished measurement

    second = calibrate(output, *steps)
    out, err = second.communicate(timeout=900)
    assert second.returncode == 0, err
    assert "[latency 1/3] run-01: measured before, skipped" in out
    assert "going on with the quick calibration of tp" in out
    assert sorted(p.name for p in (output / ".calibration" / "latency").iterdir()) == ["run-01", "run-02", "run-03"]
    assert not any((output / ".calibration" / "partial").rglob("metadata.json"))
    # every file reads back with the reader the gate uses, and carries this machine's fingerprint
    required = files.read_requirements(output / "tp.csv")
    assert set(required["Experiment type"]) == set(SUBS.split(",")) and len(required) == 22
    provenance = json.loads((output / "tp_provenance.json").read_text())
    assert provenance["runs"] == 3 and provenance["margin"] == 10.0 and provenance["platform"]["cpu_model"]
    assert gross.read_gross_margins(output / "tp_gross.json").margins.keys() == {"Median", "99%", "Max"}
    assert resources_requirements.read_resource_requirements(output / "tp_resources.json").late_limit_us.keys() \
        == set(SUBS.split(","))
    layout = layout_file.load(output / "tp_layout.json")
    assert set(layout.noise) == set(SUBS.split(",")) and len(layout.machines) == 1
    assert json.loads((output / "tp_layout.json").read_text())["method"].startswith("from A/As of one build")
    summary = json.loads((output / "tp_calibration.json").read_text())
    assert summary["machine"]["id"] == next(iter(layout.machines)) and summary["level"] == 0.015
    assert set(summary["subexperiments"]) == set(SUBS.split(","))
    assert all(set(row["power"]) == {"+3%", "+5%", "+7%"} for row in summary["subexperiments"].values())
    assert summary["gate_ab_seconds"]["median"] > 0
    assert (output / "tp_calibration.md").read_text().startswith("# What `tp` can detect")

    third = calibrate(output, *steps)  # everything there: nothing measured or derived again
    out, err = third.communicate(timeout=300)
    assert third.returncode == 0, err
    assert out.count("measured before, skipped") == 4 and out.count("done before, skipped") == 5


def test_a_build_with_layout_variants_gets_layout_thresholds_from_ab_s_of_them(tmp_path, harness_paths):
    """Issue 42: the layout thresholds from layout A/Bs of the build's layout variants (perfgate build
    --layouts), not from A/As. The variants here are folders as `perfgate build --layouts 2` keeps them, each
    with the real harness on the system's Fast DDS (tests/ab/test_ab_layouts.py)."""
    build = kept_with_layouts(tmp_path / "installs", "a" * 40, 2, harness_paths)
    output = tmp_path / "calibration"
    done = subprocess.run([sys.executable, "-m", "perfgate.cli", "calibrate", "--platform", "tp", "--output-directory",
                           str(output), "--quick", "--subexperiments", SUBS, "--steps", "layout",
                           "--workspace", str(build)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "measuring aa, layout_ab;" in done.stdout
    assert "[layout_ab 1/1] pair-01: measuring" in done.stdout
    pair = files.read_metadata(output / ".calibration" / "layout_ab" / "pair-01")
    assert pair["arms"]["baseline"]["spec"] == str(build / "layouts" / "1")
    assert pair["arms"]["candidate"]["spec"] == str(build / "layouts" / "2")
    content = json.loads((output / "tp_layout.json").read_text())
    assert content["method"].startswith("from A/Bs of the build's layout variants against each other")
    assert "tp_layout.json: thresholds from 1 A/B(s) of the build's layout variants" in done.stdout
    assert set(layout_file.load(output / "tp_layout.json").noise) == set(SUBS.split(","))
