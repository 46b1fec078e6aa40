"""Issue 14's standard applied to the commands added with the throughput experiment: every bad option,
file or output location is exit 2 with one line naming it and nothing written; a run's inputs are never
overwritten; data that cannot be a measurement is refused; a check that checks nothing is no pass; an
interrupted throughput run leaves no process or key behind."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import live_processes_of, make_source, perfgate_in_process
from perfgate import files
from perfgate.gate import plan as gate_plan
from perfgate.measure import scratch
from perfgate import schema as s
from perfgate.errors import InputError
from perfgate.fastdds import kept
from throughput_inputs import write_experiment

BEST_EFFORT = s.throughput_csv_name("interprocess_best_effort")
RELIABLE = s.throughput_csv_name("interprocess_reliable")
HEADER = "Experiment type,Bytes,Demand,Recovery time,Subscription throughput,Lost [%]\n"
COVERING = ("throughput_interprocess_best_effort,1024,100,5,1.0,\n"
            "throughput_interprocess_reliable,16,100,5,0.5,\n")


perfgate = perfgate_in_process  # every command here fails (or finishes) before measuring anything


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under folder with its bytes (None for a folder): what a refused command must not change."""
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


def refused(completed: subprocess.CompletedProcess, *needles: str) -> None:
    assert completed.returncode == s.EXIT_USAGE, completed.stdout + completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in completed.stderr, completed.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def experiment(tmp_path) -> tuple[Path, Path]:
    folder = tmp_path / "exp"
    write_experiment(folder, "interprocess_best_effort", "1024,100,5,2000,1000000.000,1500,1250000.000\n")
    write_experiment(folder, "interprocess_reliable", "16,100,5,5000,1000000.000,5000,1000000.000\n")
    requirements = tmp_path / "req.csv"
    requirements.write_text(HEADER + COVERING)
    return folder, requirements


def check(experiment: tuple[Path, Path], *extra: str) -> subprocess.CompletedProcess:
    folder, requirements = experiment
    return perfgate("check-throughput", "--requirements", str(requirements), "--experiment-directory", str(folder),
                    *extra)


# --- perfgate throughput: options and output folders -------------------------------------------------------
@pytest.mark.parametrize("arguments, message", [
    (["--payloads", "65537"], "payloads must be from 1 to 65536 bytes"),  # was exit 3 after starting every harness
    (["--payloads", "99999999999999999999999"], "payloads must be from 1 to 65536 bytes"),
    (["--time", "1e-9"], "--time must be at least a millisecond"),
    (["--time", "nan"], "not a finite number"),
    (["--time", "0.0015"], "--time is whole milliseconds"),  # the harness would run 2 ms, metadata say 1.5
    (["--demands", "99999999999999999999"], "is outside 1 to 100000"),
    (["--subexperiments", "interprocess best_effort"], "unknown sub-experiment 'interprocess best_effort'"),
    (["--workspace", ""], "--workspace is empty"),
])
def test_bad_throughput_options_are_refused_before_anything_runs(tmp_path, arguments, message):
    output = tmp_path / "out"
    refused(perfgate("throughput", "--output", str(output), *arguments), message)
    assert not output.exists()


@pytest.mark.parametrize("where, message", [
    ("/proc/perfgate-throughput", "the output folder cannot be written in /proc"),
    ("FILE/sub", "the output folder cannot be made"),
    ("", "--output is empty"),
    ("DANGLING", "the output folder is a link to nothing"),
    ("LOOP", "the output folder is a link to nothing (or a loop of links)"),
])
def test_an_output_folder_that_cannot_be_made_is_one_line_not_a_traceback(tmp_path, where, message):
    (tmp_path / "FILE").write_text("x")
    (tmp_path / "DANGLING").symlink_to(tmp_path / "nowhere")
    (tmp_path / "LOOP").symlink_to(tmp_path / "LOOP")
    output = str(tmp_path / where) if where in ("DANGLING", "LOOP") else where.replace("FILE", str(tmp_path / "FILE"))
    refused(perfgate("throughput", "--output", output, "--time", "0.2", "--payloads", "16"), message)
    assert (tmp_path / "FILE").read_text() == "x" and not (tmp_path / "nowhere").exists()


