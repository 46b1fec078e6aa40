"""The two readings every metadata file takes: the time in UTC and the machine's load."""
from __future__ import annotations

import datetime as dt
import os


def utc_now() -> str:
    """ISO 8601 in UTC with microseconds: two sub-experiments started within a second stay ordered."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def load_average() -> list[float]:
    """The 1-, 5- and 15-minute load averages, as metadata records them."""
    return [round(value, 2) for value in os.getloadavg()]
