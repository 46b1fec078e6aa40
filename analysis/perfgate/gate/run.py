"""gate.run: the whole gate for one Fast DDS build, end to end, with one verdict and one exit code.

run -> process (summaries, plots, sub-experiment comparison plots) -> check (+ JUnit) -> compare
with the platform's baseline -> throughput -> A/B -> add to the results store and redraw history ->
reports (HTML page, Markdown summary, `::error` annotations). Each step is its module's typed
function (run.measure_latency, process.process_folder, check.check_folder, ...), given the plan's
values as validated once (the requirements read once, the run's options resolved once).

Everything a maintainer could get wrong (platform, requirements, baseline, store, label, output
folder) is checked before measuring (gate_plan), so a usage error costs seconds, not a run. After measuring,
a step that cannot finish is recorded and the gate goes on: what finished is still checked and
reported, and the exit code is 3 (docs/formats.md section 11).
"""
from __future__ import annotations

import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from ..ab import latency as ab, throughput as ab_throughput
from ..latency import check, compare, process, run
from .. import claims, files, outcome, outputs, report
from ..history import latency as history
from ..store import experiments as store
from .. import schema as s
from ..throughput import run as throughput, check as throughput_check
from ..errors import IncompleteError, InputError, PerfgateError
from ..escape.workflow import log_text
from . import budget
from .failed_build import gate_failed_build
from .pooled import pool_candidate
from ..fastdds.record import harness_paths
from .which_fastdds import GateFastDDS, choose_fastdds
from .plan import GatePlan, plan_gate
from .request import GateRequest
from .topology_step import describe as describe_topologies, run_topologies
from ..history.baselines import history_baselines
from ..latency.junit import annotation_path, build_junit_xml
from ..model import read_metadata
from ..report.ab_view import STATUS_WORDS
from ..measure.platform_info import this_machine
from ..throughput.files import table_paths



# --- running the steps ----------------------------------------------------------------------------
class Steps:
    """Calls each step; a step that cannot finish (exit 3 or IncompleteError), or bad input that only
    shows after measuring (InputError), is recorded with what it means, and the gate goes on with what
    there is, so that the reports are written all the same."""

    # after an interruption only these run (without plots), so the reports say what was measured
    WRAP_UP_STEPS = ("pool", "process", "check")

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.codes: dict[str, int] = {}
        self.interrupted = False  # SIGINT or SIGTERM (a cancelled or timed-out CI job)

    def call(self, name: str, incomplete_means: str | None, step: Callable[[], int]) -> int:
        """Run step (the step's own function, its arguments bound); incomplete_means: what exit 3 of this
        step says; None when the reports show it themselves (check's missing data)."""
        if self.interrupted and name not in self.WRAP_UP_STEPS:
            self.codes[name] = s.EXIT_INCOMPLETE
            return s.EXIT_INCOMPLETE
        try:
            code = int(step())
        except PerfgateError as error:  # incomplete, or bad input only visible now: reported all the same
            self.errors.append(f"{name}: {error}")
            code = error.exit_code
        except KeyboardInterrupt:
            if self.interrupted:
                raise  # a second signal while wrapping up: stop now
            self.interrupted = True
            self.errors.append(f"{name}: interrupted (SIGINT or SIGTERM); the reports show what was measured until then")
            code = s.EXIT_INCOMPLETE
        else:
            if code not in (s.EXIT_OK, s.EXIT_REGRESSION) and incomplete_means is not None:
                self.errors.append(f"{name}: {incomplete_means}")
        self.codes[name] = code
        return code