def test_run_refuses_a_payload_the_harness_cannot_send(tmp_path):
    refused(perfgate("run", "--output", str(tmp_path / "out"), "--payloads", "16,70000"), "from 1 to 65536 bytes")
    assert not (tmp_path / "out").exists()


# --- check-throughput: tables that cannot be measurements ---------------------------------------------------
@pytest.mark.parametrize("old, new, message, line", [
    (",9.830\n", ",99999.000\n", "'Subscription throughput [Mb/s]' is 99999.000, but", 2),
    (",1250000.000,1200.000,", ",0.000,1200.000,", "'Subscription sample rate [Sample/s]' is 1200.000", 2),
    (",2000.000,16.384,", ",2000.000,1.000,", "'Publication throughput [Mb/s]' is 1.000", 2),
    (",9.830\n", ",nan\n", "not a finite number", 2),
    (",1500,500,", ",1500,400,", "'Lost [samples]' is not 'Sent [samples]' minus", 2),
])
def test_a_table_row_that_contradicts_itself_is_refused(experiment, old, new, message, line):
    folder, _ = experiment
    path = folder / BEST_EFFORT
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))
    refused(check(experiment), message, f"{path}:{line}")
    assert not (folder / "throughput_checks.csv").exists()


def test_a_folder_named_like_a_table_is_named(experiment):
    folder, _ = experiment
    (folder / BEST_EFFORT).unlink()
    (folder / BEST_EFFORT).mkdir()
    refused(check(experiment), f"{folder / BEST_EFFORT}: a throughput table is not a file")


@pytest.mark.parametrize("rows, message, line", [
    ("throughput_interprocess_best_effort,1024,100,5,1.0,nan\n", "'Lost [%]' is not a finite number: 'nan'", 2),
    ("throughput_interprocess_best_effort,1024,100,5,1.0,NA\n", "'Lost [%]' is not a finite number: 'NA'", 2),
    ("throughput_interprocess_best_effort,1024,100,5,1e400,\n", "'Subscription throughput' is not a finite", 2),
    ("throughput_interprocess_best_effort,1024,100,5,0.0004,\n", "0.000 Mb/s at 3 decimals", 2),
    ("throughput_interprocess_best_effort,70000,100,5,1.0,\n", "'Bytes' is 70000, above 65536", 2),
    ("throughput_interprocess_best_effort,1024,100001,5,1.0,\n", "'Demand' is 100001, above 100000", 2),
    ("throughput_interprocess_best_effort,1024,100,60001,1.0,\n", "'Recovery time' is 60001, above 60000", 2),
    ("throughput_floor_udp,1024,100,5,1.0,\n", "'throughput_floor_udp' is never measured", 2),
    ("throughput_interprocess_best_effort_1to2,1024,100,5,1.0,\n", "is never measured", 2),
    (COVERING + "\n# a comment in the middle\n" + COVERING.splitlines()[0] + "\n", "duplicate throughput requirement", 6),
])
def test_requirements_that_no_run_can_meet_are_refused_on_their_line(experiment, rows, message, line):
    folder, requirements = experiment
    requirements.write_text(HEADER + rows)
    before = snapshot(folder)
    refused(check(experiment), message, f"{requirements}:{line}")
    assert snapshot(folder) == before


def test_crlf_bom_blank_lines_and_comments_are_read_as_the_plain_file(experiment):
    folder, requirements = experiment
    requirements.write_text("\ufeff" + (HEADER + "\n# best effort first\n" + COVERING).replace("\n", "\r\n"))
    completed = check(experiment, "--no-plots")
    assert completed.returncode == s.EXIT_OK, completed.stderr
    assert "3 throughput checks: 0 failed" in completed.stdout  # the reliable one has a Lost check too


# --- check-throughput: outputs -----------------------------------------------------------------------------
@pytest.mark.parametrize("target", [BEST_EFFORT, s.METADATA_FILE, "throughput_checks.csv",
                                    "plots/throughput_interprocess_reliable.png"])
def test_the_junit_file_never_replaces_a_file_the_check_reads_or_writes(experiment, target):
    folder, _ = experiment
    files.write_metadata(folder, {"label": "exp"})
    (folder / "throughput_checks.csv").write_text("an earlier report\n")
    before = snapshot(folder)
    refused(check(experiment, "--junit", str(folder / target)), "the JUnit file would overwrite")
    assert snapshot(folder) == before


