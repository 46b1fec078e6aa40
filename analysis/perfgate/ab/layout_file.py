"""ab.layout_file: the layout thresholds' file, requirements/<platform>_layout.json, derived and read.

`perfgate determine-layout-thresholds` reads finished latency A/B folders whose two arms differ only in
code layout, derives each sub-experiment's threshold (ab.layout) and writes one JSON file with the
thresholds and their provenance (which A/Bs, the arms' commits, dates, machine, load, each pair's
figures; docs/formats.md "Layout thresholds"). `perfgate ab`, `perfgate verdict` and the gate read it
back: every value checked, since it is a file from the repository that a pull request may change.
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
from pathlib import Path

import pandas as pd

from .. import __version__, clock, files
from .. import schema as s
from ..errors import IncompleteError, InputError
from ..escape.workflow import log_text
from ..measure import cpu_latency
from ..model import Metadata, as_json
from ..outcome import INCOMPLETE, PASS, REGRESSION
from . import curtail, layout, verdict as v
from .rounds import read_rounds
from .throughput_report import is_throughput_ab

LAYOUT_SUFFIX = "_layout.json"
PLATFORM_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")
METHOD = ("per sub-experiment: the largest exp(|median d|) - 1 over the layout A/Bs and the tested statistics "
          "(d: a round's mean over payloads of log(candidate / baseline), the verdict's own), raised to the next "
          f"multiple of {layout.STEP:g} strictly above it")


def layout_json(requirements_dir: Path, platform: str) -> Path:
    """requirements/<platform>_layout.json: the platform's layout thresholds."""
    return Path(requirements_dir) / f"{platform}{LAYOUT_SUFFIX}"


# --- reading (perfgate ab, verdict, gate) ----------------------------------------------------------------
def read_layout(path: Path) -> dict[str, float]:
    """The thresholds of a layout file (sub-experiment -> fraction); InputError naming the file."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such layout thresholds file", path)
    data = files.read_json_object(path, "a layout thresholds file")
    try:
        return layout.parse_thresholds(data)
    except ValueError as error:
        raise InputError(str(error), path) from None


def layout_cpu_latency(path: Path) -> str:
    """The idle policy the file's layout A/Bs measured under (its `cpu_latency`): a layout move is a share
    of a round trip, so it is another size when wake-ups are in the round trip. A file without the entry
    was derived before it existed, from A/Bs under the system's policy."""
    data = files.read_json_object(Path(path), "a layout thresholds file") or {}
    mode = data.get("cpu_latency", cpu_latency.LATENCY_SYSTEM)
    if mode not in cpu_latency.CHOICES:
        raise InputError(f"'cpu_latency' is not one of {', '.join(cpu_latency.CHOICES)}", path)
    return mode


def mode_warning(path: str | Path | None, requested: str) -> str | None:
    """A line for stderr when an A/B measures under another idle policy than its layout thresholds."""
    if path is None:
        return None
    measured = layout_cpu_latency(Path(path))
    if measured == requested:
        return None
    return (f"the layout thresholds in {log_text(path)} were measured with --cpu-latency {measured}, this A/B "
            f"measures with {requested}: layout moves may be another size")


def resolve_layout(given: str | Path | None, environment: dict | None = None,
                   requirements_dir: Path = Path(s.REQUIREMENTS_DIR)) -> tuple[dict[str, float], str | None]:
    """(thresholds, their file) for a verdict: --layout-thresholds FILE, else the platform's
    requirements/<$PERFGATE_PLATFORM>_layout.json when it exists, else none ({}, None)."""
    if given is not None:
        return read_layout(Path(given)), str(given)
    platform = (os.environ if environment is None else environment).get(s.PLATFORM_ENV)
    if not platform or not PLATFORM_NAME.fullmatch(platform):
        return {}, None
    path = layout_json(requirements_dir, platform)
    return (read_layout(path), str(path)) if path.exists() else ({}, None)


