"""One-to-many sub-experiments `<sub>_1to<N>`: their names, `run --subscribers`, the harness's command
lines for N subscribers, and real runs on the real Fast DDS with three subscribers."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate import cli, files
from perfgate import schema as s
from perfgate.fastdds.harness import HarnessPaths
from perfgate.measure import commands, subexperiment
from perfgate.measure import options as run_options


def options_for(tmp_path: Path, **overrides) -> run_options.RunOptions:
    arguments = dict(output=tmp_path / "out", samples=30, payloads=[16, 1024], subexperiments=None, label=None,
                     warmup=None, harness=None, fastdds_prefix=None, pin_cpus=None, timeout=None)
    arguments.update(overrides)
    return run_options.resolve_options(**arguments)


def value(argv, option):
    return argv[argv.index(option) + 1]


# --- names --------------------------------------------------------------------------------------
def test_a_one_to_many_name_is_its_base_with_n_subscribers():
    sub = s.KNOWN_SUBEXPERIMENTS["interprocess_reliable_tcp_security_1to4"]
    assert sub == s.SubExperiment("interprocess_reliable_tcp_security_1to4", "tcpv4", "reliable", True, subscribers=4)
    assert s.resolve_subexperiment("intraprocess_best_effort_1to2").transport == "intraprocess"
    assert s.resolve_subexperiment("interprocess_best_effort_shm_1to16").subscribers == 16
    assert "interprocess_best_effort_1to3" in s.KNOWN_SUBEXPERIMENTS
    assert s.KNOWN_SUBEXPERIMENTS.get("interprocess_best_effort_1to3").subscribers == 3
    assert s.one_to_many_name("interprocess_reliable", 5) == "interprocess_reliable_1to5"
    assert all(sub.subscribers == 1 for sub in s.SUBEXPERIMENTS + s.EXTRA_SUBEXPERIMENTS)


def test_names_are_resolved_not_listed():
    # every list of names (the order of reports, --help, the error's "known:") stays the fixed ones
    assert list(s.KNOWN_SUBEXPERIMENTS) == [sub.name for sub in s.SUBEXPERIMENTS + s.EXTRA_SUBEXPERIMENTS]
    assert len(s.KNOWN_SUBEXPERIMENTS) == 16  # the ten, two _shm, two _zero_copy, two floors
    assert s.DEFAULT_SUBEXPERIMENT_NAMES == tuple(sub.name for sub in s.SUBEXPERIMENTS)
    assert len(s.DEFAULT_SUBEXPERIMENT_NAMES) == 10


@pytest.mark.parametrize("name, problem", [
    ("interprocess_best_effort_1to1", "one-to-many takes 2 to 16 subscribers"),
    ("interprocess_best_effort_1to0", "one-to-many takes 2 to 16 subscribers"),
    ("interprocess_best_effort_1to99", "one-to-many takes 2 to 16 subscribers"),
    ("interprocess_best_effort_1to17", "one-to-many takes 2 to 16 subscribers"),
    ("interprocess_best_effort_1to03", "one-to-many takes 2 to 16 subscribers"),  # one name per file
    ("interprocess_best_effort_1to", "one-to-many takes 2 to 16 subscribers"),
    ("interprocess_udp_magic_1to3", "unknown sub-experiment"),
    ("interprocess_best_effort_1to3_1to2", "unknown sub-experiment"),
    ("throughput_interprocess_best_effort_1to3", "unknown sub-experiment"),
    ("floor_udp_1to3", "floor_udp is a floor (plain sockets), it has no subscribers"),
])
def test_bad_names_are_one_line_and_exit_2(tmp_path, capsys, name, problem):
    assert name not in s.KNOWN_SUBEXPERIMENTS and s.KNOWN_SUBEXPERIMENTS.get(name) is None
    with pytest.raises(KeyError):
        s.KNOWN_SUBEXPERIMENTS[name]
    code = cli.main(["run", "--output", str(tmp_path / "out"), "--subexperiments", f"interprocess_best_effort,{name}"])
    assert code == s.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("perfgate run: error: ")
    assert repr(name) in err and problem in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("count", ["1", "17", "0"])
def test_bad_subscriber_counts_are_one_line_and_exit_2(tmp_path, capsys, count):
    try:
        code = cli.main(["run", "--output", str(tmp_path / "out"), "--subscribers", count])
    except SystemExit as exited:  # argparse's own refusal of a count below 1
        code = exited.code
    assert code == s.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--subscribers" in err
    assert not (tmp_path / "out").exists()


def test_only_the_floors_and_the_one_to_many_need_no_requirements():
    assert s.checked_by_default("interprocess_best_effort") and s.checked_by_default("interprocess_best_effort_shm")
    assert not s.checked_by_default("floor_udp") and not s.checked_by_default("floor_tcp")
    assert not s.checked_by_default("interprocess_best_effort_1to3")
    assert s.checked_by_default("no_such_thing")  # an unknown name is the requirements' business: refused there


# --- run --subscribers --------------------------------------------------------------------------
def test_subscribers_adds_one_to_many_after_the_selected_latency_ones(tmp_path):
    names = [sub.name for sub in options_for(tmp_path, subscribers=4).subexperiments]
    default = list(s.DEFAULT_SUBEXPERIMENT_NAMES) + list(s.FLOOR_SUBEXPERIMENT_NAMES)
    assert names == default + [f"{name}_1to4" for name in s.DEFAULT_SUBEXPERIMENT_NAMES]

    chosen = ["floor_tcp", "interprocess_reliable_shm", "intraprocess_reliable", "interprocess_best_effort_1to2"]
    names = [sub.name for sub in options_for(tmp_path, subexperiments=chosen, subscribers=3).subexperiments]
    assert names == chosen + ["interprocess_reliable_shm_1to3", "intraprocess_reliable_1to3"]
    # named already: measured once, where it was named
    chosen = ["interprocess_best_effort_1to3", "interprocess_best_effort"]
    assert [sub.name for sub in options_for(tmp_path, subexperiments=chosen, subscribers=3).subexperiments] == chosen


def test_the_time_limit_grows_with_the_most_subscribers(tmp_path):
    # 60 s for start-up, then 2 ms for each of (30 + 100) x 2 round trips, times the most subscribers
    assert options_for(tmp_path).timeout_s == pytest.approx(60 + 130 * 2 * 0.002)
    chosen = ["interprocess_best_effort", "interprocess_reliable_1to4", "intraprocess_reliable_1to16"]
    assert options_for(tmp_path, subexperiments=chosen).timeout_s == pytest.approx(60 + 130 * 2 * 0.002 * 16)
    assert options_for(tmp_path, subscribers=3).timeout_s == pytest.approx(60 + 130 * 2 * 0.002 * 3)
    assert options_for(tmp_path, subscribers=3, timeout=5).timeout_s == 5


def test_without_subscribers_the_default_set_stays_the_ten_and_the_floor(tmp_path):
    subs = options_for(tmp_path).subexperiments
    assert [sub.name for sub in subs] == list(s.DEFAULT_SUBEXPERIMENT_NAMES) + list(s.FLOOR_SUBEXPERIMENT_NAMES)
    assert {sub.subscribers for sub in subs} == {1}


def test_a_one_to_many_name_runs_directly(tmp_path):
    subs = options_for(tmp_path, subexperiments=["interprocess_best_effort_1to4"]).subexperiments
    assert subs == (s.KNOWN_SUBEXPERIMENTS["interprocess_best_effort_1to4"],)


def test_the_upstream_engine_refuses_subscribers(tmp_path, capsys):
    code = cli.main(["run", "--output", str(tmp_path / "out"), "--engine", "upstream", "--workspace", str(tmp_path),
                     "--subscribers", "3"])
    assert code == s.EXIT_USAGE
    assert "--subscribers: only for --engine harness" in capsys.readouterr().err


# --- command lines ------------------------------------------------------------------------------
def test_udp_security_commands_for_three_subscribers(tmp_path):
    cpu = min(os.sched_getaffinity(0))
    options = options_for(tmp_path, pin_cpus=f"{cpu}")
    sub = s.KNOWN_SUBEXPERIMENTS["interprocess_reliable_security_1to3"]
    specs = commands.latency_commands(sub, options, Path("/h/perfgate-latency"), 9, tmp_path / "m.csv",
                                      tmp_path / "r.json", tmp_path / "sec")
    assert [spec.role for spec in specs] == ["publisher", "subscriber-0", "subscriber-1", "subscriber-2"]
    publisher, *subscribers = (list(spec.argv) for spec in specs)
    assert value(publisher, "--role") == "publisher" and value(publisher, "--subscribers") == "3"
    assert value(publisher, "--security-name") == "publisher" and value(publisher, "--output") == str(tmp_path / "m.csv")
    for index, argv in enumerate(subscribers):
        assert value(argv, "--role") == "subscriber"
        assert value(argv, "--subscribers") == "3" and value(argv, "--subscriber-index") == str(index)
        assert value(argv, "--echo") == ("on" if index == 2 else "off")
        assert value(argv, "--security-name") == f"subscriber-{index}"
        assert value(argv, "--security-dir") == str(tmp_path / "sec")
        assert value(argv, "--transport") == "udpv4" and value(argv, "--reliability") == "reliable"
        assert value(argv, "--domain") == "9"
        assert "--output" not in argv and "--report" not in argv and "--samples" not in argv
    assert [spec.measures for spec in specs] == [True, False, False, False]
    assert [spec.cpus for spec in specs] == [(cpu,)] * 4
    assert commands.participant_names(sub) == ["publisher", "subscriber-0", "subscriber-1", "subscriber-2"]


def test_tcp_subscribers_start_first_and_only_the_last_echo_is_delayed(tmp_path):
    options = options_for(tmp_path, pin_cpus="none")
    options = dataclasses.replace(options, echo_delay_ns={"interprocess_best_effort_tcp_1to2": 500})
    sub = s.KNOWN_SUBEXPERIMENTS["interprocess_best_effort_tcp_1to2"]
    specs = commands.latency_commands(sub, options, Path("h"), 4, tmp_path / "m.csv", tmp_path / "r.json", None)
    assert [spec.role for spec in specs] == ["subscriber-0", "subscriber-1", "publisher"]
    for spec in specs:
        assert value(spec.argv, "--tcp-port") == value(specs[0].argv, "--tcp-port")
        assert spec.cpus is None and "--security-dir" not in spec.argv
    assert "--echo-delay-ns" not in specs[0].argv and value(specs[1].argv, "--echo-delay-ns") == "500"
    assert "--echo-delay-ns" not in specs[2].argv


def test_intraprocess_one_to_many_is_one_process(tmp_path):
    sub = s.KNOWN_SUBEXPERIMENTS["intraprocess_reliable_1to3"]
    specs = commands.latency_commands(sub, options_for(tmp_path), Path("h"), 4, tmp_path / "m.csv",
                                      tmp_path / "r.json", None)
    assert [spec.role for spec in specs] == ["both"]
    assert value(specs[0].argv, "--role") == "both" and value(specs[0].argv, "--subscribers") == "3"


def test_one_subscriber_keeps_its_command_lines(tmp_path):
    sub = s.KNOWN_SUBEXPERIMENTS["interprocess_best_effort_security"]
    specs = commands.latency_commands(sub, options_for(tmp_path), Path("h"), 4, tmp_path / "m.csv",
                                      tmp_path / "r.json", tmp_path / "sec")
    assert [spec.role for spec in specs] == ["publisher", "subscriber"]
    assert value(specs[1].argv, "--security-name") == "subscriber" and value(specs[1].argv, "--echo") == "on"
    assert value(specs[1].argv, "--subscriber-index") == "0"


def test_each_secure_subscriber_gets_its_own_identity(tmp_path):
    sub = s.KNOWN_SUBEXPERIMENTS["interprocess_best_effort_tcp_security_1to3"]
    paths = HarnessPaths(Path("/h/perfgate-latency"), Path("/h/perfgate-floor"), Path("/h"))
    private = tmp_path / "private"
    private.mkdir()
    specs, failure = subexperiment._commands(sub, options_for(tmp_path), paths, 11, private / "m.csv",
                                             private / "r.json", private)
    assert failure is None
    folder = private / "security"
    for spec in specs:
        name = value(spec.argv, "--security-name")
        assert name == spec.role
        for needed in (f"{name}_cert.pem", f"{name}_key.pem", f"permissions_{name}.p7s"):
            assert (folder / needed).is_file(), needed
    certificates = {(folder / f"{spec.role}_cert.pem").read_bytes() for spec in specs}
    assert len(certificates) == 4


# --- real runs ----------------------------------------------------------------------------------
@pytest.mark.fastdds
@pytest.mark.parametrize("base", ["interprocess_best_effort", "interprocess_reliable_tcp",
                                  "interprocess_reliable_security", "intraprocess_best_effort"])
def test_three_subscribers_on_real_fastdds(harness_paths, tmp_path, base):
    output = tmp_path / "out"
    name = f"{base}_1to3"
    completed = subprocess.run([sys.executable, "-m", "perfgate.cli", "run", "--output", str(output), "--samples", "30",
                                "--payloads", "16,1024", "--subexperiments", base, "--subscribers", "3",
                                "--harness", str(harness_paths.latency)],
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    progress = [line for line in completed.stdout.splitlines() if line.startswith("[")]
    assert progress[0].startswith(f"[1/2] {base}: ok") and progress[1].startswith(f"[2/2] {name}: ok, median ")

    raw = files.read_raw(output / s.raw_csv_name(name))  # the contract's validation
    assert raw[s.PAYLOAD].drop_duplicates().tolist() == [16, 1024]
    assert (raw.groupby(s.PAYLOAD).size() == 30).all() and (raw[s.LATENCY] > 0).all()

    metadata = files.read_metadata(output)
    assert metadata["requested_subexperiments"] == [base, name]
    entry = metadata["subexperiments"][name]
    assert entry["outcome"] == s.OUTCOME_OK and entry["error"] is None
    assert entry["subscribers"] == 3 and metadata["subexperiments"][base]["subscribers"] == 1
    assert entry["measured_samples"] == {"16": 30, "1024": 30} and entry["lost_samples"] == {"16": 0, "1024": 0}
    known = s.KNOWN_SUBEXPERIMENTS[base]
    assert (entry["transport"], entry["reliability"], entry["security"]) == (known.transport, known.reliability,
                                                                            known.security)
    # every subscriber ran to the publisher's end marker: exit 0 (3 had the publisher gone first)
    if known.transport == "intraprocess":
        assert entry["exit_codes"] == {"both": 0}
    else:
        assert entry["exit_codes"] == {"publisher": 0, "subscriber-0": 0, "subscriber-1": 0, "subscriber-2": 0}

    processed = subprocess.run([sys.executable, "-m", "perfgate.cli", "process", "--experiment-directory", str(output),
                                "--no-plots"], capture_output=True, text=True, timeout=300)
    assert processed.returncode == 0, processed.stderr
    summary = files.read_summary(output / s.summary_csv_name(name))
    assert summary[s.BYTES].tolist() == [16, 1024] and summary[s.SAMPLES].tolist() == [30, 30]


# --- downstream ---------------------------------------------------------------------------------
def test_check_and_junit_take_a_one_to_many_sub_experiment_its_requirements_list(tmp_path, capsys):
    from conftest import metadata, tiny_summary, write_experiment

    name = "interprocess_reliable_1to4"
    experiment = write_experiment(tmp_path / "exp", {
        "interprocess_reliable": tiny_summary({16: (50.0, 80.0, 200.0), 1024: (60.0, 90.0, 210.0)}),
        name: tiny_summary({16: (120.0, 300.0, 900.0), 1024: (130.0, 310.0, 950.0)}),
    }, metadata("exp", "2026-11-23T00:00:00Z"))
    requirements = tmp_path / "requirements.csv"
    requirements.write_text("Experiment type,Bytes,Median,99%,Max\n"
                            "interprocess_reliable,16,60,100,300\ninterprocess_reliable,1024,60,100,300\n"
                            f"{name},16,150,400,1000\n{name},1024,125,400,1000\n")
    code = cli.main(["check", "--requirements", str(requirements), "--experiment-directory", str(experiment),
                     "--plots-directory", str(tmp_path / "plots"), "--junit", str(tmp_path / "junit.xml"), "--no-plots"])
    assert code == s.EXIT_REGRESSION  # its 1024 B median, 130 us, is over 125
    out = capsys.readouterr().out
    assert f"{name}: 6 checks, 1 failed" in out and "interprocess_reliable: 6 checks, 0 failed" in out
    report = files.read_check_report(experiment / s.check_csv_name(name))
    assert report[report[s.STATUS] == s.FAILED][[s.CHECK, s.BYTES]].values.tolist() == [[s.MEDIAN, 1024]]
    junit = (tmp_path / "junit.xml").read_text()
    assert f'<testsuite name="latency.{name}"' in junit and f'classname="latency.{name}"' in junit


def test_one_to_many_sub_experiments_come_after_the_fixed_ones():
    from perfgate.latency.experiments import sort_subexperiments

    names = ["interprocess_reliable_1to3", "floor_udp", "interprocess_best_effort_1to3", "intraprocess_reliable"]
    assert sort_subexperiments(names) == ["intraprocess_reliable", "floor_udp", "interprocess_best_effort_1to3",
                                          "interprocess_reliable_1to3"]


def test_check_reports_a_one_to_many_sub_experiment_without_requirements_as_not_checked(tmp_path):
    # measured for reference, like the floors: not an uncovered sub-experiment (exit 2)
    from perfgate import files
    import pandas as pd

    experiment = tmp_path / "exp"
    experiment.mkdir()
    summary = pd.DataFrame([{column: 1.0 for column in s.SUMMARY_COLUMNS}]).assign(**{s.BYTES: 16, s.SAMPLES: 10})
    for sub in ("interprocess_best_effort", "interprocess_best_effort_1to3"):
        files.write_csv(experiment / s.summary_csv_name(sub), summary)
    requirements = tmp_path / "req.csv"
    requirements.write_text("Experiment type,Bytes,Median,99%,Max\ninterprocess_best_effort,16,5,5,5\n")
    completed = subprocess.run([sys.executable, "-m", "perfgate.cli", "check", "--requirements", str(requirements),
                                "--experiment-directory", str(experiment), "--plots-directory", str(tmp_path / "plots"),
                                "--no-plots"], capture_output=True, text=True)
    assert completed.returncode == s.EXIT_OK, completed.stdout + completed.stderr
    assert "interprocess_best_effort_1to3: not checked (a one-to-many sub-experiment without requirements)" in completed.stdout
    assert not (experiment / s.check_csv_name("interprocess_best_effort_1to3")).exists()