@pytest.mark.parametrize("make, option, message", [
    (lambda f: (f / "pf").write_text("x"), ["--plots-directory", "PF"], "the plots folder is a file"),
    (lambda f: None, ["--plots-directory", "/proc/perfgate-plots"], "the plots folder cannot be written in /proc"),
    (lambda f: (f / "pf").symlink_to(f / "pf"), ["--plots-directory", "PF"], "the plots folder is a link to nothing"),
    (lambda f: (f / "throughput_checks.csv").mkdir(), [], "the check report is a folder"),
    (lambda f: (f / "plots" / "throughput_interprocess_reliable.png").mkdir(parents=True), [], "the plot is a folder"),
])
def test_an_output_that_cannot_be_written_is_found_before_the_first_is_written(experiment, make, option, message):
    folder, _ = experiment
    make(folder)
    before = snapshot(folder)
    refused(check(experiment, *[o.replace("PF", str(folder / "pf")) for o in option]), message)
    assert snapshot(folder) == before


# --- check-throughput: nothing checked is not a pass ---------------------------------------------------------
def test_a_measured_sub_experiment_without_requirements_is_refused_like_the_latency_check(experiment):
    folder, requirements = experiment
    requirements.write_text(HEADER + COVERING.splitlines()[0] + "\n")
    refused(check(experiment), "throughput_interprocess_reliable is measured but not in the requirements",
            str(folder / RELIABLE))
    assert not (folder / "throughput_checks.csv").exists()


def test_a_run_whose_tests_no_requirement_names_is_not_a_pass(experiment):
    folder, _ = experiment
    # asked for 512 B only: every requirement row is "not asked for", which used to be 0 checks, exit 0
    files.write_metadata(folder, {"requested_subexperiments": ["interprocess_best_effort"], "payloads": [512],
                                  "throughput": {"demands": [100], "recovery_times_ms": [5]}})
    refused(check(experiment), "no requirement row names a test this run measured (2 row(s) name others)")
    assert not (folder / "throughput_checks.csv").exists()


@pytest.mark.parametrize("metadata, message", [
    ({"requested_subexperiments": ["a b"], "payloads": [1024],
      "throughput": {"demands": [100], "recovery_times_ms": [5]}}, "names 'a b', which is no sub-experiment"),
    ({"requested_subexperiments": ["interprocess_best_effort"], "payloads": [1024],
      "throughput": {"demands": [1.5], "recovery_times_ms": [5]}}, "'throughput.demands' is [1.5]"),
    ({"requested_subexperiments": "interprocess_best_effort", "payloads": [1024],
      "throughput": {"demands": [100], "recovery_times_ms": [5]}}, "'requested_subexperiments' is"),
    ({"requested_subexperiments": ["interprocess_best_effort"], "payloads": [1024], "throughput": []},
     "'throughput' is []; expected an object"),
    ({"requested_subexperiments": ["interprocess_best_effort"], "payloads": [1024], "throughput": {}},
     "'throughput.demands' is None"),
])
def test_metadata_that_would_make_every_row_not_asked_for_is_refused(experiment, metadata, message):
    folder, _ = experiment
    files.write_metadata(folder, metadata)
    refused(check(experiment), message, str(folder / s.METADATA_FILE))


# --- determine-throughput-requirements ---------------------------------------------------------------------
def runs(tmp_path: Path, rows: dict[int, str] | None = None, settings=None, count: int = 3) -> Path:
    results = tmp_path / "runs"
    for index in range(count):
        default = f"1024,100,5,2000,1000000.000,{1500 + index},1250000.000\n"
        write_experiment(results / f"r{index}", "interprocess_best_effort", (rows or {}).get(index, default))
        if settings is not None:
            files.write_metadata(results / f"r{index}", {"throughput": settings(index)})
    return results


def determine(results: Path, output: Path, *extra: str) -> subprocess.CompletedProcess:
    return perfgate("determine-throughput-requirements", "--experiments-results", str(results), "--output-file",
                    str(output), *extra)


