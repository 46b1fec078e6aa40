"""Where the runs' build options changed, and which events sit there (pure: values in, values out).

The history compares runs, not code: a run of a Fast DDS built with other options is another binary
(function alignment alone moved TCP 6.6 % on the Intel host, docs/verdict.md), so the history's first
runs after a change of `perfgate build`'s options can step with no Fast DDS change. Each run records
its build's CMake arguments (metadata `fastdds.build.cmake_args`); an event within a few runs
(history.events.NEARBY_RUNS) of a run whose options differ from the run before it is marked with
that change (events.csv's `Build options changed`), so a maintainer reads it as what it may be.

The options compared are those that shape the binary: the compiler launchers name the runner's own
workspace, `--compile-no-warning-as-error` follows the CMake version and changes no warning-free
build, and the Fast DDS package name follows the source (2.x `fastrtps`, 3.x `fastdds`): a commit
changes it, never a runner. A run without a build record (the system's Fast DDS, an older store) has
no options: it neither makes nor hides a change. The arguments come from the results store
(untrusted): only a list of strings is read, each cut to `ARGUMENT_CHARACTERS`; callers escape the
text for where they print it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

BUILD_OPTIONS = "Build options"  # the described experiments' column: a tuple of arguments, or None
IGNORED_PREFIXES = ("-DCMAKE_C_COMPILER_LAUNCHER=", "-DCMAKE_CXX_COMPILER_LAUNCHER=",
                    "--compile-no-warning-as-error", "-DPERFGATE_FASTDDS_PACKAGE=")
ARGUMENT_CHARACTERS = 120
MOST_ARGUMENTS = 64  # a record with more is not one `perfgate build` wrote: unknown


@dataclass(frozen=True)
class OptionChange:
    position: int  # the first run (history position) with the new options
    added: tuple[str, ...]
    removed: tuple[str, ...]

    def text(self, label: str) -> str:
        parts = [f"{kind} {' '.join(arguments)}" for kind, arguments in (("added", self.added), ("removed", self.removed))
                 if arguments]
        return f"#{self.position} {label}: {'; '.join(parts) or 'reordered'}"


def build_options(build: Mapping | None) -> tuple[str, ...] | None:
    """The arguments of a run's build record (metadata `fastdds.build`) that shape the binary, in
    their order; None when the run has no readable record."""
    arguments = build.get("cmake_args") if isinstance(build, Mapping) else None
    if not isinstance(arguments, list) or len(arguments) > MOST_ARGUMENTS \
            or not all(isinstance(argument, str) for argument in arguments):
        return None
    return tuple(argument[:ARGUMENT_CHARACTERS] for argument in arguments
                 if not argument.startswith(IGNORED_PREFIXES))


def option_changes(options: list[tuple[str, ...] | None]) -> list[OptionChange]:
    """Each position whose options differ from the last run before it that had any (by position)."""
    changes, last = [], None
    for position, current in enumerate(options):
        if current is None:
            continue
        if last is not None and current != last:
            changes.append(OptionChange(position, tuple(a for a in current if a not in last),
                                        tuple(a for a in last if a not in current)))
        last = current
    return changes


def near(changes: list[OptionChange], split: int, within: int) -> OptionChange | None:
    """The change nearest the event whose first run after the step is `split`, at most `within` runs
    away (a step is placed a run or two off, as the event's change points are); the earlier on a tie."""
    close = [change for change in changes if abs(change.position - split) <= within]
    return min(close, key=lambda change: (abs(change.position - split), change.position)) if close else None
