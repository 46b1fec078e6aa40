"""The command lines ctest runs for Fast DDS' latency tests, as CMake writes them into
CTestTestfile.cmake: read, and pointed at the engine's loopback-only profiles, certificates and
(with --pin-cpus) a launcher that pins LatencyTest by its role."""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import files
from .upstream_names import TEST_PREFIX

# --- their test list (CTestTestfile.cmake) ------------------------------------------------------
_ARGUMENT = re.compile(r'"((?:[^"\\]|\\.)*)"|\[(=*)\[(.*?)\]\2\]|([^\s()"]+)', re.DOTALL)


def cmake_arguments(text: str) -> list[str]:
    """The arguments of one CMake command's parentheses (quoted, bracket or bare)."""
    values = []
    for match in _ARGUMENT.finditer(text):
        quoted, _, bracket, bare = match.groups()
        values.append(re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bracket if bracket is not None else bare)
    return values


@dataclass(frozen=True)
class LatencyTestCommand:
    name: str  # performance.latency.<...>
    script: str  # their latency_tests.py
    xml: str | None  # --xml_file


def latency_tests(ctest_file_text: str) -> dict[str, LatencyTestCommand]:
    tests = {}
    for match in re.finditer(r"^add_test\((.*)\)\s*$", ctest_file_text, re.MULTILINE):
        args = cmake_arguments(match.group(1))
        if not args or not args[0].startswith(TEST_PREFIX):
            continue
        xml = args[args.index("--xml_file") + 1] if "--xml_file" in args[:-1] else None
        script = next((a for a in args if a.endswith(".py")), "")
        tests[args[0]] = LatencyTestCommand(args[0], script, xml)
    return tests


def original_xml(command: LatencyTestCommand, copies_dir: Path) -> Path | None:
    """The source tree's XML of a test, also when the test file already points at our copy."""
    if command.xml is None:
        return None
    xml = Path(command.xml)
    return Path(command.script).parent / "xml" / xml.name if xml.parent == copies_dir else xml


def point_tests_at(ctest_file_text: str, copies_dir: Path, certs_dir: Path | None, latency_test: Path) -> str:
    """The test file with every --xml_file in copies_dir (same file name), CERTS_PATH at certs_dir and
    LATENCY_TEST_BIN (the program latency_tests.py starts) at latency_test."""
    text = re.sub(r'("--xml_file"\s+")[^"]*/([^"/]+\.xml")',
                  lambda m: f"{m.group(1)}{copies_dir.as_posix()}/{m.group(2)}", ctest_file_text)
    if certs_dir is not None:
        text = re.sub(r"CERTS_PATH=[^;\"]*", lambda m: f"CERTS_PATH={certs_dir.as_posix()}", text)
    return re.sub(r"LATENCY_TEST_BIN=[^;\"]*", lambda m: f"LATENCY_TEST_BIN={latency_test.as_posix()}", text)


# --- CPU pinning: LatencyTest started through a launcher that pins it by its role ---------------
PINNED_LAUNCHER = "LatencyTest-pinned"


def pinned_launcher(latency_test: Path, pin: tuple[int, int], python: str) -> str:
    """A script that pins itself, then becomes LatencyTest. latency_tests.py starts every LatencyTest
    as `$LATENCY_TEST_BIN <publisher|subscriber|both> ...`: the publisher gets pin[0], the subscriber
    pin[1] and `both` (intra-process) the two, as perfgate's harness is pinned by `perfgate run`."""
    publisher, subscriber = pin
    program = repr(latency_test.as_posix())
    return (f"#!{python} -S\n"
            "# Written by perfgate.measure.upstream for one run: LatencyTest pinned to CPUs by its role.\n"
            "import os, sys\n"
            f"CPUS = {{'publisher': {{{publisher}}}, 'subscriber': {{{subscriber}}}}}\n"
            "role = sys.argv[1] if len(sys.argv) > 1 else ''\n"
            f"os.sched_setaffinity(0, CPUS.get(role, {{{publisher}, {subscriber}}}))\n"
            f"os.execv({program}, [{program}] + sys.argv[1:])\n")


def write_pinned_launcher(folder: Path, latency_test: Path, pin: tuple[int, int]) -> Path:
    launcher = folder / PINNED_LAUNCHER
    files.write_text(launcher, pinned_launcher(latency_test, pin, sys.executable))
    launcher.chmod(0o755)
    return launcher
