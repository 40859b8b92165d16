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

Queries that share every delta are drawn as one group, which is what keeps the cost per
resample below the number of queries (metrics of ranks take few distinct values): the
distribution of every resampled statistic is exactly the one per-query draws give, only the
random numbers differ. Sign flip: a group of c queries with deltas d (or -d: a sign flip makes
them the same) adds d * (2K - c), K ~ Binomial(c, 1/2) the number of + signs, drawn as the
popcount of c random bits (64 to a word). Bootstrap: the n picks of a resample land on the
groups as Multinomial(n, c_g / n); groups of more than SMALL_GROUP queries get their counts
from numpy's multinomial (one binomial each), the others share the picks that land on them,
drawn uniformly over their queries (a pick costs less than a binomial); queries whose deltas
are all 0 add nothing and are never drawn.

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

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from harness.verdict.distributions import binomial_cdf
from harness.verdict.resample import CHUNK_ELEMENTS, FloatArray, IntArray, percentile_interval

ERROR = 1e-3
MIN_BOOTSTRAP = 1000
FIRST_BATCH = 250
# A group of at most this many queries gets its bootstrap count from the shared picks, a larger
# one from numpy's multinomial (a category of it costs about as much as this many picks).
SMALL_GROUP = 16
# Counts of one chunk of bootstrap resamples (resamples x groups): kept small enough to stay in
# the processor's cache while the picks are counted into it.
COUNT_CELLS = 1 << 17
# Random words of one chunk of sign-flip resamples, kept in cache the same way (the words are
# drawn in one stream, row after row, so the chunk size does not change them).
SIGN_CELLS = 1 << 16

U64 = npt.NDArray[np.uint64]


def batches(resamples: int, first: int = FIRST_BATCH) -> list[int]:
    """Batch sizes adding up to `resamples`: `first`, then doubling the total at each look."""
    sizes: list[int] = []
    total = 0
    while total < resamples:
        size = min(max(first, total), resamples - total)
        sizes.append(size)
        total += size
    return sizes


def _beyond(hits: int, draws: int, below: float, above: float, looks: int) -> bool:
    """Whether the two-sided Clopper-Pearson interval of hits / draws at level 1 - ERROR /
    looks lies wholly below `below` or wholly above `above`.

    Tested without computing its ends (which takes the inverse incomplete beta function): its
    upper end is below `below` exactly when P(X <= hits) < half at p = `below`, its lower end
    above `above` exactly when P(X >= hits) < half at p = `above`, X ~ Bin(draws, p) and half
    = ERROR / looks / 2, both probabilities being monotone in p."""
    half = ERROR / looks / 2
    if binomial_cdf(hits, draws, below) < half:  # the upper end is below `below`
        return True
    # P(X >= hits) at p = `above` is P(draws - X <= draws - hits) at p = 1 - `above`.
    return binomial_cdf(draws - hits, draws, 1.0 - above) < half


@dataclass(frozen=True)
class Groups:
    """The distinct columns of a metrics x queries matrix: `values` (metrics x groups) and how
    many queries share each (`sizes`)."""

    values: FloatArray
    sizes: IntArray


def distinct_columns(deltas: FloatArray, *, signless: bool = False) -> Groups:
    """Group the queries (columns) of `deltas` that have the same value for every metric; with
    `signless`, a column and its negation are one group (each turned so that its first non-zero
    value is positive)."""
    columns = np.asarray(deltas, dtype=np.float64).T
    if columns.shape[0] == 0:
        return Groups(np.zeros((deltas.shape[0], 0)), np.zeros(0, dtype=np.int64))
    if signless:
        first = columns[np.arange(columns.shape[0]), np.argmax(columns != 0, axis=1)]
        columns = columns * np.where(first < 0, -1.0, 1.0)[:, None]
    # Each metric's values as small integer codes, the codes of a column as one integer (mixed
    # radix): one sort of integers instead of a sort of rows.
    key = np.zeros(columns.shape[0], dtype=np.int64)
    radix = 1
    for metric in columns.T:
        distinct, code = np.unique(metric, return_inverse=True)
        radix *= int(distinct.size)
        if radix >= 1 << 62:
            values, sizes = np.unique(columns, axis=0, return_counts=True)
            return Groups(np.ascontiguousarray(values.T), sizes.astype(np.int64))
        key = key * int(distinct.size) + code.reshape(-1)
    _, first, sizes = np.unique(key, return_index=True, return_counts=True)
    return Groups(np.ascontiguousarray(columns[first].T), sizes.astype(np.int64))


