"""Layouts averaged (`--layouts N`): false alarms and power of a gate over N layouts, from measured rounds.

    .venv/bin/python benchmarks/bench_layout_rotation.py AB_DIR [AB_DIR ...] [--layouts-measured 8]
        [--subsets 1,2,4,8] [--rounds 16,24] [--effects 0.03,0.05] [--threshold 0.01]
        [--layout-thresholds requirements/vm-2core-epyc_layout.json]

Each AB_DIR is an uncurtailed A/B (`perfgate ab --layouts 8 --all-rounds`) of a layout-only pair: a commit
that changes no behaviour against its parent, round r run in layout r mod 8 of both builds. A computation,
no measurement: a gate rotating through N of the measured layouts draws each round's d (Median and 90 %, kept
together) from those layouts' rounds, so for every set of N layouts (all of them: which layouts a commit gets
is a draw too), the exact chance that R such rounds fail a sub-experiment at Holm's first step
(ab.round_power, the level a single failing sub-experiment meets) is:

- its false alarm: the rounds as measured (the pair's own layout moves included), no slow-down;
- its power at +E: the same rounds slowed by E (a regression riding on a commit that also moves code).

Printed per N and R: per sub-experiment the mean over the layout sets (and the worst set), and the whole
gate's union bound (the sum over sub-experiments of the false alarms), at the global threshold and, with
--layout-thresholds, at that file's bounds. Drawing rounds independently from the mixture, where a gate takes
the N layouts in turn, spreads the count of rounds above the bound a little more than the gate's rotation
does: the false alarms are slight over-estimates. Bad input: one line naming it, exit 2.
"""
from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

from perfgate.ab import layout_file, round_power
from perfgate.ab import verdict as v
from perfgate import schema as s
from perfgate.ab.rounds import read_rounds
from perfgate.errors import InputError, PerfgateError
from perfgate.escape.workflow import log_text

NAME_WIDTH = 36


def integers(text: str) -> list[int]:
    return [int(item) for item in text.split(",") if item.strip()]


def rounds_by_layout(ab_dir: Path, measured: int) -> dict[str, dict[int, np.ndarray]]:
    """Per sub-experiment, per layout (0-based: round r ran layout r mod `measured`), the rounds' d as rows of
    (Median, 90 %)."""
    rounds = read_rounds(ab_dir)
    ratios = v.log_ratios(rounds.table)
    means, _ = v.usable_round_means(ratios)
    order = {name: index for index, name in enumerate(rounds.round_names)}
    result: dict[str, dict[int, np.ndarray]] = {}
    for sub in rounds.subexperiments:
        rows = means[means[s.EXPERIMENT_TYPE] == sub]
        table = rows.pivot_table(index=v.ROUND, columns=v.STATISTIC, values="d")
        table = table[list(v.TESTED_STATISTICS)].dropna()
        per_layout: dict[int, list[np.ndarray]] = {}
        for round_name, values in table.iterrows():
            per_layout.setdefault(order[round_name] % measured, []).append(values.to_numpy(float))
        missing = sorted(set(range(measured)) - set(per_layout))
        if missing:
            raise InputError(f"{sub} has no round in layout(s) {', '.join(str(k + 1) for k in missing)} of "
                             f"{measured}: measure it with --layouts {measured} --all-rounds, at least {measured} "
                             "rounds", ab_dir)
        result[sub] = {k: np.vstack(rows_) for k, rows_ in per_layout.items()}
    return result


def chance(per_layout: dict[int, np.ndarray], layouts: tuple[int, ...], bound: float, effect: float,
           rounds: int, needed: int) -> float:
    rows = np.vstack([per_layout[k] for k in layouts])
    return round_power.power(rows, bound, effect, rounds, needed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ab_dirs", nargs="+", type=Path, help="uncurtailed A/Bs of layout-only pairs, --layouts")
    parser.add_argument("--layouts-measured", type=int, default=8, help="the A/Bs' --layouts")
    parser.add_argument("--subsets", default="1,2,4,8", help="the N of --layouts to evaluate")
    parser.add_argument("--rounds", default="16,24", help="the rounds a gate plans")
    parser.add_argument("--effects", default="0.03,0.05")
    parser.add_argument("--threshold", type=float, default=v.DEFAULT_THRESHOLD)
    parser.add_argument("--layout-thresholds", type=Path, default=None)
    options = parser.parse_args()
    try:
        pairs = [(d.name, rounds_by_layout(d, options.layouts_measured)) for d in options.ab_dirs]
        files_bounds = layout_file.read_layout(options.layout_thresholds) if options.layout_thresholds else None
    except PerfgateError as error:
        print(f"bench_layout_rotation: {log_text(str(error))}", file=sys.stderr)
        return 2
    effects = [float(e) for e in options.effects.split(",")]
    subs = list(pairs[0][1])
    tests = len(subs) * len(v.TESTED_STATISTICS)
    bounds = [("global", None)] + ([("layout file", files_bounds)] if files_bounds else [])
    for n in integers(options.subsets):
        sets = list(itertools.combinations(range(options.layouts_measured), n))
        for rounds in integers(options.rounds):
            needed = round_power.rejection_count(rounds, v.DEFAULT_ALPHA / tests)
            if needed is None:
                continue
            for label, file_bounds in bounds:
                print(f"--layouts {n} ({len(sets)} layout sets), {rounds} rounds, {label} bounds, Holm's first step "
                      f"needs {needed} of {rounds} rounds above:")
                header = f"  {'sub-experiment':<{NAME_WIDTH}} {'bound':>6}"
                header += "".join(f"  {name + ' false alarm':>24}" for name, _ in pairs)
                header += "".join(f"  {'power +' + format(e, '.0%'):>18}" for e in effects)
                print(header)
                union = {name: 0.0 for name, _ in pairs}
                for sub in subs:
                    bound = v.bound_of(options.threshold, file_bounds, sub)
                    line = f"  {sub:<{NAME_WIDTH}} {bound:>6.1%}"
                    for name, per_sub in pairs:
                        alarms = [chance(per_sub[sub], chosen, bound, 0.0, rounds, needed) for chosen in sets]
                        union[name] += float(np.mean(alarms))
                        line += f"  {np.mean(alarms):>11.2%} (worst {max(alarms):>5.1%})"
                    for effect in effects:
                        caught = [chance(per_sub[sub], chosen, bound, effect, rounds, needed)
                                  for _, per_sub in pairs for chosen in sets]
                        line += f"  {np.mean(caught):>6.0%} (low {min(caught):>4.0%})"
                    print(line)
                print("  whole gate, union bound of the false alarms: "
                      + ", ".join(f"{name} {value:.2%}" for name, value in union.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
