"""A stored A/B verdict.json (the latency A/B's `ab/verdict.json`, the throughput A/B's
`throughput/ab/verdict.json`; docs/formats.md section 10), read and checked the one way.

A stored experiment comes from a results branch anyone who can push to it may write: its verdict.json is
untrusted. `read_stored_verdict` is the one reader of it for `perfgate store check`, push and pull (through
store.check), history and the gate's look at the store (history.ab) and `perfgate false-alarms`
(store.aa_gates): a record that reads here has every field those readers use of the type the contract
says, so none of them can fail on it later (`"failed": 5` stopped every pull and history). A field may be
absent (a verdict of older tooling) or, where the contract says so, null; a number is finite.
`verdict_problem` is pure.
"""
from __future__ import annotations

import math
from pathlib import Path

from .. import files
from ..errors import InputError
from ..outcome import INCOMPLETE, PASS, REGRESSION

STATUSES = (PASS, REGRESSION, INCOMPLETE)
MAX_BYTES = 16 << 20  # store.branch.TABLE_LIMIT: what a results branch may hold of an A/B verdict
ARMS = ("baseline", "candidate")
MAX_ALIGNMENT = 4096  # perfgate build --align-functions' largest
MAX_PLANNED_ROUNDS = 1000  # curtailed.json's bound, which verdict.json's planned_rounds repeats


def _shown(value) -> str:
    return repr(value)[:60]


def _is_whole(value, low: int = 0, high: float = math.inf) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_text(value) -> bool:
    return isinstance(value, str)


def _is_optional_number(value) -> bool:
    return value is None or _is_number(value)


def _is_optional_text(value) -> bool:
    return value is None or _is_text(value)


def _mapping_problem(field: str, value, check, expected: str) -> str | None:
    """`field` must be an object of names to values `check` accepts."""
    if not isinstance(value, dict):
        return f"'{field}' is {_shown(value)}; expected an object of sub-experiment -> {expected}"
    for name, item in value.items():
        if not check(item):
            return f"'{field}.{name}' is {_shown(item)}; expected {expected}"
    return None


def _entries_problem(field: str, value, fields: dict) -> str | None:
    """`field` must be a list of objects, each with every one of `fields` (name -> check, expected)."""
    if not isinstance(value, list):
        return f"'{field}' is {_shown(value)}; expected a list of objects"
    for index, entry in enumerate(value):
        if not isinstance(entry, dict):
            return f"'{field}[{index}]' is {_shown(entry)}; expected an object"
        for name, (check, expected) in fields.items():
            if name not in entry or not check(entry[name]):
                return f"'{field}[{index}].{name}' is {_shown(entry.get(name))}; expected {expected}"
    return None


def _arms_problem(arms) -> str | None:
    """`arms`: null, or an object whose baseline and candidate (each may be null) are objects with
    a `spec` string, a `fastdds` object whose `commit` and `version` are strings, and
    `injected_echo_delay_ns` an object of numbers (each null allowed)."""
    if arms is None:
        return None
    if not isinstance(arms, dict):
        return f"'arms' is {_shown(arms)}; expected an object of the baseline and candidate arms"
    for name in ARMS:
        arm = arms.get(name)
        if arm is None:
            continue
        if not isinstance(arm, dict):
            return f"'arms.{name}' is {_shown(arm)}; expected an object"
        fastdds, injected = arm.get("fastdds"), arm.get("injected_echo_delay_ns")
        if not _is_optional_text(arm.get("spec")):
            return f"'arms.{name}.spec' is {_shown(arm.get('spec'))}; expected a string or null"
        if fastdds is not None and not isinstance(fastdds, dict):
            return f"'arms.{name}.fastdds' is {_shown(fastdds)}; expected an object"
        for key in ("commit", "version"):
            if not _is_optional_text((fastdds or {}).get(key)):
                return f"'arms.{name}.fastdds.{key}' is {_shown(fastdds[key])}; expected a string or null"
        if injected is not None and (not isinstance(injected, dict)
                                     or not all(_is_optional_number(v) for v in injected.values())):
            return f"'arms.{name}.injected_echo_delay_ns' is {_shown(injected)}; expected an object of numbers"
    return None


def _planned_problem(value) -> str | None:
    if value is None or _is_whole(value, 1, MAX_PLANNED_ROUNDS):
        return None
    if isinstance(value, dict):
        return _mapping_problem("planned_rounds", value, lambda x: _is_whole(x, 1, MAX_PLANNED_ROUNDS),
                                f"a whole number from 1 to {MAX_PLANNED_ROUNDS}")
    return (f"'planned_rounds' is {_shown(value)}; expected a whole number from 1 to {MAX_PLANNED_ROUNDS}, "
            "an object or null")


