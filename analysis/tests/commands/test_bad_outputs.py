"""Bad output locations, options and metadata of the reading commands (issue 14, the second
adversarial pass):
exit 2, one line on stderr naming the file and the problem, no traceback, nothing written or
overwritten. Found by trying them: before, these were tracebacks with exit 1 after the check
reports were written, or a JUnit file written over the requirements it came from."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from perfgate import files
from perfgate import schema as s
from perfgate.cli import main

SUB = "intraprocess_best_effort"
UNWRITABLE = "/proc/perfgate-cannot-be-here"  # a folder no one can create, root included


def snapshot(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


@pytest.fixture
def work(fastdds_fixtures, tmp_path, monkeypatch):
    """An experiment (raw and summary of the published 1.9.3 intra-process run), its requirements,
    a reference, and a folder of three runs; the working folder is tmp_path."""
    summary = files.read_summary(fastdds_fixtures / "v193" / "summary_intraprocess.csv")
    experiment = tmp_path / "experiment"
    experiment.mkdir()
    raw = files.read_raw(fastdds_fixtures / "v193" / "measurements_intraprocess.csv")
    files.write_csv(experiment / s.raw_csv_name(SUB), raw[raw[s.PAYLOAD].isin([16, 32])])
    files.write_csv(experiment / s.summary_csv_name(SUB), summary)
    files.write_metadata(experiment, {"latency_definition": s.HALF_ROUND_TRIP})
    rows = [f"{SUB},{int(r[s.BYTES])},{r[s.MEDIAN] * 2:.3f},{r[s.P99] * 2:.3f},{r[s.MAX] * 2:.3f}"
            for _, r in summary.iterrows()]
    (tmp_path / "req.csv").write_text("Experiment type,Bytes,Median,99%,Max\n" + "\n".join(rows) + "\n")
    shutil.copytree(experiment, tmp_path / "reference")
    for number in range(3):
        run = tmp_path / "runs" / f"run{number}"
        run.mkdir(parents=True)
        files.write_csv(run / s.summary_csv_name(SUB), summary)
        files.write_metadata(run, {"latency_definition": s.HALF_ROUND_TRIP,
                                   "created_utc": f"2026-01-0{number + 1}T00:00:00Z"})
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check_args(*extra: str) -> list[str]:
    return ["check", "--requirements", "req.csv", "--experiment-directory", "experiment", "--plots-directory", "plots",
            *extra]


def write_metadata(folder: Path, fields: dict) -> None:
    """The folder's metadata with these fields changed, written as a hand-edited file would be."""
    metadata = json.loads((folder / s.METADATA_FILE).read_text())
    (folder / s.METADATA_FILE).write_text(json.dumps({**metadata, **fields}))


def checked(work: Path) -> None:
    assert main(check_args("--no-plots")) == s.EXIT_OK