@pytest.mark.parametrize("rows, settings, message", [
    ({1: "1024,1000,5,2000,1000000.000,1500,1250000.000\n"}, None, "has throughput_interprocess_best_effort at 1024 B x 1000"),
    (None, lambda i: {"demands": [100], "recovery_times_ms": [5], "time_s": 1 + i}, "throughput settings"),
    ({0: "1024,100,5,2000,1000000.000,0,1250000.000\n"}, None, "received 0.000 Mb/s"),
])
def test_runs_that_did_not_measure_the_same_tests_give_no_requirements(tmp_path, rows, settings, message):
    output = tmp_path / "req.csv"
    refused(determine(runs(tmp_path, rows, settings), output), message)
    assert not output.exists() and not (tmp_path / "req_provenance.json").exists()


@pytest.mark.parametrize("arguments, message", [
    (["--margin", "-1"], "must be zero or more"), (["--margin", "nan"], "not a finite number"),
    (["--margin", "101"], "--margin must be from 0 to 100"),
])
def test_bad_margins_are_refused(tmp_path, arguments, message):
    refused(determine(runs(tmp_path), tmp_path / "req.csv", *arguments), message)
    assert not (tmp_path / "req.csv").exists()


def test_fewer_than_two_runs_are_refused(tmp_path):
    refused(determine(runs(tmp_path, count=1), tmp_path / "req.csv"), "needs throughput tables of at least 2 runs, found 1")


@pytest.mark.parametrize("output, message", [
    ("runs/r0/" + BEST_EFFORT, "the requirements file would overwrite"),
    ("throughput_interprocess_best_effort.csv", None),  # only a name like a table, outside the runs: written
])
def test_the_requirements_never_replace_a_run_table(tmp_path, output, message):
    results = runs(tmp_path)
    before = snapshot(results)
    completed = determine(results, tmp_path / output)
    if message is None:
        assert completed.returncode == s.EXIT_OK, completed.stderr
    else:
        refused(completed, message)
    assert snapshot(results) == before


def test_a_results_store_with_the_throughput_history_is_read_for_its_tables_only(tmp_path):
    from perfgate.throughput import check as throughput_check, files as throughput_files
    from perfgate.history import throughput as throughput_history

    assert {throughput_check.THROUGHPUT_CHECKS_FILE, throughput_history.CHANGE_POINTS_CSV} == throughput_files.NOT_TABLES
    results = runs(tmp_path)
    (results / "history_plots").mkdir()
    (results / "history_plots" / throughput_history.CHANGE_POINTS_CSV).write_text("Experiment type,Bytes\n")
    (results / "r0" / "throughput_checks.csv").write_text("Experiment type,Check\n")
    completed = determine(results, tmp_path / "req.csv")
    assert completed.returncode == s.EXIT_OK, completed.stderr
    assert "3 runs, 1 tests" in completed.stdout


def test_a_provenance_file_that_cannot_be_written_leaves_no_requirements_behind(tmp_path):
    (tmp_path / "req_provenance.json").mkdir()
    refused(determine(runs(tmp_path), tmp_path / "req.csv"), "the provenance file is a folder")
    assert not (tmp_path / "req.csv").exists()


# --- names: gate --experiments, <sub>_1to<N>, build --keep-as ------------------------------------------------
@pytest.mark.parametrize("experiments, expected", [
    (["throughput", "latency"], ("latency", "throughput")),
    (["latency", "latency"], "--experiments names 'latency' twice"),
    (["latency", "throughput", "throughput"], "--experiments names 'throughput' twice"),
    (["latency", "speed"], "unknown experiment 'speed'"),
    (["throughput"], "must include latency"),
])
def test_gate_experiments(experiments, expected):
    if isinstance(expected, tuple):
        assert gate_plan.resolve_experiments(experiments) == expected
        return
    with pytest.raises(InputError, match=expected):
        gate_plan.resolve_experiments(experiments)


@pytest.mark.parametrize("value", ["latency,,throughput", "latency,", ""])
def test_gate_refuses_an_empty_experiment_item(tmp_path, value):
    refused(perfgate("gate", "--output", str(tmp_path / "out"), "--experiments", value), "empty item")
    assert not (tmp_path / "out").exists()


