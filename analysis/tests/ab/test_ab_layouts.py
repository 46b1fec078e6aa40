"""`perfgate ab --layouts N`: round r of both arms runs layout r mod N of its kept install (ab/arms.py).

The layouts here are folders as `perfgate build --layouts` keeps them (bin/, a build record with its
`layout`), each with the real harness on the system's Fast DDS: what is tested is which folder each
round ran; linking them is tested in tests/fastdds/test_layouts.py."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from perfgate import files
from perfgate import schema as s
from perfgate.fastdds import colcon, layouts
from perfgate.fastdds import harness as native_harness
from ab_inputs import kept_with_layouts

SUB = "intraprocess_best_effort"


def perfgate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfgate.cli", *args], capture_output=True, text=True, timeout=600)


def test_the_rounds_rotate_through_the_layouts_the_same_in_both_arms(harness_paths, tmp_path):
    baseline = kept_with_layouts(tmp_path / "installs", "b" * 40, 3, harness_paths)
    candidate = kept_with_layouts(tmp_path / "installs", "c" * 40, 2, harness_paths)
    out = tmp_path / "ab"
    done = perfgate("ab", "--output", str(out), "--baseline", str(baseline), "--candidate", str(candidate),
                    "--layouts", "2", "--subexperiments", SUB, "--payloads", "16", "--rounds", "10",
                    "--samples", "50", "--all-rounds", "--no-plots")
    assert done.returncode == s.EXIT_OK, done.stdout + done.stderr
    assert "; rounds rotating through 2 layouts" in done.stdout
    assert ("perfgate ab: warning: up to 10 rounds through 2 layouts: the rounds after the first 2 measure their "
            "layouts again, which tells less than new ones (perfgate build --layouts as many as the rounds)") in done.stderr
    metadata = files.read_metadata(out)
    assert metadata["layouts"] == 2 and metadata["arms"]["baseline"]["spec"] == str(baseline)
    rounds = sorted((out / s.AB_ROUNDS_DIR).iterdir())
    assert len(rounds) == 10
    for index, round_dir in enumerate(rounds):
        seed = index % 2 + 1
        for arm, folder in (("baseline", baseline), ("candidate", candidate)):
            ran = files.read_metadata(round_dir / arm)
            layout = folder / layouts.LAYOUTS_DIR / str(seed)
            assert ran["fastdds"]["prefix"] == str(layout)
            assert ran["harness"]["path"] == str(layout / "bin" / native_harness.LATENCY_EXECUTABLE)
            assert ran["fastdds"]["commit"] == folder.name
            assert files.read_raw(round_dir / arm / s.raw_csv_name(SUB)).shape[0] == 50


def test_builds_of_another_alignment_than_the_layout_file_and_arms_of_two_alignments_are_warned(harness_paths, tmp_path):
    aligned = [kept_with_layouts(tmp_path / "installs", c * 40, 0, harness_paths, align_functions=64) for c in "ad"]
    plain = kept_with_layouts(tmp_path / "installs", "e" * 40, 0, harness_paths)
    layout_file = tmp_path / "layout.json"  # derived before the entry: the compiler's own alignment; awake, as the A/B
    layout_file.write_text(json.dumps({"platform": "test", "thresholds": {SUB: 0.03}, "cpu_latency": "awake"}))
    warnings = {}
    for name, baseline, candidate in (("aligned", *aligned), ("mixed", aligned[0], plain)):
        done = perfgate("ab", "--output", str(tmp_path / name), "--baseline", str(baseline), "--candidate", str(candidate),
                        "--layout-thresholds", str(layout_file), "--subexperiments", SUB, "--payloads", "16",
                        "--rounds", "6", "--samples", "50", "--all-rounds", "--no-plots")
        assert done.returncode in (s.EXIT_OK, s.EXIT_REGRESSION), done.stdout + done.stderr
        warnings[name] = [line for line in done.stderr.splitlines() if "align-functions" in line]
        metadata = files.read_metadata(tmp_path / name)  # the arms' CMake arguments say it again, for later readers
        assert [colcon.function_alignment(metadata["arms"][arm]["fastdds"]["build"]["cmake_args"])
                for arm in s.AB_ARMS] == ([64, 64] if name == "aligned" else [64, 0])
        # and the report says it beside each aligned arm
        report = (tmp_path / name / "report.md").read_text()
        assert report.count(", functions aligned to 64 bytes)") == (2 if name == "aligned" else 1)
        assert "functions aligned to 0" not in report
    assert warnings["aligned"] == [
        f"perfgate ab: warning: the layout thresholds in {layout_file} were measured on builds with --align-functions 0, "
        "this A/B's builds have --align-functions 64: layout moves may be another size"]
    assert warnings["mixed"] == ["perfgate ab: warning: the arms were built with --align-functions 0 and 64: the A/B "
                                 "measures that alignment's own layout move too"]
