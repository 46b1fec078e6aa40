"""perfgate throughput and check-throughput: the derived table, the files, the check and its JUnit,
bad input, and real bursts through the real Fast DDS (UDP, TCP with security, intra-process; a
subscriber killed in the middle)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from conftest import perfgate_in_process
from throughput_inputs import HARNESS_HEADER, write_experiment
from perfgate import files
from perfgate import schema as s
from perfgate.errors import InputError
from perfgate.throughput.check import check_throughput
from perfgate.throughput.files import read_harness_throughput, read_throughput, read_throughput_requirements



perfgate = perfgate_in_process  # (the killed and interrupted runs below are real processes)


# --- the table ----------------------------------------------------------------------------------------
def test_rates_throughput_and_lost_from_counts_and_times(tmp_path):
    table = write_experiment(tmp_path, "interprocess_best_effort",
                             "1024,100,5,2000,1000000.000,1500,1250000.000\n16,10,0,1,0.000,1,0.000\n")
    assert list(table.columns) == list(s.THROUGHPUT_COLUMNS)
    first = table.iloc[0]
    assert first[s.PUBLICATION_RATE] == pytest.approx(2000.0)
    assert first[s.PUBLICATION_THROUGHPUT] == pytest.approx(2000 * 1024 * 8 / 1e6)  # 16.384 Mb/s
    assert first[s.SUBSCRIPTION_RATE] == pytest.approx(1200.0)
    assert first[s.SUBSCRIPTION_THROUGHPUT] == pytest.approx(1500 * 1024 * 8 / 1.25e6)  # 9.830 Mb/s
    assert first[s.LOST] == 500
    assert (table.iloc[1][[s.PUBLICATION_RATE, s.SUBSCRIPTION_THROUGHPUT]] == 0).all()  # nothing timed: no rate
    text = (tmp_path / s.throughput_csv_name("interprocess_best_effort")).read_text().splitlines()
    assert text[0] == ("Payload [Bytes],Demand [sample/burst],Recovery time [ms],Sent [samples],Publication time [us],"
                       "Publication sample rate [Sample/s],Publication throughput [Mb/s],Received [samples],"
                       "Lost [samples],Subscription time [us],Subscription sample rate [Sample/s],"
                       "Subscription throughput [Mb/s]")
    assert text[1] == "1024,100,5,2000,1000000.000,2000.000,16.384,1500,500,1250000.000,1200.000,9.830"
    # read back as written: three decimals
    pd.testing.assert_frame_equal(read_throughput(tmp_path / s.throughput_csv_name("interprocess_best_effort")),
                                  table.round(3))


@pytest.mark.parametrize("rows, message", [
    ("16,100,5,10,1.0,11,1.0\n", "'Received [samples]' (11) is more than 'Sent [samples]' (10)"),
    ("16,100,5,10,1.0,9,1.0\n16,100,5,10,1.0,9,1.0\n", "duplicate throughput test row"),
    ("16,0,5,10,1.0,9,1.0\n", "'Demand [sample/burst]' is zero"),
    ("16,100,5,10,-1.0,9,1.0\n", "'Publication time [us]' is negative"),
])
def test_impossible_harness_counts_name_the_line(tmp_path, rows, message):
    path = tmp_path / "counts.csv"
    path.write_text(HARNESS_HEADER + rows)
    with pytest.raises(InputError) as raised:
        read_harness_throughput(path)
    assert message in raised.value.message and raised.value.line in (2, 3)


def test_a_lost_column_that_does_not_add_up_is_refused(tmp_path):
    write_experiment(tmp_path, "interprocess_best_effort", "16,100,5,10,1.0,9,1.0\n")
    path = tmp_path / s.throughput_csv_name("interprocess_best_effort")
    path.write_text(path.read_text().replace(",9,1,", ",9,0,"))
    with pytest.raises(InputError, match="'Lost \\[samples\\]' is not 'Sent \\[samples\\]' minus"):
        read_throughput(path)


# --- the check --------------------------------------------------------------------------------------------
REQUIREMENTS = """Experiment type,Bytes,Demand,Recovery time,Subscription throughput,Lost [%]

