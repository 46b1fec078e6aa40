"""gate.which_fastdds: which Fast DDS `perfgate gate` measures, and what chose it.

A runner that sets $PERFGATE_WORKSPACE runner-wide makes the workspace's last build the gate's
default. So that a gate meant for another Fast DDS never measures that build unnoticed, the choice
and its source are said before measuring and shown in the reports, and an explicit choice
(--fastdds system, --fastdds-prefix, --workspace) always wins over the variable (docs/gate.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import schema as s
from ..errors import InputError
from ..fastdds.record import read_record


@dataclass(frozen=True)
class GateFastDDS:
    """The Fast DDS to measure: the system's (no prefix, no workspace), an install prefix, or a `perfgate
    build` workspace with its record (which may say that its build failed)."""

    chosen_by: str  # the option or variable that chose it, or "default"
    prefix: Path | None = None
    workspace: Path | None = None
    record: dict | None = None

    @property
    def spec(self) -> str:
        """As `perfgate ab --candidate` takes it."""
        return str(self.workspace or self.prefix or s.FASTDDS_SYSTEM_SPEC)

    @property
    def built(self) -> bool:
        return self.record is None or self.record.get("status") == s.BUILD_OK

    def describe(self) -> str:
        if self.workspace is not None:
            fastdds = (self.record or {}).get("fastdds") or {}
            commit = (f"commit {str(fastdds['commit'])[:12]}" if fastdds.get("commit")
                      else f"source {fastdds['source_path']}" if fastdds.get("source_path") else "no commit recorded")
            finished = (self.record or {}).get("finished_utc") or "an unknown time"
            state = "built" if self.built else "failed to build"
            return (f"the perfgate build workspace {self.workspace} (Fast DDS {fastdds.get('version') or '?'}, "
                    f"{commit}, {state} at {finished}), chosen by {self.chosen_by}")
        if self.prefix is not None:
            return f"the install prefix {self.prefix}, chosen by {self.chosen_by}"
        return f"the system's Fast DDS, chosen by {self.chosen_by}"


def choose_fastdds(*, workspace: str | None, fastdds_prefix: str | None, fastdds: str | None,
                   environment: dict) -> GateFastDDS:
    """--workspace, --fastdds-prefix or --fastdds (at most one), else $PERFGATE_WORKSPACE, else the system's.
    --fastdds takes `system`, `workspace` ($PERFGATE_WORKSPACE, which must be set), or a folder: a
    `perfgate build` workspace (it holds perfgate-build.json) or else an install prefix."""
    given = [name for name, value in (("--workspace", workspace), ("--fastdds-prefix", fastdds_prefix),
                                      ("--fastdds", fastdds)) if value is not None]
    if len(given) > 1:
        raise InputError(f"{' and '.join(given)} both name the Fast DDS to measure: give one")
    variable = environment.get(s.WORKSPACE_ENV) or None
    if workspace is not None:
        return _workspace(workspace, "--workspace")
    if fastdds_prefix is not None:
        return GateFastDDS("--fastdds-prefix", prefix=Path(fastdds_prefix))
    if fastdds == s.FASTDDS_SYSTEM_SPEC:
        return GateFastDDS("--fastdds system")
    if fastdds == s.FASTDDS_WORKSPACE_SPEC:
        if variable is None:
            raise InputError(f"--fastdds {s.FASTDDS_WORKSPACE_SPEC}: ${s.WORKSPACE_ENV} is not set; "
                             "give the workspace with --workspace")
        return _workspace(variable, f"--fastdds {s.FASTDDS_WORKSPACE_SPEC} (${s.WORKSPACE_ENV})")
    if fastdds is not None:
        if not fastdds.strip():
            raise InputError("--fastdds is empty; give system, workspace or a folder")
        if (Path(fastdds) / s.BUILD_RECORD_FILE).is_file():
            return _workspace(fastdds, "--fastdds")
        return GateFastDDS("--fastdds", prefix=Path(fastdds))
    if variable is not None:
        return _workspace(variable, f"${s.WORKSPACE_ENV}")
    return GateFastDDS("default")


def _workspace(folder: str, chosen_by: str) -> GateFastDDS:
    try:
        record = read_record(Path(folder))
    except InputError as error:  # say what chose this workspace, and how to measure another Fast DDS
        raise InputError(f"{error.message} (the workspace chosen by {chosen_by}; --fastdds system measures the "
                         "system's Fast DDS)", error.path, error.line) from None
    return GateFastDDS(chosen_by, workspace=Path(folder), record=record)
