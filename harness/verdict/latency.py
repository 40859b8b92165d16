"""Latency: percentiles of one side, and the paired candidate/baseline ratio with its verdict.

Pure, like the rest of harness.verdict; the only randomness is `numpy.random.default_rng(seed)`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from harness.types import Verdict
from harness.verdict.resample import (
    FloatArray,
    aligned,
    check_confidence,
    check_resamples,
    percentile_interval,
    resample_indices,
)


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


def per_query_latency_ms(ns: npt.ArrayLike) -> FloatArray:
    """Median over repeats of each query's latency, ns (repeats x queries) in, ms out.

    The input of `paired_latency_ratio`: the median keeps one slow repeat (a GC pause, a cold
    cache) from moving a query.
    """
    matrix = np.asarray(ns, dtype=np.float64)
    if matrix.ndim != 2 or matrix.size == 0:
        raise ValueError(f"latencies must be repeats x queries, got shape {matrix.shape}")
    result: FloatArray = np.median(matrix, axis=0) / 1e6
    return result


@dataclass(frozen=True)
class LatencyTest:
    """candidate/baseline latency ratio (> 1 is slower) with its bootstrap CI and verdict."""

    ratio: float
    ci_low: float
    ci_high: float
    verdict: Verdict
    reason: str


def paired_latency_ratio(
    baseline_ms: npt.ArrayLike,
    candidate_ms: npt.ArrayLike,
    *,
    seed: int,
    tolerance: float = 0.10,
    resamples: int = 10_000,
    confidence: float = 0.95,
) -> LatencyTest:
    """Is the candidate slower or faster than the baseline, beyond `tolerance`?

    Inputs are aligned per-query latencies (see `per_query_latency_ms`).  ratio = the median
    over queries of candidate_i / baseline_i: sum-free (a few slow queries cannot dominate it),
    robust, and paired, so the spread of latency *between* queries (2 ms lookups next to 50 ms
    ones) cancels instead of widening the CI.  The ratio of the two medians was rejected: its
    two medians are usually different queries, which on a synthetic uniform 1.2x slowdown with
    20% per-query noise put it at 1.07 (CI 0.98 to 1.20) where this estimator gives 1.17 (CI
    1.12 to 1.21).  The CI is a percentile bootstrap over queries (numpy "linear" percentiles).
    REGRESSED ("1.52x slower") when the whole CI lies above 1 + tolerance; IMPROVED ("1.10x
    faster", the factor being 1/ratio) when the whole CI lies below 1 - tolerance; otherwise
    NO_DIFFERENCE.  A tail-only regression (p95/p99) shows in `latency_summary`, not here.
    """
    base, cand = aligned(baseline_ms, candidate_ms)
    if (base <= 0).any() or (cand <= 0).any():
        raise ValueError("latencies must be > 0 ms")
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be in [0, 1), not {tolerance}")
    check_resamples(resamples)
    check_confidence(confidence)
    per_query = cand / base
    ratio = float(np.median(per_query))
    rng = np.random.default_rng(seed)
    ratios = np.concatenate(
        [
            np.median(per_query[idx], axis=1)
            for idx in resample_indices(rng, per_query.size, resamples)
        ]
    )
    lo, hi = percentile_interval(ratios, confidence)
    band = f"{100 * confidence:g}% CI of the ratio {lo:.2f} to {hi:.2f}"
    if lo > 1 + tolerance:
        verdict, reason = Verdict.REGRESSED, f"{ratio_words(ratio)} ({band})"
    elif hi < 1 - tolerance:
        verdict, reason = Verdict.IMPROVED, f"{ratio_words(ratio)} ({band})"
    else:
        verdict = Verdict.NO_DIFFERENCE
        reason = f"{ratio_words(ratio)}, within noise ({band} reaches into 1 ± {tolerance:g})"
    return LatencyTest(ratio=ratio, ci_low=lo, ci_high=hi, verdict=verdict, reason=reason)


def ratio_words(ratio: float) -> str:
    """ "1.52x slower" for ratio 1.52, "1.10x faster" for ratio 1/1.10, "1.00x, the same" at 1."""
    # Decided on the printed value, so 0.998 never reads "1.00x faster".
    if round(ratio, 2) > 1:
        return f"{ratio:.2f}x slower"
    if round(1 / ratio, 2) > 1:
        return f"{1 / ratio:.2f}x faster"
    return "1.00x, the same"
