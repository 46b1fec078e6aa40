"""fastdds.build: one Fast DDS source -> a persistent colcon workspace, built in Release with security and
performance tests, with perfgate's harness (native/) built in the same workspace against it.

    perfgate build --workspace WS (--source DIR | --git-url URL --commit REF)
                   [--fastcdr-source DIR | --fastcdr-url URL] [--foonathan-memory-source DIR] [--jobs N]
                   [--no-ccache] [--junit F]
                   [--keep-installs N] [--keep-as NAME] [--layouts N] [--align-functions N]

REF is a commit, tag or branch, `parent:<rev>` (the first parent of <rev>) or
`merge-base:<rev>,<other>` (where <rev> branched off <other>), resolved with git in the checkout.
The workspace's layout and the parts of a build: perfgate/fastdds_build/.

Compiler warnings never fail the build (fastdds_build.colcon), and the harness is built against the
workspace's Fast DDS package, never a system copy: checked with ldd after the build.

A build of a commit (no uncommitted changes) is kept in WS/installs/<commit>/ (the last N, a copy of
the install with its own record), and a commit kept with the same harness sources and CMake arguments
is not built again (fastdds_build/kept.py); with --layouts, the library linked again in N other
object orders is kept beside it (fastdds/layouts.py).

The record is written for failed builds too: `perfgate run --workspace` and `perfgate gate
--workspace` read it, so every experiment names the Fast DDS commit, version and build options, and a
failed build becomes the JUnit error testcase "build" (exit 3).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from .. import files, outputs
from .. import schema as s
from ..clock import utc_now
from ..errors import IncompleteError, InputError, PerfgateError
from ..escape.workflow import log_text
from .colcon import (build_environment, check_tools, cmake_arguments, cmake_version, colcon_build_command,
                     failed_packages, harness_link_problem, linked_fastdds_library, run_colcon, write_warnings_launcher)
from . import kept
from .layouts import LAYOUTS_DIR, check_alignment, check_count
from .git import check_git_url, parse_revision
from .logs import log_tail
# ab and run read a workspace's build record through this module
from .record import (build_junit_xml, fastdds_metadata, harness_paths,  # noqa: F401
                     junit_properties, read_record, record_path)
from .workspace import FOONATHAN_DIR, SOURCE_DIR, STATE_DIR, place_fastcdr, prepare_sources, workspace_lock
from .source import (BUNDLED_SQLITE, dependency_plan, detect_fastdds, fastcdr_major_needed, installed_cmake_version,
                     read_submodule_pin, source_cmake_options)
from .harness import FLOOR_EXECUTABLE, LATENCY_EXECUTABLE, NATIVE_DIR, source_digest


def _resolve_inputs(source, git_url, commit, fastcdr_source, foonathan_source,
                    fastcdr_url=None) -> tuple[Path | None, Path | None, Path | None]:
    if source is not None and git_url is not None:
        raise InputError("give either --source or --git-url, not both")
    if fastcdr_source is not None and fastcdr_url is not None:
        raise InputError("give either --fastcdr-source or --fastcdr-url, not both")
    if (git_url is None) != (commit is None):
        raise InputError("--git-url and --commit go together")
    if commit is not None:
        parse_revision(commit)  # a malformed --commit is refused before anything is fetched
    folders = []
    for option, value in (("--source", source), ("--fastcdr-source", fastcdr_source),
                          ("--foonathan-memory-source", foonathan_source)):
        if value is not None and not Path(value).is_dir():
            raise InputError(f"{option}: not a folder", value)
        folders.append(Path(value).resolve() if value is not None else None)
    return folders[0], folders[1], folders[2]


def _check_outputs(workspace: Path, junit, sources: list[Path | None]) -> None:
    """Before anything is fetched or built (a build takes minutes): the workspace can be made, and the
    JUnit file can be written and lies in none of the sources (it would replace a file of them)."""
    outputs.require_writable(workspace, "workspace", folder=True)
    if junit is None:
        return
    target = outputs.require_writable(Path(junit), "JUnit file").resolve()
    for folder in (f for f in sources if f is not None):
        if target.is_relative_to(folder):
            raise InputError(f"the JUnit file would be written into the source {folder}", junit)
    outputs.require_not_input(Path(junit), [record_path(workspace)], "JUnit file")


def command_build(*, workspace, source=None, git_url=None, commit=None, fastcdr_source=None,
                  foonathan_memory_source=None, jobs=None, no_ccache=False, junit=None,
                  keep_installs=None, keep_as=None, fastcdr_url=None, layouts=None, align_functions=None) -> int:
    # "" (an unset CI variable) would build in, or mirror over, the working folder
    outputs.require_paths(workspace=workspace, source=source, git_url=git_url, commit=commit, fastcdr_url=fastcdr_url,
                          fastcdr_source=fastcdr_source, foonathan_memory_source=foonathan_memory_source, junit=junit)
    workspace = Path(workspace).resolve()
    keep_installs = kept.DEFAULT_KEEP if keep_installs is None else keep_installs
    source, fastcdr, foonathan = _resolve_inputs(source, git_url, commit, fastcdr_source, foonathan_memory_source,
                                                 fastcdr_url)
    git_url = check_git_url(git_url, "--git-url") if git_url is not None else None
    fastcdr_url = check_git_url(fastcdr_url, "--fastcdr-url") if fastcdr_url is not None else None
    kept.check_options(keep_installs, keep_as)
    layouts = check_count(layouts, keep_installs)
    align_functions = check_alignment(align_functions)
    kept.check_workspace(workspace)
    kept.check_name(workspace, keep_as, keep_installs)
    if source is not None:
        detect_fastdds(source)  # refused before the workspace is made and the source mirrored into it
    _check_outputs(workspace, junit, [source, fastcdr, foonathan])
    ccache = not no_ccache
    check_tools(ccache)
    started, started_utc = time.monotonic(), utc_now()
    record = {"status": s.BUILD_FAILED, "workspace": str(workspace), "started_utc": started_utc,
              "prefix": str(workspace / "install"), "fastdds": {"repository": git_url, "requested_ref": commit}}
    reused = None
    with workspace_lock(workspace):
        record_path(workspace).unlink(missing_ok=True)  # no stale record survives a build that breaks
        try:
            reused = _build(workspace, source, git_url, commit, fastcdr, foonathan, jobs, ccache, record,
                            reuse=keep_installs > 0, fastcdr_url=fastcdr_url, layouts=layouts,
                            align_functions=align_functions)
            if reused is not None:  # the workspace's record names the kept copy: WS/install may hold another commit
                asked = record["fastdds"].get("requested_ref")
                record.clear()
                record.update(read_record(reused), workspace=str(workspace), reused_utc=utc_now())
                record["fastdds"] = {**record["fastdds"], "requested_ref": asked}
            record["status"] = s.BUILD_OK
        except InputError:
            raise  # usage: nothing was built, no record
        except PerfgateError as error:
            record["error"] = record.get("error") or error.message
            record.setdefault("log", str(error.path) if error.path else None)
            if keep_as is not None:
                kept.name(workspace, keep_as, None)
            raise
        finally:
            if reused is None:  # a reused build keeps the times of the build it was
                record["finished_utc"] = utc_now()
                record["duration_s"] = round(time.monotonic() - started, 1)
            if record["status"] == s.BUILD_OK or record.get("error"):
                files.write_text(record_path(workspace), json.dumps(record, indent=2, sort_keys=True) + "\n")
                if junit is not None:
                    files.write_text(Path(junit), build_junit_xml(record, junit_properties(record)))
        folder = _keep(workspace, record, reused, keep_installs, keep_as, layouts)
    fastdds = record["fastdds"]
    if layouts and folder is None:
        print(f"perfgate build: error: --layouts {layouts}: the build was not kept, so neither were its layouts",
              file=sys.stderr, flush=True)
        return s.EXIT_INCOMPLETE
    if reused is not None:
        print(f"perfgate build: {log_text(fastdds['commit'])} already built, kept in {log_text(reused)}")
        return s.EXIT_OK
    print(f"perfgate build: Fast DDS {log_text(fastdds['version'])} ({log_text(fastdds['package'])}, commit "
          f"{log_text(fastdds.get('commit') or 'unknown')}) built in {record['duration_s']:.0f} s; prefix {record['prefix']}; "
          f"harness {record['harness']}" + (f"; kept in {folder}" if folder is not None else "")
          + (f" with {layouts} layouts ({folder / LAYOUTS_DIR}/1..{layouts})" if folder is not None and layouts else ""))
    return s.EXIT_OK


def _keep(workspace: Path, record: dict, reused: Path | None, keep_installs: int, keep_as: str | None,
          layouts: int = 0) -> Path | None:
    """After a finished build: keep its install (or mark the reused one as used), point keep_as at it,
    prune beyond keep_installs. Returns the kept folder."""
    folder = reused
    try:
        if reused is not None:
            kept.touch(reused)
        elif keep_installs > 0:
            folder = kept.keep(workspace, record, layouts)
            if folder is None and kept.keepable_commit(record) is None:
                fastdds = record["fastdds"]
                why = "the source has uncommitted changes" if fastdds.get("uncommitted_changes") else "no commit is known"
                print(f"perfgate build: not kept in {kept.installs_dir(workspace)}: {why}", flush=True)
        if keep_as is not None:  # first: a name moved off a folder no longer protects it
            kept.name(workspace, keep_as, folder)
        kept.prune(workspace, keep_installs)
    except OSError as error:  # the build stands; what is kept is only a shortcut for later builds
        print(f"perfgate build: warning: {kept.installs_dir(workspace)}: {error}", file=sys.stderr, flush=True)
    return folder


def _build(workspace: Path, source: Path | None, git_url: str | None, commit: str | None, fastcdr: Path | None,
           foonathan: Path | None, jobs: int | None, ccache: bool, record: dict, reuse: bool,
           fastcdr_url: str | None = None, layouts: int = 0, align_functions: int = 0) -> Path | None:
    """Build into the workspace, filling `record`; or, when `reuse` finds this commit kept with the same
    harness sources and CMake arguments, build nothing and return its kept folder."""
    origin = prepare_sources(workspace, source, git_url, commit, {FOONATHAN_DIR: foonathan})
    checkout = workspace / "src" / SOURCE_DIR
    identity = detect_fastdds(checkout)
    record["fastdds"] = {**origin, "package": identity.package, "version": identity.version}
    # the Fast CDR the commit pins: .gitmodules in the checkout, the gitlink in the git history of the
    # source (a local source's own, the mirror in WS/src/fastdds has none)
    pin = read_submodule_pin(source or checkout, source or checkout, git_url, fetch_url=fastcdr_url)
    plan = dependency_plan(identity, fastcdr, foonathan, installed_cmake_version("fastcdr"),
                           installed_cmake_version("foonathan_memory"), pin, fastcdr_url)
    record["dependencies"] = plan
    if fastcdr_url is not None and plan["fastcdr"].get("url") != fastcdr_url:
        # known only now: a workflow that always passes its mirror builds versions that take the system's
        print(f"perfgate build: note: --fastcdr-url not used: Fast CDR {_fastcdr_origin(plan['fastcdr'])}", flush=True)
    plan["fastcdr"] = place_fastcdr(workspace, plan["fastcdr"], fastcdr_major_needed(identity))
    source_options = source_cmake_options(checkout)
    if source_options:
        print("perfgate build: note: the source lacks the bundled SQLite (" + BUNDLED_SQLITE + "): built with "
              + " ".join(f"-D{name}={value}" for name, value in source_options.items())
              + " (docs/build.md \"A source without the bundled SQLite\")", flush=True)
    cmake_args = cmake_arguments(ccache, identity.package, cmake_version(), write_warnings_launcher(workspace),
                                 source_options, align_functions)
    command = colcon_build_command(workspace, cmake_args)
    environment = build_environment(dict(os.environ), workspace, jobs, ccache)
    record.update(cmake_args=cmake_args, colcon_command=command, jobs=jobs, harness_source=source_digest(NATIVE_DIR),
                  ccache={"enabled": ccache, "dir": environment.get("CCACHE_DIR") if ccache else None})
    if reuse and kept.keepable_commit({**record, "status": s.BUILD_OK}) is not None:
        found = kept.reusable(workspace, record["fastdds"]["commit"], record["harness_source"], cmake_args, layouts)
        if found is not None:
            return found
    print(f"perfgate build: Fast DDS {log_text(identity.version)} ({log_text(identity.package)}) in {log_text(workspace)}; Fast CDR "
          f"{_fastcdr_origin(plan['fastcdr'])}", flush=True)
    code, output = run_colcon(command, environment, workspace / STATE_DIR / "colcon-build.log")
    if code != 0:
        failing = failed_packages(output)
        package = failing[0] if failing else None
        log = (workspace / "log" / "latest_build" / package / "stdout_stderr.log") if package else \
            workspace / STATE_DIR / "colcon-build.log"
        tail = log_tail(log)
        record.update(failed_package=package, log=str(log), log_tail=tail,
                      error=f"colcon build failed (exit {code})" + (f" in package {package}" if package else ""))
        raise IncompleteError(f"{record['error']}; last lines of its log:\n{tail}", log)
    harness = workspace / "install" / "bin" / LATENCY_EXECUTABLE
    for executable in (harness, harness.with_name(FLOOR_EXECUTABLE)):
        if not executable.is_file():
            raise IncompleteError(f"colcon build did not install {executable.name}", executable)
    library = linked_fastdds_library(harness)
    problem = harness_link_problem(library, workspace, identity.package)
    if problem is not None:
        record.update(fastdds_library=library, error=problem)
        raise IncompleteError(problem, harness)
    record.update(harness=str(harness), fastdds_library=library, log=str(workspace / "log" / "latest_build"))
    return None


def _fastcdr_origin(plan: dict) -> str:
    if plan["from"] == "system":
        return f"{plan.get('version')} (system)"
    if plan["from"] == "submodule":
        where = plan.get("path") or f"{plan.get('url')} at {plan.get('commit')}"
        return f"{plan.get('version') or ''} pinned as {plan['submodule']} ({where})".lstrip()
    return f"{plan.get('version') or ''} from {plan['path']}".lstrip()