def store_files(experiment_dir: Path) -> dict[str, Path]:
    """What the results store keeps of a run, by its path in the stored experiment: metadata, summaries,
    check reports, JUnit, the raw measurements gzip'd (`measurements_<sub>.csv.gz`: about 6 MB a run of
    10000 samples, so that any old run can be re-processed), the throughput tables and the A/B verdict.
    Not plots (about 20 MB a run, redrawn from the rest) nor the A/B's rounds."""
    kept = [experiment_dir / s.METADATA_FILE, *files.summary_files(experiment_dir, required=False).values(),
            *files.check_files(experiment_dir).values(), experiment_dir / s.JUNIT_FILE]
    # the throughput tables and their checks, when the gate measured throughput: small, and the
    # history of throughput across commits needs them (names never collide with the latency files)
    throughput = experiment_dir / s.THROUGHPUT_DIR
    kept += sorted(throughput.glob(f"{s.THROUGHPUT_PREFIX}*.csv")) if throughput.is_dir() else []
    named = {path.name: path for path in kept if path.is_file()}
    named.update({s.stored_raw_name(sub): path for sub, path in files.raw_files(experiment_dir).items()
                  if path.name == s.raw_csv_name(sub)})
    # the A/B verdicts, so that the history marks each commit's latency verdict (history_ab); the
    # throughput A/B's is kept beside its tables for the same reason, not yet drawn
    for ab_dir in (s.AB_DIR, f"{s.THROUGHPUT_DIR}/{s.AB_DIR}"):
        named.update({f"{ab_dir}/{name}": experiment_dir / ab_dir / name for name in (s.VERDICT_CSV, s.VERDICT_JSON)
                      if (experiment_dir / ab_dir / name).is_file()})
    named.update(store.topology_files(experiment_dir))  # each topology's tables: the history of topologies
    return named


def write_unmeasured_junit(plan: GatePlan) -> None:
    """Nothing was measured (the run was interrupted or every sub-experiment failed): the JUnit file
    still lists every requirement the run asked for, each an error, so a CI reporter shows a failure,
    never a pass."""
    metadata = read_metadata(plan.output) if plan.output.is_dir() else None
    plan.output.mkdir(parents=True, exist_ok=True)
    # the rows the run was not asked for are no testcase, as in check (perfgate.latency.requested)
    not_asked = check.split_missing({}, plan.required, plan.requested)[1]
    files.write_text(plan.output / s.JUNIT_FILE, build_junit_xml({}, plan.required, plan.requirements, [], metadata,
                                                                 not_asked=not_asked))


def run_steps(plan: GatePlan, steps: Steps, fastdds: GateFastDDS, fail_threshold: float) -> bool:
    """Run every step of the plan; True when the experiment was compared with the baseline."""
    output = plan.output
    plots = output / s.PLOTS_DIR
    if plan.baseline_build is None:
        steps.call("run", "not every sub-experiment finished (see its outcome in metadata.json)",
                   lambda: run.measure_latency(plan.run_options, fastdds.record))
    else:  # the A/B decides: the checks see its candidate arm's samples, pooled; no run of their own
        steps.call("pool", "the A/B has no candidate samples of some sub-experiment (see metadata.json)",
                   lambda: pool_ab_candidate(plan))
    if output.is_dir() and files.raw_files(output):
        # with a whole folder, process also draws the sub-experiment comparison plots (plots/comparison_*.png)
        steps.call("process", "the measurements could not be processed",
                   lambda: process.process_folder(output, plots=not steps.interrupted))
    summaries = files.summary_files(output, required=False) if output.is_dir() else {}
    if not summaries:
        steps.errors.append("no sub-experiment produced measurements: nothing to check")
        write_unmeasured_junit(plan)
        return False
    # exit 3 of check is missing data, which the reports list themselves
    steps.call("check", None,
               lambda: check.check_folder(plan.required, plan.requirements, output,
                                          plots=None if steps.interrupted else plots, junit=output / s.JUNIT_FILE,
                                          resources_requirements=plan.resources_requirements,
                                          margins=plan.gross_margins))
    compared = False
    if plan.baseline is not None:
        steps.call("baseline comparison", "the experiment lacks sub-experiments or payloads that the baseline has",
                   lambda: compare.compare_experiments(plan.baseline, output, plots / s.BASELINE_COMPARISON_DIR,
                                                       fail_threshold))
        compared = True
    return compared


