"""The `perfgate` command line (CONTRACT.md section 5): it only parses and calls.

Each sub-command names the function that does the work as "module:function"; that function takes
the parsed options as keyword arguments and returns the exit code. Modules are imported only for the
command that runs, so `perfgate --help` stays fast and a missing plotting backend cannot break `run`.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from . import schema as s
from .errors import PerfgateError


def _option(parser: argparse.ArgumentParser, name: str, **kwargs) -> None:
    """A long option that also accepts its underscore spelling (`--raw_csv` for `--raw-csv`)."""
    spellings = [name]
    if "-" in name[2:]:
        spellings.append("--" + name[2:].replace("-", "_"))
    parser.add_argument(*spellings, **kwargs)


def _payload_list(text: str) -> list[int]:
    try:
        payloads = [int(part) for part in text.replace(";", ",").split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"payloads must be whole numbers separated by commas: {text!r}") from None
    if not payloads or any(p <= 0 for p in payloads):
        raise argparse.ArgumentTypeError(f"payloads must be positive: {text!r}")
    return payloads


def _name_list(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError("at least one name is needed")
    return names


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be zero or more: {text!r}")
    return value


def _percentile(text: str) -> float:
    value = _non_negative_float(text)
    if value > 100:
        raise argparse.ArgumentTypeError(f"a percentile is between 0 and 100: {text!r}")
    return value


def _no_plots(parser: argparse.ArgumentParser) -> None:
    _option(parser, "--no-plots", action="store_true", help="skip drawing plots")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perfgate",
        description="CI latency gate for eProsima Fast DDS. Exit codes: 0 passed, 1 regression, "
        "2 bad input or usage, 3 experiment incomplete.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(handler=handler)
        return sub

    # --- run (the measuring half) ---
    run = command("run", "perfgate.run:command_run", "run the latency experiment on a real Fast DDS")
    _option(run, "--output", required=True, metavar="DIR", help="experiment folder to write")
    _option(run, "--samples", type=_positive_int, default=s.DEFAULT_SAMPLES, help="round trips per payload")
    _option(run, "--payloads", type=_payload_list, default=list(s.PAYLOADS), help="e.g. 16,32,64")
    _option(run, "--subexperiments", type=_name_list, default=list(s.DEFAULT_SUBEXPERIMENT_NAMES),
            help="comma-separated sub-experiment names (default: the ten of the contract)")
    _option(run, "--label", default=None, help="experiment label (default: the output folder's name)")
    _option(run, "--warmup", type=int, default=None, help="unrecorded round trips before each payload")
    _option(run, "--harness", default=None, metavar="PATH", help="harness executable (default: build native/ on first use)")
    _option(run, "--fastdds-prefix", default=None, metavar="DIR",
            help="install prefix of the Fast DDS to build against (a colcon install); default: the system's")
    _option(run, "--pin-cpus", default=None, metavar="PUB,SUB", help="pin publisher and subscriber to these CPUs")
    _option(run, "--timeout", type=_non_negative_float, default=None, metavar="SECONDS",
            help="per sub-experiment time limit (default scales with samples)")

    # --- process ---
    process = command("process", "perfgate.process:command_process",
                      "raw measurements -> summary CSV and per-payload plots")
    _option(process, "--raw-csv", metavar="F", help="one raw measurements CSV")
    _option(process, "--output-csv", metavar="F", help="the summary CSV to write")
    _option(process, "--plots-directory", metavar="D", help="where the plots go")
    _option(process, "--experiment-directory", metavar="D", help="process every raw CSV of an experiment folder")
    _option(process, "--jobs", type=_positive_int, default=None, help="parallel workers (default: all cores)")
    _no_plots(process)

    compare_subs = command("compare-subexperiments", "perfgate.process:command_compare_subexperiments",
                           "plot min, median, max and 99%% against payload, one line per sub-experiment")
    _option(compare_subs, "--plots-directory", required=True, metavar="D")
    _option(compare_subs, "--subexperiment-summaries", required=True, nargs="+", metavar="F")
    _no_plots(compare_subs)

    # --- check and JUnit ---
    check = command("check", "perfgate.check:command_check", "check summaries against a requirements CSV")
    _option(check, "--requirements", required=True, metavar="F")
    _option(check, "--experiment-directory", required=True, metavar="D")
    _option(check, "--plots-directory", required=True, metavar="D")
    _option(check, "--print-summaries", action="store_true", help="print each check report")
    _option(check, "--junit", default=None, metavar="F", help="also write the JUnit file")
    _no_plots(check)

    junit = command("junit", "perfgate.junit:command_junit", "JUnit XML from an experiment folder's check reports")
    _option(junit, "--experiment-directory", required=True, metavar="D")
    _option(junit, "--output", required=True, metavar="F")
    _option(junit, "--requirements", default=None, metavar="F",
            help="requirements CSV for file/line annotations (default: the one recorded by check)")

    # --- history, requirements, compare ---
    history = command("history", "perfgate.history:command_history", "redraw the history plots of a results store")
    _option(history, "--requirements", required=True, metavar="F")
    _option(history, "--experiments-results", required=True, metavar="D")
    _option(history, "--plots-directory", required=True, metavar="D")
    _no_plots(history)

    determine = command("determine-requirements", "perfgate.requirements:command_determine_requirements",
                        "derive requirements from many runs of one commit")
    _option(determine, "--experiments-results", required=True, metavar="D")
    _option(determine, "--output-file", required=True, metavar="F")
    _option(determine, "--percentile", type=_percentile, default=99.0)

    compare = command("compare", "perfgate.compare:command_compare", "compare a target experiment with a reference")
    _option(compare, "--reference", required=True, metavar="D")
    _option(compare, "--results", required=True, metavar="D")
    _option(compare, "--plots-directory", required=True, metavar="D")
    _option(compare, "--fail-threshold", type=_non_negative_float, default=0.1)
    _no_plots(compare)

    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = vars(build_parser().parse_args(argv))
    command_name = arguments.pop("command")
    module_name, function_name = arguments.pop("handler").split(":")
    handler = getattr(importlib.import_module(module_name), function_name)
    try:
        return int(handler(**arguments))
    except PerfgateError as error:
        print(f"perfgate {command_name}: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(f"perfgate {command_name}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
