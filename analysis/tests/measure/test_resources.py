"""Resources: /proc parsing on real text, the sampler on a real process, resources_<sub>.csv of a real
run, the check against <platform>_resources.json, its JUnit testcases, and bad requirements (exit 2)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import perfgate_in_process
from perfgate import files
from perfgate.latency import resources_table
from perfgate import schema as s
from perfgate.cli import main
from perfgate.errors import InputError
from perfgate.measure import resources

SUB = "interprocess_best_effort"

# /proc/self/stat and /proc/self/statm as read by a Python process named "py (x) y" (a symlink to the
# interpreter) after it had spun for 0.3 s of CPU, on the development VM: the name holds a space and
# both parentheses
REAL_STAT = ("13406 (py (x) y) R 13402 13402 967 0 -1 4194304 1949 0 0 0 8 25 0 0 20 0 1 0 3297376 16957440 3351 "
             "18446744073709551615 94518395355136 94518395355477 140729326235728 0 0 0 0 16781312 2 0 0 0 17 0 0 0 0 0 0 "
             "94518395366832 94518395367448 94518605275136 140729326238224 140729326238416 140729326238416 "
             "140729326239722 0\n")
REAL_STATM = "4140 3377 1663 1 0 2018 0\n"


# --- parsing real /proc text ------------------------------------------------------------------------
def test_parse_captured_stat_and_statm():
    stat = resources.parse_stat(REAL_STAT)
    assert (stat.state, stat.cpu_ticks, stat.start_ticks) == ("R", 8 + 25, 3297376)
    assert resources.parse_statm(REAL_STATM) == (4140 * resources.PAGE_KB, 3377 * resources.PAGE_KB)


def test_parse_a_live_process_with_parentheses_in_its_name(tmp_path):
    """The parse agrees with ps (CPU seconds) and with /proc/<pid>/status (VmRSS, VmSize) for a
    process that spun then sleeps, named with a space and parentheses."""
    name = tmp_path / "py (x) y"
    name.symlink_to(sys.executable)
    child = subprocess.Popen([str(name), "-c", "import time\nend = time.process_time() + 0.3\n"
                              "while time.process_time() < end: pass\nprint('spun', flush=True)\ntime.sleep(30)"],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "spun"
        deadline = time.monotonic() + 5  # it still runs a moment after printing: read it once asleep
        while resources.parse_stat(Path(f"/proc/{child.pid}/stat").read_text()).state != "S":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        stat = resources.parse_stat(Path(f"/proc/{child.pid}/stat").read_text())
        vsz_kb, rss_kb = resources.parse_statm(Path(f"/proc/{child.pid}/statm").read_text())
        status = dict(line.split(":", 1) for line in Path(f"/proc/{child.pid}/status").read_text().splitlines())
        seconds = subprocess.run(["ps", "-o", "cputimes=", "-p", str(child.pid)], capture_output=True,
                                 text=True).stdout.strip()
    finally:
        child.kill()
        child.wait()
    assert stat.state == "S"
    assert stat.cpu_ticks >= 0.3 * resources.CLOCK_TICKS - 1
    assert stat.cpu_ticks // resources.CLOCK_TICKS == int(seconds)
    assert rss_kb == int(status["VmRSS"].split()[0]) and vsz_kb == int(status["VmSize"].split()[0])


def test_a_malformed_stat_is_refused():
    with pytest.raises(ValueError):
        resources.parse_stat("48213 (py")
    with pytest.raises(ValueError):
        resources.parse_stat("48213 (py) S 1 2 3")
    assert resources.read_process(2 ** 22 + 1) is None  # above pid_max: no such process


def test_a_process_read_while_it_exits_is_no_reading(tmp_path):
    # Between giving up its address space and turning zombie, an exiting process's stat still says
    # running while its statm reads zero: that is no memory it used (the 1-in-N rss 0 sample of a real run).
    stat = "4242 (perfgate-latency) R " + " ".join(["0"] * 10) + " 7 3 " + " ".join(["0"] * 6) + " 555 0 0"
    (tmp_path / "4242").mkdir()
    (tmp_path / "4242" / "stat").write_text(stat)
    (tmp_path / "4242" / "statm").write_text("0 0 0 0 0 0 0")
    assert resources.parse_stat(stat).cpu_ticks == 10
    assert resources.read_process(4242, proc=tmp_path) is None
    (tmp_path / "4242" / "statm").write_text("25000 3000 900 10 0 2000 0")
    reading = resources.read_process(4242, proc=tmp_path)
    assert (reading.vsz_kb, reading.rss_kb) == (25000 * resources.PAGE_KB, 3000 * resources.PAGE_KB)


def test_cpu_percent_is_one_cpu_at_100():
    assert resources.cpu_percent(100, 100 + resources.CLOCK_TICKS, 1.0) == pytest.approx(100.0)
    assert resources.cpu_percent(0, resources.CLOCK_TICKS // 10, 0.2) == pytest.approx(50.0)


# --- the sampler on a real process --------------------------------------------------------------------
GROWER = textwrap.dedent("""
    import time
    kept, start = [], time.monotonic()
    while time.monotonic() - start < 1.5:  # spins, and takes 8 MB more every 0.1 s
        kept.append(bytearray(8 << 20))
        end = time.monotonic() + 0.1
        while time.monotonic() < end:
            pass
