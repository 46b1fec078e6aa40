"""`perfgate false-alarms`: the whole gate's false-alarm rate, measured on the A/A gates of a results store.

The gate's 2 % budget (gate.budget, docs/verdict.md "One false-alarm budget for the whole gate") is a
design figure: a union bound over its parts' levels, the gross checks' share an estimate. A reference
runner that gates its build against itself every night (docs/ci.md "Nightly history") stores A/A
gates (store.aa_gates); of n of them, k failed the whole gate: false alarms, since nothing changed.
What the data say, exactly (scipy's binomial test, no approximation):

- the rate k / n with its two-sided 95 % Clopper-Pearson interval;
- whether they contradict the budget: the one-sided exact binomial p-value of k or more false
  alarms in n gates at the budget's rate (contradicted when p <= 0.05, the command's exit 1);
- how many more clean gates would show the rate at or below the budget at 95 % (the one-sided exact
  upper bound of k in n + m gates <= budget; k = 0: 149 gates in all).

Incomplete gates are counted apart: neither a pass nor a false alarm. `rate_figures` is pure; the
command reads the store (aa_gates), prints escaped text, and writes the CSV and the Markdown summary.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from scipy import stats

from .. import files, outputs
from .. import schema as s
from ..errors import IncompleteError, InputError
from ..escape import markdown, spreadsheet
from ..escape.workflow import log_text
from ..outcome import INCOMPLETE
from .aa_gates import FALSE_ALARM, AaGate, stored_aa_gates

CONFIDENCE = 0.95
LABEL, COMMIT, DATE, STATUS, FAILED_PARTS, INCOMPLETE_PARTS = (
    "Label", "Fast DDS commit", "Date", "Status", "Failed parts", "Incomplete parts")
CSV_COLUMNS = (LABEL, COMMIT, DATE, STATUS, FAILED_PARTS, INCOMPLETE_PARTS)
MAX_LISTED = 20  # false alarms listed one per line; the rest counted (the CSV has every one)
# the most gates counted: past 2**53 a float (the bound's argument) no longer tells one gate from the next
MAX_GATES = 2 ** 53


@dataclass(frozen=True)
class RateFigures:
    gates: int  # n: A/A gates that decided (a pass or a false alarm)
    false_alarms: int  # k
    low: float  # the two-sided 95 % Clopper-Pearson interval of k / n
    high: float
    p_value: float  # P(X >= k) for X ~ Binomial(n, budget): small when the data contradict the budget
    more_clean_gates: int  # clean gates still needed for a one-sided 95 % upper bound <= budget

    @property
    def rate(self) -> float:
        return self.false_alarms / self.gates

    def contradicts(self, confidence: float = CONFIDENCE) -> bool:
        return self.p_value <= 1 - confidence


def upper_bound(k: int, n: int, confidence: float = CONFIDENCE) -> float:
    """The one-sided exact (Clopper-Pearson) upper confidence bound of a rate with k of n: the beta quantile
    that scipy's binomtest solves for numerically (to an absolute 1e-12 or so, which is no answer for a
    budget near it, and whose integers overflow past 2**63 gates); 1 when every gate was a false alarm."""
    return 1.0 if k >= n else float(stats.beta.ppf(confidence, k + 1, float(n - k)))


def gates_to_show(k: int, n: int, budget: float, confidence: float = CONFIDENCE) -> int:
    """The fewest gates m >= n with k false alarms whose upper bound is <= budget (it falls with m):
    doubling, then bisection."""
    low, high = n, max(n, 1)
    while upper_bound(k, high, confidence) > budget:
        if high > MAX_GATES:
            raise InputError(f"--budget {budget:g}: no number of gates a float counts ({MAX_GATES}) would show the rate "
                             f"below it at {confidence:.0%}; give a budget a store of gates could show")
        low, high = high, high * 2
    while low < high:
        middle = (low + high) // 2
        if middle >= max(k, 1) and upper_bound(k, middle, confidence) <= budget:
            high = middle
        else:
            low = middle + 1
    return high


def rate_figures(k: int, n: int, budget: float, confidence: float = CONFIDENCE) -> RateFigures:
    """The figures of k false alarms in n decided A/A gates (n >= 1) against a false-alarm budget."""
    interval = stats.binomtest(k, n).proportion_ci(confidence, method="exact")
    p_value = float(stats.binomtest(k, n, budget, alternative="greater").pvalue)
    return RateFigures(n, k, float(interval.low), float(interval.high), p_value,
                       gates_to_show(k, n, budget, confidence) - n)


# --- what it prints and writes -------------------------------------------------------------------
def share(value: float) -> str:
    """A budget in per cent: '2%', and a tiny one as it is ('1e-10%'), never rounded to '0%'."""
    return f"{value * 100:.3g}%"


def figures_lines(figures: RateFigures, budget: float) -> list[str]:
    """The figures in words (no text from the store: nothing to escape)."""
    verdict = (f"the data contradict the {share(budget)} budget (p {figures.p_value:.3g} <= {1 - CONFIDENCE:.2f})"
               if figures.contradicts() else
               f"the data do not contradict the {share(budget)} budget (p {figures.p_value:.3g})")
    shown = (f"{figures.more_clean_gates} more clean gate(s) would show the rate <= {share(budget)} at "
             f"{CONFIDENCE:.0%} ({figures.gates + figures.more_clean_gates} in all)"
             if figures.more_clean_gates else
             f"the rate is shown <= {share(budget)} at {CONFIDENCE:.0%} (one-sided exact upper bound "
             f"{upper_bound(figures.false_alarms, figures.gates):.2%})")
    return [f"false-alarm rate {figures.rate:.2%} ({figures.false_alarms} of {figures.gates}), "
            f"{CONFIDENCE:.0%} Clopper-Pearson interval {figures.low:.2%} to {figures.high:.2%}",
            f"{verdict}: the exact binomial probability of {figures.false_alarms} or more false alarms in "
            f"{figures.gates} gate(s) at {share(budget)}", shown]


def gate_line(gate: AaGate) -> str:
    return (f"{gate.label} ({gate.commit}, {gate.date or 'no date'}): "
            f"{', '.join(gate.failed)}" + (f" (incomplete: {', '.join(gate.incomplete)})" if gate.incomplete else ""))


def gates_table(gates: list[AaGate]) -> pd.DataFrame:
    """One row per A/A gate, the store's texts made inert for a spreadsheet."""
    rows = [{LABEL: gate.label, COMMIT: gate.commit, DATE: gate.date, STATUS: gate.status,
             FAILED_PARTS: ";".join(gate.failed), INCOMPLETE_PARTS: ";".join(gate.incomplete)} for gate in gates]
    table = pd.DataFrame(rows, columns=list(CSV_COLUMNS))
    for column in (LABEL, COMMIT, DATE):
        table[column] = spreadsheet.cells(table[column])
    return table