_BYTE_ONES = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def popcount(words: U64) -> npt.NDArray[np.uint8]:
    """The number of 1 bits of each uint64 (numpy >= 2 has it as a ufunc)."""
    count = getattr(np, "bitwise_count", None)
    if count is not None:
        ones: npt.NDArray[np.uint8] = count(words)
        return ones
    as_bytes = np.ascontiguousarray(words).view(np.uint8).reshape(*words.shape, 8)
    summed: npt.NDArray[np.uint8] = _BYTE_ONES[as_bytes].sum(axis=-1, dtype=np.uint8)
    return summed


class _SignDraws:
    """K ~ Binomial(size, 1/2) per group, as the popcount of `size` random bits, 64 to a word:
    `draw` gives each word's popcount; `word_group` names the group each word counts for."""

    def __init__(self, sizes: IntArray) -> None:
        words = (sizes + 63) // 64
        self.width = int(words.sum())
        self.word_group = np.repeat(np.arange(sizes.size), words)
        mask = np.full(self.width, np.iinfo(np.uint64).max, dtype=np.uint64)
        spare = sizes % 64
        last = (np.cumsum(words) - 1)[spare > 0]
        mask[last] = (np.uint64(1) << spare[spare > 0].astype(np.uint64)) - np.uint64(1)
        self.mask = mask

    def draw(self, rng: np.random.Generator, rows: int) -> FloatArray:
        raw: U64 = rng.bit_generator.random_raw((rows, self.width))
        raw &= self.mask
        return popcount(raw).astype(np.float64)


