"""Which stored baselines a history draws as reference lines: the platform's, and release baselines.

`baselines/<platform>/` is the platform's baseline (`perfgate promote-baseline`); release baselines
are kept beside it as `baselines/<platform>-<release>/` (docs/history.md). The nightly history and
the gate's redraw after each run take the same folders, so their plots match. A baseline measured
on another machine is left out with a note: history refuses to draw data of two platforms together,
and one stale folder must not cost the gate its history.
"""
from __future__ import annotations

from pathlib import Path

from .. import schema as s
from ..model import read_metadata


def beside(baseline: Path) -> list[Path]:
    """`baseline` and the release baselines beside it (`<name>-*`, sorted), those holding metadata.json."""
    candidates = [baseline, *sorted(baseline.parent.glob(f"{baseline.name}-*"))]
    return [folder for folder in candidates if (folder / s.METADATA_FILE).is_file()]


def recorded_platform(folder: Path) -> str | None:
    metadata = read_metadata(folder)
    return metadata.platform.id if metadata is not None and metadata.platform is not None else None


def history_baselines(baseline: Path, platform_id: str | None) -> tuple[list[Path], list[str]]:
    """The baselines to draw beside a history of `platform_id` (None: the run recorded none), and a note
    for each one left out because it was measured on another platform."""
    kept, notes = [], []
    for folder in beside(Path(baseline)):
        recorded = recorded_platform(folder)
        if platform_id is not None and recorded is not None and recorded != platform_id:
            notes.append(f"baseline {folder} was measured on platform id {recorded}, this run on {platform_id}: "
                         "not drawn in the history")
        else:
            kept.append(folder)
    return kept, notes
