"""gate.failed_build: what `perfgate gate --workspace` writes when the workspace's build failed.

Apart from the rest of fastdds_build because it needs `run` (the output folder's rules), and `run`
reads build records: kept out of the modules `run` imports, there is no import cycle."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from .. import claims, files
from .. import schema as s
from ..clock import utc_now
from ..escape.markdown import text as markdown_text
from ..escape.workflow import command_data, log_text
from ..latency.junit import suite_properties
from ..measure.options import check_output_folder
from ..outcome import INCOMPLETE
from ..model import BuildFailure, Metadata, Platform, write_metadata
from ..measure.platform_info import this_machine
from ..fastdds.logs import code_block, code_span, printable
from ..fastdds.record import build_junit_xml, fastdds_metadata, record_path

def failed_build_metadata(record: dict, label: str, platform: Platform) -> Metadata:
    return Metadata.record(
        label=label,
        created_utc=utc_now(),
        fastdds=fastdds_metadata(record),
        latency_definition=s.ROUND_TRIP,
        subexperiments={},
        platform=platform,
        build_failed=BuildFailure.record(error=record.get("error"), failed_package=record.get("failed_package"),
                                         log=record.get("log")),
    )


def failed_build_markdown(record: dict) -> str:
    fastdds = record.get("fastdds") or {}
    return (f"## perfgate: {INCOMPLETE}: the Fast DDS build failed\n\n"
            f"Fast DDS {markdown_text(fastdds.get('version') or '')} commit {code_span(fastdds.get('commit') or 'unknown')}: "
            f"{markdown_text(record.get('error'))}. Nothing was measured.\n\n"
            f"Last lines of {code_span(str(record.get('log')))}:\n\n"
            # printable again: a record written by an older perfgate may hold a raw tail
            + code_block(printable(record.get('log_tail') or '')))


def gate_failed_build(record: dict, *, output: str, label: str | None, summary_markdown: str | None) -> int:
    """What `perfgate gate --workspace` does when the build failed: metadata.json, junit.xml with the
    error testcase "build", report.md (and the step summary), exit 3."""
    output_dir = Path(output)
    check_output_folder(output_dir)
    # claimed like every gate's output: of two commands into one --output, one is exit 2 (claims)
    with claims.claimed(output_dir):
        metadata = failed_build_metadata(record, label or output_dir.resolve().name, this_machine())
        write_metadata(output_dir, metadata)
        files.write_text(output_dir / s.JUNIT_FILE, build_junit_xml(record, suite_properties(metadata)))
        markdown = failed_build_markdown(record)
        files.write_text(output_dir / s.REPORT_MARKDOWN, markdown)
        if summary_markdown:
            with open(summary_markdown, "a", encoding="utf-8") as summary:
                summary.write(markdown)
        if os.environ.get("GITHUB_ACTIONS") == "true":
            print(f"::error title=Fast DDS build failed::{command_data(record.get('error'))}")
        # git's and colcon's messages have several lines: each its own console line, not one with "\\n" in it
        first, *more = str(record.get("error") or "").splitlines() or [""]
        print(f"perfgate gate: error: {log_text(record_path(Path(record['workspace'])))}: {log_text(first)}", file=sys.stderr)
        for line in more:
            print(f"perfgate gate:   {log_text(line)}", file=sys.stderr)
        print(f"perfgate gate: {INCOMPLETE}: the Fast DDS build failed; nothing was measured")
    return s.EXIT_INCOMPLETE
