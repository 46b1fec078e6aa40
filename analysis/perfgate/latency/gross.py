"""latency.gross: what a GROSS miss of a latency requirement is, with a baseline build (issue 28 item 1).

With a baseline build the A/B verdict decides whether a change made Fast DDS slower; the requirement
checks then only catch gross failures, so that the whole gate's false alarms stay within one budget
(docs/verdict.md "One false-alarm budget"). A check is a gross miss when its value is above the
requirement times 1 + the statistic's margin; a miss within the margin is a note (s.NOTED), never a
failure. The margins are per platform, `requirements/<platform>_gross.json` (docs/formats.md section
5b), derived here from unchanged runs:

- an unchanged gate's pooled statistic per payload is estimated from its rounds' summaries (the
  stored A/B rounds keep summaries only): Max exactly (the largest of the rounds' Max), Median and
  99 % as the quantile of the mixture of the rounds' distributions, each round's CDF linear between
  its Min, Median, 90 %, 99 %, 99.99 % and Max;
- sample counts matter (Max grows with the samples, the requirements were derived at 200 per
  payload): a gate of N pooled samples is simulated by drawing N / (samples per stored round) rounds
  with replacement from the unchanged rounds of each sub-experiment;
- per statistic, the worst ratio value / requirement over all checks of a simulated gate; the margin
  is HEADROOM times the largest such ratio seen, minus one: a gross miss is more than twice as far
  above the requirement as any unchanged gate went. The headroom stands for what a few dozen
  unchanged rounds cannot show (a 0.5 % tail); `false_alarm_figures` says what the data does show.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import files
from .. import schema as s
from ..errors import InputError

HEADROOM = 2.0  # the margin: this many times the worst ratio unchanged gates reached, minus one
MAX_MARGIN = 1000.0  # a margin above 100000 % is a typo, not a gross check
# each round's CDF is linear between these (value column, quantile) points
CDF_POINTS = ((s.MIN, 0.0), (s.MEDIAN, 0.5), (s.P90, 0.9), (s.P99, 0.99), (s.P9999, 0.9999), (s.MAX, 1.0))


@dataclass(frozen=True)
class GrossMargins:
    """Per checked statistic, the fraction above the requirement that is still not a gross miss."""

    margins: dict[str, float]
    path: Path | None = None

    def limit_thousandths(self, magnitude: str, requirement_thousandths: np.ndarray) -> np.ndarray:
        """The gross limit in whole thousandths of a microsecond, as the check compares values."""
        return np.floor(np.asarray(requirement_thousandths, dtype=np.float64) * (1.0 + self.margins[magnitude]))


def read_gross_margins(path: Path) -> GrossMargins:
    """requirements/<platform>_gross.json: InputError (exit 2) naming the file and the problem."""
    record = files.read_json_object(Path(path), "gross margins")
    if record is None:
        raise InputError("gross margins file not found", path)
    margins = record.get("margins")
    if not isinstance(margins, dict):
        raise InputError("'margins' must be an object of statistic -> margin (a fraction: 1.5 is +150 %)", path)
    unknown = sorted(set(margins) - set(s.CHECKED_MAGNITUDES))
    missing = [m for m in s.CHECKED_MAGNITUDES if m not in margins]
    if unknown or missing:
        raise InputError(f"'margins' must name exactly {', '.join(s.CHECKED_MAGNITUDES)}"
                         f"{'; unknown ' + repr(unknown[0]) if unknown else '; missing ' + repr(missing[0])}", path)
    for magnitude, margin in margins.items():
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not math.isfinite(margin) \
                or not 0 <= margin <= MAX_MARGIN:
            raise InputError(f"margin of {magnitude} is {margin!r}; expected a number from 0 to {MAX_MARGIN:g}", path)
    return GrossMargins({m: float(margins[m]) for m in s.CHECKED_MAGNITUDES}, Path(path))


def statuses(magnitude: str, experiment_thousandths: np.ndarray, requirement_thousandths: np.ndarray,
             margins: GrossMargins | None) -> np.ndarray:
    """passed (at most the requirement), failed (above it: without margins, any miss; with margins,
    a gross one only) or noted (above the requirement, within the gross margin)."""
    over = experiment_thousandths > requirement_thousandths
    if margins is None:
        return np.where(over, s.FAILED, s.PASSED)
    gross = experiment_thousandths > margins.limit_thousandths(magnitude, requirement_thousandths)
    return np.where(gross, s.FAILED, np.where(over, s.NOTED, s.PASSED))


# --- the pooled statistics of rounds, from their summaries ----------------------------------------
def _mixture_quantile(rows: pd.DataFrame, q: float) -> float:
    """The q-quantile of the rounds' samples pooled, each round's CDF linear between its summary's
    quantiles (weighted by its samples). A sum of piecewise-linear CDFs is piecewise linear with
    knots at the union of theirs, so the pooled CDF at those knots, inverted linearly, is exact."""
    points = rows[[column for column, _ in CDF_POINTS]].to_numpy(dtype=np.float64)
    points = np.maximum.accumulate(points, axis=1)  # a summary's quantiles never decrease
    quantiles = np.array([quantile for _, quantile in CDF_POINTS])
    weights = rows[s.SAMPLES].to_numpy(dtype=np.float64)
    knots = np.unique(points)
    pooled = sum(w * np.interp(knots, p, quantiles) for w, p in zip(weights, points)) / weights.sum()
    return float(knots[min(int(np.searchsorted(pooled, q, side="left")), len(knots) - 1)]) if len(knots) < 2 \
        else float(np.interp(q, np.maximum.accumulate(pooled), knots))


def pooled_statistics(round_summaries: list[pd.DataFrame]) -> pd.DataFrame:
    """Per payload the checked statistics of the rounds pooled: Max exact, Median and 99 % estimated."""
    rows = pd.concat(round_summaries, ignore_index=True)
    pooled = []
    for payload, group in rows.groupby(s.BYTES, sort=True):
        pooled.append({s.BYTES: int(payload), s.MEDIAN: _mixture_quantile(group, s.PERCENTILES[s.MEDIAN]),
                       s.P99: _mixture_quantile(group, s.PERCENTILES[s.P99]), s.MAX: float(group[s.MAX].max())})
    return pd.DataFrame(pooled)


def worst_ratios(pooled: dict[str, pd.DataFrame], requirements: pd.DataFrame) -> dict[str, float]:
    """Per checked statistic, the largest value / requirement over every sub-experiment and payload."""
    worst = {m: 0.0 for m in s.CHECKED_MAGNITUDES}
    for sub, statistics in pooled.items():
        required = requirements[requirements[s.EXPERIMENT_TYPE] == sub].set_index(s.BYTES)
        measured = statistics.set_index(s.BYTES)
        common = measured.index.intersection(required.index)
        for magnitude in s.CHECKED_MAGNITUDES:
            if len(common):
                ratio = measured.loc[common, magnitude] / required.loc[common, magnitude].astype(float)
                worst[magnitude] = max(worst[magnitude], float(ratio.max()))
    return worst


def simulated_gates(unchanged_rounds: dict[str, list[pd.DataFrame]], requirements: pd.DataFrame, *,
                    pooled_samples: int, gates: int, seed: int) -> pd.DataFrame:
    """One row per simulated unchanged gate: per statistic the worst ratio to the requirement, each
    sub-experiment pooling pooled_samples per payload from rounds drawn with replacement."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(gates):
        pooled = {}
        for sub, rounds in unchanged_rounds.items():
            per_round = int(rounds[0][s.SAMPLES].min())
            drawn = rng.integers(0, len(rounds), size=max(1, math.ceil(pooled_samples / per_round)))
            pooled[sub] = pooled_statistics([rounds[i] for i in drawn])
        rows.append(worst_ratios(pooled, requirements))
    return pd.DataFrame(rows, columns=list(s.CHECKED_MAGNITUDES))


