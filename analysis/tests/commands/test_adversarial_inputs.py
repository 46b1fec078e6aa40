"""Bad inputs found by an adversarial pass over every sub-command (issue 14): each is exit 2 with one
line naming the file and the problem, no traceback, nothing written, and nothing measured first."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate import cli, files, report
from perfgate import schema as s
from perfgate.errors import InputError

SUB = "intraprocess_best_effort"


def main(arguments: list[str]) -> int:
    """cli.main's exit code, argparse's usage errors (SystemExit) included."""
    try:
        return cli.main(arguments)
    except SystemExit as stop:
        return int(stop.code)


def one_error_line(text: str, command: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in text, lines
    assert lines[0].startswith(f"perfgate {command}: error: ")
    return lines[0]


@pytest.fixture
def experiment(tmp_path, fastdds_fixtures) -> Path:
    folder = tmp_path / "e"
    folder.mkdir()
    shutil.copy(fastdds_fixtures / "v193" / "summary_intraprocess.csv", folder / s.summary_csv_name(SUB))
    return folder


@pytest.fixture
def requirements(tmp_path, experiment) -> Path:
    summary = files.read_summary(experiment / s.summary_csv_name(SUB))
    path = tmp_path / "req.csv"
    path.write_text("Experiment type,Bytes,Median,99%,Max\n" + "".join(
        f"{SUB},{int(row[s.BYTES])},100000.000,100000.000,100000.000\n" for _, row in summary.iterrows()))
    return path


# --- outputs: never renamed over what is not a regular file ----------------------------------------
def test_an_output_that_is_a_named_pipe_or_device_is_refused_and_left_as_it_is(tmp_path, experiment, requirements,
                                                                                fastdds_fixtures, capsys):
    # as root, the write-beside-then-rename replaced /dev/full itself with a regular file
    pipe = tmp_path / "junit.fifo"
    os.mkfifo(pipe)
    assert main(["check", "--requirements", str(requirements), "--experiment-directory", str(experiment),
                     "--plots-directory", str(tmp_path / "plots"), "--no-plots", "--junit", str(pipe)]) == s.EXIT_USAGE
    assert one_error_line(capsys.readouterr().err, "check").endswith(f"{pipe}: the JUnit file is a named pipe, not a file")
    assert stat.S_ISFIFO(pipe.lstat().st_mode) and not (experiment / s.check_csv_name(SUB)).exists()
    with pytest.raises(InputError, match="a named pipe, not a file: perfgate writes a file here"):
        files.write_text(pipe, "x")  # the last guard, for every writer
    assert stat.S_ISFIFO(pipe.lstat().st_mode)
    shutil.copy(fastdds_fixtures / "v193" / "measurements_intraprocess.csv", tmp_path / "raw.csv")
    assert main(["process", "--raw-csv", str(tmp_path / "raw.csv"), "--output-csv", "/dev/null",
                     "--no-plots"]) == s.EXIT_USAGE
    assert "/dev/null: the output CSV is a device, not a file" in one_error_line(capsys.readouterr().err, "process")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


# --- JSON: a key twice, nesting no parser survives -------------------------------------------------
@pytest.mark.parametrize("text, message", [
    ('{"label": "a",\n "label": "b"}', ":2: key 'label' is given twice in one object (the last would silently win)"),
    ("[" * 100_000 + "]" * 100_000, ": metadata is nested too deeply to be metadata"),
])
def test_metadata_that_contradicts_itself_or_cannot_be_parsed_is_one_line(experiment, requirements, tmp_path,
                                                                           capsys, text, message):
    (experiment / s.METADATA_FILE).write_text(text)
    assert main(["check", "--requirements", str(requirements), "--experiment-directory", str(experiment),
                     "--plots-directory", str(tmp_path / "plots"), "--no-plots"]) == s.EXIT_USAGE
    assert one_error_line(capsys.readouterr().err, "check").endswith(f"{experiment / s.METADATA_FILE}{message}")
    assert not (experiment / s.check_csv_name(SUB)).exists()


# --- history: its options and its plots folder, before anything is read ---------------------------
@pytest.fixture
def store(tmp_path, experiment) -> Path:
    folder = tmp_path / "store" / s.STORE_EXPERIMENTS_DIR / "run-1"
    folder.mkdir(parents=True)
    shutil.copy(experiment / s.summary_csv_name(SUB), folder)
    return tmp_path / "store"


@pytest.mark.parametrize("extra, message", [
    (["--alpha", "0"], "argument --alpha: a probability between 0 and 1 (exclusive), got '0'"),
    (["--alpha", "1.5"], "argument --alpha: a probability between 0 and 1 (exclusive), got '1.5'"),
    (["--plots-directory", "/proc/perfgate-plots"], "/proc/perfgate-plots: the plots folder cannot be written in /proc"),
])
def test_history_refuses_a_meaningless_level_and_a_plots_folder_it_cannot_write(store, requirements, tmp_path, capsys,
                                                                                extra, message):
    arguments = ["history", "--requirements", str(requirements), "--experiments-results", str(store),
                 "--plots-directory", str(tmp_path / "plots"), "--no-plots"]
    if extra[0] in arguments:
        arguments[arguments.index(extra[0]) + 1] = extra[1]
    else:
        arguments += extra
    assert main(arguments) == s.EXIT_USAGE
    assert message in one_error_line(capsys.readouterr().err, "history")
    assert not (tmp_path / "plots").exists()


def test_history_never_writes_among_the_experiments_it_reads(store, requirements, capsys):
    # change_points.csv there was a stray file that stopped every later history
    experiments = store / s.STORE_EXPERIMENTS_DIR
    assert main(["history", "--requirements", str(requirements), "--experiments-results", str(store),
                     "--plots-directory", str(experiments), "--no-plots"]) == s.EXIT_USAGE
    assert "the plots folder is inside the experiments folder" in one_error_line(capsys.readouterr().err, "history")
    assert sorted(p.name for p in experiments.iterdir()) == ["run-1"]


# --- promote-baseline ------------------------------------------------------------------------------
@pytest.mark.parametrize("platform, baselines, message", [
    ("x" * 300, "baselines", "platform name 'xxxxxxxxxxxxxxxxxxxx'... is 300 characters long, more than 200"),
    ("p", "/proc/perfgate-baselines", "/proc/perfgate-baselines/p: the baseline folder cannot be written in /proc"),
    ("p", "{experiment}", "{experiment}/p: the baseline folder would be inside the experiment {experiment}"),
])
def test_promote_baseline_refuses_a_target_it_cannot_or_must_not_write(experiment, tmp_path, capsys, platform,
                                                                       baselines, message):
    files.write_metadata(experiment, {"label": "e", "subexperiments": {SUB: {"outcome": s.OUTCOME_OK}}})
    before = sorted(p.name for p in experiment.iterdir())
    baselines = baselines.format(experiment=experiment)
    assert main(["promote-baseline", "--experiment", str(experiment), "--platform", platform,
                     "--baselines-dir", baselines if baselines.startswith("/") else str(tmp_path / baselines)]) \
        == s.EXIT_USAGE
    assert message.format(experiment=experiment) in one_error_line(capsys.readouterr().err, "promote-baseline")
    assert sorted(p.name for p in experiment.iterdir()) == before and not (tmp_path / "baselines").exists()


# --- store push / pull: what git would misread ----------------------------------------------------
@pytest.mark.parametrize("extra, environment, message", [
    (["--remote", "-oProxyCommand=touch pwned"], {}, "--remote '-oProxyCommand=touch pwned' starts with '-'"),
    ([], {s.STORE_REMOTE_ENV: "/tmp/a\nb"}, f"${s.STORE_REMOTE_ENV} '/tmp/a\\nb' holds a control character"),
    (["--branch", ""], {}, "--branch '' is not a git branch name"),
    (["--branch", "../x"], {}, "--branch '../x' is not a git branch name"),
    (["--branch", "a..b"], {}, "--branch 'a..b' is not a git branch name"),
])
def test_store_refuses_a_remote_or_branch_git_would_misread(store, tmp_path, monkeypatch, capsys, extra, environment,
                                                            message):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(s.STORE_REMOTE_ENV, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    arguments = ["store", "pull", "--store", str(store)] + ([] if environment or "--remote" in extra
                                                            else ["--remote", str(remote)]) + extra
    assert main(arguments) == s.EXIT_USAGE
    assert message in one_error_line(capsys.readouterr().err, "store")
    assert not (tmp_path / "pwned").exists() and sorted(p.name for p in (store / s.STORE_EXPERIMENTS_DIR).iterdir()) \
        == ["run-1"]


# --- gate: outputs checked before measuring --------------------------------------------------------
@pytest.mark.parametrize("extra, message", [
    (["--store", "{tmp}/store-file"], "store-file: the results store is a file"),
    (["--store", "/proc/perfgate-store"], "/proc/perfgate-store: the results store cannot be written in /proc"),
    (["--summary-markdown", "{tmp}"], ": the --summary-markdown file is a folder"),
    (["--summary-markdown", ""], "--summary-markdown is empty; give a path"),
])
def test_the_gate_refuses_outputs_it_could_not_write_before_measuring(tmp_path, requirements, capsys, extra, message):
    (tmp_path / "store-file").write_text("x")
    extra = [item.format(tmp=tmp_path) for item in extra]
    code = main(["gate", "--quick", "--platform", "p", "--requirements", str(requirements), "--subexperiments", SUB,
                     "--output", str(tmp_path / "out"), *extra])
    assert code == s.EXIT_USAGE
    assert message in one_error_line(capsys.readouterr().err, "gate")
    assert not (tmp_path / "out").exists()


def test_a_step_summary_that_cannot_be_appended_is_one_line_naming_it_after_the_reports(tmp_path, monkeypatch):
    calls = []

    class Results:  # the reports are written first: only the append fails
        experiment_dir = tmp_path

    monkeypatch.setattr(report, "html_page", lambda results, images: calls.append("html") or "<html>")
    monkeypatch.setattr(report, "markdown_summary", lambda results: calls.append("md") or "# summary\n")
    full = tmp_path / "full"  # a full disk: writes fail with ENOSPC
    os.symlink("/dev/full", full)
    with pytest.raises(InputError) as refused:
        report.write_reports(Results(), full)
    assert str(refused.value) == f"{full}: the Markdown summary cannot be appended: No space left on device"
    assert (tmp_path / s.REPORT_HTML).read_text() == "<html>" and (tmp_path / s.REPORT_MARKDOWN).is_file()


def test_the_console_script_prints_no_traceback_for_a_deep_json(tmp_path, experiment, requirements):
    (experiment / s.METADATA_FILE).write_text("{\"a\": " * 50_000 + "1" + "}" * 50_000)
    perfgate = Path(sys.executable).parent / "perfgate"
    finished = subprocess.run([str(perfgate), "check", "--requirements", str(requirements), "--experiment-directory",
                               str(experiment), "--plots-directory", str(tmp_path / "plots"), "--no-plots"],
                              capture_output=True, text=True, timeout=120)
    assert finished.returncode == s.EXIT_USAGE and "Traceback" not in finished.stderr
    assert finished.stderr.strip() == (f"perfgate check: error: {experiment / s.METADATA_FILE}: metadata is nested "
                                       "too deeply to be metadata")


# --- a full disk: every write error names the file, and leaves no temporary behind ----------------
def limited_file_size(limit: int):
    """A file-size limit in the child: writes past it fail with EFBIG, as writes on a full disk fail
    with ENOSPC (Python ignores SIGXFSZ, so the write returns the error instead of killing it)."""
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_write_that_fails_like_on_a_full_disk_is_one_line_naming_the_file(tmp_path, fastdds_fixtures):
    # a write error carries no file name: it was "error: No space left on device", and history's a traceback
    raw = tmp_path / "raw.csv"
    shutil.copy(fastdds_fixtures / "v193" / "measurements_intraprocess.csv", raw)
    plots = tmp_path / "plots"
    finished = subprocess.run([sys.executable, "-m", "perfgate.cli", "process", "--raw-csv", str(raw), "--output-csv",
                               str(tmp_path / "summary.csv"), "--plots-directory", str(plots)],
                              capture_output=True, text=True, timeout=300, preexec_fn=limited_file_size(20_000))
    assert finished.returncode == s.EXIT_USAGE, finished.stderr
    line = one_error_line(finished.stderr, "process")
    assert line.startswith(f"perfgate process: error: {plots}/") and line.endswith(
        ".png: cannot be written: File too large")
    assert not [p for p in tmp_path.rglob("*") if ".tmp" in p.name]


def test_history_on_a_full_disk_is_one_line_not_a_traceback(tmp_path):
    from history_synthetic import SUBS as HISTORY_SUBS, write_store

    write_store(tmp_path / "store", 12, 6)
    requirements = tmp_path / "requirements.csv"
    requirements.write_text("Experiment type,Bytes,Median,99%,Max\n" + "".join(
        f"{sub},16,100.000,200.000,900.000\n" for sub in HISTORY_SUBS[:2]))
    plots = tmp_path / "plots"
    finished = subprocess.run([sys.executable, "-m", "perfgate.cli", "history", "--requirements", str(requirements),
                               "--experiments-results", str(tmp_path / "store"), "--plots-directory", str(plots)],
                              capture_output=True, text=True, timeout=300, preexec_fn=limited_file_size(1_500))
    assert finished.returncode == s.EXIT_USAGE, finished.stderr
    assert one_error_line(finished.stderr, "history").endswith(": cannot be written: File too large")
    assert not [p for p in tmp_path.rglob("*") if ".tmp" in p.name]
