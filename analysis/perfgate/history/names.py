"""The names of the history's events table (events.csv: one row per moment a sub-experiment moved;
history.events; docs/formats.md section 9): its file and columns, here once, beside the room that
writes them (schema.py holds the names every room shares)."""
from __future__ import annotations

from .. import schema as s

EVENTS_CSV, EVENT_INDEX, EVENT_COMMIT, EVENT_PREVIOUS_COMMIT = "events.csv", "Index", "Fast DDS commit", "Previous commit"
EVENT_CHANGE, EVENT_LOWER_BOUND, EVENT_P_VALUE = "Change [%]", "Lower bound [%]", "p-value"
EVENT_PAYLOADS, EVENT_STATISTICS = "Payloads", "Statistics"  # what moved, space-separated
EVENT_BUILD_CHANGE = "Build options changed"  # empty, or where and how near it (history.build_options)
# where the step's first run may be, at about 95 % (history.events.position_range): its first and last run, and
# the commit range that vouches for it: the commit of the run before the range (the level was still the old
# one) and of the range's last run (it had moved): what bisect-events bisects
EVENT_FIRST_RUN, EVENT_LAST_RUN = "First run", "Last run"
EVENT_GOOD_COMMIT, EVENT_BAD_COMMIT = "Good commit", "Bad commit"
EVENT_DATE = "Date"  # when the event's run was measured (UTC, to the minute); empty when not recorded
EVENT_DATE_FORMAT = "%Y-%m-%d %H:%M"
EVENT_COLUMNS = (s.EXPERIMENT_TYPE, EVENT_INDEX, s.LABEL, EVENT_DATE, EVENT_COMMIT, EVENT_PREVIOUS_COMMIT, EVENT_CHANGE, EVENT_LOWER_BOUND,
                 EVENT_PAYLOADS, EVENT_STATISTICS, EVENT_P_VALUE, EVENT_BUILD_CHANGE, EVENT_FIRST_RUN, EVENT_LAST_RUN,
                 EVENT_GOOD_COMMIT, EVENT_BAD_COMMIT)
CREATED = "Created"  # the experiments table's column: UTC creation time of each run, None when not recorded
# `perfgate bisect-events` writes one `perfgate bisect` folder per bisected event here, inside the plots
# folder (<plots>/bisect/<good 12>-<bad 12>/), so the page and events.md link it by a relative path
BISECTS_DIR = "bisect"
BISECT_FAILED_TXT = "failed.txt"  # in a bisect folder: why that bisect gave no answer (bisect-events)


def p_text(value: float) -> str:
    """A p-value as a reader takes it in: two significant digits; one too small for a float to hold
    (scipy's exact tests give 0 below about 1e-308) is said to be so, not called zero."""
    return "< 1e-300" if value == 0 else f"{value:.2g}"