def test_a_throughput_requirements_path_that_is_a_folder_is_refused_not_skipped(tmp_path):
    (tmp_path / "vm_throughput.csv").mkdir()
    # the platform's file in the requirements folder (whatever --requirements names), or --throughput-requirements
    with pytest.raises(InputError, match="throughput requirements path is not a file"):
        gate_plan.throughput_requirements(None, "vm", tmp_path)
    with pytest.raises(InputError, match="throughput requirements path is not a file"):
        gate_plan.throughput_requirements(tmp_path / "vm_throughput.csv", "other", tmp_path)
    assert gate_plan.throughput_requirements(None, "other", tmp_path) == (None, None)
    with pytest.raises(InputError, match="throughput requirements file not found"):  # named, so never skipped
        gate_plan.throughput_requirements(tmp_path / "other_throughput.csv", "other", tmp_path)


@pytest.mark.parametrize("name", ["interprocess_best_effort_1to\u00b2", "interprocess_best_effort_1to\u0663",
                                  "interprocess_best_effort_1to02", "interprocess_best_effort_1to 2"])
def test_one_to_many_counts_are_ascii_digits(name):
    with pytest.raises(ValueError, match="one-to-many takes 2 to 16 subscribers"):
        s.resolve_subexperiment(name)


@pytest.mark.parametrize("name", ["a/b", "..", "with space", "x" * 65, "0123456789abcdef0123456789abcdef01234567",
                                  "0123456789ABCDEF0123456789ABCDEF01234567", "base\nline", "\u00e9"])
def test_keep_as_takes_plain_names_only(name):
    with pytest.raises(InputError, match="is not a plain name"):
        kept.check_options(3, name)
    kept.check_options(3, "baseline-2.9_x")  # a plain name passes


# --- perfgate build: where it writes, before anything is built -------------------------------------------
@pytest.mark.parametrize("workspace, junit, message", [
    ("FILE", None, "the workspace is a file"),
    ("/proc/perfgate-ws", None, "the workspace cannot be written in /proc"),
    ("", None, "--workspace is empty"),
    ("WS", "/proc/junit.xml", "the JUnit file cannot be written in /proc"),  # was a traceback after the build
    ("WS", "SOURCE/CMakeLists.txt", "the JUnit file would be written into the source"),  # was overwritten
    ("WS", "WS/perfgate-build.json", "the JUnit file would overwrite"),
])
def test_build_refuses_outputs_it_cannot_or_must_not_write(tmp_path, workspace, junit, message):
    source = make_source(tmp_path / "source")
    (tmp_path / "FILE").write_text("x")
    before = snapshot(tmp_path)
    where = {"FILE": str(tmp_path / "FILE"), "WS": str(tmp_path / "ws"), "SOURCE": str(source)}
    arguments = ["--workspace", where.get(workspace, workspace), "--source", str(source)]
    if junit is not None:
        arguments += ["--junit", junit.replace("SOURCE", str(source)).replace("WS", str(tmp_path / "ws"))]
    refused(perfgate("build", *arguments, cwd=tmp_path), message)  # "" would be the working folder
    assert snapshot(tmp_path) == before


def test_build_refuses_a_source_that_is_not_fast_dds_before_making_the_workspace(tmp_path):
    (tmp_path / "source").mkdir()
    refused(perfgate("build", "--workspace", str(tmp_path / "ws"), "--source", str(tmp_path / "source")),
            "not a Fast DDS source: no CMakeLists.txt")
    assert not (tmp_path / "ws").exists()


@pytest.mark.parametrize("make, what", [(lambda e: e.mkdir(), "folder"), (lambda e: e.write_text("x"), "file")])
def test_keep_as_refuses_a_name_that_is_not_its_link_before_building(tmp_path, make, what):
    source = make_source(tmp_path / "source")
    make((tmp_path / "ws" / "installs").mkdir(parents=True) or tmp_path / "ws" / "installs" / "baseline")
    before = snapshot(tmp_path)
    refused(perfgate("build", "--workspace", str(tmp_path / "ws"), "--source", str(source), "--keep-as", "baseline"),
            f"installs/baseline is a {what}, not a name perfgate made")
    assert snapshot(tmp_path) == before


def test_an_installs_path_that_is_a_file_is_refused_before_building(tmp_path):
    source = make_source(tmp_path / "source")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "installs").write_text("x")
    before = snapshot(tmp_path)
    refused(perfgate("build", "--workspace", str(tmp_path / "ws"), "--source", str(source)),
            "installs: is not a folder: no install can be kept in it")
    assert snapshot(tmp_path) == before


