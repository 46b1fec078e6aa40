"""How good the A/B verdict is on this machine: false alarms, power, and the wall time of an A/B.

    .venv/bin/python benchmarks/bench_gate_quality.py --output /tmp/quality            # measure, then print
    .venv/bin/python benchmarks/bench_gate_quality.py --output /tmp/quality --reuse    # print from stored runs
    .venv/bin/python benchmarks/bench_gate_quality.py --output /tmp/quick --quick      # the same for ab --quick

Measures, with real `perfgate ab` runs of the system Fast DDS (pinned, the default):
1. A/A runs (the same Fast DDS in both arms): the whole verdict must pass; k of n failed is printed
   with its exact (Clopper-Pearson) 95 % interval.
2. Injected regressions: one A/B run per level (+3 %, +5 %, +10 % by default) in which the
   candidate's echo busy-waits D ns, D chosen per sub-experiment so that the mean over payloads of
   log(1 + D / median) is log(1 + level) (the medians from the first A/A run's baseline arm).
3. Power on "any one sub-experiment regressed", from those real rounds: for each sub-experiment,
   the verdict on the injected run's rounds for it and an A/A run's rounds for the other nine (the
   Holm family as on a real one-sub regression). Caught = that sub-experiment fails.
4. Resampled rates (more trials than real runs allow): rounds drawn with replacement from the real
   rounds above (A/A rounds for unchanged sub-experiments, injected rounds for the regressed one),
   --resamples verdicts each; with the sign test (the verdict's) and, for comparison, Wilcoxon's
   signed-rank test on the same draws. Also the smallest change detected with 95 % power, found by
   shifting A/A rounds by a known log ratio.
5. Wall time of each A/B run and the machine's load, from their metadata.
6. Curtailed rounds (perfgate.ab.curtail) beside all rounds: on the real runs' stored rounds and on
   synthetic rounds (a model of this VM's noise: per-run state sd 2.5 %, 4 % of runs in a bad state
   x1.3-1.8), the share of sub-experiment rounds a curtailed A/B measures, the round it ends after, and
   whether every decision equals the full one. `--curtailing-only` prints just that, measuring nothing.
7. The whole gate's false-alarm budget (gate.budget) and the gross requirement checks' share of it:
   `--gross-only --stored A B ...` measures nothing and prints, for the platform's gross margins
   (requirements/<platform>_gross.json), the gross misses of the stored A/B folders' unchanged arms
   pooled (exact counts), of resampled unchanged gates at 100, 1000 and 16000 pooled samples, the bounds
   1/(n+1) and 1-0.05^(1/n) for n clean real gates, and the clean gates a direct 0.5 % would need.
Runs one measurement at a time; nothing else should run on the machine meanwhile.
"""
from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize, stats

from perfgate import files
from perfgate.ab import curtail
from perfgate.ab.resample import clopper_pearson
from perfgate.ab import verdict as v
from perfgate import schema as s
from perfgate.ab.latency import QUICK_ROUNDS
from perfgate.ab.rounds import read_rounds
from perfgate.gate import budget
from perfgate.latency import gross
from perfgate.latency.determine_gross import unchanged_rounds

LEVELS = (0.03, 0.05, 0.10)


def run_ab(output: Path, rounds: int, samples: int | None, delays: dict[str, int] | None = None,
           turn_samples: int | None = None, subexperiments: str | None = None) -> float:
    """samples None: `perfgate ab --quick` (its rounds, samples and warm-up)."""
    command = [sys.executable, "-m", "perfgate.cli", "ab", "--output", str(output), "--baseline", "system",
               "--candidate", "system", "--no-plots"]
    command += ["--quick"] if samples is None else ["--rounds", str(rounds), "--samples", str(samples)]
    if turn_samples is not None:
        command += ["--turn-samples", str(turn_samples)]
    if subexperiments:
        command += ["--subexperiments", subexperiments]
    if delays:
        command += ["--inject-delay-ns", ",".join(f"{sub}={d}" for sub, d in delays.items())]
    started = time.monotonic()
    completed = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if completed.returncode not in (s.EXIT_OK, s.EXIT_REGRESSION):
        sys.exit(f"bench: perfgate ab failed (exit {completed.returncode}):\n{completed.stderr}")
    (output / "bench_wall_s.txt").write_text(f"{elapsed:.1f}\n")
    return elapsed