def derive_margins(gate_ratios: pd.DataFrame, headroom: float = HEADROOM) -> dict[str, float]:
    """Per statistic, headroom x the worst ratio the unchanged gates reached, minus one (never below 0),
    rounded up to a whole percent."""
    return {m: max(0.0, math.ceil((headroom * float(gate_ratios[m].max()) - 1.0) * 100) / 100)
            for m in s.CHECKED_MAGNITUDES}


def gross_misses(gate_ratios: pd.DataFrame, margins: dict[str, float]) -> np.ndarray:
    """Per simulated gate: does any statistic miss its requirement grossly?"""
    return np.any([gate_ratios[m].to_numpy() > 1.0 + margins[m] for m in s.CHECKED_MAGNITUDES], axis=0)


def false_alarm_figures(gate_ratios: pd.DataFrame, margins: dict[str, float], independent_gates: int) -> dict:
    """What the data says of the gross checks' false-alarm rate: the simulated gates' rate, the
    fraction that would miss at margin 0 (the requirement itself), and for independent_gates
    unchanged gates that all passed the point bound 1 / (n + 1) and the one-sided 95 % upper bound
    1 - 0.05^(1/n) (about 3 / n); and how many clean gates showing <= 0.5 % at 95 % would take."""
    n = int(independent_gates)
    return {
        "simulated_gates": int(len(gate_ratios)),
        "simulated_false_alarm_fraction": float(gross_misses(gate_ratios, margins).mean()),
        "simulated_fraction_over_requirement": float(gross_misses(gate_ratios, {m: 0.0 for m in margins}).mean()),
        "independent_unchanged_gates": n,
        "bound_one_over_n_plus_one": 1.0 / (n + 1),
        "upper_95_if_all_passed": float(1.0 - 0.05 ** (1.0 / n)) if n else 1.0,
        "clean_gates_to_show_half_percent_at_95": int(math.ceil(math.log(0.05) / math.log(1.0 - 0.005))),
    }