# --- deriving (perfgate determine-layout-thresholds) ---------------------------------------------------------
def _arm_record(metadata: Metadata | None, name: str) -> dict:
    arm = (metadata.arms or {}).get(name) if metadata is not None else None
    fastdds = arm.fastdds if arm is not None else None
    return {"spec": arm.spec if arm else None, "fastdds_version": fastdds.version if fastdds else None,
            "commit": fastdds.commit if fastdds else None}


def _require_finished(ab_dir: Path) -> None:
    """A layout A/B is a finished one: its verdict.json is there, an object with a known status, not
    INCOMPLETE (the figures are computed again from the rounds; nothing else of the file is used)."""
    path = ab_dir / s.VERDICT_JSON
    record = files.read_json_object(path, "an A/B verdict")
    if record is None:
        raise InputError(f"not a finished A/B folder: no {s.VERDICT_JSON} (decide it with `perfgate verdict`)", ab_dir)
    status = record.get("status")
    if status not in (PASS, REGRESSION, INCOMPLETE):
        raise InputError("'status' is not one of PASS, REGRESSION, INCOMPLETE", path)
    if status == INCOMPLETE:
        raise InputError("the A/B is incomplete: its rounds cannot say how much layout moved it", path)


def read_pair(ab_dir: Path, alpha: float = v.DEFAULT_ALPHA) -> tuple[dict, pd.DataFrame]:
    """One layout A/B: (its provenance record, its shifts per sub-experiment and statistic)."""
    ab_dir = Path(ab_dir)
    if not ab_dir.is_dir():
        raise InputError("not an A/B folder: not a folder", ab_dir)
    if is_throughput_ab(ab_dir):
        raise InputError("a throughput A/B: layout thresholds are derived from latency A/Bs (perfgate ab)", ab_dir)
    try:
        rounds = read_rounds(ab_dir)
    except IncompleteError as error:  # no rounds: bad input here, not a measurement to finish
        raise InputError(f"not a usable A/B folder: {error.message}", ab_dir) from None
    _require_finished(ab_dir)
    subs = rounds.subexperiments
    if len(subs) < 2:
        raise InputError(f"an A/B of one sub-experiment only ({log_text(subs[0])}): a layout A/B measures every "
                         f"sub-experiment the gate tests, so that one layout's moves are seen side by side", ab_dir)
    planned, stopped = curtail.read_record(ab_dir, subs, len(rounds.round_names))
    if stopped:
        raise InputError("a curtailed A/B: its stopped sub-experiments' few rounds do not estimate a shift; "
                         "measure layout A/Bs with --all-rounds", ab_dir)
    meta = rounds.metadata
    delays = [name for name in s.AB_ARMS
              if meta and meta.arms and meta.arms.get(name) and meta.arms[name].injected_echo_delay_ns]
    if delays:
        raise InputError("an A/B with an injected echo delay is not a layout change", ab_dir)
    ratios = v.log_ratios(rounds.table)
    decision = v.decide(ratios, alpha=alpha, order=subs)
    if decision.too_few_rounds:
        few = ", ".join(f"{log_text(sub)} ({n})" for sub, n in decision.too_few_rounds.items())
        raise InputError(f"too few usable rounds for {few}: a layout A/B needs at least {decision.rounds_needed}",
                         ab_dir)
    shifts = layout.pair_shifts(ratios, subs, alpha)
    platform = meta.platform if meta else None
    record = {
        "ab_directory": str(ab_dir.resolve()),
        "baseline": _arm_record(meta, s.AB_ARMS[0]),
        "candidate": _arm_record(meta, s.AB_ARMS[1]),
        "created_utc": meta.created_utc if meta else None,
        "finished_utc": meta.finished_utc if meta else None,
        "platform": as_json(platform) if platform else None,
        "load_average": as_json(meta.load_average) if meta and meta.load_average else None,
        "cpu_latency": _held_mode(meta),
        "rounds": len(rounds.round_names),
        "samples": meta.samples if meta else None,
        "shifts": [{key: _finite(value) for key, value in row.items()} for row in shifts.to_dict("records")],
    }
    return record, shifts