def delays_for(level: float, *aa_dirs: Path) -> dict[str, int]:
    """D per sub-experiment: mean over payloads of log(1 + D/median) = log(1 + level), the medians those
    of the A/A runs' baseline arms, pooled over their rounds."""
    table = pd.concat([read_rounds(aa_dir).table for aa_dir in aa_dirs])
    baseline = table[table[v.ARM] == "baseline"].groupby([s.EXPERIMENT_TYPE, s.BYTES])[s.MEDIAN].median()
    delays = {}
    for sub, medians in baseline.groupby(level=0):
        m = medians.to_numpy(float) * 1000  # ns
        target = math.log1p(level)
        delays[sub] = int(round(optimize.brentq(lambda d: np.mean(np.log1p(d / m)) - target, 0, 10 * m.max())))
    return delays


def ratios_of(ab_dir: Path) -> pd.DataFrame:
    return v.log_ratios(read_rounds(ab_dir).table)


def wilcoxon_failed(ratios: pd.DataFrame, subs: list[str], threshold: float, alpha: float) -> set[str]:
    means, _ = v.usable_round_means(ratios)
    shift = math.log1p(threshold)
    names, p_values = [], []
    for sub in subs:
        for statistic in v.TESTED_STATISTICS:
            d = means.loc[(means[s.EXPERIMENT_TYPE] == sub) & (means[v.STATISTIC] == statistic), "d"].to_numpy(float)
            p_values.append(float(stats.wilcoxon(d - shift, alternative="greater").pvalue) if len(d) else 1.0)
            names.append(sub)
    return {name for name, p in zip(names, v.holm(p_values)) if p <= alpha}


def draw(pool: pd.DataFrame, rounds: int, rng: np.random.Generator, prefix: str) -> pd.DataFrame:
    """`rounds` rounds drawn with replacement from a pool of one sub-experiment's log ratios."""
    names = pool[v.ROUND].unique()
    chosen = rng.choice(names, size=rounds, replace=True)
    parts = [pool[pool[v.ROUND] == name].assign(**{v.ROUND: f"{prefix}{i:03d}"}) for i, name in enumerate(chosen)]
    return pd.concat(parts, ignore_index=True)


def resampled_rates(aa: pd.DataFrame, injected: pd.DataFrame | None, subs: list[str], rounds: int, trials: int,
                    seed: int, extra_shift: float = 0.0) -> tuple[float, float]:
    """(share of verdicts that fail as they should: a false alarm for A/A, the target caught otherwise),
    sign test then Wilcoxon. With injected None and extra_shift 0: A/A false alarms (any failure);
    otherwise the target sub-experiment (rotating) is drawn from `injected` (or shifted A/A rounds)."""
    rng = np.random.default_rng(seed)
    hits_sign = hits_wilcoxon = 0
    for trial in range(trials):
        target = subs[trial % len(subs)] if (injected is not None or extra_shift) else None
        parts = []
        for sub in subs:
            source = injected if (sub == target and injected is not None) else aa
            part = draw(source[source[s.EXPERIMENT_TYPE] == sub], rounds, rng, "r")
            if sub == target and injected is None:
                part = part.assign(log_ratio=part["log_ratio"] + extra_shift)
            parts.append(part)
        ratios = pd.concat(parts, ignore_index=True)
        failed = set(v.decide(ratios, order=subs).failed[s.EXPERIMENT_TYPE])
        failed_w = wilcoxon_failed(ratios, subs, v.DEFAULT_THRESHOLD, v.DEFAULT_ALPHA)
        if target is None:
            hits_sign += bool(failed)
            hits_wilcoxon += bool(failed_w)
        else:
            hits_sign += target in failed
            hits_wilcoxon += target in failed_w
    return hits_sign / trials, hits_wilcoxon / trials


# --- curtailed rounds beside all rounds --------------------------------------------------------------------
def synthetic_values(rng: np.random.Generator, subs: list[str], rounds: int, shifts: dict[str, float],
                     state_sd: float = 0.025, bad_share: float = 0.04) -> curtail.Tests:
    """Per test, d of every round: each arm's run in a state (lognormal, sd `state_sd`; with
    `bad_share` a bad one x1.3-1.8), the Median and 90 % of one run sharing it, plus the regression."""
    def states() -> np.ndarray:
        state = rng.normal(0, state_sd, rounds)
        bad = rng.random(rounds) < bad_share
        return state + np.where(bad, np.log(rng.uniform(1.3, 1.8, rounds)), 0.0)

    values = {}
    for sub in subs:
        d = states() - states() + math.log1p(shifts.get(sub, 0.0))
        for statistic in v.TESTED_STATISTICS:
            values[(sub, statistic)] = (np.arange(rounds, dtype=float), d + rng.normal(0, 0.003, rounds))
    return values


