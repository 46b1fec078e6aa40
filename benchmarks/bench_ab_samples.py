"""How many samples per payload and round does the full latency A/B need? (issue 28)

    nice -n 19 .venv/bin/python benchmarks/bench_ab_samples.py --ab-directory out/ab-full [--ab-directory ...]
    .venv/bin/python benchmarks/bench_ab_samples.py --ab-directory out/ab-quick --samples 100,50,25 --sets 20

A pure replay of stored real rounds, no measurement: a run of n samples per payload measures exactly
the first n of a longer run's samples, so every finished round of a latency A/B folder (ideally
measured with --all-rounds) is cut to its first n samples per payload (ab.samples) for each n of
--samples that the rounds hold, and side by side per n it prints:

1. per sub-experiment and statistic, the round-to-round sd of the verdict's d and a robust one
   (MAD x 1.4826);
2. the verdict of the stored A/B itself at n, decided as `perfgate verdict` decides (its threshold,
   level, layout thresholds and curtailment record): A/Bs of unchanged builds, so a FAIL is a false
   alarm; at the samples the rounds hold it must equal the stored verdict.json;
3. power and false alarms on bootstrap sets of R rounds drawn with replacement (ab.resample): one
   sub-experiment's candidate made slower by each effect of --effects, the project's decision run on
   the set; the share of sets in which that sub-experiment failed, and of unmodified sets in which any
   test failed, each with a 95 % Clopper-Pearson interval.

Bad input (not an A/B folder, a throughput A/B, no finished rounds, none of the n held): one line
naming the folder, exit 2. CPU: about 0.4 s per bootstrap set and n at load 2.3-2.9 (21 decisions a set).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from perfgate import schema as s
from perfgate.ab import resample as rs
from perfgate.ab import samples as sm
from perfgate.ab import verdict as v
from perfgate.errors import InputError, PerfgateError
from perfgate.escape.workflow import log_list, log_text
from perfgate.model import read_metadata

NAME_WIDTH = 38


def number_list(text: str, kind, what: str) -> list:
    try:
        values = [kind(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise InputError(f"{what} takes a comma-separated list, got {text!r}") from None
    if not values:
        raise InputError(f"{what} is empty")
    return values


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ab-directory", action="append", required=True, type=Path,
                        help="a finished full latency A/B folder (ideally --all-rounds); repeatable")
    parser.add_argument("--samples", default="1000,500,250", help="n per payload to replay (default 1000,500,250)")
    parser.add_argument("--effects", default="0.03,0.05", help="candidate slow-downs for the power (default 0.03,0.05)")
    parser.add_argument("--sets", type=int, default=200, help="bootstrap sets per n (default 200)")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--rounds", type=int, default=None,
                        help="R, rounds per bootstrap set (default: the A/B's planned rounds, else its stored count)")
    parser.add_argument("--subexperiments", default=None, help="comma-separated; default: all in the rounds")
    arguments = parser.parse_args(argv)
    arguments.samples = sorted(set(number_list(arguments.samples, int, "--samples")), reverse=True)
    arguments.effects = number_list(arguments.effects, float, "--effects")
    if any(n < 2 for n in arguments.samples):
        raise InputError("--samples: a summary needs at least 2 samples per payload")
    if any(not 0 < e < 1 for e in arguments.effects):
        raise InputError("--effects are fractions above 0 and below 1 (0.05 = +5 %)")
    if arguments.sets < 1 or (arguments.rounds is not None and not 1 <= arguments.rounds <= 1000):
        raise InputError("--sets must be at least 1 and --rounds from 1 to 1000")
    return arguments


def shown_subexperiments(stored: sm.StoredAb, wanted: list[str] | None) -> list[str]:
    """The sub-experiments printed and regressed in turn; the verdicts always test them all."""
    if wanted is None:
        return list(stored.subexperiments)
    missing = [sub for sub in wanted if sub not in stored.subexperiments]
    if missing:
        raise InputError(f"--subexperiments: {', '.join(missing)} not in its finished rounds", stored.folder)
    return [sub for sub in stored.subexperiments if sub in wanted]


def planned_rounds(stored: sm.StoredAb, requested: int | None) -> int:
    if requested is not None:
        return requested
    planned = stored.metadata.rounds if stored.metadata is not None else None
    return int(planned) if planned else len(stored.round_names)


# --- 4. what the data are ------------------------------------------------------------------------
def describe(stored: sm.StoredAb, rounds: int) -> None:
    meta = stored.metadata
    print(f"== {log_text(stored.folder)} ==")
    label = log_text(meta.label) if meta and meta.label else "?"
    planned = meta.rounds if meta and meta.rounds else "?"
    print(f"latency A/B {label}: {len(stored.round_names)} finished rounds of {planned} planned "
          f"({log_text(stored.round_names[0])}-{log_text(stored.round_names[-1])})"
          + (f"; left out, not finished: {log_list(stored.unfinished)}" if stored.unfinished else "")
          + f"; {stored.held} samples per payload held (metadata: {meta.samples if meta else '?'}, "
            f"warm-up {meta.warmup if meta else '?'}, turns of {meta.turn_samples if meta else '?'})")
    if meta and meta.arms:
        for name in s.AB_ARMS:
            arm = meta.arms.get(name)
            commit = arm.fastdds.commit if arm and arm.fastdds and arm.fastdds.commit else "?"
            print(f"  {name}: Fast DDS {log_text(arm.fastdds.version if arm and arm.fastdds else '?')} "
                  f"commit {log_text(commit[:12])}")
    loads = [x for name in stored.round_names for arm in s.AB_ARMS for x in round_loads(stored.folder, name, arm)]
    before = meta.load_average.before[0] if meta and meta.load_average and meta.load_average.before else "?"
    print(f"  load recorded (1-minute): A/B before {before}; rounds' arms before/after "
          + (f"{min(loads):.2f}-{max(loads):.2f} (median {np.median(loads):.2f})" if loads else "not recorded"))
    missing = {sub: k for sub in stored.subexperiments
               if (k := stored.subexperiment_rounds(sub)) != len(stored.round_names)}
    print(f"  {len(stored.subexperiments)} sub-experiments"
          + ("" if not missing else "; missing from some rounds (curtailed or failed), their figures use the rounds "
             "that have them: " + ", ".join(f"{log_text(sub)} {k} of {len(stored.round_names)}"
                                            for sub, k in missing.items())))
    setting = sm.settings(stored)
    print(f"  verdict setting: threshold +{setting.threshold:.1%}, family-wise {setting.alpha:g}"
          + (f", layout thresholds {setting.layout}" if setting.layout else "")
          + ("" if stored.verdict else " (defaults: no verdict.json yet)")
          + f"; bootstrap: {rounds} rounds per set")


def round_loads(folder: Path, name: str, arm: str) -> list[float]:
    try:
        meta = read_metadata(folder / s.AB_ROUNDS_DIR / name / arm)
    except PerfgateError:
        return []
    load = meta.load_average if meta else None
    return [x[0] for x in ((load.before, load.after) if load else ()) if x]


# --- 1. spread ------------------------------------------------------------------------------------
def print_spread(stored: sm.StoredAb, means: dict[int, object], subs: list[str]) -> None:
    ns = list(means)
    print("1. round-to-round spread of d (sd / robust sd = MAD x 1.4826; d = mean over payloads of log(cand/base))")
    print(f"  {'sub-experiment':<{NAME_WIDTH}} {'stat':<6} {'rounds':>6} "
          + " ".join(f"{f'n={n}':>17}" for n in ns))
    spreads = {n: rs.spread(means[n], subs).set_index([s.EXPERIMENT_TYPE, v.STATISTIC]) for n in ns}
    for (sub, statistic), row in spreads[ns[0]].iterrows():
        cells = [f"{spreads[n].loc[(sub, statistic), 'sd']:.4f} / {spreads[n].loc[(sub, statistic), 'robust sd']:.4f}"
                 for n in ns]
        print(f"  {log_text(sub):<{NAME_WIDTH}} {statistic:<6} {int(row[v.ROUNDS]):>6} "
              + " ".join(f"{c:>17}" for c in cells))
    for n in ns[1:]:
        ratio = (spreads[n]["robust sd"] / spreads[ns[0]]["robust sd"]).replace([np.inf, -np.inf], np.nan).dropna()
        if len(ratio):
            print(f"  robust sd at n={n} over n={ns[0]}: median {ratio.median():.2f}x "
                  f"(range {ratio.min():.2f}-{ratio.max():.2f}; sqrt({ns[0]}/{n}) = {np.sqrt(ns[0] / n):.2f})")


# --- 2. the stored A/B's own verdict at n ------------------------------------------------------------
def print_verdicts(stored: sm.StoredAb) -> None:
    print("2. the stored A/B's verdict at n (unchanged builds: a FAIL is a false alarm)")
    for n in stored.tables:
        decision = sm.replayed_decision(stored, n)
        status, failed = sm.status_of(decision), sm.failed_tests(decision)
        line = f"  n={n}: {status}" + (": " + log_list(f"{sub} {stat}" for sub, stat in failed) if failed else "")
        if decision.too_few_rounds:
            line += (f" (too few usable rounds: {min(decision.too_few_rounds.values())}, "
                     f"{decision.rounds_needed} needed to ever reject)")
        if decision.undecided:
            line += f" ({len(decision.undecided)} test(s) undecided by the curtailed rounds at this n)"
        if n == stored.held and stored.verdict is not None:
            same = status == stored.verdict.status and set(failed) == set(stored.verdict.failed)
            line += f"; stored verdict.json: {log_text(stored.verdict.status)}" + (" (the same)" if same else
                                                                                  " (DIFFERENT)")
        print(line)


# --- 3. power on bootstrap sets ------------------------------------------------------------------------
def fraction(k: int, n: int) -> str:
    low, high = rs.clopper_pearson(k, n)
    return f"{k / n:6.1%} [{low:.0%}-{high:.0%}]"


def print_power(stored: sm.StoredAb, means: dict[int, object], arguments: argparse.Namespace, rounds: int,
                subs: list[str]) -> None:
    setting = sm.settings(stored)
    tests = len(stored.subexperiments) * len(v.TESTED_STATISTICS)
    print(f"3. bootstrap: {arguments.sets} sets of {rounds} rounds drawn with replacement from the "
          f"{len(stored.round_names)} stored (seed {arguments.seed}), Holm over {tests} tests; per sub-experiment the "
          f"share of sets in which it failed [95 % Clopper-Pearson]")
    if rounds < v.rounds_needed(tests, setting.alpha):
        print(f"  note: {rounds} rounds cannot reject at all ({v.rounds_needed(tests, setting.alpha)} needed)")
    results = {}
    for n in means:
        started = time.process_time()
        results[n] = rs.resampled_failures(means[n], stored.subexperiments, rounds=rounds, sets=arguments.sets,
                                           effects=arguments.effects, seed=arguments.seed,
                                           threshold=setting.threshold, alpha=setting.alpha, layout=setting.layout,
                                           regressed=subs)
        print(f"  (n={n}: {time.process_time() - started:.0f} CPU s, load {os.getloadavg()[0]:.2f})", flush=True)
    ns = list(means)
    print(f"  {'sub-experiment':<{NAME_WIDTH}} {'change':<9} " + " ".join(f"{f'n={n}':>20}" for n in ns))
    for sub in subs:
        for effect in arguments.effects:
            print(f"  {log_text(sub):<{NAME_WIDTH}} {f'+{effect:.0%}':<9} "
                  + " ".join(f"{fraction(results[n].caught[(sub, effect)], results[n].sets):>20}" for n in ns))
        print(f"  {log_text(sub):<{NAME_WIDTH}} {'unchanged':<9} "
              + " ".join(f"{fraction(results[n].unchanged[sub], results[n].sets):>20}" for n in ns))
    print(f"  {'false alarms: any test failed, unmodified sets':<{NAME_WIDTH + 10}} "
          + " ".join(f"{fraction(results[n].false_alarms, results[n].sets):>20}" for n in ns))
    apart = results[ns[0]].drawn_apart
    if apart:
        print("  drawn apart from the other sub-experiments (missing from some rounds): "
              + ", ".join(f"{log_text(sub)} from {k} rounds" for sub, k in apart.items()))
    print(f"  caveat: sets drawn from {len(stored.round_names)} stored rounds repeat them and understate the "
          "round-to-round variety of new rounds (another day, another load); read the fractions as optimistic")


def main(argv: list[str] | None = None) -> int:
    try:
        arguments = parse_arguments(argv)
        wanted = (None if arguments.subexperiments is None
                  else number_list(arguments.subexperiments, str.strip, "--subexperiments"))
        stored_abs = [sm.read_stored_ab(folder, arguments.samples) for folder in arguments.ab_directory]
        shown = [shown_subexperiments(stored, wanted) for stored in stored_abs]
        for stored, subs in zip(stored_abs, shown):
            rounds = planned_rounds(stored, arguments.rounds)
            skipped = [n for n in arguments.samples if n not in stored.tables]
            describe(stored, rounds)
            if skipped:
                print(f"  n above the {stored.held} samples held, left out: {', '.join(map(str, skipped))}")
            means = {n: rs.round_means(table) for n, table in stored.tables.items()}
            print_spread(stored, means, subs)
            print_verdicts(stored)
            print_power(stored, means, arguments, rounds, subs)
            print()
    except PerfgateError as error:
        print(f"bench_ab_samples: error: {error}", file=sys.stderr)
        return 2  # bad input, whatever the error's kind: nothing was measured
    return 0


if __name__ == "__main__":
    sys.exit(main())