""")


@pytest.mark.heavy
def test_the_sampler_follows_a_real_process_from_start_to_end():
    """Its memory grows in the rows, and the CPU the rows add up to is the CPU the kernel says the
    process used (rusage at its end), less what it used after the last reading, unseen."""
    sampler = resources.ResourceSampler(time.monotonic())
    child = subprocess.Popen([sys.executable, "-c", GROWER])
    watched_ms = (time.monotonic() - sampler.started) * 1000
    sampler.watch(child.pid, "publisher")
    _, status, usage = os.wait4(child.pid, 0)
    ended_ms = (time.monotonic() - sampler.started) * 1000
    time.sleep(3 * resources.SAMPLE_INTERVAL_S)  # nothing more once it is gone
    rows = resources.samples_frame(sampler.stop())
    assert os.waitstatus_to_exitcode(status) == 0
    assert 5 <= len(rows) <= 1.5 / resources.SAMPLE_INTERVAL_S + 2
    assert set(rows[s.RESOURCE_ROLE]) == {"publisher"}
    times = rows[s.RESOURCE_TIME].to_numpy()
    assert (np.diff(times) > 0).all() and times[-1] <= ended_ms
    # a first reading soon, then on the sampler's grid of 0.2 s from its start: never early, at most
    # one reading per slot (how far apart readings fall depends on the machine's load, which a test
    # must not assert on)
    assert times[0] >= resources.FIRST_READING_S * 1000
    slots = np.floor(times[1:] / (resources.SAMPLE_INTERVAL_S * 1000))
    assert slots[0] >= 1 and (np.diff(slots) >= 1).all()
    rss = rows[s.RESOURCE_RSS].to_numpy()
    # 8 MB every 0.1 s: growing while it allocates (a last reading may catch its exit freeing it all)
    assert rss.max() - rss[0] >= 60 * 1024 and (np.diff(rss[:int(rss.argmax()) + 1]) >= 0).all()
    assert (rows[s.RESOURCE_VSZ] >= rows[s.RESOURCE_RSS]).all()
    intervals_s = np.diff(np.concatenate([[watched_ms], times])) / 1000
    sampled_s = float((rows[s.RESOURCE_CPU].to_numpy() / 100 * intervals_s).sum())
    used_s = usage.ru_utime + usage.ru_stime
    tick_s = 1 / resources.CLOCK_TICKS
    unseen_s = (ended_ms - times[-1]) / 1000 + 0.05  # after the last reading; before the first (exec)
    assert used_s - unseen_s - 2 * tick_s <= sampled_s <= used_s + 2 * tick_s


def test_no_sampling_outside_a_collection():
    with resources.sampling() as sampler:
        assert sampler is None
    with resources.collecting() as collected, resources.sampling() as sampler:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
        sampler.watch(child.pid, "server")
        child.wait()
    assert [sample.role for sample in collected.samples] == ["server"] * len(collected.samples)
    assert len(collected.samples) >= 1


# --- a real run ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_run(tmp_path_factory, harness_paths) -> Path:
    output = tmp_path_factory.mktemp("resources") / "run"
    completed = subprocess.run([sys.executable, "-m", "perfgate.cli", "run", "--samples", "50", "--subexperiments",
                                SUB, "--harness", str(harness_paths.latency), "--output", str(output)],
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert main(["process", "--experiment-directory", str(output), "--no-plots"]) == 0
    return output


def test_the_resources_csv_of_a_real_run(real_run):
    text = (real_run / s.resources_csv_name(SUB)).read_text()
    assert text.splitlines()[0] == "time[ms],role,cpu[%],rss[KB],vsz[KB]"
    rows = resources_table.read_resources(real_run / s.resources_csv_name(SUB))
    assert list(dict.fromkeys(rows[s.RESOURCE_ROLE])) == ["publisher", "subscriber"]
    for line in text.splitlines()[1:]:
        time_ms, _, cpu, rss, vsz = line.split(",")
        assert len(time_ms.split(".")[1]) == 3 and len(cpu.split(".")[1]) == 3 and rss.isdigit() and vsz.isdigit()
    for _, role_rows in rows.groupby(s.RESOURCE_ROLE):
        assert role_rows[s.RESOURCE_TIME].is_monotonic_increasing
    assert (rows[s.RESOURCE_RSS] > 0).all() and (rows[s.RESOURCE_VSZ] > rows[s.RESOURCE_RSS]).all()
    # KB, not pages or bytes: a harness with Fast DDS loaded holds more than 5 MB. Rows run from the
    # moment the process exists (measure/resources.py), so under load a first row may catch the dynamic
    # loader still mapping the libraries (1528 KB seen in CI); once loaded, memory never falls below it.
    # While loading it never falls either, but it may stand still between two rows 200 ms apart when the
    # loader waits for a CPU (1700, 3436, 3436, 12260 KB seen in CI beside another worker).
    for _, role_rows in rows.groupby(s.RESOURCE_ROLE):
        rss = role_rows[s.RESOURCE_RSS].to_numpy()
        loaded = int(np.argmax(rss > 5000))
        assert rss[loaded] > 5000 and (rss[loaded:] > 5000).all() and (np.diff(rss[:loaded + 1]) >= 0).all()
    assert rows[s.RESOURCE_CPU].between(0, 200).all() and rows[s.RESOURCE_CPU].max() > 0
    metadata = files.read_metadata(real_run)
    assert metadata["resource_sampling"] == {"interval_s": 0.2, "source": "/proc"}
    entry = metadata["subexperiments"][SUB]["resources"]
    publisher = rows[rows[s.RESOURCE_ROLE] == "publisher"]
    assert entry["publisher"]["rss_peak_kb"] == int(publisher[s.RESOURCE_RSS].max())
    assert entry["publisher"]["samples"] == len(publisher)


def write_latency_requirements(path: Path) -> Path:
    """Latency limits no run misses, so that the exit code is the resources' alone."""
    lines = [",".join(s.REQUIREMENT_COLUMNS)] + [f"{SUB},{p},900000.000,900000.000,900000.000" for p in s.PAYLOADS]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_check_of_a_real_run_writes_resource_testcases_at_their_json_lines(real_run, tmp_path):
    rows = resources_table.read_resources(real_run / s.resources_csv_name(SUB))
    peaks = rows.groupby(s.RESOURCE_ROLE)[s.RESOURCE_RSS].max()
    limit = int(peaks.min())  # equal passes: the smaller peak passes, a larger one fails
    requirements = {"platform": "test", "resources": {"cpu[%]": 150.0},
                    "resources_by_subexperiment": {SUB: {"rss[KB]": limit}},
                    "latency_total": {"lost[%]": 0, "late[%]": 100.0}, "late_limit_us": {SUB: 1.0}}
    json_path = tmp_path / "res.json"
    json_path.write_text(json.dumps(requirements, indent=2))
    junit = tmp_path / "junit.xml"
    code = main(["check", "--requirements", str(write_latency_requirements(tmp_path / "req.csv")),
                 "--experiment-directory", str(real_run), "--plots-directory", str(tmp_path / "plots"),
                 "--junit", str(junit), "--resources-requirements", str(json_path)])
    rss_failed = {role for role, peak in peaks.items() if peak > limit}
    assert code == (s.EXIT_REGRESSION if rss_failed else s.EXIT_OK)
    suite = ET.parse(junit).getroot().find(f"testsuite[@name='resources.{SUB}']")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert list(cases) == ["Resources[publisher cpu]", "Resources[publisher rss]", "Resources[subscriber cpu]",
                           "Resources[subscriber rss]", "Resources[total lost]", "Resources[total late]"]
    text = json_path.read_text().splitlines()
    line_of = {key: next(i for i, line in enumerate(text, 1) if f'"{key}"' in line)
               for key in ("cpu[%]", "rss[KB]", "lost[%]", "late[%]")}
    for name, case in cases.items():
        key = {"cpu": "cpu[%]", "rss": "rss[KB]", "lost": "lost[%]", "late": "late[%]"}[name[:-1].split()[1]]
        assert case.get("line") == str(line_of[key]) and case.get("file") == str(json_path)
        role = name[len("Resources["):].split()[0]
        assert (case.find("failure") is not None) == (name.endswith("rss]") and role in rss_failed)
    again = tmp_path / "again.xml"  # perfgate junit, from the check's record: the same resource testcases
    assert main(["junit", "--experiment-directory", str(real_run), "--output", str(again)]) == code
    assert [ET.tostring(case) for case in ET.parse(again).getroot().find(f"testsuite[@name='resources.{SUB}']")] == \
        [ET.tostring(case) for case in suite]
    report = pd.read_csv(real_run / s.RESOURCE_CHECKS_FILE)
    assert list(report.columns) == list(s.RESOURCE_CHECK_COLUMNS)
    late = report[report[s.CHECK] == "late"].iloc[0]
    assert late[s.EXPERIMENT] == 100.0 and late[s.STATUS] == s.PASSED  # every round trip is above 1 us
    assert (tmp_path / "plots" / SUB / "resources.png").stat().st_size > 10000


