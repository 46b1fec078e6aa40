"""ab.layout_derivation: `perfgate determine-layout-thresholds`, the layout file derived from layout A/Bs.

It reads finished latency A/B folders whose two arms differ only in code layout, derives each
sub-experiment's threshold (ab.layout) and writes one JSON file with the thresholds and their provenance
(which A/Bs, the arms' commits, dates, machine, load, idle policy, layouts and function alignment, each
A/B's rounds' d and each pair's figures; docs/formats.md "Layout thresholds"). Since the rounds' d are
kept, a later derivation takes the file's A/Bs again (--previous) and adds new ones without their
folders; that earlier file is checked as untrusted, since a pull request may change it. Reading the
file back is ab.layout_file's.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .. import __version__, clock, files
from .. import schema as s
from ..errors import IncompleteError, InputError
from ..escape.workflow import log_text
from ..measure import cpu_latency
from ..model import Metadata, as_json
from ..outcome import INCOMPLETE, PASS, REGRESSION
from . import curtail, layout, round_power, verdict as v
from .latency import DEFAULT_ROUNDS
from .arms import recorded_alignments
from .layout_file import MAX_BYTES as MAX_LAYOUT_BYTES, PLATFORM_NAME
from .rounds import read_rounds
from .throughput_report import is_throughput_ab

METHOD = ("per sub-experiment: over the layout pairs (the rounds of A/Bs of the same two builds pooled) and the "
          "tested statistics, the largest upper confidence bound of the move's size |median d| (sign test, one-sided "
          f"level {layout.BOUND_LEVEL:g} each way; d: a round's mean over payloads of log(candidate / baseline), the "
          "verdict's own), or, if larger, the largest move one layout A/B shows on its own rounds (the lower "
          "confidence bound of |median d| at the same level, so that every layout A/B passes either way round), "
          f"exp of it minus 1, raised to the next multiple of {layout.STEP:g} strictly above it")


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


def read_pair(ab_dir: Path, alpha: float = v.DEFAULT_ALPHA) -> tuple[dict, layout.Moves]:
    """One layout A/B: (its provenance record, its rounds' d per sub-experiment and statistic)."""
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
    moves = layout.round_moves(ratios, subs)
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
        "layouts": (meta.layouts or 0) if meta else 0,
        "align_functions": _arms_alignment(meta, ab_dir),
        "rounds": len(rounds.round_names),
        "samples": meta.samples if meta else None,
    }
    return _with_moves(record, moves), moves


def _with_moves(record: dict, moves: layout.Moves) -> dict:
    """The A/B's record with its own shifts (how far one A/B pins the move) and its rounds' d."""
    return {**record, "shifts": _shift_rows(layout.shifts(moves)),
            "moves": [{layout.SUBEXPERIMENT: sub, layout.STATISTIC: statistic, layout.D: [round(float(x), 9) for x in d]}
                      for (sub, statistic), d in moves.items()]}


def _shift_rows(table: pd.DataFrame) -> list[dict]:
    return [{key: _finite(value) for key, value in row.items()} for row in table.to_dict("records")]


def _arms_alignment(meta: Metadata | None, ab_dir: Path) -> int:
    """The --align-functions both arms were built with (perfgate build's record); an arm that is not such a
    build counts as the compiler's own (0). Arms of two alignments are refused: the gate compares builds
    made alike, and a layout file is for one alignment."""
    recorded = recorded_alignments(meta.arms if meta is not None else None)
    found = {recorded.get(name, 0) for name in s.AB_ARMS}
    if len(found) > 1:
        raise InputError(f"its arms were built with --align-functions {' and '.join(map(str, sorted(found)))}: a layout "
                         "A/B compares builds made alike, and a layout file is for one alignment", ab_dir)
    return found.pop()


def _held_mode(meta: Metadata | None) -> str:
    entry = meta.cpu_latency if meta is not None else None
    return cpu_latency.held_mode(entry.requested if entry else None, entry.held_us if entry else None)


