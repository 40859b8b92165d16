"""Statistics: is a difference between two refs real?

Pure: no I/O, no clock; the only randomness is `numpy.random.default_rng(seed)`, so a verdict is
a function of its inputs and the seed.  Two kinds of quality evidence, one rule each (latency's
rule is `harness.verdict.latency`'s):

- binary metrics (hit@k): each query's hit rate over its side's repeats, and the exact paired
  sign-flip test on the per-query rate differences (`hit_rate_test`), which is McNemar's exact
  test when both sides are deterministic;
- continuous metrics (recall@k, p@k, MRR@k, nDCG@k): a sign-flip randomization test on the
  per-query deltas, and a paired percentile bootstrap CI; a call needs both to agree.

Arguments that break a documented contract (misaligned arrays, NaN, alpha outside (0, 1)) raise
ValueError: they are bugs in the caller, not user input, which config and gold validate earlier.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from harness.values.swing import detectable_swing as detectable_swing
from harness.values.swing import min_detectable_swing as min_detectable_swing
from harness.values.types import Verdict
from harness.verdict.boots import BootComponent, boot_p, widen
from harness.verdict.distributions import half_binomial_cdf, half_binomial_pmf
from harness.verdict.resample import (
    BoolArray,
    FloatArray,
    IntArray,
    aligned,
    check_alpha,
    check_confidence,
    check_count,
    check_resamples,
    chunk_sizes,
    paired_deltas,
    percentile_interval,
    resample_indices,
)

# --------------------------------------------------------------------------- binary: McNemar


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs.

    b = queries only the baseline hits, c = queries only the candidate hits.  Under H0 each
    discordant query is a fair coin: p = min(1, 2 * P(X <= min(b, c))), X ~ Bin(b + c, 1/2),
    which equals statsmodels' `mcnemar(exact=True)`.  No discordant pairs give p = 1.0.
    """
    check_count("b", b)
    check_count("c", c)
    if b + c == 0 or b == c:
        return 1.0
    return min(1.0, 2.0 * half_binomial_cdf(min(b, c), b + c))


@dataclass(frozen=True)
class BinaryTest:
    """The verdict on a binary metric (hit@k) from each query's hit rate over the repeats.

    b = queries whose hit rate is higher on the baseline, c = higher on the candidate (with one
    deterministic repeat per side: McNemar's discordant pairs); `net` = the sum over queries of
    the rate difference candidate - baseline (c - b when both sides are deterministic); `exact`
    says which test that p is: "McNemar exact" when every per-query difference is -1, 0 or 1,
    else "exact sign-flip".
    """

    b: int
    c: int
    p: float
    net: float
    verdict: Verdict
    reason: str
    exact: str = "McNemar exact"


