"""Hostile text for the test_escape_* modules (issue 23): what a results branch, a pull request or a
Fast DDS source may carry into perfgate's logs, pages, reports, JUnit and CSV files, and a results
store whose every label, version and A/B carries some of it."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from perfgate import files
from perfgate import schema as s
from perfgate.latency import check
from conftest import metadata, tiny_summary, write_experiment
from history_synthetic import SUBS, write_store

FORGED = "x\n::warning title=FORGED::forged"
HOSTILE = (
    FORGED,
    "\r::error::forged by CR", "%0A::error::forged by %0A", "a\u2028::warning::forged by U+2028",
    "  ::add-mask::secret", "\t::notice::tab", "##[warning]forged the old way", "x\x85::error::NEL",
    "<!--<script>", "</script><script>document.title='owned'</script>", "<!--<script>x</script>--><script>",
    "]]><!-- ${alert(1)}", "[x](javascript:alert(1))", "![i](https://evil.example/p.png)", "@octocat please",
    "see https://evil.example", "www.evil.example", "<img src=x onerror=alert(1)>", "a|b\nc", "`code` *b* ~~s~~",
    '=HYPERLINK("https://evil.example","x")', "=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1:A2)", "\t=1",
    "\r=1", "\x01\x1b[31mred\uffff\ufffe", "lone \udc80 surrogate", "\ud83d half an emoji",
)
# control characters and non-characters XML 1.0 cannot hold, in a Fast DDS version string
BAD_VERSION = "3.6.2\x01\x0b\uffff\ufffe\udc80\n::error title=FORGED::version"


def hostile_label(position: int, step_at: int) -> str:
    """The label of the experiment at `position`: the first after the step is FORGED, so the history's
    REGRESSION lines name it."""
    return f"{HOSTILE[(position - step_at) % len(HOSTILE)]} #{position}"


def write_hostile_store(root: Path, runs: int = 30, step_at: int = 20) -> Path:
    """history_synthetic's store (SUBS[1] 8 % slower from `step_at`) with hostile labels and Fast DDS
    versions; returns the requirements file for `perfgate history`."""
    write_store(root / "store", runs, step_at)
    for position, folder in enumerate(sorted((root / "store" / s.STORE_EXPERIMENTS_DIR).iterdir())):
        path = folder / s.METADATA_FILE
        record = json.loads(path.read_text())
        record["label"] = hostile_label(position, step_at)
        record["fastdds"]["version"] = BAD_VERSION
        # json.dumps writes a lone surrogate as the escape "\udc80": read back, it is one again
        path.write_text(json.dumps(record))
    requirements = root / "requirements.csv"
    files.write_csv(requirements, pd.DataFrame([{s.EXPERIMENT_TYPE: sub, s.BYTES: 16, s.MEDIAN: 100.0, s.P99: 200.0,
                                                 s.MAX: 900.0} for sub in SUBS[:2]]))
    return requirements


def command_lines(text: str) -> list[str]:
    """The lines of a log GitHub would read as workflow commands: `::` after leading whitespace, or
    the older `##[` anywhere; split wherever any reader might (CR, LF, U+2028, NEL, ...: splitlines)."""
    return [line for line in text.splitlines() if line.lstrip().startswith("::") or "##[" in line]


def hostile_experiment(tmp_path, label: str):
    """A checked experiment (one failed check) whose label and Fast DDS version are hostile."""
    sub = "intraprocess_best_effort"
    meta = metadata(label, "2026-01-01T00:00:00Z")
    meta["fastdds"]["version"] = BAD_VERSION
    experiment = write_experiment(tmp_path / "e", {sub: tiny_summary({16: (10.0, 20.0, 30.0)})}, meta)
    requirements = tmp_path / "requirements [x](javascript:alert(1)) @octocat.csv"
    requirements.write_text(f"Experiment type,Bytes,Median,99%,Max\n{sub},16,5.000,100.000,100.000\n")
    assert check.command_check(requirements=str(requirements), experiment_directory=str(experiment),
                               plots_directory=str(experiment / s.PLOTS_DIR), print_summaries=False, junit=None,
                               no_plots=True) == s.EXIT_REGRESSION
    return experiment, requirements
