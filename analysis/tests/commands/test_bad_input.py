"""Bad input through the installed console script: exit 2, ONE line on stderr naming the file (and line)
and the problem, no traceback, nothing written."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perfgate import schema as s

# every case is a run of the console script (a second each): outside the unit subset
pytestmark = pytest.mark.heavy

PERFGATE = Path(sys.executable).parent / "perfgate"
SUB = "interprocess_best_effort"
RAW_HEADER = ",".join(s.RAW_COLUMNS)
GOOD_SUMMARY_ROW = "16,10000,30.000,5.000,10.000,10.000,1.000,0.500,3.000,15.000,20.000,30.000"
REQUIREMENTS_HEADER = ",".join(s.REQUIREMENT_COLUMNS)


def raw_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / s.raw_csv_name(SUB)
    path.write_text(text)
    return path


def process_args(tmp_path: Path, raw: Path) -> list[str]:
    return ["process", "--raw-csv", str(raw), "--output-csv", str(tmp_path / "out" / "summary.csv"),
            "--plots-directory", str(tmp_path / "out" / "plots")]


def check_args(tmp_path: Path, summaries: dict[str, str], requirements: str) -> list[str]:
    experiment = tmp_path / "experiment"
    experiment.mkdir()
    for sub, rows in summaries.items():
        (experiment / s.summary_csv_name(sub)).write_text(",".join(s.SUMMARY_COLUMNS) + "\n" + rows)
    (tmp_path / "requirements.csv").write_text(REQUIREMENTS_HEADER + "\n" + requirements)
    return ["check", "--requirements", str(tmp_path / "requirements.csv"), "--experiment-directory", str(experiment),
            "--plots-directory", str(tmp_path / "plots"), "--junit", str(tmp_path / "junit.xml")]


def raw_case(text: str, where: str, problem: str):
    """A process run on one raw file: the error names `<file><where>` and the problem."""
    def build(tmp_path: Path):
        raw = raw_file(tmp_path, text)
        return process_args(tmp_path, raw), f"{raw}{where}", problem
    return build


def two_samples(latency: str) -> str:
    return f"{RAW_HEADER}\n1,16,10.5\n2,16,{latency}\n"


def missing_raw(tmp_path):
    raw = tmp_path / "nowhere.csv"
    return process_args(tmp_path, raw), f"{raw}: ", "raw measurements file not found"


def missing_experiment_folder(tmp_path):
    return ["process", "--experiment-directory", str(tmp_path / "nowhere")], f"{tmp_path / 'nowhere'}: ", \
        "experiment folder not found"


def folder_without_raw_files(tmp_path):
    (tmp_path / "notes.txt").write_text("not a measurement\n")
    return ["process", "--experiment-directory", str(tmp_path)], f"{tmp_path}: ", "no raw measurements"


def duplicate_summary_rows(tmp_path):
    args = check_args(tmp_path, {SUB: f"{GOOD_SUMMARY_ROW}\n{GOOD_SUMMARY_ROW}\n"}, f"{SUB},16,20,30,40\n")
    return args, f"{tmp_path / 'experiment' / s.summary_csv_name(SUB)}:3: ", "duplicate payload row (Bytes=16)"


def requirements_without_a_measured_payload(tmp_path):
    rows = GOOD_SUMMARY_ROW + "\n" + GOOD_SUMMARY_ROW.replace("16,", "32,", 1) + "\n"
    args = check_args(tmp_path, {SUB: rows}, f"{SUB},16,20,30,40\n")
    return args, f"{tmp_path / 'experiment' / s.summary_csv_name(SUB)}:3: ", f"payload 32 B of {SUB} is not in the requirements"


def requirements_without_a_measured_subexperiment(tmp_path):
    other = "intraprocess_reliable"
    args = check_args(tmp_path, {SUB: GOOD_SUMMARY_ROW + "\n", other: GOOD_SUMMARY_ROW + "\n"}, f"{SUB},16,20,30,40\n")
    return args, f"{tmp_path / 'experiment' / s.summary_csv_name(other)}: ", f"sub-experiment {other!r} is not in the requirements"


def experiment_without_summaries(tmp_path):
    args = check_args(tmp_path, {}, f"{SUB},16,20,30,40\n")
    return args, f"{tmp_path / 'experiment'}: ", "no summaries"


def missing_requirements_file(tmp_path):
    args = check_args(tmp_path, {SUB: GOOD_SUMMARY_ROW + "\n"}, "")
    (tmp_path / "requirements.csv").unlink()
    return args, f"{tmp_path / 'requirements.csv'}: ", "requirements file not found"


def junit_without_experiment_folder(tmp_path):
    return ["junit", "--experiment-directory", str(tmp_path / "nowhere"), "--output", str(tmp_path / "j.xml")], \
        f"{tmp_path / 'nowhere'}: ", "experiment folder not found"


CASES = {
    "missing raw file": missing_raw,
    "missing experiment folder": missing_experiment_folder,
    "empty file": raw_case("", ": ", "raw measurements file is empty"),
    "header only": raw_case(RAW_HEADER + "\n", ":1: ", "has a header but no data rows"),
    "missing column": raw_case("Sample,Payload [Bytes]\n1,16\n2,16\n", ":1: ", "missing column(s) 'Latency [us]'"),
    "misspelled column": raw_case("Sample,Payload [Bytes],Latency [ms]\n1,16,1\n2,16,2\n", ":1: ",
                                  "missing column(s) 'Latency [us]'"),
    "non-numeric latency": raw_case(two_samples("fast"), ":3: ", "'Latency [us]' is not a finite number"),
    "negative latency": raw_case(two_samples("-1.5"), ":3: ", "'Latency [us]' is negative"),
    "NaN latency": raw_case(two_samples("nan"), ":3: ", "'Latency [us]' is not a finite number"),
    "infinite latency": raw_case(two_samples("inf"), ":3: ", "'Latency [us]' is not a finite number"),
    "payload with one sample": raw_case(f"{RAW_HEADER}\n1,16,1.0\n2,16,2.0\n3,32,1.0\n", ":4: ",
                                        "payload 32 B has 1 sample; at least 2 are needed"),
    "folder without raw files": folder_without_raw_files,
    "duplicate summary rows": duplicate_summary_rows,
    "requirements without a measured payload": requirements_without_a_measured_payload,
    "requirements without a measured sub-experiment": requirements_without_a_measured_subexperiment,
    "experiment folder without summaries": experiment_without_summaries,
    "missing requirements file": missing_requirements_file,
    "junit without experiment folder": junit_without_experiment_folder,
}


def listing(folder: Path) -> list[tuple[str, int]]:
    return sorted((str(p), p.stat().st_size) for p in folder.rglob("*"))


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, case):
    arguments, where, problem = CASES[case](tmp_path)
    before = listing(tmp_path)
    result = subprocess.run([str(PERFGATE), *arguments], capture_output=True, text=True, timeout=120)
    assert result.returncode == s.EXIT_USAGE, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"perfgate {arguments[0]}: error: {where}"), lines[0]
    assert problem in lines[0]
    assert result.stdout == ""
    assert listing(tmp_path) == before
