"""latency.determine_gross: `perfgate determine-gross-margins`, the gross margins of a platform's
requirements (latency.gross) from the unchanged arms of stored A/B folders, written with their
provenance to requirements/<platform>_gross.json (docs/formats.md section 5b).

An A/B folder's baseline arm is an unchanged run of one Fast DDS in every round; with --unchanged-candidates
(A/A folders only) the candidate arms count too. Every sub-experiment the requirements cover is
read from every round that measured it; the simulated gates pool --pooled-samples per payload (the
quick A/B pools 10 x 100, the full one 16 x 1000), and the margin of a statistic is the largest any
pooled size needs.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from .. import files, outputs
from .. import schema as s
from ..errors import InputError
from ..escape.workflow import log_text
from ..model import read_metadata
from . import gross, process

DEFAULT_POOLED_SAMPLES = (100, 10 * 100, 16 * 1000)  # one quick round (curtailed early), the quick and the full A/B
DEFAULT_GATES = 200
DEFAULT_SEED = 28


def _round_folders(ab_dir: Path) -> list[Path]:
    """<ab dir>/rounds/<NN>/ in their names' order (ab.rounds reads them the same way; not imported,
    since latency is below ab)."""
    rounds_dir = Path(ab_dir) / s.AB_ROUNDS_DIR
    if not rounds_dir.is_dir():
        raise InputError(f"not an A/B folder: it has no {s.AB_ROUNDS_DIR}/ folder", ab_dir)
    return sorted((p for p in rounds_dir.iterdir() if p.is_dir() and not p.name.startswith(".")),
                  key=lambda p: (len(p.name), p.name))


def _arm_summaries(arm_dir: Path) -> dict[str, pd.DataFrame]:
    """The arm's summaries by sub-experiment (raw files without one summarised, not written)."""
    summaries = {sub: files.read_summary(path) for sub, path in files.summary_files(arm_dir, required=False).items()}
    for sub, raw_path in files.raw_files(arm_dir).items():
        summaries.setdefault(sub, process.summarise(files.read_raw(raw_path)))
    return summaries


def unchanged_rounds(ab_dirs: list[Path], arms: tuple[str, ...]) -> tuple[dict[str, list[pd.DataFrame]], list[dict]]:
    """Per sub-experiment the summaries of every unchanged arm's round, and what each folder gave."""
    rounds: dict[str, list[pd.DataFrame]] = {}
    sources = []
    for ab_dir in ab_dirs:
        metadata = read_metadata(ab_dir)
        count = 0
        for folder in _round_folders(ab_dir):
            for arm in arms:
                if (folder / arm).is_dir():
                    for sub, summary in _arm_summaries(folder / arm).items():
                        rounds.setdefault(sub, []).append(summary)
                        count += 1
        arm_record = (metadata.arms or {}).get(s.AB_ARMS[0]) if metadata is not None else None
        fastdds = arm_record.fastdds if arm_record is not None else None
        # the machine it measured on: a gate elsewhere says its margins are another machine's (gate.platform_files)
        platform = metadata.platform if metadata is not None else None
        sources.append({"ab_directory": str(ab_dir), "arms": list(arms), "round_summaries": count,
                        "fastdds_version": getattr(fastdds, "version", None),
                        "platform": platform.to_json() if platform is not None else None})
        if not count:
            raise InputError(f"no round of the {' or '.join(arms)} arm has summaries", ab_dir)
    return rounds, sources


def command_determine_gross_margins(ab_directory: list[str], requirements: str, output_file: str,
                                    pooled_samples: list[int] | None = None, gates: int = DEFAULT_GATES,
                                    seed: int = DEFAULT_SEED, unchanged_candidates: bool = False) -> int:
    outputs.require_paths(requirements=requirements, output_file=output_file)
    required = files.read_requirements(Path(requirements))
    arms = s.AB_ARMS if unchanged_candidates else s.AB_ARMS[:1]
    rounds, sources = unchanged_rounds([Path(d) for d in ab_directory], arms)
    covered = set(required[s.EXPERIMENT_TYPE])
    rounds = {sub: summaries for sub, summaries in rounds.items() if sub in covered}
    if not rounds:
        raise InputError("the A/B folders measured no sub-experiment the requirements cover", Path(requirements))
    per_size, margins = {}, {m: 0.0 for m in s.CHECKED_MAGNITUDES}
    for size in pooled_samples or DEFAULT_POOLED_SAMPLES:
        ratios = gross.simulated_gates(rounds, required, pooled_samples=size, gates=gates, seed=seed)
        derived = gross.derive_margins(ratios)
        margins = {m: max(margins[m], derived[m]) for m in s.CHECKED_MAGNITUDES}
        per_size[str(size)] = {"worst_ratio_max": {m: round(float(ratios[m].max()), 4) for m in s.CHECKED_MAGNITUDES},
                               "worst_ratio_median": {m: round(float(ratios[m].median()), 4)
                                                      for m in s.CHECKED_MAGNITUDES},
                               "margins": derived, "ratios": ratios}
    independent = len(ab_directory) * len(arms)  # each arm of each folder is one unchanged gate's data
    for record in per_size.values():
        record["false_alarms"] = gross.false_alarm_figures(record.pop("ratios"), margins, independent)
    record = {
        "requirements_file": Path(requirements).name,
        "derived_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "margins": margins,
        "definition": (f"a check misses grossly when its value is above requirement x (1 + margin); margin = "
                       f"{gross.HEADROOM:g} x the worst value / requirement of simulated unchanged gates - 1"),
        "method": {"headroom": gross.HEADROOM, "gates": gates, "seed": seed,
                   "subexperiments": sorted(rounds), "rounds_per_subexperiment": {k: len(v) for k, v in rounds.items()},
                   "pooled_samples": per_size},
        "sources": sources,
    }
    output = Path(output_file)
    outputs.require_writable(output, "gross margins file")
    with outputs.write_errors_as_input_errors():
        files.write_text(output, json.dumps(record, indent=2, sort_keys=False) + "\n")
    shown = ", ".join(f"{m} +{margins[m] * 100:.0f} %" for m in s.CHECKED_MAGNITUDES)
    print(f"perfgate determine-gross-margins: {shown} over the requirements ({sum(map(len, rounds.values()))} "
          f"unchanged round summaries of {len(rounds)} sub-experiment(s)); written to {log_text(output)}")
    for size, figures in per_size.items():
        alarms = figures["false_alarms"]
        print(f"perfgate determine-gross-margins: {size} pooled samples: {alarms['simulated_false_alarm_fraction']:.1%} of "
              f"{alarms['simulated_gates']} simulated unchanged gates miss grossly "
              f"({alarms['simulated_fraction_over_requirement']:.1%} miss a requirement at all)")
    return s.EXIT_OK
