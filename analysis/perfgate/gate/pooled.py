"""gate.pooled: with a baseline build, the gate's experiment folder is the A/B's candidate arm pooled
(issue 28 item 6): no separate long run.

Every round's candidate measurements of a sub-experiment (`<output>/ab/rounds/<NN>/candidate/
measurements_<sub>.csv`) are joined per payload, in round order, into `<output>/measurements_<sub>.csv`
(sample numbers renumbered so that they increase), with a metadata.json whose Fast DDS, platform,
harness and pinning are the candidate arm's, and which asks for every gated sub-experiment and
payload. A round whose candidate run did not finish is left out (the A/B does not count it either);
a curtailed sub-experiment pools the rounds it measured. A sub-experiment with no candidate samples
at all is recorded as failed in metadata.json, so the check lists its requirements as missing data
(exit 3): a missing result is never a pass.
"""
from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from .. import files
from .. import schema as s
from ..ab.rounds import round_folders
from ..model import Metadata, SubexperimentOutcome, read_metadata, write_metadata

CANDIDATE = s.AB_ARMS[1]
NO_SAMPLES = "the A/B measured no candidate samples of it (no round's candidate run finished)"


def candidate_runs(ab_dir: Path, sub: str) -> list[Path]:
    """The raw files of the rounds in which the candidate's run of `sub` finished, in round order."""
    runs = []
    for folder in round_folders(ab_dir):
        arm = folder / CANDIDATE
        raw = arm / s.raw_csv_name(sub)
        metadata = read_metadata(arm) if (arm / s.METADATA_FILE).is_file() else None
        outcome = metadata.outcome_of(sub) if metadata is not None else None
        if raw.is_file() and (outcome is None or outcome.status == s.OUTCOME_OK):
            runs.append(raw)
    return runs


def rounds_load(ab_dir: Path) -> list[float] | None:
    """[lowest, highest] 1-minute load average any arm of any round recorded before or after it: the
    pooled experiment's page said only the first round's, while the load had risen from 1.7 to 50."""
    loads = []
    for folder in round_folders(ab_dir):
        for arm in s.AB_ARMS:
            metadata = read_metadata(folder / arm) if (folder / arm / s.METADATA_FILE).is_file() else None
            load = metadata.load_average if metadata is not None else None
            loads += [values[0] for values in ((load.before, load.after) if load else ()) if values]
    return [min(loads), max(loads)] if loads else None


def pool_raw(paths: list[Path]) -> pd.DataFrame:
    """The runs' samples per payload, payload blocks in first-seen order, samples numbered anew."""
    raw = pd.concat([files.read_raw(path) for path in paths], ignore_index=True)
    order = {payload: position for position, payload in enumerate(dict.fromkeys(raw[s.PAYLOAD]))}
    raw = raw.assign(_block=raw[s.PAYLOAD].map(order)).sort_values("_block", kind="stable").drop(columns="_block")
    raw[s.SAMPLE] = raw.groupby(s.PAYLOAD).cumcount()
    return raw.loc[:, list(s.RAW_COLUMNS)].reset_index(drop=True)


def pool_candidate(ab_dir: Path, output: Path, subexperiments: list[str], payloads: list[int],
                   label: str) -> dict[str, int]:
    """Write the pooled experiment folder; per sub-experiment the rounds pooled (0: none)."""
    output.mkdir(parents=True, exist_ok=True)
    pooled, outcomes, template = {}, {}, None
    for sub in subexperiments:
        runs = candidate_runs(ab_dir, sub)
        pooled[sub] = len(runs)
        if not runs:
            outcomes[sub] = SubexperimentOutcome.record(outcome=s.OUTCOME_INCOMPLETE, error=NO_SAMPLES)
            continue
        if template is None:
            template = read_metadata(runs[0].parent)
        files.write_csv(output / s.raw_csv_name(sub), pool_raw(runs))
        outcomes[sub] = SubexperimentOutcome.record(outcome=s.OUTCOME_OK, error=None)
    ab_metadata = read_metadata(ab_dir)
    base = template or Metadata()
    record = dataclasses.replace(
        base, label=label, kind=None, samples=None, payloads=tuple(payloads),
        # the A/B's whole span (its start and end), not the first round's
        load_average=(ab_metadata.load_average if ab_metadata is not None and ab_metadata.load_average is not None
                      else base.load_average),
        requested_subexperiments=tuple(subexperiments), subexperiments=outcomes,
        created_utc=(ab_metadata.created_utc if ab_metadata is not None else None) or base.created_utc,
        finished_utc=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        extra={**base.extra, "pooled_from_ab": {"ab_directory": s.AB_DIR, "arm": CANDIDATE,
                                                "rounds_pooled": pooled, "rounds_load": rounds_load(ab_dir)}})
    write_metadata(output, record)
    return pooled