# best effort: a minimum, and at most 25 % lost where the row says so
throughput_interprocess_best_effort,1024,100,5,9.830,
throughput_interprocess_best_effort,1024,1000,5,1.0,25
throughput_interprocess_reliable,16,100,5,0.5
throughput_interprocess_reliable,16,100,10,0.5
"""


@pytest.fixture
def checked(tmp_path):
    experiment = tmp_path / "exp"
    write_experiment(experiment, "interprocess_best_effort",
                     "1024,100,5,2000,1000000.000,1500,1250000.000\n1024,1000,5,1000,1000000.000,740,1000000.000\n")
    write_experiment(experiment, "interprocess_reliable", "16,100,5,5000,1000000.000,4999,1000000.000\n")
    requirements = tmp_path / "req.csv"
    requirements.write_text(REQUIREMENTS)
    return experiment, requirements


def test_minimum_equal_passes_reliable_loss_fails_best_effort_loss_against_its_limit(checked):
    experiment, requirements = checked
    required = read_throughput_requirements(requirements)
    tables = {f"throughput_{sub}": read_throughput(experiment / s.throughput_csv_name(sub))
              for sub in ("interprocess_best_effort", "interprocess_reliable")}
    result = check_throughput(tables, required)
    statuses = {(row[s.EXPERIMENT_TYPE], row[s.CHECK], row["Demand"]): row[s.STATUS] for _, row in result.table.iterrows()}
    assert statuses == {
        ("throughput_interprocess_best_effort", "Throughput", 100): s.PASSED,  # 9.830 measured, 9.830 required
        ("throughput_interprocess_best_effort", "Throughput", 1000): s.PASSED,
        ("throughput_interprocess_best_effort", "Lost", 1000): s.FAILED,  # 26 % lost, 25 % allowed
        ("throughput_interprocess_reliable", "Throughput", 100): s.PASSED,
        ("throughput_interprocess_reliable", "Lost", 100): s.FAILED,  # one of 5000: reliable loses none
    }
    assert [(m[0], m[1], m[2], m[3], m[4]) for m in result.missing] == [("throughput_interprocess_reliable", 16, 100, 10, 7)]
    assert result.exit_code == s.EXIT_REGRESSION


def test_check_command_junit_on_the_requirement_lines(checked, tmp_path):
    experiment, requirements = checked
    junit = tmp_path / "junit.xml"
    completed = perfgate("check-throughput", "--requirements", str(requirements), "--experiment-directory",
                         str(experiment), "--junit", str(junit))
    assert completed.returncode == s.EXIT_REGRESSION, completed.stderr
    assert "no measurements for throughput_interprocess_reliable at 16 B x 100, 10 ms" in completed.stderr
    root = ET.parse(junit).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("6", "2", "1")
    cases = {(case.get("classname"), case.get("name")): case for case in root.iter("testcase")}
    best_effort = "throughput.throughput_interprocess_best_effort"
    assert cases[(best_effort, "Throughput[1024 B x 100]")].get("line") == "4"
    lost = cases[(best_effort, "Lost[1024 B x 1000]")]
    assert lost.get("line") == "5" and "lost 26.000 % > allowed 25.000 %" in lost.find("failure").get("message")
    # two recovery times of one payload and demand: the names carry them
    reliable = "throughput.throughput_interprocess_reliable"
    assert {name for (suite, name) in cases if suite == reliable} == {
        "Throughput[16 B x 100, 5 ms]", "Lost[16 B x 100, 5 ms]", "Throughput[16 B x 100, 10 ms]"}
    assert cases[(reliable, "Throughput[16 B x 100, 10 ms]")].find("error") is not None
    checks = pd.read_csv(experiment / "throughput_checks.csv")
    assert len(checks) == 5 and set(checks[s.STATUS]) == {s.PASSED, s.FAILED}
    assert (experiment / s.PLOTS_DIR / "throughput_interprocess_best_effort.png").stat().st_size > 10000


@pytest.mark.parametrize("text, message", [
    ("throughput_interprocess_tcp_x,16,100,5,1\n", "requires throughput_interprocess_tcp_x, which"),
    ("interprocess_best_effort,16,100,5,1\n", "'interprocess_best_effort' is not a throughput sub-experiment"),
    ("throughput_interprocess_best_effort,16,100,5,fast\n", "'Subscription throughput' is not a finite number"),
    ("throughput_interprocess_best_effort,16,100,5,1,101\n", "'Lost [%]' is above 100"),
    ("throughput_interprocess_best_effort,16,100,-5,1\n", "'Recovery time' is negative"),
])
def test_bad_requirements_are_exit_2_with_one_line(checked, tmp_path, text, message):
    experiment, _ = checked
    requirements = tmp_path / "bad.csv"
    requirements.write_text("Experiment type,Bytes,Demand,Recovery time,Subscription throughput,Lost [%]\n" + text)
    completed = perfgate("check-throughput", "--requirements", str(requirements), "--experiment-directory",
                         str(experiment))
    assert completed.returncode == s.EXIT_USAGE
    assert len(completed.stderr.strip().splitlines()) == 1 and message in completed.stderr
    assert f"{requirements}:2" in completed.stderr
    assert not (experiment / "throughput_checks.csv").exists()


@pytest.mark.parametrize("arguments, message", [
    (["--demands", "10,,20"], "empty item"),
    (["--demands", "0"], "positive whole numbers"),
    (["--recovery-times", "5,x"], "whole milliseconds"),
    (["--recovery-times", "5,5"], "--recovery-times names 5 twice"),
    (["--time", "0"], "must be more than zero"),
    (["--time", "601"], "--time must be more than 0 and at most 600 seconds"),
    (["--subexperiments", "floor_tcp"], "floor_tcp measures plain sockets"),
    (["--subexperiments", "interprocess_nope"], "unknown sub-experiment 'interprocess_nope'"),
    (["--subexperiments", "interprocess_reliable_1to3"], "has 3 subscribers; the throughput experiment takes one"),
    (["--subexperiments", "interprocess_reliable_zero_copy"], "is a zero-copy latency sub-experiment"),
])
def test_bad_throughput_options_exit_2_before_anything_is_written(tmp_path, arguments, message):
    output = tmp_path / "out"
    completed = perfgate("throughput", "--output", str(output), *arguments)
    assert completed.returncode == s.EXIT_USAGE
    assert len(completed.stderr.strip().splitlines()) == 1 and message in completed.stderr
    assert not output.exists()


# --- real bursts ---------------------------------------------------------------------------------------------
@pytest.mark.fastdds
def test_real_bursts_udp_tcp_security_and_intra_process(harness_paths, tmp_path):
    output = tmp_path / "tp"
    subs = ["interprocess_best_effort", "interprocess_reliable", "interprocess_reliable_tcp_security",
            "intraprocess_reliable"]
    completed = perfgate("throughput", "--output", str(output), "--subexperiments", ",".join(subs),
                         "--payloads", "16,4096", "--demands", "10,100", "--recovery-times", "0,5", "--time", "0.2")
    assert completed.returncode == s.EXIT_OK, completed.stdout + completed.stderr
    for sub in subs:
        table = read_throughput(output / s.throughput_csv_name(sub))
        assert [tuple(k) for k in table[[s.PAYLOAD, s.DEMAND, s.RECOVERY_TIME]].to_numpy()] == [
            (p, d, r) for p in (16, 4096) for d in (10, 100) for r in (0, 5)]
        assert (table[s.SENT] >= table[s.DEMAND]).all()  # at least one whole burst per test
        assert (table[s.PUBLICATION_TIME] >= 200_000).all()  # bursts go on until the test time is up
        assert (table[s.RECEIVED] > 0).all()
        if "reliable" in sub:
            assert (table[s.LOST] == 0).all(), table
    metadata = files.read_metadata(output)
    assert metadata["kind"] == "throughput" and metadata["throughput"]["demands"] == [10, 100]
    assert metadata["throughput"]["names"]["interprocess_best_effort"] == "throughput_interprocess_best_effort"
    assert all(entry["outcome"] == s.OUTCOME_OK for entry in metadata["subexperiments"].values())
    assert "samples" not in metadata


def _subscriber_of(parent: int) -> int | None:
    """The throughput subscriber harness process under `parent` (its process tree), if running."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        if b"perfgate-latency" not in command[0] or b"subscriber" not in command:
            continue
        pid = int(entry.name)
        while pid > 1:  # up the tree to our perfgate
            try:
                pid = int(next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                               if line.startswith("PPid:")))
            except (OSError, StopIteration):
                break
            if pid == parent:
                return int(entry.name)
        del status
    return None


