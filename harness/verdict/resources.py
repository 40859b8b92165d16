"""What each ref costs to run, and whether the candidate costs more: peak memory and time to ready
compared boot by boot, as latency is.

    resources(baseline, candidate, invalid=False) -> Resources | None   per side and verdict rows
    ratio_test(ratios, tolerance=, up=, down=) -> RatioTest             the rule, on its own

Per side (`ResourceSide`), the medians over its boots of what `harness.boot.usage` measured
(`Usage`: time to ready, peak RSS of the process tree, CPU ms per answered query) and what the
build cost (`RefRun.build_seconds`, `build_bytes`).

The verdict rows (peak RSS, time to ready) pair round by round: round i booted both services
together, so candidate_i / baseline_i carries that round's machine; rounds are the replicates.
The rule is `harness.verdict.latency.latency_test`'s, on these ratios: the geometric mean with a
Student's t interval on their logarithms (R - 1 degrees of freedom); REGRESSED when the estimate
is above 1 + tolerance and the whole interval above 1, IMPROVED the mirror image, NO_DIFFERENCE
when the whole interval lies inside [1 / (1 + tolerance), 1 + tolerance], INCONCLUSIVE otherwise
and with fewer than MIN_BOOTS rounds.  The tolerances (MEMORY_TOLERANCE, READY_TOLERANCE) are
wider for time to ready, which moves with the machine's disk cache and load.  Only runs measured
together (one `pair_id`, neither reused) are paired: numbers from different times are not a
pair, and the rows are then NOT_COMPARED with the reason.

Pure: no I/O, no clock, no randomness.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.values.types import RefRun, Repeat, Usage, Verdict
from harness.verdict.latency import latency_test

MEMORY_TOLERANCE = 0.10
"""A peak-RSS ratio within 1 ± 10% is no difference: allocators and page sharing move it."""
READY_TOLERANCE = 0.20
"""A time-to-ready ratio within 1 ± 20% is no difference: the disk cache and the machine's load
move a boot more than they move a query."""
MIN_BOOTS = 2
"""Rounds (boots per side) below which no call is made: one boot shows nothing of the spread."""
CONFIDENCE = 0.95


@dataclass(frozen=True)
class ResourceSide:
    """One side's costs: medians over its `boots` (those that recorded a `Usage`), and its
    build's wall time and bytes written (None: nothing built, or not recorded)."""

    side: str
    boots: int
    ready_s: float | None
    peak_rss_bytes: int | None
    cpu_ms_per_query: float | None
    build_seconds: float | None
    build_bytes: int | None


@dataclass(frozen=True)
class ResourceRow:
    """One paired verdict: `name` ("peak RSS", "time to ready"), the candidate/baseline
    `ratio` (geometric mean over rounds) with its interval, and each round's ratio."""

    name: str
    tolerance: float
    verdict: Verdict
    reason: str
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    rounds: tuple[float, ...] = ()


@dataclass(frozen=True)
class Resources:
    """What each side cost to build and run, and the paired verdict rows."""

    baseline: ResourceSide
    candidate: ResourceSide
    rows: tuple[ResourceRow, ...]

    @property
    def regressed(self) -> tuple[ResourceRow, ...]:
        return tuple(r for r in self.rows if r.verdict is Verdict.REGRESSED)


@dataclass(frozen=True)
class RatioTest:
    ratio: float
    ci_low: float
    ci_high: float
    verdict: Verdict
    reason: str


def ratio_words(ratio: float, up: str, down: str) -> str:
    """ "1.52x more" for 1.52 (up="more"), "1.10x less" for 1/1.10, "1.00x, the same" at 1."""
    if round(ratio, 2) > 1:
        return f"{ratio:.2f}x {up}"
    if round(1 / ratio, 2) > 1:
        return f"{1 / ratio:.2f}x {down}"
    return "1.00x, the same"