def read_previous(path: Path) -> list[tuple[dict, layout.Moves]]:
    """The A/Bs of an earlier layout file, each (its provenance record, its rounds' d), checked: the file
    comes from the repository, which a pull request may change. Only checked fields are carried over;
    each A/B's shifts are computed again from its d. InputError naming the file for anything else."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such layout thresholds file", path)
    data = files.read_json_object(path, "a layout thresholds file", MAX_LAYOUT_BYTES) or {}
    try:
        return [_previous_entry(record, index) for index, record in enumerate(_list((data.get("provenance") or {})
                                                                                    .get("ab_directories"), "A/Bs"))]
    except ValueError as error:
        raise InputError(str(error), path) from None


def _list(value, what: str) -> list:
    if not isinstance(value, list):
        raise ValueError(f"its provenance has no list of {what}")
    return value


def _text(value, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{what} is not a string")
    return value


def _previous_entry(record, index: int) -> tuple[dict, layout.Moves]:
    where = f"A/B {index + 1} of its provenance"
    if not isinstance(record, dict) or not isinstance(record.get("ab_directory"), str):
        raise ValueError(f"{where} is not an object with an ab_directory")
    if "moves" not in record:
        raise ValueError(f"{where} was derived before the rounds' d were kept: give its folder with --ab-directory")
    moves = layout.parse_moves(record["moves"], where)
    arms = {}
    for arm in s.AB_ARMS:
        entry = record.get(arm) if isinstance(record.get(arm), dict) else {}
        arms[arm] = {key: _text(entry.get(key), f"{where}'s {arm} {key}") for key in ("spec", "fastdds_version", "commit")}
    if record.get("cpu_latency") not in cpu_latency.CHOICES:
        raise ValueError(f"{where}'s cpu_latency is not one of {', '.join(cpu_latency.CHOICES)}")
    layouts, align_functions = record.get("layouts", 0), record.get("align_functions", 0)
    for key, value in (("layouts", layouts), ("align_functions", align_functions)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{where}'s {key} is not a whole number of 0 or more")
    platform = record.get("platform") if isinstance(record.get("platform"), dict) else None
    if platform is not None:
        _text(platform.get("id"), f"{where}'s platform id")
    checked = {"ab_directory": record["ab_directory"], **arms,
               **{key: _text(record.get(key), f"{where}'s {key}") for key in ("created_utc", "finished_utc")},
               "platform": platform, "load_average": record.get("load_average") if isinstance(
                   record.get("load_average"), dict) else None, "cpu_latency": record["cpu_latency"],
               "layouts": layouts, "align_functions": align_functions,
               "rounds": record.get("rounds") if isinstance(record.get("rounds"), int) else None,
               "samples": record.get("samples") if isinstance(record.get("samples"), int) else None}
    return _with_moves(checked, moves), moves


def _pair_key(record: dict) -> tuple:
    """The two builds of an A/B: commits where the arms have them, else their specs."""
    return tuple((record[arm] or {}).get("commit") or (record[arm] or {}).get("spec") for arm in s.AB_ARMS)


def _check_alike(record: dict, subs: set, earlier: list[tuple[dict, set]], where) -> None:
    """Every layout A/B measures the same sub-experiments, on one machine, under one idle policy."""
    if not earlier:
        return
    first_record, first_subs = earlier[0]
    if subs != first_subs:
        raise InputError("measures other sub-experiments than the first A/B: every layout A/B measures the same "
                         "ones", where)
    ids = {(r.get("platform") or {}).get("id") for r, _ in earlier + [(record, subs)]} - {None}
    if len(ids) > 1:
        raise InputError("measured on another machine (platform id) than the A/Bs before it: layout thresholds "
                         "are per platform", where)
    if record["cpu_latency"] != first_record["cpu_latency"]:
        raise InputError(f"measured with --cpu-latency {record['cpu_latency']}, the A/Bs before it with "
                         f"{first_record['cpu_latency']}: a layout move is another size under another idle "
                         "policy", where)
    if record["layouts"] != first_record["layouts"]:
        raise InputError(f"measured with --layouts {record['layouts']}, the A/Bs before it with "
                         f"{first_record['layouts']}: averaged over layouts, a layout move is another size", where)
    if record["align_functions"] != first_record["align_functions"]:
        raise InputError(f"measured on builds with --align-functions {record['align_functions']}, the A/Bs before it "
                         f"with {first_record['align_functions']}: aligned, a layout move is another size", where)


def derive(ab_directories: list[Path], platform: str, alpha: float = v.DEFAULT_ALPHA,
           previous: Path | None = None) -> dict:
    """The layout file's content for these layout A/Bs and those of a `previous` layout file (InputError for
    any that is not one). A/Bs of the same two builds are one pair: their rounds are pooled."""
    if not PLATFORM_NAME.fullmatch(platform or ""):
        raise InputError(f"--platform {log_text(platform)!r} must be letters, digits, '.', '_' or '-'")
    entries = [(record, moves, previous) for record, moves in (read_previous(previous) if previous else [])]
    seen: set[str] = set()
    earlier: list[tuple[dict, set]] = []
    for record, moves, where in entries:
        if record["ab_directory"] in seen:
            raise InputError("lists one A/B twice: it would count as two", where)
        seen.add(record["ab_directory"])
        _check_alike(record, {sub for sub, _ in moves}, earlier, where)
        earlier.append((record, {sub for sub, _ in moves}))
    for directory in ab_directories:
        key = str(Path(directory).resolve())
        if key in seen:
            raise InputError("given twice (or already in --previous): one A/B would count as two", directory)
        seen.add(key)
        record, moves = read_pair(Path(directory), alpha)
        _check_alike(record, {sub for sub, _ in moves}, earlier, directory)
        earlier.append((record, {sub for sub, _ in moves}))
        entries.append((record, moves, directory))
    if not entries:
        raise InputError(f"{log_text(previous)} lists no layout A/B: nothing to derive from")
    groups: dict[tuple, list] = {}
    for record, moves, _ in entries:
        key = _pair_key(record)
        if key[::-1] in groups and key not in groups:  # the same two builds, the arms the other way round
            key, moves = key[::-1], {k: -d for k, d in moves.items()}
        groups.setdefault(key, []).append((record, moves))
    pair_records, tables = [], []
    for (baseline, candidate), members in groups.items():
        table = layout.shifts(layout.pooled([moves for _, moves in members]))
        tables.append(table)
        pair_records.append({"baseline": baseline, "candidate": candidate,
                             "ab_directories": [record["ab_directory"] for record, _ in members],
                             "shifts": _shift_rows(table)})
    records = [record for record, _, _ in entries]
    single_abs = [layout.shifts(moves) for _, moves, _ in entries]
    return {
        "platform": platform,
        "method": METHOD,
        "step": layout.STEP,
        "cpu_latency": records[0]["cpu_latency"] if records else cpu_latency.LATENCY_SYSTEM,
        "layouts": records[0]["layouts"] if records else 0,
        "align_functions": records[0]["align_functions"] if records else 0,
        "thresholds": layout.thresholds(tables, single_abs),
        "largest_layout_bound": {sub: _finite(x) for sub, x in layout.largest(tables).items()},
        "largest_layout_change": {sub: _finite(x) for sub, x in layout.largest(tables, layout.CHANGE).items()},
        "largest_single_ab_move": {sub: _finite(x) for sub, x in layout.largest(single_abs, layout.SHOWN).items()},
        "provenance": {"derived_utc": clock.utc_now(), "perfgate_version": __version__, "alpha": alpha,
                       "bound_level": layout.BOUND_LEVEL, "pairs": pair_records, "ab_directories": records},
    }


def command_determine_layout_thresholds(*, ab_directory, platform, output, previous=None) -> int:
    output = Path(output)
    if not output.parent.is_dir():
        raise InputError("the output's folder does not exist", output.parent)
    if not ab_directory and previous is None:
        raise InputError("nothing to derive from: give --ab-directory or --previous")
    content = derive([Path(d) for d in ab_directory or []], platform,
                     previous=Path(previous) if previous is not None else None)
    files.write_text(output, json.dumps(content, indent=2, sort_keys=False, allow_nan=False,
                                        default=_json_value) + "\n")
    power = _planned_power(content)
    for sub, threshold in content["thresholds"].items():
        print(f"perfgate determine-layout-thresholds: {log_text(sub)}: layout moved it by up to "
              f"{content['largest_layout_change'][sub]:.2%} (bound {content['largest_layout_bound'][sub]:.2%}, "
              f"one A/B alone {content['largest_single_ab_move'][sub]:.2%}), threshold +{threshold:.1%}; "
              + power.get(sub, "no rounds to tell its power"))
    unknown = [sub for sub in content["largest_layout_bound"] if sub not in content["thresholds"]]
    if unknown:  # no rounds, or too few for a bound: its size is unknown, it gets no layout threshold
        print(f"perfgate determine-layout-thresholds: warning: no threshold for {log_text(', '.join(unknown))}: "
              f"too few usable rounds to bound its move", file=sys.stderr)
    provenance = content["provenance"]
    print(f"perfgate determine-layout-thresholds: {len(content['thresholds'])} threshold(s) from "
          f"{len(provenance['ab_directories'])} layout A/B(s) of {len(provenance['pairs'])} pair(s) written to "
          f"{log_text(output)}")
    return s.EXIT_OK


def _planned_power(content: dict) -> dict[str, str]:
    """Per sub-experiment, what a full A/B at these thresholds plans for it (ab.layout.planned_rounds) and the
    power at +5 % of those rounds in its layout A/Bs' noise, averaged over the A/Bs, with the lowest, at `perfgate
    ab`'s level (the whole gate's is lower, and at 24 rounds needs one round more: docs/verdict.md)."""
    records = content["provenance"]["ab_directories"]
    noise = layout.round_noise([layout.parse_moves(record["moves"], record["ab_directory"]) for record in records])
    thresholds, subs = content["thresholds"], list(content["thresholds"])
    planned = layout.planned_rounds(DEFAULT_ROUNDS, v.DEFAULT_THRESHOLD, thresholds, subs, noise)
    lines = {}
    for sub in subs:
        bound, tests = v.bound_of(v.DEFAULT_THRESHOLD, thresholds, sub), len(subs) * len(v.TESTED_STATISTICS)
        each = round_power.each_hour(noise.get(sub, []), bound, planned[sub], tests)
        if each:
            lines[sub] = (f"+{round_power.TARGET_EFFECT:.0%} caught {np.mean(each):.0%} of the time in its "
                          f"{planned[sub]} planned rounds at level {v.DEFAULT_ALPHA:g} (the A/Bs' hours "
                          f"{min(each):.0%} to {max(each):.0%})")
    return lines


def _finite(value):
    """A figure for JSON: rounded, or null when not finite (a round where one arm measured nothing)."""
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    return value


def _json_value(value):
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON: {type(value)}")