def test_a_run_without_resources_is_missing_data(real_run, tmp_path):
    """An experiment of older tooling (no resources_<sub>.csv) checked against resource requirements:
    exit 3, an error testcase per role and check, never a pass."""
    experiment = tmp_path / "older"
    experiment.mkdir()
    for path in real_run.iterdir():
        if path.is_file() and not path.name.startswith(s.RESOURCES_PREFIX):
            (experiment / path.name).write_bytes(path.read_bytes())
    json_path = tmp_path / "res.json"
    json_path.write_text('{"platform": "test", "resources": {"rss[KB]": 900000}}')
    junit = tmp_path / "junit.xml"
    assert main(["check", "--requirements", str(write_latency_requirements(tmp_path / "req.csv")),
                 "--experiment-directory", str(experiment), "--plots-directory", str(tmp_path / "plots"),
                 "--junit", str(junit), "--resources-requirements", str(json_path)]) == s.EXIT_INCOMPLETE
    errors = [case.get("name") for case in ET.parse(junit).getroot().iter("testcase") if case.find("error") is not None]
    assert errors == ["Resources[publisher rss]", "Resources[subscriber rss]"]


# --- the check, pure ----------------------------------------------------------------------------------
def requirements_from(tmp_path: Path, data: dict) -> resources_table.ResourceRequirements:
    path = tmp_path / "res.json"
    path.write_text(json.dumps(data, indent=2))
    return resources_table.read_resource_requirements(path)