def holm_statuses(values: curtail.Tests, used: dict[str, int], alpha: float, shift: float) -> dict:
    """Per test, failed or not: the verdict's sign test on the rounds each test used, Holm over all."""
    keys = list(values)
    p_values = [v.sign_test_p(values[key][1][values[key][0] < used[key[0]]], shift) for key in keys]
    return {key: p <= alpha for key, p in zip(keys, v.holm(p_values))}


def curtailing_row(name: str, all_values: list[curtail.Tests], subs: list[str], rounds: int,
                   target: str | None) -> str:
    alpha, shift = v.DEFAULT_ALPHA, math.log1p(v.DEFAULT_THRESHOLD)
    equal = caught_full = caught_cut = 0
    measured, ends = [], []
    everything = {sub: rounds for sub in subs}
    for values in all_values:
        used = curtail.replay(values, subs, rounds, shift, alpha)
        full, cut = holm_statuses(values, everything, alpha, shift), holm_statuses(values, used, alpha, shift)
        equal += full == cut
        hit = (lambda st: any(st.values())) if target is None else (lambda st: st[(target, s.MEDIAN)] or st[(target, s.P90)])
        caught_full += hit(full)
        caught_cut += hit(cut)
        measured.append(sum(used.values()) / (rounds * len(subs)))
        ends.append(max(used.values()))
    n = len(all_values)
    what = "failed" if target is None else "caught"
    return (f"{name:<28} {n:>5} {caught_full:>6} {caught_cut:>6} {what:>7} {equal:>4} of {n:<5} "
            f"{np.mean(measured):>8.0%} {np.median(ends):>6.0f} of {rounds}")


def print_curtailing(subs: list[str], rounds: int, sets: int, seed: int,
                     stored: dict[str, curtail.Tests] | None = None) -> None:
    print(f"\n== curtailed rounds beside all rounds ({rounds} rounds, {len(subs)} sub-experiments, Holm over "
          f"{2 * len(subs)} tests at {v.DEFAULT_ALPHA}, threshold +{v.DEFAULT_THRESHOLD:.0%}) ==")
    print(f"{'rounds':<28} {'sets':>5} {'all':>6} {'curt.':>6} {'':>7} {'equal decisions':<13} "
          f"{'measured':>8} {'ends after (median)':>10}")
    for name, values in (stored or {}).items():
        names = sorted({key[0] for key in values})
        print(curtailing_row(f"stored: {name}", [values], names, int(max(len(x[1]) for x in values.values())), None))
    rng = np.random.default_rng(seed)
    scenarios = [("synthetic A/A", {}, None)] + [
        (f"synthetic +{level:.0%} on one", {subs[i % len(subs)]: level for i in [0]}, subs[0])
        for level in (0.03, 0.05, 0.10)] + [("synthetic +5% on all", {sub: 0.05 for sub in subs}, None)]
    for name, shifts, target in scenarios:
        row = curtailing_row(name, [synthetic_values(rng, subs, rounds, shifts) for _ in range(sets)], subs, rounds,
                             target)
        print(row)
    print("'measured': the share of sub-experiment rounds a curtailed A/B measures (its time, roughly); "
          "'equal decisions': sets where every test's decision is the full one's")


def stored_values(folder: Path) -> curtail.Tests:
    rounds = read_rounds(folder)
    means, _ = v.usable_round_means(v.log_ratios(rounds.table))
    return curtail.test_values(means, rounds.round_names, rounds.subexperiments, v.TESTED_STATISTICS)


