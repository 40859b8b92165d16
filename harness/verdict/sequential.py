"""Resampling tests for several metrics of one scope at once, stopping once each answer is settled.

    p_values, intervals = sequential_tests(deltas, seed=0, resamples=10_000,
                                           p_bounds=(alpha / m, alpha), confidence=1 - alpha)

`deltas` is metrics x queries (candidate - baseline per query, the same queries for every row).
Every batch of random draws serves every metric still undecided: one matrix product per batch
instead of one resampling per metric (the draws are the costly part).

Randomization (sign flip): for each metric p = (count + 1) / (B + 1) over B random sign vectors
(the observed one excluded), count = vectors whose |sum of signed deltas| reaches the observed
one; a metric with m non-zero deltas and 2**m <= resamples is enumerated exactly instead
(`stats.paired_randomization_test`). Bootstrap: the percentile interval of the mean delta over
B resamples of the queries with replacement (numpy "linear" percentiles).

How stopping keeps the error bound (a sequential Monte Carlo rule, in the spirit of Besag and
Clifford 1991, with Clopper-Pearson intervals): draws come in batches that double the total
(at most L = about log2(resamples / 250) + 1 looks). After each batch, for each metric, a
two-sided Clopper-Pearson interval at level 1 - ERROR / L is put around the proportion that
decides it: for p, the permutation p itself; for the interval, on each side the share of
resampled means beyond 0 against the tail (1 - confidence) / 2. A metric stops when its
intervals lie wholly on one side of every threshold (for p: below alpha / m with the reported p
below it too, or above alpha). By the union bound over the looks, the chance that any stopped
decision differs from the one the exact permutation p or the full bootstrap distribution gives
is at most ERROR = 1e-3; a metric whose answer stays near a threshold is drawn up to
`resamples`, as a fixed-size test would be. p at B draws is a valid Monte Carlo p-value; a p
that stops below alpha / m (m = the most tests it is Holm-corrected across) stays below alpha
after Holm's correction whatever the other p-values. Interval endpoints are read from at least
MIN_BOOTSTRAP resamples. Pure and seeded: the same inputs and seed give the same numbers.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from harness.verdict.resample import CHUNK_ELEMENTS, FloatArray, percentile_interval

ERROR = 1e-3
MIN_BOOTSTRAP = 1000
FIRST_BATCH = 250


def batches(resamples: int, first: int = FIRST_BATCH) -> list[int]:
    """Batch sizes adding up to `resamples`: `first`, then doubling the total at each look."""
    sizes: list[int] = []
    total = 0
    while total < resamples:
        size = min(max(first, total), resamples - total)
        sizes.append(size)
        total += size
    return sizes


def clopper_pearson(hits: int, draws: int, level: float) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval of a binomial proportion at `level`."""
    from scipy.special import betaincinv  # imported on use: see harness.verdict.stats

    half = (1 - level) / 2
    lower = 0.0 if hits == 0 else float(betaincinv(hits, draws - hits + 1, half))
    upper = 1.0 if hits >= draws else float(betaincinv(hits + 1, draws - hits, 1 - half))
    return lower, upper


def _beyond(hits: int, draws: int, below: float, above: float, looks: int) -> bool:
    lower, upper = clopper_pearson(hits, draws, 1 - ERROR / looks)
    return upper < below or lower > above


def _rows(n: int) -> int:
    return max(1, CHUNK_ELEMENTS // max(n, 1))


def sign_flip_p(
    deltas: FloatArray, *, seed: int, resamples: int, bounds: tuple[float, float]
) -> list[float]:
    """Sequential sign-flip p per row of `deltas` (metrics x queries), against `bounds` =
    (low, high): a row stops once its p is settled below low or above high."""
    rng = np.random.default_rng(seed)
    # A query whose delta is 0 for every metric adds nothing to any signed sum: left out.
    deltas = deltas[:, np.any(deltas != 0, axis=0)]
    count, n = deltas.shape
    observed = np.abs(deltas.sum(axis=1))
    totals = deltas.sum(axis=1)
    tolerance = 8 * n * np.finfo(np.float64).eps * np.abs(deltas).sum(axis=1)
    hits = np.zeros(count, dtype=np.int64)
    drawn = np.zeros(count, dtype=np.int64)
    active = np.ones(count, dtype=bool)
    plan = batches(resamples)
    low, high = bounds
    for batch in plan:
        rows_left = batch
        live = np.flatnonzero(active)
        weights = deltas[live].T  # queries x live metrics
        while rows_left:
            rows = min(rows_left, _rows(n))
            # One random bit per query, eight to a byte: sum(s * d) = total - 2 * (bits @ d).
            packed = rng.integers(0, 256, size=(rows, (n + 7) // 8), dtype=np.uint8)
            bits = np.unpackbits(packed, axis=1, count=n).astype(np.float64)
            sums = totals[live] - 2.0 * (bits @ weights)
            reach = np.abs(sums) >= observed[live] - tolerance[live]
            hits[live] += np.count_nonzero(reach, axis=0)
            drawn[live] += rows
            rows_left -= rows
        for j in live.tolist():
            p = (hits[j] + 1) / (drawn[j] + 1)
            if (p < low or p >= high) and _beyond(
                int(hits[j]), int(drawn[j]), low, high, len(plan)
            ):
                active[j] = False
        if not active.any():
            break
    return [float((h + 1) / (d + 1)) for h, d in zip(hits.tolist(), drawn.tolist(), strict=True)]


def bootstrap_intervals(
    deltas: FloatArray, *, seed: int, resamples: int, confidence: float
) -> list[tuple[float, float]]:
    """Sequential percentile bootstrap interval of the mean delta per row of `deltas`: a row
    stops once whether its interval excludes 0 is settled (after at least MIN_BOOTSTRAP)."""
    rng = np.random.default_rng(seed)
    count, n = deltas.shape
    # Only the queries where some delta is not 0 matter to a resampled sum: of the n picks of
    # a resample, Binomial(n, m / n) land on those m queries, each uniformly: the same
    # distribution as n uniform picks among all n queries, at a cost that grows with m only.
    support = np.flatnonzero(np.any(deltas != 0, axis=0))
    m = int(support.size)
    tail = (1 - confidence) / 2
    means: list[list[FloatArray]] = [[] for _ in range(count)]
    active = np.ones(count, dtype=bool)
    plan = batches(resamples, min(MIN_BOOTSTRAP, resamples))
    for batch in plan:
        live = np.flatnonzero(active)
        weights = deltas[live][:, support].T / n
        rows_left = batch
        while rows_left:
            rows = min(rows_left, _rows(m))
            landed = rng.binomial(n, m / n, size=rows)
            picks = rng.integers(0, m, size=int(landed.sum()))
            owner = np.repeat(np.arange(rows, dtype=np.int64) * m, landed)
            counts = np.bincount(owner + picks, minlength=rows * m).reshape(rows, m)
            resampled: npt.NDArray[np.float64] = counts.astype(np.float64) @ weights
            for column, j in enumerate(live.tolist()):
                means[j].append(resampled[:, column])
            rows_left -= rows
        for j in live.tolist():
            values = np.concatenate(means[j])
            total = int(values.size)
            low_side = _beyond(int(np.count_nonzero(values <= 0)), total, tail, tail, len(plan))
            high_side = _beyond(int(np.count_nonzero(values >= 0)), total, tail, tail, len(plan))
            if low_side and high_side:
                active[j] = False
        if not active.any():
            break
    return [percentile_interval(np.concatenate(drawn), confidence) for drawn in means]