def pool_ab_candidate(plan: GatePlan) -> int:
    """The experiment folder as the A/B's candidate arm pooled (gate.pooled); exit 3 when a gated
    sub-experiment has no candidate samples (its requirements are then missing data in the check)."""
    ab_dir = plan.output / s.AB_DIR
    if not (ab_dir / s.AB_ROUNDS_DIR).is_dir():
        raise IncompleteError("the A/B measured no round: nothing to check", ab_dir)
    gated = [name for name in plan.subexperiments if not s.KNOWN_SUBEXPERIMENTS[name].is_floor]
    pooled = pool_candidate(ab_dir, plan.output, gated, plan.payloads, plan.label)
    print("perfgate gate: requirement checks on the A/B's candidate samples: "
          + ", ".join(f"{sub} {rounds} round(s)" for sub, rounds in pooled.items()), flush=True)
    return s.EXIT_OK if all(pooled.values()) else s.EXIT_INCOMPLETE


def store_and_redraw(plan: GatePlan, steps: Steps) -> None:
    """Add the run to the results store and redraw its history; after every measurement and the A/B,
    so that the store keeps the throughput tables and the A/B verdict too. The history draws the
    platform's stored baseline and the release baselines beside it, as the nightly history does."""
    if plan.store is None or steps.interrupted:  # a run cut short never enters the history
        return
    if not (plan.output.is_dir() and files.summary_files(plan.output, required=False)):
        return  # nothing measured: nothing to keep
    try:
        store.add_experiment(plan.store, plan.label, store_files(plan.output))
    except InputError as error:  # the label was taken while this run measured
        steps.errors.append(f"history: {error}")
        return
    except OSError as error:  # a full disk or a read-only store: the run is reported all the same
        steps.errors.append(f"history: could not add the run to {plan.store}: {error}")
        return
    try:
        metadata = read_metadata(plan.output)
        platform = metadata.platform if metadata is not None else None
        baselines, notes = history_baselines(plan.baseline or Path(s.BASELINES_DIR) / plan.platform,
                                             platform.id if platform is not None else None)
    except InputError as error:  # a damaged baseline folder: the history is drawn without baselines
        steps.errors.append(f"history: {error}")
        baselines, notes = [], []
    for note in notes:
        print(f"perfgate gate: note: {log_text(note)}", file=sys.stderr)
    steps.call("history", "the history could not be redrawn",
               lambda: history.redraw_history(plan.required, plan.requirements, plan.store,
                                              plan.store / s.STORE_HISTORY_DIR, baselines=list(baselines)))


def run_ab(plan: GatePlan, steps: Steps, quick: bool, candidate: str) -> str | None:
    """The A/B against the baseline build, in <output>/ab/; its headline, or None when none ran."""
    if plan.baseline_build is None:
        return None
    ab_dir = plan.output / s.AB_DIR
    gated = [name for name in plan.subexperiments if not s.KNOWN_SUBEXPERIMENTS[name].is_floor]
    # the whole gate's false-alarm budget (gate.budget): this A/B's level, and the rounds it needs
    level = budget.ab_levels(throughput_ab(plan))[0]
    rounds = budget.rounds_for(2 * len(gated), level, ab.QUICK_ROUNDS if quick else ab.DEFAULT_ROUNDS,
                               one_round_against=not quick)
    steps.call("A/B verdict", "the A/B against the baseline build could not decide (see ab/)",
               lambda: ab.measure_ab(ab.plan_ab(output=ab_dir, baseline=plan.baseline_build, candidate=candidate,
                                                quick=quick, rounds=rounds, subexperiments=gated,
                                                payloads=plan.payloads, pin_cpus=plan.pin_cpus,
                                                label=f"{plan.label}-ab",
                                                cpu_latency_request=plan.cpu_latency_request,
                                                layouts=plan.layouts), alpha=level,
                                    layout_read=plan.layout_thresholds))
    record = files.read_json_object(ab_dir / s.VERDICT_JSON, "A/B verdict")
    return str(record["headline"]) if record and "headline" in record else None


def throughput_ab(plan: GatePlan) -> bool:
    """Does this gate run the throughput A/B (a share of the false-alarm budget goes to it)?"""
    return plan.baseline_build is not None and "throughput" in plan.experiments and any(
        not s.KNOWN_SUBEXPERIMENTS[name].is_floor and s.KNOWN_SUBEXPERIMENTS[name].subscribers == 1
        and not s.KNOWN_SUBEXPERIMENTS[name].zero_copy for name in plan.subexperiments)


