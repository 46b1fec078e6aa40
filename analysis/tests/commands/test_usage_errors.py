"""Usage errors through the installed console script: exit 2, ONE line `perfgate <command>: error: ...`
(not argparse's usage block), no traceback, nothing written. Empty list items and `--timeout 0` are
refused, not skipped or quietly replaced."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perfgate.measure import options as run_options
from perfgate import schema as s
from perfgate.errors import InputError

PERFGATE = Path(sys.executable).parent / "perfgate"
SUB = "interprocess_best_effort"

# (arguments, the start of the one stderr line); {out} is a folder that must not appear
CASES = {
    "unknown option": (["process", "--raw-csv", "r.csv", "--output-csv", "{out}/s.csv", "--no-plots", "--bogus"],
                       "perfgate process: error: unrecognized arguments: --bogus"),
    "unknown option before the command's own": (["run", "--outptu", "{out}", "--samples", "10"],
                                                "perfgate run: error: the following arguments are required: --output"),
    "missing required option": (["check", "--experiment-directory", "{out}", "--plots-directory", "{out}/p"],
                                "perfgate check: error: the following arguments are required: --requirements"),
    "missing value (underscore spelling)": (["process", "--raw_csv"],
                                            "perfgate process: error: argument --raw-csv: expected one argument"),
    "bad choice": (["run", "--output", "{out}", "--engine", "warp"],
                   "perfgate run: error: argument --engine: invalid choice: 'warp'"),
    "bad type": (["run", "--output", "{out}", "--samples", "many"],
                 "perfgate run: error: argument --samples: not a whole number: 'many'"),
    "unknown command": (["frobnicate"], "perfgate: error: argument COMMAND: invalid choice: 'frobnicate'"),
    "no command": ([], "perfgate: error: the following arguments are required: COMMAND"),
    "empty payload item": (["run", "--output", "{out}", "--payloads", "16,,32"],
                           "perfgate run: error: argument --payloads: empty item in '16,,32'"),
    "trailing comma in payloads": (["gate", "--output", "{out}", "--payloads", "16,32,"],
                                   "perfgate gate: error: argument --payloads: empty item in '16,32,'"),
    "payload that is not a number": (["ab", "--output", "{out}", "--baseline", "system", "--candidate", "system",
                                      "--payloads", "16,1e3"],
                                     "perfgate ab: error: argument --payloads: payloads must be whole numbers"),
    "empty sub-experiment item": (["run", "--output", "{out}", "--subexperiments", f"{SUB},,intraprocess_reliable"],
                                  "perfgate run: error: argument --subexperiments: empty item in"),
    "trailing comma in sub-experiments": (["ab", "--output", "{out}", "--baseline", "system", "--candidate",
                                           "system", "--subexperiments", f"{SUB},"],
                                          f"perfgate ab: error: argument --subexperiments: empty item in '{SUB},'"),
    "empty CPU item": (["run", "--output", "{out}", "--pin-cpus", "0,"],
                       "perfgate run: error: argument --pin-cpus: empty item in '0,'"),
    "timeout 0": (["run", "--output", "{out}", "--timeout", "0"],
                  "perfgate run: error: argument --timeout: must be more than zero: '0'"),
    "negative timeout": (["run", "--output", "{out}", "--timeout=-5"],
                         "perfgate run: error: argument --timeout: must be more than zero: '-5'"),
    "infinite threshold": (["compare", "--reference", "{out}", "--results", "{out}", "--plots-directory", "{out}",
                            "--fail-threshold", "inf"],
                           "perfgate compare: error: argument --fail-threshold: not a finite number: 'inf'"),
    # --subscribers N that would add no one-to-many sub-experiment: refused, not silently ignored
    "subscribers with only floors": (["run", "--output", "{out}", "--subexperiments", "floor_udp,floor_tcp",
                                      "--subscribers", "2"],
                                     "perfgate run: error: --subscribers 2 adds nothing: each selected sub-experiment "
                                     "(floor_udp, floor_tcp) is a floor or one-to-many already"),
    "subscribers with one-to-many names only": (["run", "--output", "{out}", "--subexperiments",
                                                 f"{SUB}_1to3,floor_udp", "--subscribers", "2"],
                                                "perfgate run: error: --subscribers 2 adds nothing"),
    # a label lands in metadata, file and folder names, reports and JUnit: printable text only
    "label with a line break": (["run", "--output", "{out}", "--label", "nightly\nperfgate run: ok"],
                                "perfgate run: error: argument --label: the label 'nightly\\nperfgate run: ok' "
                                "holds a control character (U+000A) at character 8"),
    "label with a terminal escape": (["throughput", "--output", "{out}", "--label", "\x1b[31mred"],
                                     "perfgate throughput: error: argument --label: the label '\\x1b[31mred' holds "
                                     "a control character (U+001B) at character 1"),
    "label with a carriage return": (["ab", "--output", "{out}", "--baseline", "system", "--candidate", "system",
                                      "--label", "a\rb"],
                                     "perfgate ab: error: argument --label: the label 'a\\rb' holds a control "
                                     "character (U+000D)"),
    "label with a tab": (["gate", "--output", "{out}", "--label", "a\tb"],
                         "perfgate gate: error: argument --label: the label 'a\\tb' holds a control character"),
    "label that reads backwards": (["run", "--output", "{out}", "--label", "fast\u202etxt.exe"],
                                   "perfgate run: error: argument --label: the label 'fast\\u202etxt.exe' holds an "
                                   "invisible format character (U+202E)"),
    "label that is not UTF-8": (["run", "--output", "{out}", "--label", "caf\udce9"],
                                "perfgate run: error: argument --label: the label 'caf\\udce9' holds a byte that "
                                "is not UTF-8 (U+DCE9)"),
    "label with a line break (ab-throughput)": (["ab-throughput", "--output", "{out}", "--baseline", "system",
                                                 "--candidate", "system", "--label", "a\nb"],
                                                "perfgate ab-throughput: error: argument --label: the label 'a\\nb' "
                                                "holds a control character (U+000A)"),
    "empty label": (["run", "--output", "{out}", "--label", ""],
                    "perfgate run: error: argument --label: the label '' is empty"),
    "label too long": (["run", "--output", "{out}", "--label", "é" * 101],
                       "perfgate run: error: argument --label: the label '" + "\\xe9" * 101 + "' is 202 bytes long "
                       "(UTF-8), more than 200"),
}


def listing(folder: Path) -> list[tuple[str, int]]:
    return sorted((str(p), p.stat().st_size) for p in folder.rglob("*"))


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_usage_error_is_one_line_exit_2_and_nothing_written(tmp_path, case):
    arguments, expected = CASES[case]
    arguments = [a.replace("{out}", str(tmp_path / "out")) for a in arguments]
    before = listing(tmp_path)
    result = subprocess.run([str(PERFGATE), *arguments], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == s.EXIT_USAGE, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(expected), lines[0]
    assert "usage:" not in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""
    assert listing(tmp_path) == before


def test_help_is_still_the_whole_usage(tmp_path):
    result = subprocess.run([str(PERFGATE), "run", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert result.stdout.startswith("usage: perfgate run")
    assert "--timeout SECONDS" in result.stdout


@pytest.mark.parametrize("timeout", [0, 0.0, -1.0, float("nan")])
def test_a_timeout_that_is_not_positive_is_refused_not_replaced(tmp_path, timeout):
    """resolve_options is also called by ab and gate: the rule holds there without argparse."""
    with pytest.raises(InputError, match="--timeout must be more than zero seconds"):
        run_options.resolve_options(output=tmp_path / "out", samples=200, payloads=None, subexperiments=[SUB], label=None,
                            warmup=None, harness=None, fastdds_prefix=None, pin_cpus="none", timeout=timeout)
    assert not (tmp_path / "out").exists()


def test_a_given_timeout_is_kept(tmp_path):
    options = run_options.resolve_options(output=tmp_path / "out", samples=200, payloads=None, subexperiments=[SUB],
                                  label=None, warmup=None, harness=None, fastdds_prefix=None, pin_cpus="none",
                                  timeout=0.5)
    assert options.timeout_s == 0.5


@pytest.mark.parametrize("name", ["nightly\n2026", "run\x1b[2K", "a\u2028b"])
def test_an_output_folder_name_that_is_no_label_needs_a_label(tmp_path, name):
    """The default label is the output folder's name: the same rule holds for it, for the harness and
    the upstream engine, before anything is written."""
    output = tmp_path / name
    with pytest.raises(InputError, match=r"the output folder's name .*, the default label, holds .*: give --label"):
        run_options.resolve_options(output=output, samples=200, payloads=None, subexperiments=[SUB], label=None,
                                    warmup=None, harness=None, fastdds_prefix=None, pin_cpus="none", timeout=None)
    assert run_options.resolve_options(output=output, samples=200, payloads=None, subexperiments=[SUB],
                                       label="nightly", warmup=None, harness=None, fastdds_prefix=None,
                                       pin_cpus="none", timeout=None).label == "nightly"
    result = subprocess.run([str(PERFGATE), "run", "--engine", "upstream", "--workspace", str(tmp_path / "ws"),
                             "--output", str(output)], capture_output=True, text=True, timeout=60)
    assert result.returncode == s.EXIT_USAGE
    assert result.stderr.count("\n") == 1 and "the default label, holds" in result.stderr, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_file_name_with_a_line_break_still_gives_one_error_line(tmp_path):
    """A path is printed as it is named, its line break escaped: the error stays one line."""
    requirements = tmp_path / "req\nuirements.csv"
    requirements.write_text("Experiment type,Bytes,Median\n")  # 99% and Max missing
    (tmp_path / "run").mkdir()
    done = subprocess.run([sys.executable, "-m", "perfgate.cli", "check", "--requirements", str(requirements),
                           "--experiment-directory", str(tmp_path / "run"), "--plots-directory", str(tmp_path / "p")],
                          capture_output=True, text=True)
    assert done.returncode == s.EXIT_USAGE
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "req\\nuirements.csv" in done.stderr and "Traceback" not in done.stderr


def test_python_dash_m_perfgate_is_the_console_script():
    venv_bin = Path(sys.executable).parent
    for args in (["--help"], ["check"], ["store", "--help"]):
        module = subprocess.run([sys.executable, "-m", "perfgate", *args], capture_output=True, text=True)
        script = subprocess.run([str(venv_bin / "perfgate"), *args], capture_output=True, text=True)
        assert (module.returncode, module.stdout, module.stderr) == (script.returncode, script.stdout, script.stderr)
        assert module.returncode == (0 if "--help" in args else 2) and "Traceback" not in module.stderr
