"""The `perfgate` command line (docs/formats.md section 11): it only parses and calls.

Each sub-command names the function that does the work as "module:function"; that function takes
the parsed options as keyword arguments and returns the exit code. Modules are imported only for the
command that runs, so `perfgate --help` stays fast and a missing plotting backend cannot break `run`.
"""
from __future__ import annotations

import argparse
import importlib
import re
import signal
import sys
import threading

from .measure import cpu_latency
from .store import cli as store_cli
from . import schema as s
from .cli_types import (demand_list, label, millisecond_list, name_list, non_negative_float, path_typed,
                        payload_list, percentile, pin_request, positive_float, positive_int, probability)
from .errors import PerfgateError
from .report.pr_comment import add_command as add_pr_comment


CPU_LATENCY_HELP = ("system (default): the system's idle policy; awake: keep idle CPUs polling while measuring "
                    "(a 0 us wake-up latency request on /dev/cpu_dma_latency, where writable; else a warning)")


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


def _no_plots(parser: argparse.ArgumentParser) -> None:
    _option(parser, "--no-plots", action="store_true", help="skip drawing plots")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="perfgate",
        description="CI latency gate for eProsima Fast DDS. Exit codes: 0 passed, 1 regression, "
        "2 bad input or usage, 3 experiment incomplete.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parser.command_parsers = commands.choices  # name -> its parser, for main's unrecognized arguments

    def command(name: str, handler: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(handler=handler)
        return sub

    # --- run (the measuring half) ---
    run = command("run", "perfgate.latency.run:command_run", "run the latency experiment on a real Fast DDS")
    _option(run, "--output", required=True, metavar="DIR", help="experiment folder to write")
    _option(run, "--samples", type=positive_int, default=s.DEFAULT_SAMPLES, help="round trips per payload")
    _option(run, "--payloads", type=payload_list, default=list(s.PAYLOADS), help="e.g. 16,32,64")
    _option(run, "--subexperiments", type=name_list, default=None,
            help="comma-separated sub-experiment names (default: the ten of the contract, then the machine's "
                 "floor: " + ",".join(s.FLOOR_SUBEXPERIMENT_NAMES) + ")")
    _option(run, "--subscribers", type=positive_int, default=None, metavar="N",
            help="also <sub>_1to<N> for each selected latency sub-experiment: N subscribers (2 to 16)")
    _option(run, "--label", type=label, default=None, help="experiment label (default: the output folder's name)")
    _option(run, "--warmup", type=int, default=None, help="unrecorded round trips before each payload (default 100)")
    _option(run, "--harness", default=None, metavar="PATH", help="harness executable (default: build native/ on first use)")
    _option(run, "--fastdds-prefix", default=None, metavar="DIR",
            help="install prefix of the Fast DDS to build against (a colcon install); default: the system's")
    _option(run, "--pin-cpus", type=pin_request, default=None, metavar="auto|none|PUB,SUB",
            help="pin publisher and subscriber (and their Fast DDS threads) to two CPUs; default auto: two "
                 "distinct CPUs, isolated ones first, when the machine has two; none: not pinned")
    _option(run, "--cpu-latency", dest="cpu_latency_request", choices=cpu_latency.CHOICES, default=None,
            help=CPU_LATENCY_HELP)
    _option(run, "--timeout", type=positive_float, default=None, metavar="SECONDS",
            help="per sub-experiment time limit (default scales with samples)")
    _option(run, "--engine", choices=s.ENGINES, default=s.ENGINE_HARNESS,
            help="harness: perfgate's own (round trip); upstream: Fast DDS' performance.latency tests of a "
                 "--workspace build (half round trip)")
    _option(run, "--workspace", default=None, metavar="WS",
            help="a `perfgate build` workspace: measure its Fast DDS (and record its commit and build options)")

    # --- throughput (bursts instead of round trips) ---
    throughput = command("throughput", "perfgate.throughput.run:command_throughput",
                         "run the throughput experiment on a real Fast DDS: bursts at a pace, counted by the subscriber")
    _option(throughput, "--output", required=True, metavar="DIR", help="experiment folder to write (absent or empty)")
    _option(throughput, "--subexperiments", type=name_list, default=None,
            help="latency sub-experiment names whose transport, reliability and security to use (default: the ten); "
                 "written as throughput_<name>.csv")
    _option(throughput, "--payloads", type=payload_list, default=None,
            help="e.g. 16,1024 (default: all eleven; " + ",".join(map(str, s.QUICK_THROUGHPUT_PAYLOADS)) + " with --quick)")
    _option(throughput, "--demands", type=demand_list, default=None,
            help="samples per burst (default " + ",".join(map(str, s.DEFAULT_DEMANDS)) + ")")
    _option(throughput, "--recovery-times", type=millisecond_list, default=None, metavar="MS",
            help="pause from the start of one burst to the next, in ms (default "
                 + ",".join(map(str, s.DEFAULT_RECOVERY_TIMES_MS)) + "; 0: back to back)")
    _option(throughput, "--time", type=positive_float, default=None, metavar="SECONDS",
            help=f"length of each test (default {s.DEFAULT_THROUGHPUT_TIME_S:g})")
    _option(throughput, "--quick", action="store_true",
            help="payloads " + ",".join(map(str, s.QUICK_THROUGHPUT_PAYLOADS)) + " only: under a minute for the ten")
    _option(throughput, "--label", type=label, default=None, help="experiment label (default: the output folder's name)")
    _option(throughput, "--pin-cpus", type=pin_request, default=None, metavar="auto|none|PUB,SUB",
            help="as for run (default auto)")
    _option(throughput, "--cpu-latency", dest="cpu_latency_request", choices=cpu_latency.CHOICES, default=None,
            help=CPU_LATENCY_HELP)
    _option(throughput, "--workspace", default=None, metavar="WS", help="as for run")
    _option(throughput, "--fastdds-prefix", default=None, metavar="DIR", help="as for run")

    check_tp = command("check-throughput", "perfgate.throughput.check:command_check_throughput",
                       "check throughput tables against throughput requirements (a minimum per test); JUnit, plots")
    _option(check_tp, "--requirements", required=True, metavar="CSV",
            help="Experiment type,Bytes,Demand,Recovery time,Subscription throughput[,Lost [%%]]")
    _option(check_tp, "--experiment-directory", required=True, metavar="DIR", help="a perfgate throughput folder")
    _option(check_tp, "--junit", default=None, metavar="FILE", help="also write JUnit (testcases Throughput[16 B x 1000])")
    _option(check_tp, "--plots-directory", default=None, metavar="DIR", help="default: <experiment>/plots")
    _no_plots(check_tp)

    derive_tp = command("determine-throughput-requirements",
                        "perfgate.throughput.requirements:command_determine_throughput_requirements",
                        "throughput minimums from several runs of one build (smallest / (1 + margin))")
    _option(derive_tp, "--experiments-results", required=True, metavar="DIR", help="folder of perfgate throughput runs")
    _option(derive_tp, "--output-file", required=True, metavar="CSV")
    _option(derive_tp, "--margin", type=non_negative_float, default=1.0,
            help="requirement = smallest measured / (1 + margin) (default 1.0: half)")

    # --- ab and verdict (two builds against each other, interleaved) ---
    ab = command("ab", "perfgate.ab.latency:command_ab",
                 "measure a candidate Fast DDS against a baseline in interleaved, pinned rounds, then decide")
    _option(ab, "--output", required=True, metavar="DIR", help="A/B folder to write (absent or empty)")
    _option(ab, "--baseline", required=True, metavar="SPEC",
            help="'system' (the system Fast DDS), a colcon install prefix, or a `perfgate build` workspace")
    _option(ab, "--candidate", required=True, metavar="SPEC", help="as --baseline")
    _option(ab, "--rounds", type=positive_int, default=None,
            help="rounds, both arms each (default 16; 10 with --quick)")
    _option(ab, "--samples", type=positive_int, default=None,
            help="round trips per payload, arm and round (default 1000; 100 with --quick)")
    _option(ab, "--quick", action="store_true", help="10 rounds of 100 samples (warm-up 10): about 2 minutes for the ten")
    _option(ab, "--subexperiments", type=name_list, default=None,
            help="comma-separated sub-experiment names (default: the ten of the contract)")
    _option(ab, "--payloads", type=payload_list, default=None, help="e.g. 16,32,64 (default: all eleven)")
    _option(ab, "--pin-cpus", type=pin_request, default=None, metavar="auto|none|PUB,SUB",
            help="as for run (default auto)")
    _option(ab, "--cpu-latency", dest="cpu_latency_request", choices=cpu_latency.CHOICES, default=None,
            help=CPU_LATENCY_HELP)
    _option(ab, "--turn-samples", type=int, default=None, metavar="K",
            help="both arms measure at once, taking turns of K round trips (default 50); 0: one run after the other")
    _option(ab, "--inject-delay-ns", default=None, metavar="D|name=D,...",
            help="the candidate's echo busy-waits D ns: a known regression to calibrate the gate (recorded)")
    _option(ab, "--threshold", type=non_negative_float, default=None,
            help="relative change that is not yet a regression (default 0.01 = 1 %%)")
    _option(ab, "--alpha", type=non_negative_float, default=None,
            help="family-wise false-alarm level of the whole verdict (default 0.02)")
    _option(ab, "--label", type=label, default=None, help="label (default: the output folder's name)")
    _no_plots(ab)

    ab_tp = command("ab-throughput", "perfgate.ab.throughput:command_ab_throughput",
                    "measure two Fast DDS builds' throughput in interleaved rounds and decide (a drop is a regression)")
    _option(ab_tp, "--output", required=True, metavar="DIR", help="A/B folder to write (absent or empty)")
    _option(ab_tp, "--baseline", required=True, metavar="SPEC", help="as for ab")
    _option(ab_tp, "--candidate", required=True, metavar="SPEC", help="as for ab")
    _option(ab_tp, "--rounds", type=positive_int, default=None, help="interleaved rounds (default 13; --quick 10)")
    _option(ab_tp, "--quick", action="store_true", help="10 rounds of 0.5 s tests")
    _option(ab_tp, "--subexperiments", type=name_list, default=None, help="as for throughput (default: the ten)")
    _option(ab_tp, "--payloads", type=payload_list, default=None, help="default 16,16384")
    _option(ab_tp, "--demands", type=demand_list, default=None, help="as for throughput (default 1000: saturating)")
    _option(ab_tp, "--recovery-times", type=millisecond_list, default=None, metavar="MS", help="as for throughput (default 0)")
    _option(ab_tp, "--time", type=positive_float, default=None, metavar="SECONDS", help="per test (default 1; --quick 0.5)")
    _option(ab_tp, "--pin-cpus", type=pin_request, default=None, metavar="auto|none|PUB,SUB", help="as for ab")
    _option(ab_tp, "--cpu-latency", dest="cpu_latency_request", choices=cpu_latency.CHOICES, default=None,
            help=CPU_LATENCY_HELP)
    _option(ab_tp, "--threshold", type=non_negative_float, default=None,
            help="relative drop that is not yet a regression (default 0.01: below baseline / 1.01)")
    _option(ab_tp, "--alpha", type=non_negative_float, default=None,
            help="family-wise false-alarm level of the whole verdict (default 0.02)")
    _option(ab_tp, "--label", type=label, default=None, help="label (default: the output folder's name)")
    _no_plots(ab_tp)

    decide = command("verdict", "perfgate.ab.report:command_verdict",
                     "decide from the stored rounds of an A/B folder (latency or throughput): exact paired sign "
                     "test, Holm-corrected")
    _option(decide, "--ab-directory", required=True, metavar="DIR")
    _option(decide, "--threshold", type=non_negative_float, default=None,
            help="relative change that is not yet a regression (default 0.01 = 1 %%)")
    _option(decide, "--alpha", type=non_negative_float, default=None,
            help="family-wise false-alarm level of the whole verdict (default 0.02)")
    _no_plots(decide)

    # --- process ---
    process = command("process", "perfgate.latency.process:command_process",
                      "raw measurements -> summary CSV and per-payload plots")
    _option(process, "--raw-csv", metavar="F", help="one raw measurements CSV")
    _option(process, "--output-csv", metavar="F", help="the summary CSV to write")
    _option(process, "--plots-directory", metavar="D", help="where the plots go")
    _option(process, "--experiment-directory", metavar="D", help="process every raw CSV of an experiment folder")
    _option(process, "--jobs", type=positive_int, default=None, help="parallel workers (default: all cores)")
    _no_plots(process)

    compare_subs = command("compare-subexperiments", "perfgate.latency.process:command_compare_subexperiments",
                           "plot min, median, max and 99%% against payload, one line per sub-experiment")
    _option(compare_subs, "--plots-directory", required=True, metavar="D")
    _option(compare_subs, "--subexperiment-summaries", required=True, nargs="+", metavar="F")
    _no_plots(compare_subs)

    # --- check and JUnit ---
    check = command("check", "perfgate.latency.check:command_check", "check summaries against a requirements CSV")
    _option(check, "--requirements", required=True, metavar="F")
    _option(check, "--experiment-directory", required=True, metavar="D")
    _option(check, "--plots-directory", required=True, metavar="D")
    _option(check, "--print-summaries", action="store_true", help="print each check report")
    _option(check, "--junit", default=None, metavar="F", help="also write the JUnit file")
    _option(check, "--resources-requirements", default=None, metavar="F",
            help="also check the harness processes' resources (requirements/<platform>_resources.json)")
    _no_plots(check)

    junit = command("junit", "perfgate.latency.junit:command_junit", "JUnit XML from an experiment folder's check reports")
    _option(junit, "--experiment-directory", required=True, metavar="D")
    _option(junit, "--output", required=True, metavar="F")
    _option(junit, "--requirements", default=None, metavar="F",
            help="requirements CSV for file/line annotations (default: the one recorded by check)")

    # --- history, requirements, compare ---
    history = command("history", "perfgate.history.latency:command_history", "redraw the history plots of a results store")
    _option(history, "--requirements", required=True, metavar="F")
    _option(history, "--experiments-results", required=True, metavar="D",
            help="results store, or its experiments/ folder: one experiment folder per run")
    _option(history, "--plots-directory", required=True, metavar="D",
            help="where the plots, change_points.csv and the Otava export go")
    _option(history, "--alpha", type=probability, default=0.01,
            help="family-wise false-alarm level of the change points over all series (default 0.01)")
    _option(history, "--baseline", action="append", default=None, metavar="D",
            help="a stored baseline (baselines/<platform>/) drawn as a reference line; repeat for release baselines")
    _no_plots(history)

    store_cli.add_arguments(command("store", "perfgate.store.cli:command_store", store_cli.HELP), _option)

    determine = command("determine-requirements", "perfgate.latency.requirements:command_determine_requirements",
                        "derive requirements from many runs of one commit")
    _option(determine, "--experiments-results", required=True, metavar="D",
            help="folder of experiment folders (runs of one commit), or a results store")
    _option(determine, "--output-file", required=True, metavar="F")
    _option(determine, "--percentile", type=percentile, default=99.0)
    _option(determine, "--margin", type=non_negative_float, default=0.0,
            help="raise every requirement by this fraction of itself (0.25 = +25%%); the printed false-alarm "
                 "figures say what it buys")

    compare = command("compare", "perfgate.latency.compare:command_compare", "compare a target experiment with a reference")
    _option(compare, "--reference", required=True, metavar="D")
    _option(compare, "--results", required=True, metavar="D")
    _option(compare, "--plots-directory", required=True, metavar="D")
    _option(compare, "--fail-threshold", type=non_negative_float, default=0.1)
    _no_plots(compare)

    # --- gate (everything, end to end) and baselines ---
    gate = command("gate", "perfgate.gate.run:command_gate",
                   "run, process, check, compare with the baseline, add to history and report: one verdict")
    _option(gate, "--output", required=True, metavar="DIR", help="experiment folder to write (absent or empty)")
    _option(gate, "--experiments", type=name_list, default=None, metavar="latency[,throughput][,resources]",
            help="besides latency: throughput (quick with --quick; checked against requirements/<platform>_throughput.csv "
                 "where it exists), resources (checked against requirements/<platform>_resources.json); default latency")
    _option(gate, "--quick", action="store_true", help=f"200 samples per payload instead of {s.DEFAULT_SAMPLES}")
    _option(gate, "--samples", type=positive_int, default=None, help="round trips per payload (overrides --quick)")
    _option(gate, "--payloads", type=payload_list, default=None, help="e.g. 16,32,64 (default: all eleven)")
    _option(gate, "--subexperiments", type=name_list, default=None,
            help="comma-separated sub-experiment names (default: the ten of the contract and the machine's floor)")
    _option(gate, "--platform", default=None, metavar="NAME",
            help="reference platform name (default: $PERFGATE_PLATFORM, else 'local')")
    _option(gate, "--requirements", default=None, metavar="F", help="default: requirements/<platform>.csv")
    _option(gate, "--throughput-requirements", metavar="F", help="default: requirements/<platform>_throughput.csv")
    _option(gate, "--baseline", metavar="DIR", help="baseline experiment (default: baselines/<platform>/, skipped when absent)")
    _option(gate, "--fail-threshold", type=non_negative_float, default=0.1,
            help="baseline comparison: fail above baseline * (1 + threshold)")
    _option(gate, "--store", default=None, metavar="DIR",
            help=f"results store to add the run to and redraw the history of (default: ${s.STORE_ENV}, else none)")
    _option(gate, "--history", dest="history", action="store_const", const=True, default=None,
            help=f"add the run to the store (--store or ${s.STORE_ENV}); an error when there is none")
    _option(gate, "--no-history", dest="history", action="store_const", const=False,
            help=f"do not add the run to a store, even with --store or ${s.STORE_ENV}")
    _option(gate, "--fastdds", default=None, metavar="system|workspace|DIR",
            help=f"the Fast DDS to measure: system (the system's, whatever ${s.WORKSPACE_ENV} says), workspace "
                 f"(${s.WORKSPACE_ENV}'s build), or a `perfgate build` workspace or colcon install prefix; default: "
                 f"${s.WORKSPACE_ENV} when set, else the system's (the gate says which, and why)")
    _option(gate, "--fastdds-prefix", default=None, metavar="DIR",
            help="install prefix of the Fast DDS to measure (a colcon install)")
    _option(gate, "--pin-cpus", type=pin_request, default=None, metavar="auto|none|PUB,SUB",
            help="pin publisher and subscriber to these CPUs (isolated CPUs of a reference machine included; "
                 "default: $PERFGATE_PIN_CPUS, else auto)")
    _option(gate, "--cpu-latency", dest="cpu_latency_request", choices=cpu_latency.CHOICES, default=None,
            help=CPU_LATENCY_HELP)
    _option(gate, "--workspace", default=None, metavar="WS",
            help="a `perfgate build` workspace: measure its Fast DDS; a failed build is the JUnit error \"build\" (exit 3) "
                 f"(default: ${s.WORKSPACE_ENV}, see --fastdds)")
    _option(gate, "--baseline-build", default=None, metavar="SPEC",
            help="decide by an A/B against this Fast DDS ('system', a colcon install prefix or a `perfgate build` "
                 "workspace): interleaved pinned rounds, exact paired test (perfgate ab); the requirement checks "
                 "still run as a gross-failure check")
    _option(gate, "--label", type=label, default=None, help="experiment label (default: <output name>-<UTC time>)")
    _option(gate, "--summary-markdown", default=None, metavar="F",
            help="append the Markdown summary to F (e.g. $GITHUB_STEP_SUMMARY)")
    _option(gate, "--annotations", action="store_true",
            help="print ::error annotations for the worst regressions (always on when GITHUB_ACTIONS=true)")

    promote = command("promote-baseline", "perfgate.store.baseline:command_promote_baseline",
                      "make an experiment the baseline of a platform (summaries and metadata, replaced atomically)")
    _option(promote, "--experiment", required=True, metavar="DIR")
    _option(promote, "--platform", required=True, metavar="NAME")
    _option(promote, "--baselines-dir", default="baselines", metavar="DIR")

    # --- build (Fast DDS from source, with colcon) ---
    build = command("build", "perfgate.fastdds.build:command_build",
                    "build a Fast DDS source and the harness in a persistent colcon workspace (Release, security, "
                    "performance tests)")
    _option(build, "--workspace", required=True, metavar="WS", help="colcon workspace, kept between builds")
    _option(build, "--source", default=None, metavar="DIR", help="a local Fast DDS source folder (mirrored into WS)")
    _option(build, "--git-url", default=None, metavar="URL", help="a Fast DDS repository (with --commit)")
    _option(build, "--commit", default=None, metavar="REF",
            help="what of --git-url to build: a commit, tag or branch; parent:<rev> (the first parent of <rev>); "
                 "merge-base:<rev>,<other> (where <rev> branched off <other>)")
    _option(build, "--fastcdr-source", default=None, metavar="DIR",
            help="build Fast CDR from this source (default: the system's, when its major version fits)")
    _option(build, "--fastcdr-url", default=None, metavar="URL",
            help="fetch the Fast CDR commit the Fast DDS commit pins (thirdparty/fastcdr) from this repository "
                 "instead of the URL its .gitmodules gives (a mirror; used where that pin is built)")
    _option(build, "--foonathan-memory-source", default=None, metavar="DIR",
            help="build foonathan_memory_vendor from this source (default: the system's)")
    _option(build, "--jobs", type=positive_int, default=None, help="parallel compile jobs (default: all cores)")
    _option(build, "--no-ccache", action="store_true", help="compile without ccache")
    _option(build, "--junit", default=None, metavar="F", help="also write a JUnit file with the testcase \"build\"")
    _option(build, "--keep-installs", type=int, default=None, metavar="N",
            help="keep the installs of the last N commits built in WS/installs/<commit> (a copy with its own record, "
                 "usable as a workspace), the least recently built or used removed; a commit kept with the same "
                 "harness sources and CMake arguments is not built again; 0 keeps none (default: 3)")
    _option(build, "--keep-as", default=None, metavar="NAME",
            help="also make WS/installs/NAME (a plain name, e.g. baseline) point at this commit's kept install; "
                 "pruning keeps what a name points to")
    add_pr_comment(command, _option)
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
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