def throughput_run_payloads(plan: GatePlan, quick: bool) -> list[int] | None:
    """The throughput run's payloads: the quick ones (16 and 16384 B) when the gate is quick or when its
    throughput A/B decides (issue 28 item 6); None (all eleven) otherwise. With the A/B deciding, the
    run serves only the requirement checks, which catch gross failures, and the history: the eleven
    payloads' 22 tests per sub-experiment took 4.4 of the per-commit recipe's 16 minutes for that."""
    return list(s.QUICK_THROUGHPUT_PAYLOADS) if quick or throughput_ab(plan) else None


def run_throughput(plan: GatePlan, steps: Steps, quick: bool, fastdds: GateFastDDS) -> str | None:
    """The throughput experiment in <output>/throughput/, checked against the platform's throughput
    requirements where it has them; its headline, or None when it was not asked for."""
    if "throughput" not in plan.experiments:
        return None
    folder = plan.output / s.THROUGHPUT_DIR
    # the throughput experiment runs the one-subscriber, copying sub-experiments (not a floor, not
    # one-to-many, not zero copy: docs/formats.md section 15)
    subs = [name for name in plan.subexperiments if not s.KNOWN_SUBEXPERIMENTS[name].is_floor
            and s.KNOWN_SUBEXPERIMENTS[name].subscribers == 1 and not s.KNOWN_SUBEXPERIMENTS[name].zero_copy]
    if not subs:  # (an empty list would be the command's default set, the ten)
        return f"{outcome.MEASURED}: none of the gate's sub-experiments has a throughput experiment"
    options = plan.run_options
    measured = steps.call("throughput", "not every throughput sub-experiment finished (see throughput/metadata.json)",
                          lambda: throughput.measure_throughput(throughput.throughput_options(
                              output=folder, names=subs, settings=throughput.plan_settings(None, None, None),
                              payloads=throughput_run_payloads(plan, quick),
                              label=f"{plan.label}-throughput", harness=options.harness,
                              fastdds_prefix=options.fastdds_prefix, pin_cpus=plan.pin_cpus,
                              cpu_latency_request=plan.cpu_latency_request), fastdds.record))
    if plan.throughput_requirements is None:
        headline = throughput_check.measured_headline(folder, measured)
    elif not table_paths(folder):
        headline = f"{outcome.INCOMPLETE}: no throughput measured"
    else:
        code = steps.call("throughput check", None, lambda: throughput_check.check_throughput_folder(
            plan.throughput_table, plan.throughput_requirements, folder, junit=folder / s.JUNIT_FILE,
            plots=None if steps.interrupted else folder / s.PLOTS_DIR))
        headline = throughput_check.checked_headline(folder, outcome.most_severe(code, measured))
    ab_headline = run_throughput_ab(plan, steps, quick, subs, candidate=fastdds.spec)
    return headline if ab_headline is None else joined_headline(headline, ab_headline)


def run_throughput_ab(plan: GatePlan, steps: Steps, quick: bool, subs: list[str], candidate: str) -> str | None:
    """With a baseline build, the throughput A/B in <output>/throughput/ab/: its headline, or None."""
    if plan.baseline_build is None or steps.interrupted:
        return None
    ab_dir = plan.output / s.THROUGHPUT_DIR / s.AB_DIR
    level = budget.ab_levels(True)[1]
    steps.call("throughput A/B verdict",
               "the throughput A/B against the baseline build could not decide (see throughput/ab/)",
               lambda: ab_throughput.measure_ab_throughput(ab_throughput.plan_ab_throughput(
                   output=ab_dir, baseline=plan.baseline_build, candidate=candidate, quick=quick, subexperiments=subs,
                   rounds=budget.rounds_for(len(subs), level, ab_throughput.QUICK_ROUNDS if quick
                                            else ab_throughput.DEFAULT_ROUNDS, one_round_against=not quick),
                   pin_cpus=plan.pin_cpus, label=f"{plan.label}-throughput-ab",
                   cpu_latency_request=plan.cpu_latency_request, layouts=plan.layouts), alpha=level))
    record = files.read_json_object(ab_dir / s.VERDICT_JSON, "throughput A/B verdict")
    return str(record["headline"]) if record and "headline" in record else f"{outcome.INCOMPLETE}: no verdict"