def scaled_rate_differences(baseline: BoolArray, candidate: BoolArray) -> tuple[IntArray, int]:
    """(candidate hits - baseline hits per query, in units of 1/L; L), L = lcm(repeats).

    `baseline` and `candidate` are repeats x queries; the rates' difference per query is
    exactly the integer returned divided by L, so the test below stays in integers.
    """
    if baseline.ndim != 2 or candidate.ndim != 2 or baseline.shape[1] != candidate.shape[1]:
        raise ValueError(
            f"outcomes must be repeats x queries with the same queries, got {baseline.shape} "
            f"and {candidate.shape}"
        )
    if baseline.shape[0] == 0 or candidate.shape[0] == 0:
        raise ValueError("outcomes need at least one repeat on each side")
    lcm = math.lcm(baseline.shape[0], candidate.shape[0])
    hits_b = baseline.sum(axis=0).astype(np.int64) * (lcm // baseline.shape[0])
    hits_c = candidate.sum(axis=0).astype(np.int64) * (lcm // candidate.shape[0])
    scaled: IntArray = hits_c - hits_b
    return scaled, lcm


def sign_flip_exact(scaled: npt.ArrayLike) -> float:
    """Two-sided exact p of the paired sign-flip test on integer per-query differences.

    Under H0 (the two refs are exchangeable within each query, as when they are the same code)
    each difference's sign is a fair coin, so S = sum of the differences has the distribution of
    sum(s_i * |d_i|) over independent fair signs s_i; p = P(|S| >= |S_observed|), zero
    differences dropping out.  When every non-zero |d_i| is the same (both refs deterministic)
    S is a scaled binomial and p is McNemar's exact p (`mcnemar_exact`, equal to statsmodels'
    `mcnemar(exact=True)`).  Otherwise the exact distribution is built by convolving one
    binomial per distinct |d_i| (values up to the lcm of the repeat counts, so a handful of
    convolutions of length <= n * lcm): exact up to floating-point rounding (about 1e-15 in
    absolute terms, far below any alpha), no sampling, no seed.
    """
    d = np.asarray(scaled)
    if d.ndim != 1 or (d.size and not np.issubdtype(d.dtype, np.integer)):
        raise ValueError("the differences must be a 1-D array of integers")
    d = d[d != 0].astype(np.int64)
    if d.size == 0:
        return 1.0
    magnitude = np.abs(d)
    if (magnitude == magnitude[0]).all():
        positive = int((d > 0).sum())
        return mcnemar_exact(int(d.size) - positive, positive)
    observed = abs(int(d.sum()))
    if observed == 0:
        return 1.0
    total = int(magnitude.sum())
    # pmf[t] = P(the |d_i| given a + sign add up to t); S = 2t - total.
    pmf = np.ones(1)
    for value, count in zip(*np.unique(magnitude, return_counts=True), strict=True):
        group = np.zeros(int(value) * int(count) + 1)
        group[:: int(value)] = half_binomial_pmf(int(count))
        pmf = _convolve(pmf, group)
    upper, lower = (total + observed) // 2, (total - observed) // 2
    p = float(pmf[upper:].sum() + pmf[: lower + 1].sum())
    return min(1.0, max(p, 0.0))


def _convolve(a: FloatArray, b: FloatArray) -> FloatArray:
    if a.size * b.size <= 1 << 24:
        direct: FloatArray = np.convolve(a, b)
        return direct
    size = a.size + b.size - 1
    fast: FloatArray = np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)
    return np.clip(fast, 0.0, None)


def hit_rate_test(
    baseline: BoolArray, candidate: BoolArray, *, alpha: float, boots: BootComponent | None = None
) -> BinaryTest:
    """Call a binary metric from every repeat of both sides (repeats x queries each).

    Each query is scored by its hit rate over its side's repeats, and the paired exact
    `sign_flip_exact` test decides: p < alpha -> IMPROVED when the net difference is positive,
    else REGRESSED; otherwise NO_DIFFERENCE.  Nothing else excuses or forbids a call: drift
    (queries whose outcome changes between repeats) is inside the test, since an unstable query
    contributes a fractional difference, and is reported per side (`drift`), never used as a
    bar.  A net swing too small to be significant (fewer than `min_detectable_swing` queries
    when deterministic) simply has p >= alpha.  `boots` (`harness.verdict.boots`), when the
    boots' means vary more than their queries explain, puts that variation in too: p is then
    the larger of the exact test's and the two-level test's.
    """
    check_alpha(alpha)
    scaled, lcm = scaled_rate_differences(baseline, candidate)
    p = sign_flip_exact(scaled)
    b, c = int((scaled < 0).sum()), int((scaled > 0).sum())
    net = float(scaled.sum()) / lcm
    deterministic = bool((np.abs(scaled[scaled != 0]) == lcm).all())
    exact = "McNemar exact" if deterministic else "exact sign-flip"
    two_level = None if boots is None else boot_p(boots, net / scaled.size)
    if two_level is not None and two_level > p:
        p = two_level
        exact = "two-level t, boots inside"
    if p < alpha:
        verdict = Verdict.IMPROVED if net > 0 else Verdict.REGRESSED
        reason = f"p = {format_p(p)} < alpha = {alpha:g}"
    else:
        verdict, reason = Verdict.NO_DIFFERENCE, f"p = {format_p(p)}"
    return BinaryTest(b=b, c=c, p=p, net=net, verdict=verdict, reason=reason, exact=exact)


def format_p(p: float) -> str:
    """Three decimals ("0.180"); below 0.001 two significant digits ("2.4e-04"), never "0.000"."""
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


# --------------------------------------------------------------------------- repeats


def drift(outcomes: Sequence[Sequence[bool]] | BoolArray) -> int:
    """Number of queries whose binary outcome is not the same in every repeat.

    `outcomes` is repeats x queries.  One repeat has no drift by definition.
    """
    matrix = _outcome_matrix(outcomes)
    return int(np.count_nonzero(matrix.any(axis=0) & ~matrix.all(axis=0)))


def modal(outcomes: Sequence[Sequence[bool]] | BoolArray) -> BoolArray:
    """Per-query majority outcome over repeats (repeats x queries in, one bool per query out).

    A tie (possible with an even number of repeats) is resolved pessimistically to False, a
    miss: a query that hits only half the time is not counted as hit, on either side.
    """
    matrix = _outcome_matrix(outcomes)
    hits = matrix.sum(axis=0)
    result: BoolArray = 2 * hits > matrix.shape[0]
    return result


def _outcome_matrix(outcomes: Sequence[Sequence[bool]] | BoolArray) -> BoolArray:
    if len(outcomes) == 0:
        raise ValueError("outcomes needs at least one repeat")
    if isinstance(outcomes, np.ndarray) and outcomes.ndim == 2:
        return outcomes.astype(np.bool_)  # already repeats x queries: no walk over the items
    widths = {len(row) for row in outcomes}
    if len(widths) != 1:
        raise ValueError(f"every repeat must have the same number of queries, got {sorted(widths)}")
    return np.array([[bool(x) for x in row] for row in outcomes], dtype=np.bool_).reshape(
        len(outcomes), widths.pop()
    )


# --------------------------------------------------------------------------- continuous


def paired_bootstrap_ci(
    baseline: npt.ArrayLike,
    candidate: npt.ArrayLike,
    *,
    seed: int,
    resamples: int = 10_000,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """(mean delta, lo, hi): percentile bootstrap CI of the mean per-query delta.

    delta_i = candidate_i - baseline_i.  Each resample draws n queries with replacement (the
    pairing is kept: a query's two scores travel together) and takes the mean delta; lo and hi
    are the (1 - confidence)/2 and (1 + confidence)/2 percentiles (numpy "linear" method) of
    the resampled means.  Identical inputs give exactly (0.0, 0.0, 0.0).  Draws every query of
    every resample; `harness.verdict.sequential.bootstrap_intervals` draws the same distribution
    by groups of equal deltas (what compare uses), and is tested against this one.
    """
    deltas = paired_deltas(baseline, candidate)
    check_resamples(resamples)
    check_confidence(confidence)
    observed = float(deltas.mean())
    if not deltas.any():
        return (0.0, 0.0, 0.0)
    rng = np.random.default_rng(seed)
    means = np.concatenate(
        [deltas[idx].mean(axis=1) for idx in resample_indices(rng, deltas.size, resamples)]
    )
    lo, hi = percentile_interval(means, confidence)
    return (observed, lo, hi)


def paired_randomization_test(
    baseline: npt.ArrayLike, candidate: npt.ArrayLike, *, seed: int, resamples: int = 10_000
) -> float:
    """Two-sided sign-flip permutation p-value for the mean per-query delta.

    Under H0 the labels baseline/candidate are exchangeable within a query, so each delta's
    sign is a fair coin.  Queries with delta 0 cannot change any statistic and are dropped;
    m = the number left (none left: p = 1.0).  When 2**m <= resamples every sign vector is
    enumerated and p = count(|perm| >= |obs|) / 2**m exactly (the observed vector is one of
    them); otherwise `resamples` random sign vectors give p = (count + 1) / (resamples + 1),
    which is never 0.  |perm| >= |obs| allows for float rounding of the sums (tolerance
    8 * m * eps * sum|delta|, an upper bound on the summation error).
    """
    deltas = paired_deltas(baseline, candidate)
    check_resamples(resamples)
    nonzero = deltas[deltas != 0]
    m = int(nonzero.size)
    if m == 0:
        return 1.0
    observed = abs(float(nonzero.sum()))
    tolerance = 8 * m * np.finfo(np.float64).eps * float(np.abs(nonzero).sum())
    hits = 0
    if m < 63 and (1 << m) <= resamples:
        start = 0
        for rows in chunk_sizes(1 << m, m):
            # Row r of the chunk is sign vector number start + r: bit j set flips query j.
            codes = np.arange(start, start + rows, dtype=np.int64)[:, None] >> np.arange(m)
            hits += _extreme(1.0 - 2.0 * (codes & 1), nonzero, observed - tolerance)
            start += rows
        return hits / (1 << m)
    rng = np.random.default_rng(seed)
    for rows in chunk_sizes(resamples, m):
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(rows, m))
        hits += _extreme(signs, nonzero, observed - tolerance)
    return (hits + 1) / (resamples + 1)


def _extreme(signs: npt.NDArray[np.floating[Any]], deltas: FloatArray, threshold: float) -> int:
    """How many sign vectors give a |sum of signed deltas| at or beyond the threshold."""
    return int(np.count_nonzero(np.abs(signs @ deltas) >= threshold))


@dataclass(frozen=True)
class ContinuousTest:
    """The verdict on a continuous metric: means, mean delta with its bootstrap CI, and p."""

    mean_baseline: float
    mean_candidate: float
    delta: float
    ci_low: float
    ci_high: float
    p: float
    verdict: Verdict
    reason: str


def continuous_test(
    baseline: npt.ArrayLike,
    candidate: npt.ArrayLike,
    *,
    alpha: float,
    seed: int,
    resamples: int = 10_000,
    family: int = 1,
) -> ContinuousTest:
    """Call a continuous metric from aligned per-query scores (`continuous_tests` of one)."""
    return continuous_tests(
        [(baseline, candidate)], alpha=alpha, seed=seed, resamples=resamples, family=family
    )[0]


def continuous_tests(
    pairs: Sequence[tuple[npt.ArrayLike, npt.ArrayLike]],
    *,
    alpha: float,
    seed: int,
    resamples: int = 10_000,
    family: int = 1,
    boots: Sequence[BootComponent | None] = (),
) -> list[ContinuousTest]:
    """Call continuous metrics from aligned per-query scores, one (baseline, candidate) pair
    per metric, all on the same queries (`boots`: each metric's between-boot component, or
    none: p is then at least the two-level test's and the CI at least its interval, as in
    `hit_rate_test`).

    p from the sign-flip randomization test (exact when a metric has few non-zero deltas, as
    `paired_randomization_test`; else sequential Monte Carlo against alpha / `family` and alpha,
    `family` being the most tests the p is Holm-corrected across), CI from the percentile
    bootstrap at confidence 1 - alpha (sequential on whether it excludes 0); both draw one
    set of random numbers for every metric at once and stop once each answer is settled, with
    the error bound `harness.verdict.sequential` states (at most 1e-3 that any stopped
    decision differs from the full resampling's). IMPROVED / REGRESSED (by the sign of the mean
    delta) only when p < alpha AND the CI excludes 0; disagreement between the two, or
    p >= alpha, is NO_DIFFERENCE.
    """
    from harness.verdict.sequential import bootstrap_intervals, sign_flip_p

    check_alpha(alpha)
    check_resamples(resamples)
    if family < 1:
        raise ValueError(f"family must be >= 1, not {family}")
    if not pairs:
        return []
    sides = [aligned(b, c) for b, c in pairs]
    if len({base.size for base, _ in sides}) != 1:
        raise ValueError("every metric must be scored on the same queries")
    deltas = np.stack([cand - base for base, cand in sides])
    p = np.ones(len(sides))
    ci = np.zeros((len(sides), 2))
    sampled = []
    for j, row in enumerate(deltas):
        m = int(np.count_nonzero(row))
        if 0 < m < 63 and (1 << m) <= resamples:
            p[j] = paired_randomization_test(sides[j][0], sides[j][1], seed=seed)
        elif m:
            sampled.append(j)
    if sampled:
        p[sampled] = sign_flip_p(
            deltas[sampled], seed=seed, resamples=resamples, bounds=(alpha / family, alpha)
        )
    moving = [j for j, row in enumerate(deltas) if row.any()]
    if moving:
        ci[moving] = bootstrap_intervals(
            deltas[moving], seed=seed, resamples=resamples, confidence=1 - alpha
        )
    for j, component in enumerate(boots):
        if component is not None:
            delta = float(deltas[j].mean())
            p[j] = max(p[j], boot_p(component, delta) or 0.0)
            ci[j] = widen(delta, float(ci[j, 0]), float(ci[j, 1]), component, 1 - alpha)
    return [
        _continuous_verdict(base, cand, float(p[j]), float(ci[j, 0]), float(ci[j, 1]), alpha)
        for j, (base, cand) in enumerate(sides)
    ]


def _continuous_verdict(
    base: FloatArray, cand: FloatArray, p: float, lo: float, hi: float, alpha: float
) -> ContinuousTest:
    delta = float((cand - base).mean())
    level = f"{100 * (1 - alpha):g}% CI [{lo:+.3f}, {hi:+.3f}]"
    excludes_zero = lo > 0 or hi < 0
    if p < alpha and excludes_zero:
        verdict = Verdict.IMPROVED if delta > 0 else Verdict.REGRESSED
        reason = f"p = {format_p(p)}, {level}"
    elif p < alpha:
        verdict, reason = Verdict.NO_DIFFERENCE, f"p = {format_p(p)} but the {level} includes 0"
    else:
        verdict, reason = Verdict.NO_DIFFERENCE, f"p = {format_p(p)}"
    return ContinuousTest(
        mean_baseline=float(base.mean()),
        mean_candidate=float(cand.mean()),
        delta=delta,
        ci_low=lo,
        ci_high=hi,
        p=p,
        verdict=verdict,
        reason=reason,
    )


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order.

    Sorted ascending p_(1) <= ... <= p_(m): adj_(i) = min(1, max_{j <= i} (m - j + 1) * p_(j)),
    so the adjusted values keep the order of the raw ones; ties keep their input order (stable
    sort), which cannot change any value.  Equals statsmodels `multipletests(method="holm")[1]`.
    """
    raw = np.asarray(pvalues, dtype=np.float64)
    if raw.ndim != 1 or np.isnan(raw).any() or (raw < 0).any() or (raw > 1).any():
        raise ValueError(f"p-values must be a flat sequence in [0, 1], got {list(pvalues)}")
    m = raw.size
    order = np.argsort(raw, kind="stable")
    stepped = np.maximum.accumulate(raw[order] * np.arange(m, 0, -1))
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(stepped, 1.0)
    return [float(x) for x in adjusted]