def test_equal_passes_and_one_thousandth_above_fails(tmp_path):
    frame = pd.DataFrame({s.RESOURCE_TIME: [200.0, 200.1, 400.0, 400.1], s.RESOURCE_ROLE: ["publisher", "subscriber"] * 2,
                          s.RESOURCE_CPU: [10.0, 10.002, 10.002, 10.002], s.RESOURCE_RSS: [19000, 20001, 20000, 19000],
                          s.RESOURCE_VSZ: [300000] * 4})
    required = requirements_from(tmp_path, {"platform": "test", "resources": {"cpu[%]": 10.001, "rss[KB]": 1},
                                            "resources_by_subexperiment": {SUB: {"rss[KB]": 20000}},
                                            "latency_total": {"lost[%]": 1.0, "late[%]": 25.0},
                                            "late_limit_us": {SUB: 100.0}})
    measured = resources_table.SubResources(frame, latencies=np.array([100.0, 100.0004, 100.001, 50.0, 100.002]),
                                            lost=(1, 100))
    rows = {row.name: row for row in resources_table.check_subexperiment(SUB, measured, required)}
    assert {name: (round(row.experiment, 9), row.status) for name, row in rows.items()} == {
        "Resources[publisher cpu]": (10.001, s.PASSED),  # the mean of 10.000 and 10.002
        "Resources[publisher rss]": (20000.0, s.PASSED),  # the peak, against the sub-experiment's own limit
        "Resources[subscriber cpu]": (10.002, s.FAILED),
        "Resources[subscriber rss]": (20001.0, s.FAILED),
        "Resources[total lost]": (1.0, s.PASSED),
        "Resources[total late]": (40.0, s.FAILED),  # 100.0004 is 100.000 as written: not late
    }
    assert rows["Resources[subscriber rss]"].describe() == (
        f"{SUB}: subscriber rss (peak) 20001 KB > requirement 20000 KB (+0.01%)")
    assert files.format_csv(resources_table.check_table(list(rows.values()))) == (
        "Experiment type,Role,Check,Requirement,Experiment,Difference,Percentage over requirement,Status\n"
        f"{SUB},publisher,cpu,10.001,10.001,0.000,0.000,passed\n"
        f"{SUB},publisher,rss,20000.000,20000.000,0.000,0.000,passed\n"
        f"{SUB},subscriber,cpu,10.001,10.002,0.001,0.010,failed\n"
        f"{SUB},subscriber,rss,20000.000,20001.000,1.000,0.005,failed\n"
        f"{SUB},total,lost,1.000,1.000,0.000,0.000,passed\n"
        f"{SUB},total,late,25.000,40.000,15.000,60.000,failed\n")