def joined_headline(check: str, ab_headline: str) -> str:
    """The throughput's headline: the worse status of its check (or measurement) and its A/B first."""
    status, _, said = check.partition(": ")
    ab_status, _, ab_said = ab_headline.partition(": ")
    statuses = [status, ab_status]
    worst = next((status for status in (outcome.REGRESSION, outcome.INCOMPLETE) if status in statuses), statuses[0])
    # one verdict word per banner: the worst one, the A/B's own in words ("REGRESSION: PASS: ..." said neither)
    return f"{worst}: {said}; A/B against the baseline build {STATUS_WORDS.get(ab_status, ab_status)}: {ab_said}"


def ab_annotations(ab_dir: Path) -> list[str]:
    """One `::error` per failed A/B test: no file or line (the regression is in Fast DDS, not in a
    file of this repository), the sub-experiment and statistic in the title."""
    record = files.read_json_object(ab_dir / s.VERDICT_JSON, "A/B verdict")
    lines = []
    for failed in (record or {}).get("failed", []):
        title = report.escape_command_property(f"perfgate A/B: {failed['subexperiment']} {failed['statistic']}")
        if "upper_bound" in failed:  # a throughput: less is worse (ab_throughput_report)
            bound = "n/a" if failed["upper_bound"] is None else f"{failed['upper_bound']:.3f}x"
            ratio = "n/a" if failed["ratio"] is None else f"{failed['ratio']:.3f}x"
            compared = f"candidate {ratio} the baseline's throughput (upper bound {bound})"
        else:
            compared = f"candidate {failed['ratio']:.3f}x the baseline (lower bound {failed['lower_bound']:.3f}x)"
        text = (f"{failed['subexperiment']} {failed['statistic']}: {compared}, Holm-adjusted p "
                f"{failed['adjusted_p_value']:.3g}, {failed['rounds']} rounds")
        lines.append(f"::error title={title}::{report.escape_command_data(text)}")
    return lines


def final_exit_code(verdict: report.Verdict, step_codes: dict[str, int]) -> int:
    """The most severe of the report's verdict and the steps' own exit codes (2 over 1 over 3 over 0)."""
    return outcome.most_severe(verdict.exit_code, *step_codes.values())


# --- the command ----------------------------------------------------------------------------------
def command_gate(**options) -> int:
    """`perfgate gate` (commands/gate.py): the parsed command line, as one GateRequest."""
    return run_gate(GateRequest(**options), dict(os.environ))