def test_pruning_never_follows_a_link_out_of_the_installs_folder(tmp_path):
    installs = kept.installs_dir(tmp_path / "ws")
    outside = tmp_path / "outside"
    (outside / "keep-me").mkdir(parents=True)
    (installs / ("a" * 40)).mkdir(parents=True)
    (installs / ("b" * 40)).write_text("a file named like a commit")
    for name in ("baseline", "c" * 40, ".partial-x"):  # a name, a commit and a leftover copy, all links outside
        (installs / name).symlink_to(outside)
    assert kept.reusable(tmp_path / "ws", "b" * 40, "digest", []) is None
    assert [p.name for p in kept.prune(tmp_path / "ws", 0)] == ["a" * 40]
    assert (outside / "keep-me").is_dir()
    assert sorted(p.name for p in installs.iterdir()) == sorted(["b" * 40, "baseline", "c" * 40])


# --- signals -------------------------------------------------------------------------------------------------
@pytest.mark.fastdds
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_throughput_run_leaves_no_harness_and_no_key(harness_paths, tmp_path, signum):
    output = tmp_path / "out"
    base = scratch.root() or Path(tempfile.gettempdir())
    process = subprocess.Popen([sys.executable, "-m", "perfgate.cli", "throughput", "--output", str(output),
                                "--subexperiments", "interprocess_reliable_security", "--payloads", "16",
                                # a test far longer than the wait for its processes, even under load: the
                                # signal must find the run measuring, never already done (it was, in CI)
                                "--demands", "100", "--time", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True,
                               # SIGINT at its default: a runner started in the background passes it on ignored
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    run_id, deadline = None, time.monotonic() + 120  # the harness may be built first; not a timing assertion
    while time.monotonic() < deadline and process.poll() is None:
        if run_id is None and (output / s.METADATA_FILE).is_file():
            run_id = json.loads((output / s.METADATA_FILE).read_text())["run_id"]
        if run_id is not None and len(live_processes_of(run_id)) == 2:
            break
        time.sleep(0.02)
    keys = list(base.glob(f"{scratch.PREFIX}{process.pid}-*/*/security/*key*"))
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert keys, "the run never had both harness processes and their keys"
    assert process.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "perfgate throughput: interrupted"
    assert live_processes_of(run_id) == []
    assert not any(key.exists() for key in keys)
    assert not list(base.glob(f"{scratch.PREFIX}{process.pid}-*"))
    metadata = json.loads((output / s.METADATA_FILE).read_text())
    assert metadata["interrupted"] is True and metadata["finished_utc"]
    assert metadata["subexperiments"]["interprocess_reliable_security"]["outcome"] == s.OUTCOME_INCOMPLETE
    assert not (output / s.throughput_csv_name("interprocess_reliable_security")).exists()
    assert not list(output.glob(".*tmp*"))


@pytest.mark.parametrize("command", [["run", "--samples", "10", "--subexperiments", "floor_udp"],
                                     ["ab", "--baseline", "system", "--candidate", "system"],
                                     ["throughput", "--subexperiments", "interprocess_best_effort"]])
@pytest.mark.parametrize("where, message", [
    ("/proc/perfgate-out", "the output folder cannot be written in /proc"),
    ("FILE/sub", "the output folder cannot be made"),
    ("DANGLING", "the output folder is a link to nothing (or a loop of links)"),
])
def test_an_output_folder_that_cannot_be_made_is_one_line_before_anything_runs(tmp_path, command, where, message):
    # run and ab share the throughput command's check (measure.options.check_output_folder): no traceback
    (tmp_path / "FILE").write_text("x")
    (tmp_path / "DANGLING").symlink_to(tmp_path / "nowhere" / "x")
    output = where if where.startswith("/") else str(tmp_path / where)
    completed = perfgate(command[0], "--output", output, *command[1:])
    assert completed.returncode == s.EXIT_USAGE, completed.stderr
    assert len(completed.stderr.strip().splitlines()) == 1 and message in completed.stderr
    assert "Traceback" not in completed.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["DANGLING", "FILE"]
