"""The upstream engine's names: which of Fast DDS' latency tests measures which sub-experiment of the
contract, under any of the names Fast DDS has given them, and which of them a run selects (pure).

perfgate.measure.upstream is the engine (docs/build.md "Two engines")."""
from __future__ import annotations

import re

from .. import schema as s
from ..errors import InputError

TEST_PREFIX = "performance.latency."
# Fast DDS' latency tests (test/performance/latency/CMakeLists.txt) and perfgate's name for each.
# Of their variants (2.9, 3.3.1 on), shared memory with data sharing and loans is perfgate's zero copy
# (LatencyTest --data_loans --data_sharing=on over their SHM profile: both sides loan, docs/formats.md
# section 2); the others have no perfgate counterpart and are not run (unmapped_tests lists them):
# data sharing or loans alone, loans over UDP, security over shared memory, intra-process variants.
TEST_SUBEXPERIMENTS = {
    "intraprocess_best_effort": "intraprocess_best_effort",
    "intraprocess_reliable": "intraprocess_reliable",
    "interprocess_best_effort_udp": "interprocess_best_effort",
    "interprocess_best_effort_udp.security": "interprocess_best_effort_security",
    "interprocess_best_effort_tcp": "interprocess_best_effort_tcp",
    "interprocess_best_effort_tcp.security": "interprocess_best_effort_tcp_security",
    "interprocess_reliable_udp": "interprocess_reliable",
    "interprocess_reliable_udp.security": "interprocess_reliable_security",
    "interprocess_reliable_tcp": "interprocess_reliable_tcp",
    "interprocess_reliable_tcp.security": "interprocess_reliable_tcp_security",
    "interprocess_best_effort_shm": "interprocess_best_effort_shm",
    "interprocess_reliable_shm": "interprocess_reliable_shm",
    "interprocess_best_effort_shm.data_loans_and_sharing": "interprocess_best_effort_zero_copy",
    "interprocess_reliable_shm.data_loans_and_sharing": "interprocess_reliable_zero_copy",
}
# Their names as Fast DDS 2.9 (Debian's 2.9.1) writes them; other versions name them otherwise (below).
SUBEXPERIMENT_TESTS = {sub: TEST_PREFIX + test for test, sub in TEST_SUBEXPERIMENTS.items()}
# Fast DDS has named the tests of its LATENCY_TEST_LIST three ways: <name> (2.9), latency_<name>_profile
# (2.10 to 3.3.0) and <name>_profile (3.3.1 on, master), each maybe followed by a variant (.security,
# .data_sharing, .data_loans, ...). 2.10 to 3.3.0 define no variant at all, and run their
# "interprocess" tests in one process: their CMake's `MATCHES "^interprocess"`, which adds
# --interprocess and the .security tests, never matches a name that starts with latency_.
_NAME_SCHEMES = (re.compile(r"latency_(\w+)_profile"), re.compile(r"(\w+)_profile"), re.compile(r"(\w+)"))
LATENCY_TEST = "LatencyTest"
LATENCY_TEST_SAMPLES = 10000  # latency_tests.py's default; their CMake passes no other


def test_key(test: str) -> str | None:
    """`<name>[.<variant>]` (TEST_SUBEXPERIMENTS' key) of a test named in any of the schemes, or None."""
    if not test.startswith(TEST_PREFIX):
        return None
    base, dot, variant = test[len(TEST_PREFIX):].partition(".")
    for scheme in _NAME_SCHEMES:
        match = scheme.fullmatch(base)
        if match:
            return match.group(1) + dot + variant
    return None


def subexperiment_tests(defined) -> dict[str, str]:
    """sub-experiment -> the test measuring it, among the test names a build defines (any scheme)."""
    found: dict[str, str] = {}
    for test in sorted(defined):
        sub = TEST_SUBEXPERIMENTS.get(test_key(test) or "")
        if sub is not None:
            found.setdefault(sub, test)
    return found


def unmapped_tests(defined) -> list[str]:
    """Their latency tests (any scheme) that no perfgate sub-experiment stands for, sorted: never run."""
    return sorted(test for test in defined
                  if test.startswith(TEST_PREFIX) and TEST_SUBEXPERIMENTS.get(test_key(test) or "") is None)


def select_tests(requested: list[str] | None, defined: set[str]) -> tuple[list[str], list[str]]:
    """(sub-experiments to run, contract sub-experiments this Fast DDS has no test for).

    Requested names must exist in their test list (InputError); by default every sub-experiment of
    the contract and the extras that their tests cover, but zero copy, which runs only when named
    (as with the harness: their data-loan tests were not run here)."""
    measured_by = subexperiment_tests(defined)
    available = [sub for sub in SUBEXPERIMENT_TESTS if sub in measured_by]
    if requested:
        unknown = [n for n in requested if n not in SUBEXPERIMENT_TESTS]
        if unknown:
            raise InputError(f"no Fast DDS latency test measures {', '.join(unknown)} "
                             f"(the upstream engine knows: {', '.join(SUBEXPERIMENT_TESTS)})")
        undefined = [n for n in requested if n not in available]
        if undefined:
            raise InputError(f"this Fast DDS defines no {', '.join(SUBEXPERIMENT_TESTS[n] for n in undefined)} "
                             "(nor by its later names latency_<name>_profile, <name>_profile; see its "
                             "test/performance/latency/CMakeLists.txt)")
        return list(dict.fromkeys(requested)), []
    ordered = [sub for sub in s.DEFAULT_SUBEXPERIMENT_NAMES + tuple(SUBEXPERIMENT_TESTS)
               if sub in available and not s.KNOWN_SUBEXPERIMENTS[sub].zero_copy]
    lacking = [sub for sub in s.DEFAULT_SUBEXPERIMENT_NAMES if sub not in available]
    return list(dict.fromkeys(ordered)), lacking


def test_regex(subs: list[str], tests: dict[str, str] | None = None) -> str:
    """ctest's -R for these sub-experiments; tests: sub-experiment -> test name (default: 2.9's names)."""
    tests = tests or SUBEXPERIMENT_TESTS
    return "^(" + "|".join(re.escape(tests[sub]) for sub in subs) + ")$"


def expected_csv_name(test: str) -> str:
    """latency_tests.py's file name: `measurements_` + the test's name after `performance.latency.`."""
    return f"{s.RAW_PREFIX}{test[len(TEST_PREFIX):].replace('.', '_')}.csv"