BAD = [
    ('{"platform": "x",\n "resources": {"cpu[%]": 10,}\n}', 2, "malformed JSON"),
    ('{"platform": "x",\n "resources": {\n  "cpu": 10}\n}', 3, "unknown key 'cpu' in 'resources'"),
    ('{"platform": "x",\n "resources": {"rss[KB]": "20000"}\n}', 2, "'resources.rss[KB]' is '20000'; expected a number"),
    ('{"platform": "x",\n "latency_total": {"late[%]": -1}\n}', 2, "expected a number above 0"),
    ('{"platform": "x",\n "late_limit_us": {\n\n "interprocess_best_efort": 5}}', 4,
     "unknown key 'interprocess_best_efort' in 'late_limit_us'"),
    ('{"resources": {"rss[KB]": 1}}', 1, "'platform' is None"),
    ('[1, 2]', None, "not a JSON object"),
    # a limit given twice (JSON keeps the last: a looser one could hide behind the first), and a share
    # of round trips above 100 % (a check that cannot fail)
    ('{"platform": "x",\n "resources": {"cpu[%]": 10,\n  "cpu[%]": 1000}}', 3, "key 'cpu[%]' is given twice"),
    ('{"platform": "x",\n "latency_total": {"lost[%]": 150}}', 2,
     "'latency_total.lost[%]' is 150; a share of round trips is at most 100"),
]


