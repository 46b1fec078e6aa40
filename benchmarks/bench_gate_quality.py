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
from perfgate.ab import verdict as v
from perfgate import schema as s
from perfgate.ab.latency import QUICK_ROUNDS
from perfgate.ab.rounds import read_rounds

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


def delays_for(level: float, aa_dir: Path) -> dict[str, int]:
    """D per sub-experiment: mean over payloads of log(1 + D/median) = log(1 + level)."""
    table = read_rounds(aa_dir).table
    baseline = table[table[v.ARM] == "baseline"].groupby([s.EXPERIMENT_TYPE, s.BYTES])[s.MEDIAN].median()
    delays = {}
    for sub, medians in baseline.groupby(level=0):
        m = medians.to_numpy(float) * 1000  # ns
        target = math.log1p(level)
        delays[sub] = int(round(optimize.brentq(lambda d: np.mean(np.log1p(d / m)) - target, 0, 10 * m.max())))
    return delays


def ratios_of(ab_dir: Path) -> pd.DataFrame:
    return v.log_ratios(read_rounds(ab_dir).table)


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    low = stats.beta.ppf(0.025, k, n - k + 1) if k else 0.0
    high = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(low), float(high)


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, required=True)
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
    options = parser.parse_args()
    if options.quick:
        options.rounds, options.samples = QUICK_ROUNDS, None
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
