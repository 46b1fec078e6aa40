"""fastdds.record: WS/perfgate-build.json, what a build was (Fast DDS commit and version, options,
dependencies, harness) and whether it worked; read by `perfgate run`, `ab` and `gate` for the
experiment's metadata, and turned into the JUnit testcase "build"."""
from __future__ import annotations

import json
from pathlib import Path

from .. import schema as s
from ..errors import IncompleteError, InputError
from .. import junit_writer
from ..junit_writer import TestCase
from ..model import FastDDS
from .logs import printable

def record_path(workspace: Path) -> Path:
    return Path(workspace) / s.BUILD_RECORD_FILE


def read_record(workspace: Path) -> dict:
    """The build record of a workspace; InputError when there is none or it is malformed."""
    path = record_path(workspace)
    if not path.is_file():
        raise InputError(f"no build record ({s.BUILD_RECORD_FILE}): build the workspace first with "
                         f"`perfgate build --workspace {workspace}`", path)
    try:
        record = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"malformed build record: {error}", path) from None
    if not isinstance(record, dict) or record.get("status") not in (s.BUILD_OK, s.BUILD_FAILED):
        raise InputError("malformed build record: no status ok/failed", path)
    return _where_it_is(record, Path(workspace))


# the paths a kept install's record holds, all inside the kept folder (fastdds_build/kept.py)
_KEPT_PATHS = ("workspace", "prefix", "harness", "fastdds_library")


def _where_it_is(record: dict, folder: Path) -> dict:
    """A kept install's own record (its prefix is the folder it was written in, `kept_from` the workspace)
    read from another place, copied or moved there: its paths are those of the copy read, not of the
    folder it was copied from. Every other record as it is."""
    prefix, own = record.get("prefix"), record.get("workspace")
    if "kept_from" not in record or not isinstance(prefix, str) or prefix != own:
        return record
    old, new = Path(prefix), folder.resolve()
    if old == new:
        return record
    moved = dict(record)
    for key in _KEPT_PATHS:
        value = record.get(key)
        if isinstance(value, str) and Path(value).is_relative_to(old):
            moved[key] = str(new / Path(value).relative_to(old))
    return moved


def fastdds_metadata(record: dict) -> FastDDS:
    """The `fastdds` part of metadata.json for an experiment run against this build."""
    fastdds = record.get("fastdds") or {}
    return FastDDS.record(
        version=fastdds.get("version"),
        commit=fastdds.get("commit"),
        source=s.FASTDDS_SOURCE_COLCON,
        prefix=record.get("prefix"),
        package=fastdds.get("package"),
        repository=fastdds.get("repository"),
        source_path=fastdds.get("source_path"),
        uncommitted_changes=fastdds.get("uncommitted_changes"),
        build={
            "workspace": record.get("workspace"),
            "finished_utc": record.get("finished_utc"),
            "duration_s": record.get("duration_s"),
            "cmake_args": record.get("cmake_args"),
            "ccache": record.get("ccache"),
            "dependencies": record.get("dependencies"),
            # a kept install (WS/installs/<commit>): the workspace it was built in
            **({"kept_from": record["kept_from"]} if record.get("kept_from") else {}),
        },
    )


def harness_paths(record: dict, workspace: Path) -> tuple[Path, Path]:
    """(perfgate-latency, Fast DDS prefix) of a finished build; IncompleteError for a failed one."""
    if record.get("status") != s.BUILD_OK:
        raise IncompleteError(f"the Fast DDS build failed: {record.get('error')}", record_path(workspace))
    harness = Path(record["harness"])
    if not harness.is_file():
        raise IncompleteError("the workspace's harness is missing: build it again", harness)
    return harness, Path(record["prefix"])


def build_junit_xml(record: dict, properties: dict[str, str]) -> str:
    """JUnit with one testcase "build": passed, or an <error> with the failing package and its log tail."""
    case = TestCase(s.BUILD_TESTCASE, classname=s.BUILD_TESTCASE,
                    elapsed_sec=round(float(record.get("duration_s") or 0), 3))
    if record.get("status") != s.BUILD_OK:  # no file/line: the log is no file of the repository an annotation could point at
        # printable again: a record written by an older perfgate may hold a raw tail
        case.add_error_info(printable(str(record.get("error"))),
                            printable(f"{record.get('log')}:\n{record.get('log_tail') or ''}"), "build_failed")
    suite = junit_writer.suite(s.BUILD_TESTCASE, [case], properties, timestamp=record.get("started_utc"))
    return junit_writer.document("perfgate", [suite])


def junit_properties(record: dict) -> dict[str, str]:
    fastdds = record.get("fastdds") or {}
    return {"fastdds.commit": str(fastdds.get("commit") or "unknown"),
            "fastdds.version": str(fastdds.get("version") or "unknown")}
