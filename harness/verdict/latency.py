"""Latency: percentiles of one side, the time-paired candidate/baseline ratio with its verdict
over rounds, and throughput under --concurrency.

    latency_summary(ns) -> LatencySummary             p50/p95/p99/max/mean of one side
    round_ratio(base_ms, cand_ms) -> float            one round's median per-query paired ratio
    latency_test(round_ratios, tolerance=) -> LatencyTest   a fixed number of rounds, one look
                                                      (compare uses harness.verdict.latency_rule,
                                                      valid under a look after every round)
    throughput(per_round_qps, concurrency) -> Throughput
    ratio_words / interval_words                      "1.52x slower (95% CI 1.45-1.60)"

Pure, like the rest of harness.verdict: no randomness at all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from harness.values.types import Verdict
from harness.verdict.distributions import t_quantile
from harness.verdict.resample import aligned, check_confidence


@dataclass(frozen=True)
class LatencySummary:
    """Latency percentiles in milliseconds (numpy "linear" interpolation), max, mean and count."""

    p50: float
    p95: float
    p99: float
    max: float
    mean: float
    n: int


def latency_summary(ns: npt.ArrayLike) -> LatencySummary:
    """Summarise latencies given in nanoseconds, reported in milliseconds.

    Percentiles use numpy's "linear" method (type 7 of Hyndman and Fan, numpy's default): the
    value at rank (n - 1) * q / 100 interpolated between neighbours, so p50 of an even count is
    the mean of the middle two.  An empty input is an error: there is nothing to summarise.
    """
    ms = np.asarray(ns, dtype=np.float64).ravel() / 1e6
    if ms.size == 0 or not np.isfinite(ms).all() or (ms < 0).any():
        raise ValueError("latencies must be a non-empty array of finite values >= 0")
    p50, p95, p99 = np.percentile(ms, [50, 95, 99], method="linear")
    return LatencySummary(
        p50=float(p50),
        p95=float(p95),
        p99=float(p99),
        max=float(ms.max()),
        mean=float(ms.mean()),
        n=int(ms.size),
    )


def round_ratio(baseline_ms: npt.ArrayLike, candidate_ms: npt.ArrayLike) -> float:
    """One round's candidate/baseline latency ratio: the median over queries of c_i / b_i.

    Inputs are one round's aligned per-query latencies (> 0), each pair measured back to back.
    The median of per-query ratios is paired (the spread *between* queries, 2 ms lookups next
    to 50 ms ones, cancels) and robust (a few slow queries cannot dominate it).  The ratio of
    the two medians was rejected: they are usually different queries, which on a synthetic
    uniform 1.2x slowdown with 20% per-query noise put it at 1.07 where this gives 1.17.
    """
    base, cand = aligned(baseline_ms, candidate_ms)
    if (base <= 0).any() or (cand <= 0).any():
        raise ValueError("latencies must be > 0 ms")
    return float(np.median(cand / base))


@dataclass(frozen=True)
class LatencyTest:
    """candidate/baseline latency ratio (> 1 is slower) with its CI over rounds and verdict.

    `rounds` holds each round's ratio (`round_ratio`); `rounds_needed`, for an INCONCLUSIVE
    verdict, how many rounds would likely tell (None when it cannot be said).
    """

    ratio: float
    ci_low: float
    ci_high: float
    verdict: Verdict
    reason: str
    rounds: tuple[float, ...] = ()
    rounds_needed: int | None = None
    # The sequential rule's (harness.verdict.latency_rule): the most rounds it could run, and
    # why it stopped ("decided after 4 rounds (budget 10)", "the budget of 10 rounds is spent").
    budget: int | None = None
    stop: str | None = None


MIN_ROUNDS = 2  # one round shows nothing of the spread between boots
_MOST_ROUNDS = 100  # beyond this "more rounds" is not advice


def latency_test(
    round_ratios: Sequence[float], *, tolerance: float = 0.10, confidence: float = 0.95
) -> LatencyTest:
    """Is the candidate slower or faster than the baseline beyond `tolerance`, boots included?

    Each round booted both services afresh and timed every query on both back to back, so one
    round's ratio (`round_ratio`) carries that round's boots, its machine load and its query
    jitter; rounds are the independent replicates.  The estimate is the geometric mean of the
    round ratios; the CI is Student's t on their logarithms with R - 1 degrees of freedom
    (R rounds): boot-to-boot variance is inside it by construction, and with few rounds the
    t quantile (12.71 at R = 2, 4.30 at R = 3) widens it honestly: two rounds can still call a
    large, steady change, never a small or erratic one.  A bootstrap over rounds was rejected: with
    3 to 5 rounds it has a handful of distinct resamples and its percentile interval covers
    far less than 95%; one over queries (the old rule) ignored boots altogether, so one slow
    boot became a confident ratio.

    The rule is asv's: a change is called when it is both beyond the tolerance and certain.
    REGRESSED ("1.52x slower") when the ratio is above 1 + tolerance and the whole CI above 1;
    IMPROVED when the ratio is below 1 / (1 + tolerance) and the whole CI below 1 (symmetric on
    the log scale: 1.10x slower and 1.10x faster are as far from 1); NO_DIFFERENCE when the whole
    CI lies inside [1 / (1 + tolerance), 1 + tolerance]; otherwise, and with fewer than
    MIN_ROUNDS rounds, INCONCLUSIVE, with the rounds that would likely tell: the smallest R'
    whose t half-width, at the spread seen, is less than the distance from the estimate to 1
    (a change beyond the band) or to the band's edge (a ratio inside it).  Under no change a
    call needs the CI to miss 1 on one side, so the false-call rate is at most 2.5% each way
    when the rounds are exchangeable; `scripts/latency_calibration.py` measures it, and the
    power at +50% and +10%, on the machine at hand (the table is in the README).
    """
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be in [0, 1), not {tolerance}")
    check_confidence(confidence)
    values = np.asarray(round_ratios, dtype=np.float64)
    if values.ndim != 1 or values.size == 0 or not (np.isfinite(values) & (values > 0)).all():
        raise ValueError("round ratios must be a non-empty list of finite values > 0")
    logs = np.log(values)
    n = int(logs.size)
    mean = float(logs.mean())
    ratio = float(np.exp(mean))
    edge = math.log1p(tolerance)
    rounds = tuple(float(r) for r in np.exp(logs))
    if n < MIN_ROUNDS:
        words = f"{ratio_words(ratio)} over {n} round{'s' * (n != 1)}"
        reason = (
            f"{words}: too few rounds to tell boot-to-boot variance from a change; "
            f"run with --repeats {MIN_ROUNDS + 1} or more"
        )
        advised = MIN_ROUNDS + 1  # two rounds call only large, steady changes: advise three
        return LatencyTest(ratio, ratio, ratio, Verdict.INCONCLUSIVE, reason, rounds, advised)
    spread = float(logs.std(ddof=1))
    half = _half_width(spread, n, confidence)
    lo, hi = float(np.exp(mean - half)), float(np.exp(mean + half))
    band = interval_words(ratio, lo, hi, confidence)
    if mean > edge and mean - half > 0:
        return LatencyTest(ratio, lo, hi, Verdict.REGRESSED, band, rounds)
    if mean < -edge and mean + half < 0:
        return LatencyTest(ratio, lo, hi, Verdict.IMPROVED, band, rounds)
    if -edge <= mean - half and mean + half <= edge:
        return LatencyTest(ratio, lo, hi, Verdict.NO_DIFFERENCE, band, rounds)
    beyond = abs(mean) > edge
    needed = _rounds_needed(spread, abs(mean) if beyond else edge - abs(mean), confidence)
    more = (
        f"about {needed} rounds (--repeats {needed}) would likely tell"
        if needed is not None
        else f"the ratio sits on the edge of the ±{tolerance:.0%} band: more rounds will not tell"
    )
    what = (
        "reaches 1.00, so the change is not certain"
        if beyond
        else (f"reaches past the ±{tolerance:.0%} band")
    )
    reason = f"{band}: the interval {what}; {more}"
    return LatencyTest(ratio, lo, hi, Verdict.INCONCLUSIVE, reason, rounds, needed)


def _half_width(spread: float, n: int, confidence: float) -> float:
    return t_quantile(0.5 + confidence / 2, n - 1) * spread / math.sqrt(n)


def _rounds_needed(spread: float, room: float, confidence: float) -> int | None:
    """The fewest rounds whose half-width at `spread` fits in `room` (None: beyond reason)."""
    for n in range(MIN_ROUNDS, _MOST_ROUNDS + 1):
        if _half_width(spread, n, confidence) < room:
            return n
    return None


@dataclass(frozen=True)
class Throughput:
    """Queries per second of one side under --concurrency N: mean over rounds, t-interval."""

    qps: float
    ci_low: float
    ci_high: float
    rounds: int
    concurrency: int


def throughput(per_round_qps: Sequence[float], concurrency: int) -> Throughput:
    """The mean of each round's queries/second (answers / wall time of its queries), with a
    Student's t 95% interval over rounds (one round: no interval, low = high = the value)."""
    qps = np.asarray(per_round_qps, dtype=np.float64)
    if qps.size == 0 or not np.isfinite(qps).all() or (qps <= 0).any():
        raise ValueError("throughput needs one positive figure per round")
    mean = float(qps.mean())
    half = _half_width(float(qps.std(ddof=1)), qps.size, 0.95) if qps.size > 1 else 0.0
    return Throughput(mean, max(mean - half, 0.0), mean + half, int(qps.size), concurrency)


def ratio_words(ratio: float) -> str:
    """ "1.52x slower" for ratio 1.52, "1.10x faster" for ratio 1/1.10, "1.00x, the same" at 1."""
    # Decided on the printed value, so 0.998 never reads "1.00x faster".
    if round(ratio, 2) > 1:
        return f"{ratio:.2f}x slower"
    if round(1 / ratio, 2) > 1:
        return f"{1 / ratio:.2f}x faster"
    return "1.00x, the same"


def interval_words(ratio: float, low: float, high: float, confidence: float = 0.95) -> str:
    """The estimate and its interval in one direction and one unit: "1.52x slower (95% CI
    1.45-1.60)" reads `low`-`high` as slowdowns; "1.52x faster (95% CI 1.45-1.60)" reads them
    as speed-ups (1/high - 1/low), so the interval is never in the other unit."""
    words, ci = ratio_words(ratio), f"{100 * confidence:g}% CI"
    if words.endswith("faster"):
        return f"{words} ({ci} {1 / high:.2f}-{1 / low:.2f})"
    return f"{words} ({ci} {low:.2f}-{high:.2f})"
