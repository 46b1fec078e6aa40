"""The bisect of each event, for the history page and events.md: read from
<plots>/bisect/<good 12>-<bad 12>/bisect.json (history.bisect_plan.folder_name), which
`perfgate bisect-events` wrote after an earlier history.

bisect.json sits in a published folder that anyone who can write the store's branch can change, so
it is validated (a JSON object of at most MAX_BYTES, not nested deeper than the parser's recursion, a
known status, a culprit of 40 hex digits when one was found):
anything else is refused with one line naming the file. The link is a relative path built only from
hex digits and fixed names.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import schema as s
from ..bisect import names as bisect_names
from ..bisect import search
from ..errors import InputError
from . import bisect_plan
from . import names as event_names

FULL_SHA = re.compile(r"[0-9a-f]{40}")
# A bisect.json holds a few dozen steps (some KiB); the cap keeps a crafted one from taking the memory
# parsed JSON takes (several times its text) before it is refused.
MAX_BYTES = 16 << 20


@dataclass(frozen=True)
class BisectLink:
    href: str  # relative to the plots folder: bisect/<folder>/report.html
    status: str  # search.FOUND, NOT_REGRESSED or UNDECIDED
    culprit: str | None  # its short sha when found

    @property
    def markdown_href(self) -> str:
        return self.href[:-len(s.REPORT_HTML)] + s.REPORT_MARKDOWN

    @property
    def text(self) -> str:
        return f"culprit {self.culprit}" if self.culprit else self.status


def read_bisect(path: Path, href: str) -> BisectLink:
    """The link to one bisect from its bisect.json; InputError naming the file when it is not one."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise ValueError(f"over {MAX_BYTES} bytes, more than any bisect writes")
        data = json.loads(data.decode("utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"cannot read the bisect's result: {str(error)[:200]}", path) from None
    except RecursionError:  # [[[[...]]]] 100000 deep: the parser's recursion ends, not a traceback
        raise InputError("cannot read the bisect's result: arrays or objects nested too deep", path) from None
    status = data.get("status") if isinstance(data, dict) else None
    if status not in (search.FOUND, search.NOT_REGRESSED, search.UNDECIDED):
        raise InputError(f"the bisect's result has no known status (found {str(status)[:60]!r})", path)
    culprit = data.get("culprit")
    sha = culprit.get("sha") if isinstance(culprit, dict) else None
    if status == search.FOUND and not (isinstance(sha, str) and FULL_SHA.fullmatch(sha)):
        raise InputError(f"the bisect found a culprit but its sha {str(sha)[:60]!r} is not 40 hex digits", path)
    return BisectLink(href, status, sha[:10] if status == search.FOUND else None)


def links(plots: Path, events: pd.DataFrame | None) -> dict[int, BisectLink]:
    """Row position in `events` -> its bisect, for the events that were bisected."""
    found: dict[int, BisectLink] = {}
    if events is None:
        return found
    for position, (_, row) in enumerate(events.iterrows()):
        pair = bisect_plan.event_pair(row)
        if pair is None:
            continue
        folder = bisect_plan.folder_name(*pair)
        result = plots / event_names.BISECTS_DIR / folder / bisect_names.BISECT_JSON
        if result.is_file():
            found[position] = read_bisect(result, f"{event_names.BISECTS_DIR}/{folder}/{s.REPORT_HTML}")
    return found
