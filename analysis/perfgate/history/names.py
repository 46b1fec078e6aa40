"""The names of the history's events table (events.csv: one row per moment a sub-experiment moved;
history.events; docs/formats.md section 9): its file and columns, here once, beside the room that
writes them (schema.py holds the names every room shares)."""
from __future__ import annotations

from .. import schema as s

EVENTS_CSV, EVENT_INDEX, EVENT_COMMIT, EVENT_PREVIOUS_COMMIT = "events.csv", "Index", "Fast DDS commit", "Previous commit"
EVENT_CHANGE, EVENT_LOWER_BOUND, EVENT_P_VALUE = "Change [%]", "Lower bound [%]", "p-value"
EVENT_PAYLOADS, EVENT_STATISTICS = "Payloads", "Statistics"  # what moved, space-separated
EVENT_BUILD_CHANGE = "Build options changed"  # empty, or where and how near it (history.build_options)
EVENT_COLUMNS = (s.EXPERIMENT_TYPE, EVENT_INDEX, s.LABEL, EVENT_COMMIT, EVENT_PREVIOUS_COMMIT, EVENT_CHANGE, EVENT_LOWER_BOUND,
                 EVENT_PAYLOADS, EVENT_STATISTICS, EVENT_P_VALUE, EVENT_BUILD_CHANGE)
# `perfgate bisect-events` writes one `perfgate bisect` folder per bisected event here, inside the plots
# folder (<plots>/bisect/<good 12>-<bad 12>/), so the page and events.md link it by a relative path
BISECTS_DIR = "bisect"
BISECT_FAILED_TXT = "failed.txt"  # in a bisect folder: why that bisect gave no answer (bisect-events)
