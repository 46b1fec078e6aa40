"""Power of the full latency A/B's planned rounds, hour by hour, from a layout file's A/Bs (issue 28)

    .venv/bin/python benchmarks/bench_round_power.py --layout-thresholds requirements/vm-2core-x64_layout.json

A computation, no measurement and no bootstrap: each layout A/B kept in the file (its rounds' d, centred on
its own median) is one hour's round-to-round noise. For each sub-experiment it prints the rounds a full A/B
plans for it (ab.layout.planned_rounds: 16, or 24 for a wide bound or noisy rounds) and, for each effect of
--effects (a slow-down of that sub-experiment alone, added to every round), the exact chance that those
rounds fail it at Holm's first step (ab.round_power): the mean over the hours and the lowest and highest
hour; with --rounds, at those numbers of rounds too. Each hour's figure is what a bootstrap replay of that
A/B's rounds (benchmarks/bench_ab_samples.py) estimates by sampling.

Bad input (no such file, a malformed one): one line naming it, exit 2.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from perfgate.ab import layout, layout_file, round_power
from perfgate.ab import verdict as v
from perfgate.ab.latency import DEFAULT_ROUNDS
from perfgate.errors import InputError, PerfgateError
from perfgate.escape.workflow import log_text

NAME_WIDTH = 38


def fractions(text: str) -> list[float]:
    try:
        values = [float(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise InputError(f"--effects takes a comma-separated list of fractions, got {text!r}") from None
    if not values or any(not 0 < e < 1 for e in values):
        raise InputError("--effects are fractions above 0 and below 1 (0.05 = +5 %)")
    return values


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layout-thresholds", required=True, help="a layout file that kept its A/Bs' rounds")
    parser.add_argument("--effects", default="0.03,0.05,0.07", help="slow-downs (default 0.03,0.05,0.07)")
    parser.add_argument("--rounds", default="", help="also at these numbers of rounds, comma-separated")
    parser.add_argument("--alpha", type=float, default=v.DEFAULT_ALPHA, help="the verdict's family-wise level")
    arguments = parser.parse_args(argv)
    arguments.effects = fractions(arguments.effects)
    try:
        arguments.rounds = [int(x) for x in arguments.rounds.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"--rounds takes a comma-separated list of whole numbers, got {arguments.rounds!r}") from None
    if any(not 1 <= r <= 1000 for r in arguments.rounds) or not 0 < arguments.alpha < 1:
        raise InputError("--rounds are from 1 to 1000 and --alpha is above 0 and below 1")
    return arguments


def figure(each: list[float] | None) -> str:
    if not each:
        return "n/a"
    return f"{np.mean(each):6.1%} [{min(each):.0%}, {max(each):.0%}]"


def main(argv: list[str] | None = None) -> int:
    try:
        arguments = parse_arguments(argv)
        read = layout_file.load(arguments.layout_thresholds)
    except PerfgateError as error:
        print(f"bench_round_power: error: {error}", file=sys.stderr)
        return 2
    subs = list(read.thresholds)
    if not read.noise:
        print(f"bench_round_power: error: {log_text(read.path)}: its provenance keeps no A/B's rounds", file=sys.stderr)
        return 2
    planned = layout.planned_rounds(DEFAULT_ROUNDS, v.DEFAULT_THRESHOLD, read.thresholds, subs, read.noise,
                                    arguments.alpha)
    hours = max(len(read.noise.get(sub, [])) for sub in subs)
    print(f"== {log_text(read.path)}: {hours} layout A/B(s), each an hour; {len(subs) * len(v.TESTED_STATISTICS)} "
          f"tests at alpha {arguments.alpha:g}; power: mean over the hours [lowest, highest hour] ==")
    effects = "  ".join(f"{'+' + format(e, '.0%'):>20s}" for e in arguments.effects)
    print(f"{'sub-experiment':{NAME_WIDTH}s} {'bound':>6s} {'rounds':>6s}  {effects}")
    for sub in subs:
        bound = v.bound_of(v.DEFAULT_THRESHOLD, read.thresholds, sub)
        for rounds in [planned[sub], *[r for r in arguments.rounds if r != planned[sub]]]:
            cells = [figure(round_power.each_hour(read.noise.get(sub, []), bound, rounds,
                                                  len(subs) * len(v.TESTED_STATISTICS), arguments.alpha, effect))
                     for effect in arguments.effects]
            name = sub if rounds == planned[sub] else ""
            mark = "" if rounds == planned[sub] else "*"
            print(f"{name:{NAME_WIDTH}s} {bound:6.1%} {str(rounds) + mark:>6s}  "
                  + "  ".join(f"{cell:>20s}" for cell in cells))
    print("(* rounds other than the plan's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