CASES = {
    # name: (prepare, arguments, expected end of the one line; the line starts with the file it names)
    "check: the JUnit file where nothing can be made": (
        None, check_args("--no-plots", "--junit", f"{UNWRITABLE}/junit.xml"),
        f"{UNWRITABLE}/junit.xml: the JUnit file cannot be written in /proc: No such file or directory"),
    "check: the JUnit file is a folder": (
        lambda w: (w / "junit").mkdir(), check_args("--no-plots", "--junit", "junit"), "junit: the JUnit file is a folder"),
    "check: the plots folder is a file": (
        None, ["check", "--requirements", "req.csv", "--experiment-directory", "experiment", "--plots-directory",
               "req.csv"], "req.csv: the plots folder is a file"),
    "check: the JUnit file over its requirements": (
        None, check_args("--no-plots", "--junit", "req.csv"),
        "req.csv: the JUnit file would overwrite req.csv, an input of this command"),
    "check: a requirement names no possible sub-experiment": (
        lambda w: (w / "req.csv").write_text((w / "req.csv").read_text() + '"a,b",64,1,2,3\n'),
        check_args("--no-plots"), "req.csv:13: 'a,b' is not a sub-experiment name (letters, digits, '_', '-', '.')"),
    "junit: the output where nothing can be made": (
        checked, ["junit", "--experiment-directory", "experiment", "--output", f"{UNWRITABLE}/j.xml"],
        f"{UNWRITABLE}/j.xml: the JUnit file cannot be written in /proc: No such file or directory"),
    "junit: the output over the requirements": (
        checked, ["junit", "--experiment-directory", "experiment", "--output", "req.csv"],
        # check.json records the requirements' absolute path
        lambda w: f"req.csv: the JUnit file would overwrite {w / 'req.csv'}, an input of this command"),
    "junit: check.json names no file": (
        lambda w: (checked(w), (w / "experiment" / s.CHECK_RECORD_FILE).write_text('{"requirements": 5}')),
        ["junit", "--experiment-directory", "experiment", "--output", "j.xml"],
        "experiment/check.json: 'requirements' is 5; expected the path of a requirements file"),
    "compare: the plots folder where nothing can be made": (
        None, ["compare", "--reference", "reference", "--results", "experiment", "--plots-directory", UNWRITABLE],
        f"{UNWRITABLE}: the plots folder cannot be written in /proc: No such file or directory"),
    "determine-requirements: a margin that overflows": (
        None, ["determine-requirements", "--experiments-results", "runs", "--output-file", "r.csv", "--margin", "1e308"],
        "--margin 1e+308 makes a requirement of inf us, which is not a latency (at most 1e+09 us)"),
    "determine-requirements: the output is a folder": (
        lambda w: (w / "out").mkdir(),
        ["determine-requirements", "--experiments-results", "runs", "--output-file", "out"],
        "out: the requirements file is a folder"),
    "determine-requirements: the output among its runs": (
        None, ["determine-requirements", "--experiments-results", "runs", "--output-file",
               f"runs/run0/{s.summary_csv_name(SUB)}"],
        "the requirements file would be written among the runs it is derived from (runs)"),
    "determine-requirements: the output where nothing can be made": (
        None, ["determine-requirements", "--experiments-results", "runs", "--output-file", f"{UNWRITABLE}/r.csv"],
        f"{UNWRITABLE}/r.csv: the requirements file cannot be written in /proc: No such file or directory"),
    "junit: check.json is a folder": (
        lambda w: (w / "experiment" / s.CHECK_RECORD_FILE).mkdir(),
        ["junit", "--experiment-directory", "experiment", "--output", "j.xml"],
        "experiment/check.json: check record is not a file"),
    "check: metadata.json is a folder": (
        lambda w: ((w / "experiment" / s.METADATA_FILE).unlink(), (w / "experiment" / s.METADATA_FILE).mkdir()),
        check_args("--no-plots"), "experiment/metadata.json: metadata is not a file"),
    "determine-requirements: a platform id that is a number": (
        lambda w: write_metadata(w / "runs" / "run1", {"platform": {"id": 5}}),
        ["determine-requirements", "--experiments-results", "runs", "--output-file", "r.csv"],
        "runs/run1/metadata.json: 'platform.id' is 5; expected a string"),
    "determine-requirements: a platform that is a list": (
        lambda w: write_metadata(w / "runs" / "run1", {"platform": [1]}),
        ["determine-requirements", "--experiments-results", "runs", "--output-file", "r.csv"],
        "runs/run1/metadata.json: 'platform' is [1]; expected an object"),
    "compare: a label that is an object": (
        lambda w: write_metadata(w / "reference", {"label": {"a": 1}}),
        ["compare", "--reference", "reference", "--results", "experiment", "--plots-directory", "c"],
        "reference/metadata.json: 'label' is {'a': 1}; expected a string"),
    "junit: a Fast DDS record that is a string": (
        lambda w: (checked(w), write_metadata(w / "experiment", {"fastdds": "2.9.1"})),
        ["junit", "--experiment-directory", "experiment", "--output", "j.xml"],
        "experiment/metadata.json: 'fastdds' is '2.9.1'; expected an object"),
    "process: a latency that is 0.000 us as written": (
        lambda w: (w / "tiny.csv").write_text("Sample,Payload [Bytes],Latency [us]\n1,16,2.5\n2,16,1e-320\n"),
        ["process", "--raw-csv", "tiny.csv", "--output-csv", "summary.csv", "--no-plots"],
        "tiny.csv:3: 'Latency [us]' is 1e-320, which is 0.000 us at the 3 decimals perfgate writes: no measurement"),
    # an unset CI variable: "" would be the working folder, where the plots would land
    "check: an empty plots folder": (
        None, ["check", "--requirements", "req.csv", "--experiment-directory", "experiment", "--plots-directory", ""],
        "perfgate check: error: --plots-directory is empty; give a path"),
    "compare-subexperiments: an empty plots folder": (
        None, ["compare-subexperiments", "--plots-directory", "", "--subexperiment-summaries",
               f"experiment/{s.summary_csv_name(SUB)}"],
        "perfgate compare-subexperiments: error: --plots-directory is empty; give a path"),
    "determine-requirements: the working folder as the output": (
        None, ["determine-requirements", "--experiments-results", "runs", "--output-file", "."],
        ".: the requirements file is a folder"),
    "check: a summary of one sample": (
        lambda w: (w / "experiment" / s.summary_csv_name(SUB)).write_text(
            ",".join(s.SUMMARY_COLUMNS) + "\n16,1,2.000,2.000,2.000,2.000,0.000,0.000,0.000,2.000,2.000,2.000\n"),
        check_args("--no-plots"),
        f"experiment/{s.summary_csv_name(SUB)}:2: payload 16 B is summarised from 1 sample(s); at least 2 are needed"),
    "process: the summary over its raw data": (
        None, ["process", "--raw-csv", f"experiment/{s.raw_csv_name(SUB)}", "--output-csv",
               f"experiment/{s.raw_csv_name(SUB)}", "--no-plots"],
        f"the output CSV would overwrite experiment/{s.raw_csv_name(SUB)}, an input of this command"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_output_or_option_is_one_line_exit_2_and_nothing_written(name, work, capsys):
    prepare, arguments, expected = CASES[name]
    if prepare is not None:
        prepare(work)
    capsys.readouterr()
    before = snapshot(work)
    assert main(arguments) == s.EXIT_USAGE
    out, err = capsys.readouterr()
    command = arguments[0]
    assert err.count("\n") == 1 and err.startswith(f"perfgate {command}: error: "), err
    expected = expected(work) if callable(expected) else expected
    assert err.rstrip("\n").endswith(expected), err
    assert snapshot(work) == before  # nothing written, nothing overwritten


def test_check_record_with_a_requirements_path_still_works(work, capsys):
    """The record's own form passes the stricter reading."""
    checked(work)
    record = json.loads((work / "experiment" / s.CHECK_RECORD_FILE).read_text())
    assert isinstance(record["requirements"], str)
    assert main(["junit", "--experiment-directory", "experiment", "--output", "j.xml"]) == s.EXIT_OK
    assert (work / "j.xml").stat().st_size > 0


# --- long names (issue 23): a name that fits is written, its temporary too; one that cannot be is one line ---
FITS = "j" * 240 + ".xml"  # 244 bytes: its temporary beside it was 280, refused by the system
TOO_LONG = "n" * 256


@pytest.mark.parametrize("arguments", [
    check_args("--no-plots", "--junit", FITS),
    ["junit", "--experiment-directory", "experiment", "--output", FITS],
    ["process", "--raw-csv", f"experiment/{s.raw_csv_name(SUB)}", "--output-csv", FITS, "--no-plots"],
], ids=["check --junit", "junit --output", "process --output-csv"])
def test_an_output_name_of_244_bytes_is_written(arguments, work, capsys):
    if arguments[0] == "junit":
        checked(work)
    assert main(arguments) == s.EXIT_OK, capsys.readouterr().err
    assert (work / FITS).stat().st_size > 0
    assert not [p for p in work.rglob("*") if ".perfgate-tmp-" in p.name]


@pytest.mark.parametrize("arguments", [
    check_args("--no-plots", "--junit", TOO_LONG),
    ["junit", "--experiment-directory", "experiment", "--output", TOO_LONG],
    ["process", "--raw-csv", f"experiment/{s.raw_csv_name(SUB)}", "--output-csv", TOO_LONG],
    ["run", "--output", TOO_LONG, "--samples", "2"],
    ["gate", "--output", f"runs/{TOO_LONG}", "--quick"],
    ["ab", "--output", TOO_LONG, "--baseline", "system", "--candidate", "system"],
    ["ab-throughput", "--output", TOO_LONG, "--baseline", "system", "--candidate", "system"],
    ["throughput", "--output", TOO_LONG],
    ["history", "--requirements", "req.csv", "--experiments-results", "runs", "--plots-directory", TOO_LONG],
    ["determine-requirements", "--experiments-results", "runs", "--output-file", TOO_LONG],
    ["compare", "--reference", "reference", "--results", "experiment", "--plots-directory", "p/" * 2048],
], ids=lambda arguments: f"{arguments[0]} {next(a for a, b in zip(arguments, arguments[1:]) if len(b) > 255)}")
def test_an_output_name_the_system_cannot_take_is_one_line_exit_2(arguments, work, capsys):
    before = snapshot(work)
    with pytest.raises(SystemExit) as ended:  # refused as the command line is read: argparse's one line
        main(arguments)
    assert ended.value.code == s.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"perfgate {arguments[0]}: error: argument "), err
    assert ("bytes; a file or folder name has at most 255" in err) or ("bytes; a path has at most 4095" in err), err
    assert snapshot(work) == before


def test_an_output_named_after_one_too_long_for_the_system_is_one_line_exit_2(work, capsys):
    """determine-requirements names its provenance file after --output-file: a 244-byte requirements name
    makes a 256-byte provenance name, found before anything is written."""
    output = "r" * 240 + ".csv"
    before = snapshot(work)
    assert main(["determine-requirements", "--experiments-results", "runs", "--output-file", output]) == s.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.rstrip().endswith(f"the provenance file cannot be made: the name '{'r' * 24}...' is 256 bytes; a file "
                                 "or folder name has at most 255"), err
    assert snapshot(work) == before
