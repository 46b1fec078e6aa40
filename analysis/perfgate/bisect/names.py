"""The names of `perfgate bisect`'s files (docs/formats.md section 10), here once, beside the room that
writes them (schema.py holds the names every room shares)."""
from __future__ import annotations

BISECT_JSON, BISECT_STEPS_DIR, BISECT_CHART_PNG = "bisect.json", "steps", "bisect_change.png"  # perfgate bisect
