"""A stored A/B round in which a best-effort payload lost a round trip replays at the A/B's own samples
(perfgate.ab.samples with measure.completeness), on the real stored rounds of tests/data/ab-samples."""
from __future__ import annotations

import gzip
import json
import shutil

import numpy as np
import pytest

import conftest
from perfgate import files
from perfgate import schema as s
from perfgate.ab import samples as sm
from perfgate.ab import verdict as v
from perfgate.errors import InputError

STORED = conftest.FASTDDS_FIXTURES.parent / "ab-samples"
BEST_EFFORT, RELIABLE = "intraprocess_best_effort", "interprocess_reliable_tcp_security"
SAMPLES = 100  # what the stored A/B measured per payload


def copy_losing_one(tmp_path, sub: str, reliability: str, *, record: bool = True):
    """The stored A/B with round 03's baseline run of `sub` one round trip short at 1024 B, and (when
    `record`) that arm's metadata.json saying it was lost, as `perfgate ab` writes it."""
    copy = tmp_path / "ab"
    shutil.copytree(STORED, copy)
    arm = copy / s.AB_ROUNDS_DIR / "03" / "baseline"
    path = arm / f"{s.raw_csv_name(sub)}.gz"
    raw = files.read_raw(path)
    at = raw.index[raw[s.PAYLOAD] == 1024][40]
    raw = raw.drop(index=at).reset_index(drop=True)
    with gzip.open(path, "wt") as out:
        raw.to_csv(out, index=False, float_format="%.17g")
    if record:
        counts = {str(p): int(n) for p, n in raw.groupby(s.PAYLOAD, sort=False).size().items()}
        (arm / s.METADATA_FILE).write_text(json.dumps({"samples": SAMPLES, "subexperiments": {sub: {
            "outcome": "ok", "error": None, "reliability": reliability, "measured_samples": counts,
            "lost_samples": {p: int(p == "1024") for p in counts}}}}))
    return copy, raw


def test_a_best_effort_round_that_lost_one_replays_at_the_ab_samples_over_its_rows(tmp_path):
    copy, raw = copy_losing_one(tmp_path, BEST_EFFORT, "best_effort")
    stored = sm.read_stored_ab(copy, [SAMPLES, 50])
    assert stored.held == SAMPLES and list(stored.tables) == [SAMPLES, 50]
    table = stored.tables[SAMPLES]
    row = table[(table[v.ROUND] == "03") & (table[v.ARM] == "baseline") & (table[s.EXPERIMENT_TYPE] == BEST_EFFORT)
                & (table[s.BYTES] == 1024)]
    kept = raw[raw[s.PAYLOAD] == 1024][s.LATENCY].to_numpy()
    assert len(kept) == SAMPLES - 1
    assert row[s.MEDIAN].item() == pytest.approx(np.median(kept), rel=1e-12)


@pytest.mark.parametrize("sub, reliability, record", [(RELIABLE, "reliable", True), (BEST_EFFORT, "best_effort", False)],
                         ids=["reliable", "best-effort-without-its-record"])
def test_a_round_one_short_without_a_best_effort_loss_holds_fewer(tmp_path, sub, reliability, record):
    copy, _ = copy_losing_one(tmp_path, sub, reliability, record=record)
    assert sm.read_stored_ab(copy, [SAMPLES - 1]).held == SAMPLES - 1
    with pytest.raises(InputError, match=f"its rounds hold {SAMPLES - 1} samples per payload"):
        sm.read_stored_ab(copy, [SAMPLES])