def summary_markdown(gates: list[AaGate], figures: RateFigures | None, budget: float) -> str:
    """The step summary: the figures, then each false alarm (the store's texts escaped for Markdown)."""
    alarms = [gate for gate in gates if gate.status == FALSE_ALARM]
    incomplete = sum(1 for gate in gates if gate.status == INCOMPLETE)
    lines = ["## perfgate false alarms: the whole gate on A/A gates", ""]
    if figures is None:
        return "\n".join(lines + [f"No decided A/A gate in the store ({incomplete} incomplete).", ""])
    lines += [f"**{figures.gates}** A/A gates, **{figures.false_alarms}** false alarm(s), {incomplete} incomplete "
              "(not counted)", ""]
    lines += [f"- {line}" for line in figures_lines(figures, budget)]
    if alarms:
        lines += ["", "| Run | Fast DDS | Date | Failed |", "|---|---|---|---|"]
        lines += [f"| {markdown.text(g.label)} | {markdown.text(g.commit)} | {markdown.text(g.date)} | "
                  f"{', '.join(g.failed)} |" for g in alarms[:MAX_LISTED]]
        if len(alarms) > MAX_LISTED:
            lines.append(f"\nand {len(alarms) - MAX_LISTED} more in the CSV")
    return "\n".join(lines) + "\n"


def command_false_alarms(store: str, platform: str | None = None, output: str | None = None,
                         summary_markdown_file: str | None = None, budget: float = 0.02) -> int:
    if output is not None:
        outputs.require_writable(Path(output), "CSV output")
    if summary_markdown_file is not None:
        outputs.require_appendable(summary_markdown_file, "summary_markdown")
    gates, others = stored_aa_gates(Path(store), platform)
    alarms = [gate for gate in gates if gate.status == FALSE_ALARM]
    incomplete = [gate for gate in gates if gate.status == INCOMPLETE]
    decided = len(gates) - len(incomplete)
    figures = rate_figures(len(alarms), decided, budget) if decided else None  # before anything is written
    if output is not None and gates:  # no A/A gate: no file (exit 3 below)
        files.write_csv(Path(output), gates_table(gates))
    if summary_markdown_file is not None:
        with open(summary_markdown_file, "a", encoding="utf-8") as handle:
            handle.write(summary_markdown(gates, figures, budget))
    print(log_text(f"perfgate false-alarms: {len(gates)} A/A gate(s) in {store}"
                   + (f" (platform {platform})" if platform else "")
                   + f", {others} other stored run(s) not A/A; {len(incomplete)} incomplete, not counted"))
    if figures is None:
        raise IncompleteError("no A/A gate that decided: nothing to measure the false-alarm rate on (missing "
                              "data is never a pass)", store)
    print(f"perfgate false-alarms: n {decided} A/A gate(s), k {len(alarms)} false alarm(s)")
    for gate in alarms[:MAX_LISTED]:
        print(f"  FALSE ALARM: {log_text(gate_line(gate))}")
    if len(alarms) > MAX_LISTED:
        print(f"  and {len(alarms) - MAX_LISTED} more" + (f" in {log_text(output)}" if output else ""))
    for line in figures_lines(figures, budget):
        print(f"perfgate false-alarms: {line}")
    if output is not None:
        print(f"perfgate false-alarms: {log_text(output)}: one row per A/A gate")
    return s.EXIT_REGRESSION if figures.contradicts() else s.EXIT_OK