def print_gross_budget(stored: list[Path], requirements: Path, gates: int, unchanged_candidates: list[Path]) -> None:
    """Item 7 of the docstring: the budget split, then what the data says of the gross checks' share."""
    print(f"== the whole gate's false-alarm budget: {budget.WHOLE_GATE:.1%} = A/B verdicts {budget.AB_VERDICTS:.1%} "
          f"(latency {budget.ab_levels(True)[0]:.1%} + throughput {budget.ab_levels(True)[1]:.1%} when both run) "
          f"+ gross requirement checks {budget.GROSS_CHECKS:.1%} ==")
    margins = gross.read_gross_margins(s.gross_margins_json(requirements)).margins
    required = files.read_requirements(requirements)
    print("gross margins: " + ", ".join(f"{m} +{margins[m]:.0%}" for m in s.CHECKED_MAGNITUDES))
    real = []  # each unchanged arm of each stored folder: one real unchanged gate, pooled as the gate pools
    for folder in stored:
        for arm in s.AB_ARMS if folder in unchanged_candidates else s.AB_ARMS[:1]:
            rounds, _ = unchanged_rounds([folder], (arm,))
            ratios = gross.worst_ratios({sub: gross.pooled_statistics(r) for sub, r in rounds.items()
                                         if sub in set(required[s.EXPERIMENT_TYPE])}, required)
            real.append((f"{folder.name}/{arm}", ratios))
    missed = 0
    for name, ratios in real:
        gross_miss = any(ratios[m] > 1 + margins[m] for m in s.CHECKED_MAGNITUDES)
        missed += gross_miss
        print(f"  real unchanged gate {name:<28} worst value/requirement " + ", ".join(
            f"{m} {ratios[m]:.2f}" for m in s.CHECKED_MAGNITUDES) + (" GROSS MISS" if gross_miss else ": no gross miss"))
    n = len(real)
    print(f"real unchanged gates: {missed} of {n} miss grossly; if all {n} are clean, 1/(n+1) = {1 / (n + 1):.1%}, "
          f"exact one-sided 95 % upper bound {1 - 0.05 ** (1 / n):.1%}")
    rounds, _ = unchanged_rounds(stored, s.AB_ARMS[:1])
    rounds = {sub: r for sub, r in rounds.items() if sub in set(required[s.EXPERIMENT_TYPE])}
    for size in (100, 1000, 16000):
        ratios = gross.simulated_gates(rounds, required, pooled_samples=size, gates=gates, seed=28)
        figures = gross.false_alarm_figures(ratios, margins, n)
        print(f"  resampled unchanged gates, {size} pooled samples: gross misses {figures['simulated_false_alarm_fraction']:.1%} "
              f"of {gates} (misses of the requirement itself: {figures['simulated_fraction_over_requirement']:.1%})")
    print(f"a direct measurement of <= {budget.GROSS_CHECKS:.1%} at 95 % confidence needs "
          f"{math.ceil(math.log(0.05) / math.log(1 - budget.GROSS_CHECKS))} consecutive clean gates")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=None, help="where the runs are (required unless --curtailing-only)")
    parser.add_argument("--curtailing-only", action="store_true",
                        help="print curtailed beside all rounds on synthetic rounds (and --stored A/B folders); measure nothing")
    parser.add_argument("--stored", type=Path, nargs="*", default=[], help="A/B folders to replay with --curtailing-only")
    parser.add_argument("--sets", type=int, default=500, help="synthetic sets per scenario (--curtailing-only)")
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--aa-runs", type=int, default=2)
    parser.add_argument("--levels", default=",".join(str(x) for x in LEVELS), help="relative regressions, e.g. 0.03,0.05")
    parser.add_argument("--resamples", type=int, default=300)
    parser.add_argument("--reuse", action="store_true", help="use the runs already in --output, measure nothing")
    parser.add_argument("--turn-samples", type=int, default=None,
                        help="passed to perfgate ab (default: its own; 0 = the arms' runs one after the other)")
    parser.add_argument("--subexperiments", default=None,
                        help="passed to perfgate ab (default: the ten); the Holm family is then this set")
    parser.add_argument("--quick", action="store_true",
                        help="measure `perfgate ab --quick` (its rounds, samples and warm-up) instead")
    parser.add_argument("--gross-only", action="store_true",
                        help="print the gate's false-alarm budget and the gross checks' share from --stored A/B folders")
    parser.add_argument("--requirements", type=Path, default=Path("requirements/vm-2core-x64.csv"),
                        help="with --gross-only: the requirements whose <stem>_gross.json is estimated")
    parser.add_argument("--unchanged-candidates", type=Path, nargs="*", default=[],
                        help="with --gross-only: stored A/A folders whose candidate arm is unchanged too")
    options = parser.parse_args()
    if options.gross_only:
        print_gross_budget(options.stored, options.requirements, options.sets if options.sets != 500 else 200,
                           options.unchanged_candidates)
        return 0
    if options.quick:
        options.rounds, options.samples = QUICK_ROUNDS, None
    if options.curtailing_only:
        subs = list(s.DEFAULT_SUBEXPERIMENT_NAMES)
        print_curtailing(subs, options.rounds, options.sets, seed=28,
                         stored={f'{folder.parent.name}/{folder.name}': stored_values(folder) for folder in options.stored})
        return 0
    if options.output is None:
        parser.error("--output is required (unless --curtailing-only)")
    levels = [float(x) for x in options.levels.split(",")]
    out = options.output
    out.mkdir(parents=True, exist_ok=True)

    aa_dirs = [out / f"aa-{i + 1}" for i in range(options.aa_runs)]
    for folder in aa_dirs:
        if not options.reuse and not folder.exists():
            print(f"bench: A/A run {folder.name} ...", flush=True)
            run_ab(folder, options.rounds, options.samples, turn_samples=options.turn_samples,
                   subexperiments=options.subexperiments)
    level_dirs = {}
    for level in levels:
        folder = out / f"inject-{round(level * 100)}pct"
        level_dirs[level] = folder
        if not options.reuse and not folder.exists():
            delays = delays_for(level, aa_dirs[0])
            print(f"bench: injected +{level:.0%}: {delays} ns ...", flush=True)
            run_ab(folder, options.rounds, options.samples, delays, turn_samples=options.turn_samples,
                   subexperiments=options.subexperiments)

    print("\n== runs (load = 1-minute load average before / after) ==")
    for folder in aa_dirs + list(level_dirs.values()):
        meta = files.read_metadata(folder) or {}
        record = files.read_json_object(folder / s.VERDICT_JSON, "verdict") or {}
        wall = (folder / "bench_wall_s.txt").read_text().strip() if (folder / "bench_wall_s.txt").exists() else "?"
        load = meta.get("load_average") or {}
        print(f"{folder.name:>16}: {record.get('status')}, {len(record.get('rounds', []))} rounds x "
              f"{meta.get('samples')} samples, turns of {meta.get('turn_samples', 0)}, "
              f"pinned {meta.get('cpu_pinning', {}).get('pinned')}, wall {wall} s, "
              f"load {load.get('before', ['?'])[0]} / {load.get('after', ['?'])[0]}")

    aa_failed = sum(bool((files.read_json_object(f / s.VERDICT_JSON, "verdict") or {}).get("failed")) for f in aa_dirs)
    low, high = clopper_pearson(aa_failed, len(aa_dirs))
    print(f"\nA/A whole-verdict false alarms (real runs): {aa_failed} of {len(aa_dirs)} "
          f"(95 % interval {low:.0%}-{high:.0%}; target <= 2 %)")

    aa_ratios = pd.concat([ratios_of(f).assign(**{v.ROUND: lambda x, n=f.name: n + "/" + x[v.ROUND]})
                           for f in aa_dirs], ignore_index=True)
    subs = list(dict.fromkeys(aa_ratios[s.EXPERIMENT_TYPE]))
    means, _ = v.usable_round_means(aa_ratios)
    spread = means[means[v.STATISTIC] == s.MEDIAN].groupby(s.EXPERIMENT_TYPE)["d"].agg(
        lambda d: float(np.median(np.abs(d - np.median(d))) * 1.4826))
    print("\nA/A spread of d (Median, robust sd of the per-round mean log ratio), per sub-experiment:")
    for sub in subs:
        print(f"  {sub:<40} {spread[sub]:.4f}")

    print(f"\n== power on one regressed sub-experiment (real rounds; {options.rounds} rounds, Holm over "
          f"{2 * len(subs)} tests at {v.DEFAULT_ALPHA}, threshold +{v.DEFAULT_THRESHOLD:.0%}) ==")
    print(f"{'level':>6} {'real: caught':>14} {'resampled sign':>15} {'resampled Wilcoxon':>19}")
    for level, folder in level_dirs.items():
        injected = ratios_of(folder)
        caught = 0
        for sub in subs:
            mixed = pd.concat([injected[injected[s.EXPERIMENT_TYPE] == sub],
                               ratios_of(aa_dirs[0]).query(f"`{s.EXPERIMENT_TYPE}` != @sub")], ignore_index=True)
            caught += sub in set(v.decide(mixed, order=subs).failed[s.EXPERIMENT_TYPE])
        sign, wilcoxon = resampled_rates(aa_ratios, injected, subs, options.rounds, options.resamples, seed=1)
        print(f"{level:>6.0%} {caught:>8} of {len(subs):<3} {sign:>15.1%} {wilcoxon:>19.1%}")
    sign, wilcoxon = resampled_rates(aa_ratios, None, subs, options.rounds, options.resamples, seed=2)
    print(f"{'A/A':>6} {'-':>14} {sign:>15.1%} {wilcoxon:>19.1%}   <- false alarms of whole verdicts")
    print("\nsmallest change detected with 95 % power (A/A rounds shifted by a known ratio, resampled):")
    for change in (0.01, 0.02, 0.03, 0.05, 0.10, 0.20):
        sign, wilcoxon = resampled_rates(aa_ratios, None, subs, options.rounds, options.resamples, seed=3,
                                         extra_shift=math.log1p(change))
        print(f"  +{change:.0%}: sign {sign:.1%}, Wilcoxon {wilcoxon:.1%}")
    print_curtailing(subs, options.rounds, options.resamples, seed=28,
                     stored={folder.name: stored_values(folder) for folder in aa_dirs + list(level_dirs.values())})
    return 0


if __name__ == "__main__":
    sys.exit(main())