def sign_flip_p(
    deltas: FloatArray, *, seed: int, resamples: int, bounds: tuple[float, float]
) -> list[float]:
    """Sequential sign-flip p per row of `deltas` (metrics x queries), against `bounds` =
    (low, high): a row stops once its p is settled below low or above high."""
    rng = np.random.default_rng(seed)
    count = deltas.shape[0]
    n = int(np.count_nonzero(np.any(deltas != 0, axis=0)))
    observed = np.abs(deltas.sum(axis=1))
    tolerance = 8 * n * np.finfo(np.float64).eps * np.abs(deltas).sum(axis=1)
    hits = np.zeros(count, dtype=np.int64)
    drawn = np.zeros(count, dtype=np.int64)
    active = np.ones(count, dtype=bool)
    plan = batches(resamples)
    low, high = bounds
    for batch in plan:
        live = np.flatnonzero(active)
        # Grouped over the metrics still drawn: a few discrete ones left make few groups.
        # A query whose deltas are all 0 adds nothing to any signed sum: left out.
        rows_of = deltas[live]
        groups = distinct_columns(rows_of[:, np.any(rows_of != 0, axis=0)], signless=True)
        signs = _SignDraws(groups.sizes)
        # Group g adds values[:, g] * (2K - size): the sum is 2 * (K @ values) - values @ sizes.
        offset = groups.values @ groups.sizes.astype(np.float64)
        weights = 2.0 * groups.values[:, signs.word_group].T  # words x live metrics
        rows_left = batch
        while rows_left:
            rows = min(rows_left, max(1, SIGN_CELLS // max(signs.width, 1)))
            sums = signs.draw(rng, rows) @ weights - offset
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


class _PickDraws:
    """Per resample, how many of its n picks land on each group: Multinomial(n, size / n)."""

    def __init__(self, sizes: IntArray, n: int) -> None:
        self.n = n
        self.groups = int(sizes.size)
        small = sizes <= SMALL_GROUP
        self.large = np.flatnonzero(~small)
        # Positions of the small groups' queries, each naming its group: a pick among them.
        self.owner = np.repeat(np.flatnonzero(small), sizes[small])
        landed_small = int(self.owner.size)
        # Resamples per chunk: their counts stay in cache and their picks in CHUNK_ELEMENTS.
        self.rows = max(
            1, min(COUNT_CELLS // max(self.groups, 1), CHUNK_ELEMENTS // max(landed_small, 1))
        )
        pvals = np.append(sizes[self.large] / n, [landed_small / n, 0.0])
        self.pvals = pvals  # the last (queries whose deltas are all 0) takes what is left

    def draw(self, rng: np.random.Generator, rows: int) -> FloatArray:
        cells = rng.multinomial(self.n, self.pvals, size=rows)
        counts = np.zeros((rows, self.groups))
        counts[:, self.large] = cells[:, : self.large.size]
        landed = cells[:, self.large.size]
        total = int(landed.sum())
        if total:
            picks = self.owner[rng.integers(0, self.owner.size, size=total)]
            row = np.repeat(np.arange(rows, dtype=np.int64) * self.groups, landed)
            counts += np.bincount(row + picks, minlength=rows * self.groups).reshape(
                rows, self.groups
            )
        return counts


def bootstrap_intervals(
    deltas: FloatArray, *, seed: int, resamples: int, confidence: float, sequential: bool = True
) -> list[tuple[float, float]]:
    """Sequential percentile bootstrap interval of the mean delta per row of `deltas`: a row
    stops once whether its interval excludes 0 is settled (after at least MIN_BOOTSTRAP); with
    `sequential` False every row is drawn `resamples` times."""
    rng = np.random.default_rng(seed)
    count, n = deltas.shape
    tail = (1 - confidence) / 2
    means: list[list[FloatArray]] = [[] for _ in range(count)]
    active = np.ones(count, dtype=bool)
    plan = batches(resamples, min(MIN_BOOTSTRAP, resamples)) if sequential else [resamples]
    for batch in plan:
        live = np.flatnonzero(active)
        # Grouped over the metrics still drawn: a few discrete ones left make few groups.
        rows_of = deltas[live]
        groups = distinct_columns(rows_of[:, np.any(rows_of != 0, axis=0)])
        picks = _PickDraws(groups.sizes, n)
        weights = groups.values.T / n
        rows_left = batch
        while rows_left:
            rows = min(rows_left, picks.rows)
            resampled = picks.draw(rng, rows) @ weights
            for column, j in enumerate(live.tolist()):
                means[j].append(resampled[:, column])
            rows_left -= rows
        for j in live.tolist() if sequential else ():
            values = np.concatenate(means[j])
            total = int(values.size)
            low_side = _beyond(int(np.count_nonzero(values <= 0)), total, tail, tail, len(plan))
            high_side = _beyond(int(np.count_nonzero(values >= 0)), total, tail, tail, len(plan))
            if low_side and high_side:
                active[j] = False
        if not active.any():
            break
    return [percentile_interval(np.concatenate(drawn), confidence) for drawn in means]


# The largest lattice (2 * lcm * n + 1 points) the exact bootstrap below convolves over; past it
# the interval is drawn like the others.
EXACT_POINTS = 1 << 23


def lattice_bootstrap_interval(
    scaled: IntArray, scale: int, *, confidence: float
) -> tuple[float, float] | None:
    """The percentile bootstrap interval of the mean of `scaled` / `scale` (integers: hit-rate
    differences in units of 1 / lcm of the repeats), computed exactly instead of drawn.

    A resample's sum is the sum of n picks, each a value v in [-scale, scale] with probability
    (queries with v) / n: its distribution is that one-pick law convolved n times, taken here
    as the n-th power of its Fourier transform. The interval's ends are the (1 - confidence) / 2
    and (1 + confidence) / 2 quantiles of that distribution (the smallest mean whose cumulative
    probability reaches each), which a drawn percentile interval estimates with Monte Carlo
    error. None when the lattice is larger than EXACT_POINTS (the caller draws instead).
    """
    n = int(scaled.size)
    if n == 0 or not scaled.any():
        return (0.0, 0.0)
    width = 2 * scale * n + 1
    if width > EXACT_POINTS:
        return None
    one = np.bincount(scaled.astype(np.int64) + scale, minlength=2 * scale + 1) / n
    size = 1 << (width - 1).bit_length()
    pmf = np.fft.irfft(np.fft.rfft(one, size) ** n, size)[:width]
    cdf = np.cumsum(np.clip(pmf, 0.0, None))
    cdf /= cdf[-1]
    tail = (1 - confidence) / 2
    # A little below each level, so that rounding in the transform cannot step past a quantile.
    lo, hi = np.searchsorted(cdf, [tail - 1e-9, 1 - tail - 1e-9])
    return (float((lo - scale * n) / (scale * n)), float((hi - scale * n) / (scale * n)))