@pytest.mark.fastdds
def test_a_subscriber_killed_mid_run_is_exit_3_within_10_s_keeping_the_finished_tests(harness_paths, tmp_path):
    output = tmp_path / "tp"
    run = subprocess.Popen([sys.executable, "-m", "perfgate.cli", "throughput", "--output", str(output),
                            "--subexperiments", "interprocess_reliable", "--payloads", "16,1024,4096",
                            "--demands", "100", "--time", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        subscriber = None
        while subscriber is None and time.monotonic() < deadline:
            subscriber = _subscriber_of(run.pid)
            time.sleep(0.05)
        assert subscriber is not None, "the subscriber never started"
        time.sleep(1.6)  # inside the second test: the first is finished
        os.kill(subscriber, signal.SIGKILL)
        killed = time.monotonic()
        stdout, stderr = run.communicate(timeout=60)
        elapsed = time.monotonic() - killed
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == s.EXIT_INCOMPLETE, stdout + stderr
    assert elapsed < 10, f"{elapsed:.1f} s after the subscriber died"
    table = read_throughput(output / s.throughput_csv_name("interprocess_reliable"))
    assert len(table) in (1, 2) and table.iloc[0][s.PAYLOAD] == 16 and table.iloc[0][s.LOST] == 0
    entry = files.read_metadata(output)["subexperiments"]["interprocess_reliable"]
    assert entry["outcome"] != s.OUTCOME_OK and entry["error"]
    # every line names the command that ran, not `perfgate run` whose loop it shares
    assert "perfgate throughput: error: interprocess_reliable (udpv4, reliable): " in stderr, stderr
    assert "perfgate run" not in stderr, stderr


# --- in the gate -----------------------------------------------------------------------------------------------
@pytest.mark.fastdds
def test_the_gate_measures_and_checks_throughput_when_asked(harness_paths, tmp_path):
    requirements = tmp_path / "requirements" / "rig.csv"
    requirements.parent.mkdir()
    subs = ["interprocess_best_effort", "interprocess_reliable"]
    rows = [{s.EXPERIMENT_TYPE: sub, s.BYTES: payload, s.MEDIAN: 1e5, s.P99: 1e5, s.MAX: 1e5}
            for sub in subs for payload in (16, 1024)]
    files.write_csv(requirements, pd.DataFrame(rows, columns=list(s.REQUIREMENT_COLUMNS)))
    # the platform's throughput requirements in the requirements folder (the gate runs in tmp_path): one
    # that any machine meets, and one that none does (10 Tb/s), on its own line
    (tmp_path / "requirements" / "rig_throughput.csv").write_text(
        "Experiment type,Bytes,Demand,Recovery time,Subscription throughput\n"
        "throughput_interprocess_best_effort,16,100,5,0.001\n"
        "throughput_interprocess_reliable,16384,1000,5,10000000\n")
    output = tmp_path / "gate"
    summary = tmp_path / "summary.md"
    completed = perfgate("gate", "--output", str(output), "--platform", "rig", "--requirements", str(requirements),
                         "--quick", "--subexperiments", ",".join(subs), "--payloads", "16,1024",
                         "--store", str(tmp_path / "store"), "--label", "tp-1",
                         "--experiments", "latency,throughput", "--summary-markdown", str(summary), cwd=tmp_path)
    assert completed.returncode == s.EXIT_REGRESSION, completed.stdout + completed.stderr
    assert "throughput checked against" in completed.stdout
    headline = completed.stdout.splitlines()[-2]  # one verdict word, then what found it (issue 28)
    assert headline.startswith("perfgate gate: REGRESSION: ") and "throughput found a regression" in headline
    folder = output / s.THROUGHPUT_DIR
    table = read_throughput(folder / s.throughput_csv_name("interprocess_reliable"))
    assert sorted(set(table[s.PAYLOAD])) == list(s.QUICK_THROUGHPUT_PAYLOADS)  # the quick throughput run
    cases = {case.get("name"): case for case in ET.parse(folder / s.JUNIT_FILE).getroot().iter("testcase")}
    assert cases["Throughput[16 B x 100]"].find("failure") is None
    assert cases["Throughput[16384 B x 1000]"].find("failure") is not None
    assert cases["Throughput[16384 B x 1000]"].get("line") == "3"
    assert "Throughput: REGRESSION: 1 of 3 throughput checks failed" in summary.read_text()
    assert "Throughput: REGRESSION" in (output / s.REPORT_HTML).read_text()
    # the results store keeps the throughput tables and their checks beside the latency summaries
    stored = tmp_path / "store" / s.STORE_EXPERIMENTS_DIR / "tp-1"
    assert {p.name for p in stored.glob(f"{s.THROUGHPUT_PREFIX}*.csv")} == {
        s.throughput_csv_name(sub) for sub in subs} | {"throughput_checks.csv"}
    assert read_throughput(stored / s.throughput_csv_name("interprocess_reliable")).equals(table)


def test_the_gate_refuses_an_unknown_experiment_before_measuring(tmp_path):
    completed = perfgate("gate", "--output", str(tmp_path / "out"), "--platform", "vm-2core-x64",
                         "--experiments", "latency,speed")
    assert completed.returncode == s.EXIT_USAGE
    assert "unknown experiment 'speed'; known: latency, throughput, resources" in completed.stderr
    assert not (tmp_path / "out").exists()


def test_rows_for_tests_the_run_did_not_ask_for_are_not_checked(checked, tmp_path):
    # a quick run (fewer payloads) against the platform's full file: what it asked for is checked,
    # the rest is neither missing nor failed; what it asked for and lacks still is missing (exit 3)
    experiment, _ = checked
    files.write_metadata(experiment, {"requested_subexperiments": ["interprocess_best_effort"], "payloads": [1024],
                                      "throughput": {"demands": [100, 1000], "recovery_times_ms": [5]}})
    requirements = tmp_path / "full.csv"
    requirements.write_text("Experiment type,Bytes,Demand,Recovery time,Subscription throughput\n"
                            "throughput_interprocess_best_effort,1024,100,5,1.0\n"
                            "throughput_interprocess_best_effort,16,100,5,1.0\n"
                            "throughput_interprocess_reliable_tcp,1024,100,5,1.0\n")
    completed = perfgate("check-throughput", "--requirements", str(requirements), "--experiment-directory",
                         str(experiment), "--no-plots")
    assert completed.returncode == s.EXIT_OK, completed.stdout + completed.stderr
    assert "note: 2 requirement row(s) name tests this run did not ask for" in completed.stdout
    assert "1 throughput checks: 0 failed; 0 required test(s) without measurements" in completed.stdout
    files.write_metadata(experiment, {"requested_subexperiments": ["interprocess_best_effort", "interprocess_reliable_tcp"],
                                      "payloads": [1024],
                                      "throughput": {"demands": [100, 1000], "recovery_times_ms": [5]}})
    completed = perfgate("check-throughput", "--requirements", str(requirements), "--experiment-directory",
                         str(experiment), "--no-plots")
    assert completed.returncode == s.EXIT_INCOMPLETE
    assert "no measurements for throughput_interprocess_reliable_tcp at 1024 B x 100, 5 ms" in completed.stderr


@pytest.mark.fastdds
def test_the_gate_checks_resources_when_asked(harness_paths, tmp_path):
    requirements = tmp_path / "requirements" / "rig.csv"
    requirements.parent.mkdir()
    sub = "interprocess_best_effort"
    rows = [{s.EXPERIMENT_TYPE: sub, s.BYTES: payload, s.MEDIAN: 1e5, s.P99: 1e5, s.MAX: 1e5} for payload in (16, 4096)]
    files.write_csv(requirements, pd.DataFrame(rows, columns=list(s.REQUIREMENT_COLUMNS)))
    output = tmp_path / "gate"
    # long enough (a second or so) for several of the sampler's readings, 0.2 s apart
    arguments = ["gate", "--output", str(output), "--platform", "rig", "--requirements", str(requirements),
                 "--samples", "3000", "--subexperiments", sub, "--payloads", "16,4096", "--no-history",
                 "--experiments", "latency,resources"]
    # asked for, without the platform's file (requirements/rig_resources.json; the gate runs in tmp_path):
    # refused before measuring
    completed = perfgate(*arguments, cwd=tmp_path)
    assert completed.returncode == s.EXIT_USAGE and "no resource requirements for platform 'rig'" in completed.stderr
    assert not output.exists()
    # a resident set no harness process stays under (1 MB): the gate fails on it, by name, in JUnit
    (requirements.parent / "rig_resources.json").write_text(
        '{"platform": "rig", "resources": {"cpu[%]": 200.0, "rss[KB]": 1000},\n'
        ' "latency_total": {"lost[%]": 100.0, "late[%]": 100.0}, "late_limit_us": {"interprocess_best_effort": 1e6}}\n')
    completed = perfgate(*arguments, cwd=tmp_path)
    assert completed.returncode == s.EXIT_REGRESSION, completed.stdout + completed.stderr
    cases = {(case.get("classname"), case.get("name")): case
             for case in ET.parse(output / s.JUNIT_FILE).getroot().iter("testcase")}
    rss = cases[(f"resources.{sub}", "Resources[publisher rss]")]
    assert rss.find("failure") is not None and rss.get("line") == "1"
    assert cases[(f"resources.{sub}", "Resources[publisher cpu]")].find("failure") is None