def _held_mode(meta: Metadata | None) -> str:
    entry = meta.cpu_latency if meta is not None else None
    return cpu_latency.held_mode(entry.requested if entry else None, entry.held_us if entry else None)


def derive(ab_directories: list[Path], platform: str, alpha: float = v.DEFAULT_ALPHA) -> dict:
    """The layout file's content for these layout A/Bs (InputError for any that is not one)."""
    if not PLATFORM_NAME.fullmatch(platform or ""):
        raise InputError(f"--platform {log_text(platform)!r} must be letters, digits, '.', '_' or '-'")
    seen = set()
    records, pairs = [], []
    for directory in ab_directories:
        key = Path(directory).resolve()
        if key in seen:
            raise InputError("given twice: one A/B would count as two layouts", directory)
        seen.add(key)
        record, shifts = read_pair(Path(directory), alpha)
        if pairs and set(shifts[layout.SUBEXPERIMENT]) != set(pairs[0][layout.SUBEXPERIMENT]):
            raise InputError("measures other sub-experiments than the first A/B: every layout A/B measures the same "
                             "ones", directory)
        ids = {(r["platform"] or {}).get("id") for r in records + [record]} - {None}
        if len(ids) > 1:
            raise InputError("measured on another machine (platform id) than the A/Bs before it: layout thresholds "
                             "are per platform", directory)
        if records and record["cpu_latency"] != records[0]["cpu_latency"]:
            raise InputError(f"measured with --cpu-latency {record['cpu_latency']}, the A/Bs before it with "
                             f"{records[0]['cpu_latency']}: a layout move is another size under another idle "
                             "policy", directory)
        records.append(record)
        pairs.append(shifts)
    return {
        "platform": platform,
        "method": METHOD,
        "step": layout.STEP,
        "cpu_latency": records[0]["cpu_latency"] if records else cpu_latency.LATENCY_SYSTEM,
        "thresholds": layout.thresholds(pairs),
        "largest_layout_change": {sub: _finite(x) for sub, x in layout.largest_sizes(pairs).items()},
        "provenance": {"derived_utc": clock.utc_now(), "perfgate_version": __version__, "alpha": alpha,
                       "ab_directories": records},
    }


def command_determine_layout_thresholds(*, ab_directory, platform, output) -> int:
    output = Path(output)
    if not output.parent.is_dir():
        raise InputError("the output's folder does not exist", output.parent)
    content = derive([Path(d) for d in ab_directory], platform)
    files.write_text(output, json.dumps(content, indent=2, sort_keys=False, allow_nan=False,
                                        default=_json_value) + "\n")
    for sub, threshold in content["thresholds"].items():
        print(f"perfgate determine-layout-thresholds: {log_text(sub)}: layout moved it up to "
              f"{content['largest_layout_change'][sub]:.2%}, threshold +{threshold:.1%}")
    unknown = [sub for sub in content["largest_layout_change"] if sub not in content["thresholds"]]
    if unknown:  # a round where an arm measured nothing: its size is unknown, it gets no layout threshold
        print(f"perfgate determine-layout-thresholds: warning: no threshold for {log_text(', '.join(unknown))}: "
              f"a round where one arm measured nothing", file=sys.stderr)
    print(f"perfgate determine-layout-thresholds: {len(content['thresholds'])} threshold(s) from "
          f"{len(ab_directory)} layout A/B(s) written to {log_text(output)}")
    return s.EXIT_OK


def _finite(value):
    """A figure for JSON: rounded, or null when not finite (a round where one arm measured nothing)."""
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    return value


def _json_value(value):
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON: {type(value)}")
