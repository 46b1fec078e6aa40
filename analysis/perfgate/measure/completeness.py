"""measure.completeness: the one rule that says whether a payload of a latency run is complete.

The harness makes `samples` recorded attempts per payload (after its warm-up); an attempt with no
pong within --sample-timeout-ms is counted `lost` in its report JSON and is not written to the CSV,
so every attempt of a finished payload is either a CSV row or a lost one: rows + lost == samples.

- **reliable**: a round trip with no reply within the sample timeout is a defect of the transport,
  not a latency; the payload is complete only with all `samples` rows, as it always was.
- **best effort** may lose a sample by definition (Fast DDS' own LatencyTest reports a `Lost`
  column and its statistics over the samples received). A payload whose attempts are all accounted
  for (rows + lost == samples) and which lost at most `allowed_loss(samples)` is complete: its
  statistics are over the round trips that came back. One that lost more measures a broken
  transport, not latency, and stays short.

Why 1 % (at least 1): dropping k of n samples moves any empirical q-quantile of what remains to
between the full sample's quantiles at levels q - q k/n and q + (1 - q) k/n, whichever k were lost
(the slowest, the fastest, or any). At k/n <= 1 % the tested statistics stay within one percentile
of their level: the median between the full sample's 49.5th and 50.5th percentiles, the 90 % between
its 89.1st and 90.1st (docs/verdict.md "A best-effort round trip lost" gives what that moved on
stored real runs, and why the A/B's sign test stays exact). One lost round trip is always allowed, so that a run of few samples
(200 in a quick A/B: 0.5 %) does not lose a payload to a single dropped datagram.
"""
from __future__ import annotations

from collections.abc import Mapping

BEST_EFFORT = "best_effort"
MAX_LOST_PERCENT = 1  # of a payload's samples, rounded down; at least one
MIN_ROWS = 2  # a payload's statistics need two samples (perfgate.plausibility refuses fewer)


def allowed_loss(samples: int) -> int:
    """The most round trips a best-effort payload of `samples` may lose and still be complete."""
    return max(1, samples * MAX_LOST_PERCENT // 100)  # whole numbers: no rounding of 0.01


def payload_complete(reliability: str, rows: int, lost: int | None, samples: int) -> bool:
    """Whether a payload is complete. `rows`: its rows in the harness's CSV; `lost`: the attempts its
    report counts lost (None: no report says, as for the floors, which write none)."""
    if rows == samples:
        return True
    if reliability != BEST_EFFORT or lost is None or lost < 1:
        return False
    return rows + lost == samples and lost <= allowed_loss(samples) and rows >= MIN_ROWS


def complete_payloads(reliability: str, counts: Mapping[int, int], lost: Mapping[int, int],
                      samples: int) -> list[int]:
    """The payloads of `counts` (payload -> rows) that are complete, in its order."""
    return [p for p, rows in counts.items() if payload_complete(reliability, rows, lost.get(p), samples)]


def shortfall(reliability: str, counts: Mapping[int, int], lost: Mapping[int, int], samples: int) -> str | None:
    """Why the data is short (the payloads that are not complete), or None."""
    short, lost_some = [], False
    for payload, rows in counts.items():
        if payload_complete(reliability, rows, lost.get(payload), samples):
            continue
        lost_here = lost.get(payload)
        lost_some = lost_some or bool(lost_here)
        detail = f"{rows} of {samples}" + (f", {lost_here} lost" if lost_here else "")
        short.append(f"{payload} B ({detail})")
    if not short:
        return None
    bound = (f"; a best-effort payload may lose at most {allowed_loss(samples)} of {samples}"
             if reliability == BEST_EFFORT and lost_some else "")
    return f"payloads without all their samples: {', '.join(short)}{bound}"


def loss_notes(reliability: str, counts: Mapping[int, int], lost: Mapping[int, int], samples: int) -> list[str]:
    """One note per complete payload that lost round trips (best effort only): kept, and said."""
    return [f"{payload} B lost {lost[payload]} of {samples} round trips (best effort, at most "
            f"{allowed_loss(samples)} allowed): its statistics are over the {rows} that came back"
            for payload, rows in counts.items()
            if rows != samples and payload_complete(reliability, rows, lost.get(payload), samples)]


def attempts_held(reliability: str, counts: Mapping[int, int], lost: Mapping[int, int],
                  samples: int | None) -> dict[int, int]:
    """Per payload, the attempts its rows stand for: rows + lost for a complete payload that lost
    some (a stored round of 199 rows and 1 lost is a run of 200), else its rows. `samples` None: unknown."""
    return {p: rows + lost[p] if samples is not None and rows != samples and p in lost
            and payload_complete(reliability, rows, lost[p], samples) else rows for p, rows in counts.items()}
