"""A best-effort payload that lost a round trip or two is complete; a reliable one is short.

The harness's own files (measurements CSV and report JSON, in native/src/measurements.cpp's format)
are written here as the harness writes them, and read by the run's own reader (read_measured), the
classification, metadata.json and the readers downstream (`perfgate process`, the lost[%] check).
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import perfgate_in_process
from perfgate import files
from perfgate import schema as s
from perfgate.latency import resources_table
from perfgate.measure import completeness, subexperiment
from perfgate.measure.subexperiment import SubexperimentResult, classify, read_measured
from perfgate.measure.supervise import Supervision
from perfgate.model import Metadata, read_metadata, write_metadata

SAMPLES = 200
PAYLOADS = (16, 4096)
BEST_EFFORT = s.KNOWN_SUBEXPERIMENTS["interprocess_best_effort"]
RELIABLE = s.KNOWN_SUBEXPERIMENTS["interprocess_reliable"]


def write_harness_files(folder: Path, rows: dict[int, int], lost: dict[int, int]) -> tuple[Path, Path]:
    """measurements.csv and report.json as perfgate-latency writes them: rows numbered through the
    file, payload after payload; per payload its rows ("samples") and lost round trips."""
    rng = np.random.default_rng(7)
    lines, sample = ["Sample,Payload [Bytes],Latency [us]"], 0
    for payload, n in rows.items():
        for latency in 80.0 + rng.gamma(2.0, 3.0, n):
            sample += 1
            lines.append(f"{sample},{payload},{latency:.3f}")
    csv, report = folder / "measurements.csv", folder / "report.json"
    csv.write_text("\n".join(lines) + "\n")
    report.write_text(json.dumps({
        "fastdds_version": "2.9.1", "warmup": 100,
        "payloads": {str(p): {"samples": n, "lost": lost.get(p, 0)} for p, n in rows.items()},
        "matched": True, "complete": True, "loans": False, "error": None}, indent=2))
    return csv, report


def test_the_bound_is_one_percent_and_at_least_one() -> None:
    assert [completeness.allowed_loss(n) for n in (2, 99, 100, 199, 200, 1000, 10000)] == [1, 1, 1, 1, 2, 10, 100]


def test_best_effort_payload_with_one_round_trip_lost_is_kept_and_complete(tmp_path: Path) -> None:
    csv, report = write_harness_files(tmp_path, {16: SAMPLES, 4096: SAMPLES - 1}, {4096: 1})
    measured = read_measured(csv, report, PAYLOADS, SAMPLES, BEST_EFFORT.reliability)
    assert measured.problem is None
    assert measured.counts == {16: 200, 4096: 199}
    assert measured.lost == {16: 0, 4096: 1}
    assert measured.frame.groupby(s.PAYLOAD).size().to_dict() == {16: 200, 4096: 199}
    assert measured.notes == ["4096 B lost 1 of 200 round trips (best effort, at most 2 allowed): its statistics "
                              "are over the 199 that came back"]
    assert classify(Supervision(s.OUTCOME_OK), measured) == (s.OUTCOME_OK, None)


def test_reliable_payload_with_one_round_trip_lost_is_short(tmp_path: Path) -> None:
    csv, report = write_harness_files(tmp_path, {16: SAMPLES, 4096: SAMPLES - 1}, {4096: 1})
    measured = read_measured(csv, report, PAYLOADS, SAMPLES, RELIABLE.reliability)
    assert measured.problem == "payloads without all their samples: 4096 B (199 of 200, 1 lost)"
    assert measured.frame.groupby(s.PAYLOAD).size().to_dict() == {16: 200}
    assert measured.notes == []
    assert classify(Supervision(s.OUTCOME_OK), measured) == (s.OUTCOME_INCOMPLETE, measured.problem)


def test_best_effort_payload_that_lost_more_than_the_bound_is_short(tmp_path: Path) -> None:
    csv, report = write_harness_files(tmp_path, {16: SAMPLES, 4096: SAMPLES - 3}, {4096: 3})
    measured = read_measured(csv, report, PAYLOADS, SAMPLES, BEST_EFFORT.reliability)
    assert measured.problem == ("payloads without all their samples: 4096 B (197 of 200, 3 lost); "
                                "a best-effort payload may lose at most 2 of 200")
    assert measured.frame.groupby(s.PAYLOAD).size().to_dict() == {16: 200}
    assert classify(Supervision(s.OUTCOME_OK), measured)[0] == s.OUTCOME_INCOMPLETE


@pytest.mark.parametrize("rows, lost", [(SAMPLES - 2, 1), (SAMPLES - 1, 0), (SAMPLES - 1, None)],
                         ids=["rows-and-lost-short-of-samples", "none-lost", "no-report"])
def test_best_effort_payload_whose_attempts_are_not_all_accounted_for_is_short(tmp_path: Path, rows, lost) -> None:
    csv, report = write_harness_files(tmp_path, {16: SAMPLES, 4096: rows}, {4096: lost or 0})
    measured = read_measured(csv, report if lost is not None else None, PAYLOADS, SAMPLES, BEST_EFFORT.reliability)
    assert measured.problem.startswith(f"payloads without all their samples: 4096 B ({rows} of 200")
    assert measured.frame.groupby(s.PAYLOAD).size().to_dict() == {16: 200}


def test_best_effort_payload_needs_two_round_trips_back_whatever_it_lost() -> None:
    assert completeness.payload_complete("best_effort", 1, 1, 2) is False
    assert completeness.payload_complete("best_effort", 2, 1, 3) is True


def test_a_lost_best_effort_round_trip_runs_through_metadata_process_and_the_lost_check(tmp_path: Path) -> None:
    harness, experiment = tmp_path / "harness", tmp_path / "experiment"
    harness.mkdir()
    experiment.mkdir()
    csv, report = write_harness_files(harness, {16: SAMPLES, 4096: SAMPLES - 1}, {4096: 1})
    measured = read_measured(csv, report, PAYLOADS, SAMPLES, BEST_EFFORT.reliability)
    result = SubexperimentResult(BEST_EFFORT, *classify(Supervision(s.OUTCOME_OK), measured), measured)
    # as `perfgate run` keeps it: the raw CSV of the complete payloads, the entry in metadata.json
    files.write_csv(experiment / s.raw_csv_name(BEST_EFFORT.name), measured.frame)
    write_metadata(experiment, Metadata(samples=SAMPLES, payloads=PAYLOADS).with_outcome(
        BEST_EFFORT.name, result.metadata_entry()))

    entry = read_metadata(experiment).outcome_of(BEST_EFFORT.name)
    assert (entry.status, entry.error) == (s.OUTCOME_OK, None)
    assert entry.kept_payloads == (16, 4096)
    assert dict(entry.measured_samples) == {"16": 200, "4096": 199}
    assert dict(entry.lost_samples) == {"16": 0, "4096": 1}

    processed = perfgate_in_process("process", "--experiment-directory", str(experiment), "--no-plots")
    assert processed.returncode == s.EXIT_OK, processed.stderr
    summary = files.read_summary(experiment / s.summary_csv_name(BEST_EFFORT.name))
    assert summary[s.BYTES].tolist() == [16, 4096]
    assert summary["Samples"].tolist() == [200, 199]

    lost = resources_table.read_sub_resources(experiment, BEST_EFFORT.name, read_metadata(experiment), {}).lost
    assert lost == (1, 400)  # lost[%] = 0.25: 1 of the 400 round trips tried, both payloads


def test_the_run_says_a_kept_loss_in_one_note_line_on_stderr(tmp_path: Path, monkeypatch, capsys) -> None:
    """run_subexperiment prints the note (the harness's processes stood in by their files, read for real)."""
    csv, report = write_harness_files(tmp_path, {16: SAMPLES, 4096: SAMPLES - 1}, {4096: 1})
    measured = read_measured(csv, report, PAYLOADS, SAMPLES, BEST_EFFORT.reliability)
    finished = SubexperimentResult(BEST_EFFORT, *classify(Supervision(s.OUTCOME_OK, discovered=True), measured), measured)
    monkeypatch.setattr(subexperiment, "_attempt_subexperiment", lambda *args: finished)
    options = SimpleNamespace(command="ab")
    assert subexperiment.run_subexperiment(BEST_EFFORT, options, None, {}, tmp_path) is finished
    assert capsys.readouterr().err.splitlines() == [
        "perfgate ab: note: interprocess_best_effort (udpv4, best_effort): 4096 B lost 1 of 200 round trips "
        "(best effort, at most 2 allowed): its statistics are over the 199 that came back"]