@pytest.mark.parametrize("text, line, problem", BAD)
def test_bad_requirements_exit_2_with_one_line_and_nothing_written(tmp_path, text, line, problem):
    json_path = tmp_path / "res.json"
    json_path.write_text(text)
    with pytest.raises(InputError) as raised:
        resources_table.read_resource_requirements(json_path)
    assert problem in raised.value.message and raised.value.line == line
    experiment = tmp_path / "experiment"
    experiment.mkdir()
    raw = pd.DataFrame({s.SAMPLE: [1, 2], s.PAYLOAD: [16, 16], s.LATENCY: [50.0, 60.0]})
    files.write_csv(experiment / s.raw_csv_name(SUB), raw)
    assert main(["process", "--experiment-directory", str(experiment), "--no-plots"]) == 0
    lines = [",".join(s.REQUIREMENT_COLUMNS), f"{SUB},16,900.000,900.000,900.000"]
    (tmp_path / "req.csv").write_text("\n".join(lines) + "\n")
    before = sorted(path.name for path in experiment.iterdir())
    completed = perfgate_in_process("check", "--requirements", str(tmp_path / "req.csv"), "--experiment-directory",
                                    str(experiment), "--plots-directory", str(tmp_path / "plots"),
                                    "--resources-requirements", str(json_path))
    assert completed.returncode == s.EXIT_USAGE
    where = f"{json_path}:{line}: " if line is not None else f"{json_path}: "
    assert completed.stderr.splitlines() == [f"perfgate check: error: {where}{raised.value.message}"]
    assert sorted(path.name for path in experiment.iterdir()) == before and not (tmp_path / "plots").exists()


def test_late_requirements_need_the_sub_experiments_limit(tmp_path):
    required = requirements_from(tmp_path, {"platform": "test", "latency_total": {"late[%]": 1.0},
                                            "late_limit_us": {"interprocess_reliable": 500}})
    with pytest.raises(InputError, match=f"'late_limit_us' has no limit for {SUB}") as raised:
        resources_table.check_subexperiment(SUB, resources_table.SubResources(None), required)
    assert raised.value.line == 1 + json.dumps({"platform": "test", "latency_total": {"late[%]": 1.0}},
                                               indent=2).splitlines().index('    "late[%]": 1.0')


@pytest.mark.parametrize("cell, problem", [("12.5", "'rss[KB]' is not a whole number: 12.5"),
                                           ("-3", "'rss[KB]' is negative: -3")])
def test_a_bad_resources_csv_exits_2_naming_its_line(real_run, tmp_path, cell, problem):
    experiment = tmp_path / "copy"
    experiment.mkdir()
    for path in real_run.iterdir():
        if path.is_file():
            (experiment / path.name).write_bytes(path.read_bytes())
    resources_csv = experiment / s.resources_csv_name(SUB)
    lines = resources_csv.read_text().splitlines()
    fields = lines[2].split(",")
    fields[3] = cell
    lines[2] = ",".join(fields)
    resources_csv.write_text("\n".join(lines) + "\n")
    (tmp_path / "res.json").write_text('{"platform": "test", "resources": {"rss[KB]": 900000}}')
    before = {path.name: path.read_bytes() for path in experiment.iterdir()}
    completed = perfgate_in_process("check", "--requirements", str(write_latency_requirements(tmp_path / "req.csv")),
                                    "--experiment-directory", str(experiment), "--plots-directory",
                                    str(tmp_path / "plots"), "--resources-requirements", str(tmp_path / "res.json"))
    assert completed.returncode == s.EXIT_USAGE
    assert completed.stderr.splitlines() == [f"perfgate check: error: {resources_csv}:3: {problem}"]
    assert {path.name: path.read_bytes() for path in experiment.iterdir()} == before
    assert not (tmp_path / "plots").exists()


def test_one_to_many_roles_and_names(tmp_path):
    """Each subscriber of `<sub>_1to<N>` is a process of its own role (measure.commands), checked as one."""
    assert resources_table.expected_roles(f"{SUB}_1to3", None) == ["publisher", "subscriber-0", "subscriber-1",
                                                                   "subscriber-2"]
    assert resources_table.expected_roles("intraprocess_reliable_1to2", None) == ["both"]
    required = requirements_from(tmp_path, {"platform": "test", "resources_by_subexperiment": {
        f"{SUB}_1to3": {"rss[KB]": 30000}}, "late_limit_us": {f"{SUB}_1to3": 900}})
    assert required.resource_limits(f"{SUB}_1to3")[resources_table.RSS].value == 30000
    with pytest.raises(InputError, match=f"unknown key '{SUB}_1to1' in 'late_limit_us'"):
        requirements_from(tmp_path, {"platform": "test", "late_limit_us": {f"{SUB}_1to1": 900}})
