"""The `perfgate` command line (docs/formats.md section 11): it only parses and calls.

Each sub-command (commands/, one module each: its options) names the function that does the work as
"module:function"; that function takes the parsed options as keyword arguments and returns the exit
code. Modules are imported only for the command that runs, so `perfgate --help` stays fast and a
missing plotting backend cannot break `run`.
"""
from __future__ import annotations

import argparse
import importlib
import os
import re
import signal
import sys
import threading

from . import schema as s
from .cli_types import path_typed
from .commands import (ab, ab_throughput, bisect, bisect_events, build, calibrate, check, check_throughput,
                       check_topology, compare, compare_subexperiments, determine_gross_margins,
                       determine_layout_thresholds, determine_requirements, determine_throughput_requirements,
                       determine_topology_targets, false_alarms, gate, history, junit, pr_comment, process,
                       promote_baseline, run, store, throughput, topology, topology_ab, verdict)
from .errors import PerfgateError

# every sub-command, in the order `perfgate --help` lists them (commands/: one module each)
COMMANDS = (run, throughput, check_throughput, determine_throughput_requirements, ab, ab_throughput, verdict, process,
            compare_subexperiments, check, junit, history, store, false_alarms, determine_requirements,
            determine_gross_margins, compare, gate, promote_baseline, build, bisect, bisect_events, pr_comment, topology,
            check_topology, determine_topology_targets, topology_ab, determine_layout_thresholds,
            calibrate)


# `--raw-csv/--raw_csv` in argparse's messages: the two spellings of one option (see _option)
UNDERSCORE_SPELLING = re.compile(r"(--[A-Za-z0-9][A-Za-z0-9-]*)/--[A-Za-z0-9_]+")
LINE_BREAKS = re.compile(r"[\r\n]+")


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as ONE line, `perfgate <command>: error: ...`, exit 2 (docs/formats.md section 11):
    argparse's default prints the whole usage first, which buries the one line that says what is wrong
    (and CI logs show only the last lines)."""

    def error(self, message: str):
        # an option's two spellings are one option to the user: `--raw-csv`, not `--raw-csv/--raw_csv`
        message = LINE_BREAKS.sub(" ", UNDERSCORE_SPELLING.sub(r"\1", message))  # a value typed with a line break
        self.exit(s.EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _option(parser: argparse.ArgumentParser, name: str, **kwargs) -> None:
    """A long option that also accepts its underscore spelling (`--raw_csv` for `--raw-csv`); one naming a
    path refuses a name the system would not take (cli_types.path_typed)."""
    spellings = [name] + (["--" + name[2:].replace("-", "_")] if "-" in name[2:] else [])
    parser.add_argument(*spellings, **path_typed(kwargs))


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="perfgate",
        description="CI latency gate for eProsima Fast DDS. Exit codes: 0 passed, 1 regression, "
        "2 bad input or usage, 3 experiment incomplete.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parser.command_parsers = commands.choices  # name -> its parser, for main's unrecognized arguments

    for command in COMMANDS:
        sub = commands.add_parser(command.NAME, help=command.HELP, description=command.HELP)
        sub.set_defaults(handler=command.HANDLER)
        command.add_arguments(sub, _option)
    return parser


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The parsed command line; a usage error ends the process with one line and exit 2 (SystemExit)."""
    parser = build_parser()
    parsed, unrecognized = parser.parse_known_args(argv)
    if unrecognized:  # the top-level parser would blame `perfgate`; the user typed them for the command
        parser.command_parsers[parsed.command].error(f"unrecognized arguments: {' '.join(unrecognized)}")
    return parsed


def main(argv: list[str] | None = None) -> int:
    arguments = vars(parse_arguments(argv))
    command_name = arguments.pop("command")
    module_name, function_name = arguments.pop("handler").split(":")
    handler = getattr(importlib.import_module(module_name), function_name)
    # SIGTERM (a cancelled CI job, `timeout`, `kill`) ends every command as Ctrl-C does: its worker pools
    # are torn down and its temporary files removed on the way out, where the default action would
    # kill this process alone and leave its plot workers drawing, orphaned, into temporary files
    previous = signal.signal(signal.SIGTERM, _interrupt) if threading.current_thread() is threading.main_thread() \
        else None
    try:
        return int(handler(**arguments))
    except PerfgateError as error:
        print(f"perfgate {command_name}: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(f"perfgate {command_name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # whoever read the output went away (`| head`): end as SIGPIPE would, quietly
        _discard_stdout()
        return 128 + signal.SIGPIPE
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush of it does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