def _layout_problem(value) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not _is_text(value.get("file")):
        return f"'layout_thresholds' is {_shown(value)}; expected null or an object with a 'file' string"
    return _mapping_problem("layout_thresholds.thresholds", value.get("thresholds"), _is_number, "a number")


def _test_fields(bound: str) -> dict:
    """The fields of an entry of `failed`, `improved` and `layout_sized`."""
    return {"subexperiment": (_is_text, "a string"), "statistic": (_is_text, "a string"),
            "ratio": (_is_optional_number, "a number or null"), bound: (_is_optional_number, "a number or null"),
            "p_value": (_is_optional_number, "a number or null"),
            "adjusted_p_value": (_is_optional_number, "a number or null"),
            "rounds": (_is_whole, "a whole number of 0 or more")}


def verdict_problem(record: dict) -> str | None:
    """The first field of a verdict.json record whose type or value the contract does not allow, in
    words; None when every field present is as docs/formats.md section 10 says."""
    status = record.get("status")
    if status not in STATUSES:
        return f"'status' is {_shown(status)}; expected one of {', '.join(STATUSES)}"
    throughput = record.get("kind") == "throughput"
    if "kind" in record and not throughput:
        return f"'kind' is {_shown(record['kind'])}; expected \"throughput\" or no 'kind'"
    bound = "upper_bound" if throughput else "lower_bound"
    detectable = "smallest_detectable_drop" if throughput else "smallest_detectable_change"
    scalars = {"exit_code": (_is_whole, "a whole number of 0 or more"), "headline": (_is_text, "a string"),
               "method": (_is_text, "a string"), "threshold": (_is_number, "a number"),
               "alpha": (_is_number, "a number"), "tests": (_is_whole, "a whole number of 0 or more"),
               "rounds_needed": (_is_whole, "a whole number of 0 or more"),
               "samples": (lambda x: x is None or _is_whole(x), "a whole number or null")}
    for name, (check, expected) in scalars.items():
        if name in record and not check(record[name]):
            return f"'{name}' is {_shown(record[name])}; expected {expected}"
    checks = {
        "rounds": lambda x: None if isinstance(x, list) and all(map(_is_text, x))
        else f"'rounds' is {_shown(x)}; expected a list of round folder names",
        "too_few_rounds": lambda x: _mapping_problem("too_few_rounds", x, _is_whole, "a whole number of rounds"),
        "stopped": lambda x: _mapping_problem("stopped", x, _is_whole, "a whole number of rounds"),
        "thresholds": lambda x: _mapping_problem("thresholds", x, _is_number, "a number"),
        detectable: lambda x: _mapping_problem(detectable, x, _is_optional_number, "a number or null"),
        "failed": lambda x: _entries_problem("failed", x, _test_fields(bound)),
        "improved": lambda x: _entries_problem("improved", x, _test_fields(bound)),
        "layout_sized": lambda x: _entries_problem("layout_sized", x, _test_fields(bound)),
        "rounds_used": lambda x: _entries_problem("rounds_used", x, {
            "subexperiment": (_is_text, "a string"), "statistic": (_is_text, "a string"),
            "rounds": (_is_whole, "a whole number of 0 or more")}),
        "undecided": lambda x: _entries_problem("undecided", x, {
            "subexperiment": (_is_text, "a string"), "statistic": (_is_text, "a string")}),
        "align_functions": lambda x: None if x is None else _mapping_problem(
            "align_functions", x, lambda a: _is_whole(a, 0, MAX_ALIGNMENT),
            f"a whole number from 0 to {MAX_ALIGNMENT}"),
        "planned_rounds": _planned_problem,
        "layout_thresholds": _layout_problem,
        "arms": _arms_problem,
    }
    for name, check in checks.items():
        problem = check(record[name]) if name in record else None
        if problem is not None:
            return problem
    for name in ("cpu_pinning", "load_average", "throughput", "payloads"):  # from <ab>/metadata.json, shown only
        if not isinstance(record.get(name), (dict, list, type(None))):
            return f"'{name}' is {_shown(record[name])}; expected an object, a list or null"
    return None


def read_stored_verdict(path: Path, what: str) -> dict | None:
    """A stored verdict.json, checked (verdict_problem); None when there is none. InputError naming the
    file: not a JSON object, over MAX_BYTES, nested too deep, or a field the contract does not allow."""
    record = files.read_json_object(path, what, MAX_BYTES)
    if record is None:
        return None
    problem = verdict_problem(record)
    if problem is not None:
        raise InputError(f"{what}: {problem}", path)
    return record
