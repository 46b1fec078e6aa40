"""report.ab_baseline: the baseline build an A/B compared against, in one line, from its folder's
metadata.json (typed: a field of the wrong type is exit 2 naming it). The gate's pages and the
pull-request comment name it alike; the text is of unknown origin and escaped by whoever shows it."""
from __future__ import annotations

from pathlib import Path

from .. import schema as s
from ..model import read_metadata


def baseline_text(ab_dir: Path, alignments: dict[str, int] | None = None) -> str:
    """'Fast DDS 3.2.1, commit 0123456789ab, functions aligned to 64 bytes (ws/installs/baseline)' from
    the A/B's metadata.json and its verdict's `alignments` (arm -> --align-functions); when the candidate
    was built with another alignment, that too (the A/B then measures the alignment's own layout move)."""
    metadata = read_metadata(ab_dir)
    arm = (metadata.arms or {}).get(s.AB_ARMS[0]) if metadata is not None else None
    if arm is None:
        return "not recorded"
    fastdds = arm.fastdds
    version = fastdds.version if fastdds is not None and fastdds.version else "?"
    commit = fastdds.commit[:12] if fastdds is not None and fastdds.commit else "not recorded"
    alignments = alignments or {}
    baseline, candidate = (alignments.get(name, 0) for name in s.AB_ARMS)
    text = f"Fast DDS {version}, commit {commit}" + (f", functions aligned to {baseline} bytes" if baseline else "") \
        + f" ({arm.spec or '?'})"
    if s.AB_ARMS[1] in alignments and candidate != baseline:
        text += (f"; the candidate was built with --align-functions {candidate}: the A/B measures that alignment's "
                 "own layout move too")
    return text