def run_gate(request: GateRequest, environment: dict[str, str]) -> int:
    output, label, summary_markdown = request.output, request.label, request.summary_markdown
    if summary_markdown is not None:  # a folder there would show after measuring, as a traceback
        outputs.require_appendable(summary_markdown, "summary_markdown")
    # said first, whatever follows: a gate never measures a Fast DDS nobody sees it chose
    chosen = choose_fastdds(workspace=request.workspace, fastdds_prefix=request.fastdds_prefix,
                            fastdds=request.fastdds, environment=environment)
    print(f"perfgate gate: Fast DDS: {log_text(chosen.describe())}", flush=True)
    if not chosen.built:  # a `perfgate build` workspace whose build failed: the JUnit error "build" (exit 3)
        return gate_failed_build(chosen.record, output=output, label=label, summary_markdown=summary_markdown)
    harness, prefix = None, chosen.prefix
    if chosen.record:
        try:
            harness, prefix = harness_paths(chosen.record, chosen.workspace)
        except IncompleteError as error:  # built, but its harness is gone: reported like a failed build (exit 3)
            unusable = {**chosen.record, "status": s.BUILD_FAILED, "error": error.message, "log": str(error.path)}
            return gate_failed_build(unusable, output=output, label=label, summary_markdown=summary_markdown)
    machine = this_machine()
    plan = plan_gate(request, environment=environment, this_platform_id=machine.id, this_cpu_model=machine.cpu_model,
                     now=datetime.now(timezone.utc), harness=harness, prefix=prefix)
    if plan.platform_note:
        print(f"perfgate gate: {log_text(plan.platform_note)}", flush=True)
    measured = (f"{plan.samples} samples" if plan.baseline_build is None
                else "checked on the A/B's candidate samples (no run of their own), failing on a gross miss only")
    print(f"perfgate gate: platform {log_text(plan.platform)}, requirements {log_text(plan.requirements)}, {measured}, "
          f"{len(plan.subexperiments)} sub-experiment(s) x {len(plan.payloads)} payload(s), label {log_text(plan.label)}, "
          + (f"results store {log_text(plan.store)} (from {'--store' if request.store is not None else '$' + s.STORE_ENV})"
             if plan.store else "not added to a results store")
          + (f"; A/B against {log_text(plan.baseline_build)} decides" if plan.baseline_build else "")
          + ("; throughput " + (f"checked against {log_text(plan.throughput_requirements)}" if plan.throughput_requirements
                                else "measured (no throughput requirements for this platform)")
             if "throughput" in plan.experiments else "")
          + (f"; topologies {log_text(describe_topologies(plan.topologies))}" if plan.topologies else ""))
    for warning in plan.warnings + ((plan.platform_mismatch,) if plan.platform_mismatch else ()):
        print(f"perfgate gate: warning: {log_text(warning)}", file=sys.stderr)
    # claimed before anything is measured or written: of two gates into one --output, one is exit 2
    with claims.claimed(plan.output):
        steps = Steps()
        with run.terminate_as_interrupt():  # SIGTERM as Ctrl-C: steps stop, the reports are still written
            # with a baseline build the A/B comes first: its candidate samples are what the checks see
            ab_headline = run_ab(plan, steps, request.quick, candidate=chosen.spec)
            compared = run_steps(plan, steps, chosen, request.fail_threshold)
            plan.output.mkdir(parents=True, exist_ok=True)
            throughput_headline = run_throughput(plan, steps, request.quick, chosen)
            topology_headline = run_topologies(plan, steps, plan.topologies, request.quick, candidate=chosen.spec)
            store_and_redraw(plan, steps)  # last: the stored run keeps the A/B verdict
        results = report.load(plan.output, plan.requirements, requirements=plan.required, baseline_compared=compared,
                              fastdds_note=chosen.describe(),
                              baseline_note=plan.baseline_note, step_errors=steps.errors, ab_headline=ab_headline,
                              warnings=list(plan.warnings), throughput_headline=throughput_headline,
                              topology_headline=topology_headline,
                              platform_name=plan.platform if plan.platform_named else None,
                              platform_mismatch=plan.platform_mismatch)
        html_path, _ = report.write_reports(results, Path(summary_markdown) if summary_markdown else None,
                                            interrupted=steps.interrupted)
        # the latency and throughput A/Bs' tables are in the gate's own summary (report.ab_view): only the
        # topology A/Bs' tables follow it (the step summary showed the A/B table twice)
        for ab_markdown in (t.plan.output / s.AB_DIR / s.REPORT_MARKDOWN for t in plan.topologies):
            if summary_markdown and ab_markdown.is_file():
                with open(summary_markdown, "a", encoding="utf-8") as handle:
                    handle.write("\n" + ab_markdown.read_text(encoding="utf-8"))
        if request.annotations or environment.get("GITHUB_ACTIONS") == "true":
            for line in report.annotations(results, annotation_path(plan.requirements)):
                print(line)
            for ab_dir in (plan.output / s.AB_DIR, plan.output / s.THROUGHPUT_DIR / s.AB_DIR):
                for line in ab_annotations(ab_dir):
                    print(line)
        verdict = report.verdict(results)
        code = final_exit_code(verdict, steps.codes)
        for error in steps.errors:
            print(f"perfgate gate: {log_text(error)}", file=sys.stderr)
        print(f"perfgate gate: {log_text(verdict.headline())}")
        print(f"perfgate gate: report {log_text(html_path.resolve())}")
        return code
