"""The tail of latency: p50, p95 and p99 compared round by round, beside the trimmed mean.

    tail_rows(rounds_ms, design, tolerance=) -> tuple[TailRow, ...]   one row per percentile
    round_percentile(ms, p) -> tuple[float, float]   log of one side's percentile in one round,
                                                     and its variance from that round alone
    headline(mean, rows) -> tuple[Verdict, str]      the latency verdict: the worst row called

Why: the mean's rule (`harness.verdict.latency_rule`) is a 20%-trimmed mean of per-query ratios,
so it leaves out each round's slowest fifth by design; a candidate whose p95 went from 1.6 ms to
319 ms read "no measurable difference".  The tail rows say what the trim leaves out.

The rule, per percentile p: in every round, each side's p-th percentile (numpy "linear") over
the round's answers timed on both sides (the answers the mean's rule pairs), and the round's
log ratio log(q_candidate / q_baseline).  Rounds are the replicates, as in the mean's rule: the
same group-sequential design (`latency_rule.plan`, with the same looks and budget the runner
stopped on) and the same decisions (`latency_rule.look` and `decide`): slower when the repeated
interval lies above 1 and the estimate beyond 1 + tolerance (faster mirrored), no measurable
difference when the equivalence interval lies inside the band, otherwise inconclusive.  The
runner stops on the mean's rule; the repeated interval is valid at any look, so a tail row read
where the mean stopped keeps its error rate.  A round's within-round variance (the floor of the
rounds' spread, as in the mean's rule) is the distribution-free one of a sample quantile: the
order statistics at ranks n p -/+ 1.96 sqrt(n p (1 - p)) bound it with about 95% coverage, so
its standard error on the log scale is their log distance / (2 * 1.96); the ratio's variance
is the two sides' less twice their covariance (the answers are paired: `_paired_var`).

Too few answers: a percentile of fewer than MIN_ABOVE answers above it is decided by a handful
of slow answers (one GC pause is the p99 of 300 answers), so a row needs at least
MIN_ABOVE / (1 - p) answers per side over all rounds (p50: 20, p95: 200, p99: 1000), and says
"cannot tell" with the count it needs otherwise.

Many rows, one verdict: the latency verdict is called when the mean or any tail row is, so its
false calls are the family's.  Bonferroni, weighted: the mean keeps `latency_rule.ALPHA` (0.035)
and the three tail rows share the rest of FAMILY_ALPHA (0.05), 0.005 each, so under no change
the latency verdict calls slower or faster at most 5% of the time.  Weighted because the mean is
the verdict most compares rest on, and a tail change worth calling is usually large (the 200x
above), where the stricter level costs little (`scripts/calibrate_tail.py` measures it).  The
"no measurable difference" of each row stays at latency_rule's EQUIVALENCE: the headline says it
only when the mean says it and no tail row called a change (an intersection of claims needs no
correction).

Pure: no I/O, no clock, no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from harness.values.types import Verdict
from harness.verdict.latency import LatencyTest, ratio_words
from harness.verdict.latency_rule import RoundEstimate, decide, plan

PERCENTILES = (50, 95, 99)
FAMILY_ALPHA = 0.05  # false calls of the latency verdict: the mean and the tail rows together
TAIL_ALPHA = 0.005  # each tail row's share: ALPHA + 3 * TAIL_ALPHA = FAMILY_ALPHA
MIN_ABOVE = 10  # answers above a percentile, per side over all rounds, for a row to tell
_Z = 1.959963984540054  # the order statistics' 95% bounds on a quantile


@dataclass(frozen=True)
class TailRow:
    """One percentile of both sides, candidate/baseline, over the rounds.

    `baseline_ms` and `candidate_ms` are the geometric means over rounds of each round's
    percentile (so ratio = candidate_ms / baseline_ms); `rounds` the rounds' ratios; `ci_low`
    and `ci_high` the repeated interval at `confidence` (for "no measurable difference" the
    equivalence interval that decided it); `answers` the fewest answers of a side over all
    rounds and `needed` the fewest the row needs (below it the verdict is INCONCLUSIVE with
    words saying it cannot tell)."""

    percentile: int
    baseline_ms: float | None
    candidate_ms: float | None
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float
    verdict: Verdict
    words: str
    rounds: tuple[float, ...] = ()
    answers: int = 0
    needed: int = 0

    @property
    def name(self) -> str:
        return f"p{self.percentile}"


def needed_answers(percentile: int) -> int:
    """MIN_ABOVE / (1 - p): 20 for p50, 200 for p95, 1000 for p99 (integer arithmetic)."""
    return -(-MIN_ABOVE * 100 // (100 - percentile))


def round_percentile(values_ms: npt.ArrayLike, percentile: int) -> tuple[float, float]:
    """The log of the `percentile`-th percentile (numpy "linear") of one side's latencies in one
    round (> 0), and its variance from the order statistics (see the module docstring); ranks
    past the ends are clipped to them, which only shrinks the floor."""
    x = np.sort(np.asarray(values_ms, dtype=np.float64).ravel())
    if x.size == 0 or not np.isfinite(x).all() or (x <= 0).any():
        raise ValueError("a round's latencies must be a non-empty array of finite values > 0")
    n, share = int(x.size), percentile / 100
    value = float(np.percentile(x, percentile, method="linear"))
    centre, half = n * share, _Z * math.sqrt(n * share * (1 - share))
    lo = min(max(math.floor(centre - half), 1), n)
    hi = min(max(math.ceil(centre + half), 1), n)
    se = (math.log(x[hi - 1]) - math.log(x[lo - 1])) / (2 * _Z)
    return math.log(value), se * se


def _paired_var(
    baseline_ms: npt.ArrayLike, candidate_ms: npt.ArrayLike, percentile: int, vb: float, vc: float
) -> float:
    """The variance of log(q_c / q_b) in one round: vb + vc - 2 rho sqrt(vb vc), rho the
    correlation of the two sample quantiles of paired answers, by Bahadur's representation
    the correlation of the indicators [b_i <= q_b] and [c_i <= q_c] over the round's pairs:
    (P(both) - p^2) / (p (1 - p)).  Without it (the sides as independent) the floor, where the
    same queries are slow on both sides, was several times the rounds' own spread and cut the
    power at a 2x slowdown of the slowest 5% from about 65% to 18% (scripts/calibrate_tail.py)."""
    b = np.asarray(baseline_ms, dtype=np.float64).ravel()
    c = np.asarray(candidate_ms, dtype=np.float64).ravel()
    if b.shape != c.shape:  # not paired: the sides as independent
        return vb + vc
    share = percentile / 100
    below_b = b <= np.percentile(b, percentile, method="linear")
    below_c = c <= np.percentile(c, percentile, method="linear")
    rho = (float(np.mean(below_b & below_c)) - share * share) / (share * (1 - share))
    rho = min(max(rho, -1.0), 1.0)
    return max(vb + vc - 2 * rho * math.sqrt(vb * vc), 0.0)


def tail_rows(
    rounds_ms: Sequence[tuple[npt.ArrayLike, npt.ArrayLike]],
    *,
    first: int,
    budget: int,
    tolerance: float = 0.10,
    percentiles: Sequence[int] = PERCENTILES,
    alpha: float = TAIL_ALPHA,
) -> tuple[TailRow, ...]:
    """Per percentile, its row over `rounds_ms` (per round, the baseline's and the candidate's
    latencies in ms of the answers timed on both sides), decided by the mean's design
    (`latency_rule.plan(first, budget)`) at the row's share `alpha` of the family's error."""
    design = plan(first, budget, alpha)
    counts = [min(len(np.ravel(b)), len(np.ravel(c))) for b, c in rounds_ms]
    answers = sum(counts)
    rows = []
    for p in percentiles:
        needed = needed_answers(p)
        if not rounds_ms or answers < needed:
            words = (
                f"p{p}: cannot tell from {answers} answers a side: it needs at least {needed} "
                f"({MIN_ABOVE} above it); ask more queries or run more rounds"
            )
            rows.append(
                TailRow(
                    p,
                    None,
                    None,
                    None,
                    None,
                    None,
                    1 - alpha,
                    Verdict.INCONCLUSIVE,
                    words,
                    answers=answers,
                    needed=needed,
                )
            )
            continue
        sides = [
            [round_percentile(b, p) for b, _ in rounds_ms],
            [round_percentile(c, p) for _, c in rounds_ms],
        ]
        estimates = [
            RoundEstimate(cl - bl, _paired_var(b, c, p, bv, cv), n)
            for (b, c), (bl, bv), (cl, cv), n in zip(rounds_ms, *sides, counts, strict=True)
        ]
        test = decide(estimates, design, tolerance=tolerance, confidence=1 - alpha)
        level = 1 - 2 * design.equivalence if test.verdict is Verdict.NO_DIFFERENCE else 1 - alpha
        base_ms, cand_ms = (math.exp(float(np.mean([v for v, _ in s]))) for s in sides)
        rows.append(
            TailRow(
                p,
                base_ms,
                cand_ms,
                test.ratio,
                test.ci_low,
                test.ci_high,
                level,
                test.verdict,
                f"p{p} {test.reason}",
                test.rounds,
                answers,
                needed,
            )
        )
    return tuple(rows)


_CALLS = (Verdict.REGRESSED, Verdict.IMPROVED)


def headline(
    mean: LatencyTest, rows: Sequence[TailRow], tolerance: float = 0.10
) -> tuple[Verdict, str]:
    """The latency verdict and its words: the worst of the mean and the tail rows that was
    called (slower before faster; among slower the largest ratio, among faster the smallest
    speed-up), led by the mean's words when the mean called the same, the tail rows called
    named after them; with none called, the mean's verdict and words (a tail row's "no measurable
    difference" never stands in for the mean's), and beside the mean's "no measurable
    difference" the tail rows that did not say so too (it is the mean's claim, not theirs)."""
    called = [r for r in rows if r.verdict in _CALLS and r.ratio is not None]
    if not called:
        if mean.verdict is not Verdict.NO_DIFFERENCE:
            return mean.verdict, mean.reason
        band = f"{mean.reason}, inside the tolerance band of ±{tolerance:.0%}"
        open_rows = [r for r in rows if r.verdict is not Verdict.NO_DIFFERENCE]
        if not open_rows:
            return mean.verdict, band
        names = ", ".join(r.name for r in open_rows)
        return mean.verdict, f"{band}; the tail did not say so: {names} could not tell"
    slower = mean.verdict is Verdict.REGRESSED or any(
        r.verdict is Verdict.REGRESSED for r in called
    )
    direction = Verdict.REGRESSED if slower else Verdict.IMPROVED
    if mean.verdict is direction:  # the mean leads, its words as ever, the tail after
        also = ", ".join(_short(r) for r in called)
        return mean.verdict, f"{mean.reason}; tail: {also}"
    worst = max((r for r in called if r.verdict is direction), key=lambda r: r.ratio or 1.0)
    others = [_short(r) for r in called if r is not worst]
    rest = f"; also {', '.join(others)}" if others else ""
    mean_words = f"mean {ratio_words(mean.ratio)}, {mean.verdict.value}"
    return worst.verdict, f"{worst.words}; {mean_words}{rest}"


def _short(row: TailRow) -> str:
    return f"{row.name} {ratio_words(row.ratio or 1.0)}"