def ratio_test(
    ratios: Sequence[float],
    *,
    tolerance: float,
    up: str = "more",
    down: str = "less",
    confidence: float = CONFIDENCE,
) -> RatioTest:
    """The latency rule (`latency.latency_test`, see the module docstring) on per-round
    candidate/baseline ratios; `up` and `down` name the directions in the reason."""
    if not ratios or not all(math.isfinite(r) and r > 0 for r in ratios):
        raise ValueError("ratios must be a non-empty list of finite values > 0")
    # The decision and its interval are the latency rule's; only the words are this module's.
    test = latency_test(ratios, tolerance=tolerance, confidence=confidence)
    n, ratio, lo, hi = len(ratios), test.ratio, test.ci_low, test.ci_high
    words = ratio_words(ratio, up, down)
    if n < MIN_BOOTS:
        reason = (
            f"{words} over {n} boot: one boot per side shows nothing of the spread between "
            f"boots; run with --repeats {MIN_BOOTS + 1} or more"
        )
        return RatioTest(ratio, ratio, ratio, Verdict.INCONCLUSIVE, reason)
    if words.endswith(down):  # the interval in the estimate's own direction and unit
        band = f"{words} ({100 * confidence:g}% CI {1 / hi:.2f}-{1 / lo:.2f}, {n} boots)"
    else:
        band = f"{words} ({100 * confidence:g}% CI {lo:.2f}-{hi:.2f}, {n} boots)"
    if test.verdict in (Verdict.REGRESSED, Verdict.IMPROVED):
        return RatioTest(ratio, lo, hi, test.verdict, band)
    if test.verdict is Verdict.NO_DIFFERENCE:
        return RatioTest(ratio, lo, hi, test.verdict, f"{band}, inside ±{tolerance:.0%}")
    outside = abs(math.log(ratio)) > math.log1p(tolerance)
    what = "reaches 1.00, so the change is not certain" if outside else (
        f"reaches past the ±{tolerance:.0%} band"
    )
    return RatioTest(ratio, lo, hi, Verdict.INCONCLUSIVE, f"{band}: the interval {what}")


# --------------------------------------------------------------------------- per run


def _measured(run: RefRun) -> list[tuple[int, Usage]]:
    """(round index, usage) of each boot of `run` that ran to the end and recorded its cost."""
    return [(r.index, r.usage) for r in run.repeats if _counts(r) and r.usage is not None]


def _counts(rep: Repeat) -> bool:
    return rep.failure is None and rep.teardown_confirmed


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def side_costs(side: str, run: RefRun) -> ResourceSide:
    """`run`'s costs: the medians over its measured boots, and its build's."""
    used = [u for _, u in _measured(run)]
    rss = _median([u.peak_rss_bytes for u in used])
    return ResourceSide(
        side=side,
        boots=len(used),
        ready_s=_median([u.ready_s for u in used]),
        peak_rss_bytes=None if rss is None else round(rss),
        cpu_ms_per_query=_median([c for u in used if (c := u.cpu_ms_per_query) is not None]),
        build_seconds=run.build_seconds,
        build_bytes=run.build_bytes,
    )


_ROWS: tuple[tuple[str, float, Callable[[Usage], float], str, str], ...] = (
    ("peak RSS", MEMORY_TOLERANCE, lambda u: float(u.peak_rss_bytes), "more memory", "less memory"),
    ("time to ready", READY_TOLERANCE, lambda u: u.ready_s, "slower to ready", "faster to ready"),
)


def _not_together(base: RefRun, cand: RefRun) -> str | None:
    if base.reused or cand.reused:
        return (
            "a stored run's boots were measured at another time, and numbers from different "
            "times are not a pair; compare without --reuse-runs to measure both sides together"
        )
    if base.pair_id is None or base.pair_id != cand.pair_id:
        return "the two sides were not measured together in one invocation; compare them again"
    return None


def resources(baseline: RefRun, candidate: RefRun, *, invalid: bool = False) -> Resources | None:
    """Each side's costs and the paired rows (module docstring); None when neither side
    recorded any (a deployed service, records written before costs were measured).  `invalid`:
    the run is invalid, and the rows say so instead of calling anything."""
    sides = side_costs("baseline", baseline), side_costs("candidate", candidate)
    if not any(s.boots or s.build_seconds is not None for s in sides):
        return None
    base, cand = dict(_measured(baseline)), dict(_measured(candidate))
    rounds = sorted(base.keys() & cand.keys())
    why = _not_together(baseline, candidate)
    rows = []
    for name, tolerance, value, up, down in _ROWS:
        ratios = [value(cand[i]) / value(base[i]) for i in rounds if value(base[i]) > 0]
        if invalid:
            row = ResourceRow(name, tolerance, Verdict.INVALID, "the run is invalid")
        elif why is not None:
            row = ResourceRow(name, tolerance, Verdict.NOT_COMPARED, why)
        elif not all(value(cand[i]) > 0 for i in rounds) or not ratios:
            said = "no round recorded it on both sides"
            row = ResourceRow(name, tolerance, Verdict.NOT_COMPARED, said)
        else:
            t = ratio_test(ratios, tolerance=tolerance, up=up, down=down)
            row = ResourceRow(name, tolerance, t.verdict, t.reason, t.ratio, t.ci_low, t.ci_high,
                              tuple(ratios))  # fmt: skip
        rows.append(row)
    return Resources(sides[0], sides[1], tuple(rows))
