"""The failed-build gate's report.md keeps a log tail inside one code block, whatever backticks the
log holds (issue 14): CMake indents the lines of its error messages by two spaces, so a message
line "```" is, to CommonMark, a closing fence of a three-backtick block.

No Markdown parser is installed, so `fenced_blocks` applies CommonMark's rules for backtick fences
(spec 0.31, section 4.5): an opening fence is up to three spaces, then three or more backticks and an
info string without backticks; the block ends at the first line of up to three spaces, at least as
many backticks, and nothing but spaces or tabs, or at the end of the document."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import make_source
from perfgate import schema as s
from perfgate.fastdds import record as build_record
from perfgate.fastdds.logs import code_block, code_span

OPENING = re.compile(r"^ {0,3}(`{3,})[^`]*$")


def fenced_blocks(markdown: str) -> list[str]:
    """The contents of the backtick-fenced code blocks of `markdown`, in order."""
    blocks, lines, at = [], markdown.split("\n"), 0
    while at < len(lines):
        opening = OPENING.match(lines[at])
        at += 1
        if opening is None:
            continue
        closing = re.compile(rf"^ {{0,3}}`{{{len(opening.group(1))},}}[ \t]*$")
        start = at
        while at < len(lines) and not closing.match(lines[at]):
            at += 1
        blocks.append("\n".join(lines[start:at]))
        at += 1
    return blocks


def test_fenced_blocks_follows_commonmark_closing_fences():
    assert fenced_blocks("a\n```\nx\n  ```\ny\n```\n") == ["x", ""]  # "y" is outside: the block ended
    assert fenced_blocks("````\n```\n    ````\n````\n") == ["```\n    ````"]  # four spaces: code, not a fence


@pytest.mark.parametrize("text", ["", "plain", "```", "  ```\n````", "`a` ``b`` ```c```", "line\n`````\nline"])
def test_code_block_holds_any_text_as_one_block(text):
    assert fenced_blocks(f"before\n\n{code_block(text)}after\n") == [text]


def test_code_span_is_delimited_by_a_run_the_text_lacks():
    assert code_span("/ws/log/stdout_stderr.log") == "`/ws/log/stdout_stderr.log`"
    assert code_span("/a`b/log") == "``/a`b/log``"
    assert code_span("`x``") == "``` `x`` ```"


@pytest.mark.compiles
def test_a_failed_gate_report_keeps_a_log_tail_with_fences_in_one_block(tmp_path):
    source = make_source(tmp_path / "source")
    cmake = source / "CMakeLists.txt"
    cmake.write_text(cmake.read_text() + 'message(FATAL_ERROR "a log line of backticks:\\n```\\n````\\nstill the log")\n')
    workspace, output, summary = tmp_path / "ws", tmp_path / "gate", tmp_path / "summary.md"
    command = [sys.executable, "-m", "perfgate.cli"]
    build = subprocess.run([*command, "build", "--workspace", str(workspace), "--source", str(source)],
                           capture_output=True, text=True)
    assert build.returncode == s.EXIT_INCOMPLETE, build.stderr
    tail = build_record.read_record(workspace)["log_tail"]
    assert "\n  ```\n" in tail and "\n  ````\n" in tail and "still the log" in tail
    gate = subprocess.run([*command, "gate", "--workspace", str(workspace), "--output", str(output),
                           "--summary-markdown", str(summary)], capture_output=True, text=True)
    assert gate.returncode == s.EXIT_INCOMPLETE, gate.stderr
    for markdown in ((output / s.REPORT_MARKDOWN).read_text(), summary.read_text()):
        assert fenced_blocks(markdown) == [tail]
        assert markdown.endswith(f"\n{tail}\n`````\n")
        assert f"Last lines of `{workspace}/log/latest_build/fastrtps/stdout_stderr.log`:" in markdown
