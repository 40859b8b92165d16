"""What a gold set could have seen: the minimum detectable effect at 80% power, and what would
bring it down to the effect a user wants to see.  Pure.

A change of a hit rate by delta does not move exactly delta * n queries: each query moves or not,
so the number moved is itself random (binomial), and a test that would just see delta * n moved
queries sees fewer half of the time.  The minimum detectable effect (mde) is the smallest delta
that the project's own test calls with probability `power` (80%) when each of the n queries
independently moves (one way, by a whole unit) with probability delta, on top of the noise the
comparison showed:

- Exact, when every per-query difference is -1, 0 or +1 (both sides deterministic, or one repeat
  each): the test is McNemar's exact test (`stats.mcnemar_exact`), and its power is summed
  exactly over the binomial number of discordant queries.  Each query independently moves with
  probability delta, churns (is discordant by chance, either way alike) with probability rho,
  the share of the queries discordant in this comparison, or neither; so N = b + c ~ Bin(n,
  delta + rho), and given N the queries that went the change's way are Bin(N, theta), theta =
  (delta + rho / 2) / (delta + rho) (when delta + rho > 1, every query is discordant and theta
  keeps the net at delta n).  power = sum_N P(N) P(McNemar at level a rejects | N).  At n = 100
  with identical answers (rho = 0) and a = 0.025 (two headline tests) the mde is 0.089, where the
  floor of the exact test, 7 / n = 0.070, which this module used to print, is called 55% of the
  time, not 80%.
- Otherwise (hit rates over repeats, continuous metrics, more than `EXACT_LIMIT` queries), the
  normal approximation of the sign-flip test: S = sum d_i has null spread V = sum d_i^2 (plus the
  boots' part, `harness.verdict.boots`, n^2 times what they add to the mean delta's variance,
  and then the two-level test's t quantile in place of z(1 - a/2)),
  a change moving a Bin(n, x / n) number of queries adds x to S and x (1 - x / n) to its
  variance, and the test sees it with probability `power` once

      x - z(1 - a/2) * sqrt(V + x) >= z(power) * sqrt(V + x (1 - x / n)),

  never below the exact test's floor (`min_detectable_swing`); x is found by bisection and
  mde = x / n.

What would reach `effect`: more queries with the same spread per query (V / n and rho held; the
smallest n' whose mde <= effect, by bisection), or more repeats, which shrink the part of V that
is repeat-to-repeat noise (`repeat_noise`: each side's sample variance over its repeats, divided
by its repeat count, summed over queries) and the boots' part as 1/R.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from harness.verdict.boots import MOST_DF, BootComponent
from harness.verdict.distributions import t_quantile
from harness.verdict.stats import min_detectable_swing

POWER = 0.80
EXACT_LIMIT = 500  # queries: beyond, the normal approximation (within 0.002 of the exact mde)
_MAX_REPEATS = 30
_MOST_QUERIES = 1 << 24  # the bisection's ceiling for queries_needed
_WINDOW = 9.0  # standard deviations of N summed over either side of its mean


@dataclass(frozen=True)
class Power:
    """The minimum detectable effect of one metric's test, and what would reach `effect`.

    `queries_needed` is the number of (answerable) queries at which mde would be `effect` with
    the same per-query spread; `repeats_needed` the repeats per side that would do it with these
    queries (None: no number of repeats up to 30 would, or the spread is not repeat noise).
    """

    metric: str
    n: int
    mde: float
    effect: float
    queries_needed: int
    repeats_needed: int | None

    @property
    def enough(self) -> bool:
        return self.mde <= self.effect


def _z(alpha: float, power: float) -> tuple[float, float]:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be in (0, 1), not {alpha} and {power}")
    return NormalDist().inv_cdf(1 - alpha / 2), NormalDist().inv_cdf(power)


def detectable_queries(
    variance: float, alpha: float, power: float = POWER, n: int | None = None
) -> float:
    """x in the module docstring: how many queries a change must move, on average, for the test
    to see it at `power` on top of per-query differences whose squares sum to `variance`
    (`n`: the queries, for the binomial variance of the number moved; None: x (1 - x / n) taken
    as x)."""
    z_a, z_b = _z(alpha, power)
    if variance < 0 or not math.isfinite(variance):
        raise ValueError(f"variance must be finite and >= 0, not {variance}")

    # Without n: x = (z_a + z_b) sqrt(V + x), a quadratic's root.  With n the change's spread
    # x (1 - x / n) is smaller, and x = z_a sqrt(V + x) + z_b sqrt(V + x (1 - x / n)) is reached
    # from that root by fixed-point steps, which only go down (the right side is at most x there)
    # and settle fast: the right side's slope is below one once V + x exceeds a few units.
    c = (z_a + z_b) ** 2
    x = (c + math.sqrt(c * c + 4 * c * variance)) / 2
    if n:
        for _ in range(500):
            step = z_a * math.sqrt(variance + x) + z_b * math.sqrt(
                variance + x * max(0.0, 1 - x / n)
            )
            if x - step <= 1e-10 * x:
                x = step
                break
            x = step
    return max(float(min_detectable_swing(alpha)), x)


@lru_cache(maxsize=65536)
def _lowest_call(discordant: int, alpha: float) -> int:
    """The largest min(b, c) that McNemar's exact test calls at `alpha` among `discordant`
    discordant pairs (-1: none does): 2 * P(Bin(N, 1/2) <= k) < alpha."""
    if discordant == 0:
        return -1
    logs = _log_factorials(discordant)
    k = np.arange(discordant + 1)
    log_pmf = logs[discordant] - logs[k] - logs[discordant - k] - discordant * math.log(2)
    below = np.flatnonzero(2 * np.cumsum(np.exp(log_pmf)) < alpha)
    return int(below[-1]) if below.size else -1


@lru_cache(maxsize=8)
def _log_factorials(n: int) -> npt.NDArray[np.float64]:
    """log k! for k = 0..n (at least 4096 of them: one table serves many n)."""
    top = max(n, 4096)
    return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, top + 1, dtype=np.float64)))))


def _log_binomial(
    n: int | npt.NDArray[np.int64], k: npt.NDArray[np.int64], p: float
) -> npt.NDArray[np.float64]:
    logs = _log_factorials(int(np.max(n)))
    with np.errstate(divide="ignore"):
        return np.asarray(
            logs[n] - logs[k] - logs[n - k] + k * math.log(p) + (n - k) * math.log1p(-p),
            dtype=np.float64,
        )


def exact_power(effect: float, n: int, churn: float, alpha: float) -> float:
    """P(McNemar's exact test at `alpha` calls a change) when each of `n` queries independently
    moves one way with probability `effect` and churns either way alike with `churn` (module
    docstring)."""
    if n <= 0 or effect <= 0:
        return 0.0
    moving = min(1.0, effect + churn)
    theta = min(1.0, (moving + effect) / (2 * moving))  # the discordant queries' net is effect * n
    if moving >= 1.0:
        counts = np.array([n])
        weights = np.ones(1)
    else:
        sd = math.sqrt(n * moving * (1 - moving))
        lo = max(0, math.floor(n * moving - _WINDOW * sd - 1))
        hi = min(n, math.ceil(n * moving + _WINDOW * sd + 1))
        counts = np.arange(lo, hi + 1)
        weights = np.exp(_log_binomial(n, counts, moving))
    lows = np.array([_lowest_call(int(c), alpha) for c in counts.tolist()])
    keep = (lows >= 0) & (weights >= 1e-15)
    if not keep.any():
        return 0.0
    counts, weights, lows = counts[keep], weights[keep], lows[keep]
    if theta >= 1.0:
        return min(1.0, float(weights.sum()))
    # Called when the queries that went the change's way are >= N - k, or <= k: one less the
    # middle of Bin(N, theta), k < X < N - k, for every N at once (a row per N; the middle is
    # about 2.2 sqrt(N) wide, far fewer terms than the tails).
    width = counts - 2 * lows - 1
    step = np.arange(int(width.max()))[None, :]
    way = lows[:, None] + 1 + step
    big = counts[:, None]
    inside = step < width[:, None]
    pmf = np.exp(_log_binomial(big, np.where(inside, way, 0), theta)) * inside
    middle = pmf.sum(axis=1)
    return min(1.0, float((weights * np.clip(1.0 - middle, 0.0, 1.0)).sum()))


@lru_cache(maxsize=4096)
def detectable_exact(n: int, churn: float, alpha: float, power: float = POWER) -> float | None:
    """The smallest effect `exact_power` calls with probability `power` (to 1e-4), or None
    when no effect up to 1 - churn would be.  The bisection starts from the normal
    approximation's answer, which is within a few thousandths of it."""
    _z(alpha, power)
    top = 1.0 - churn
    if top <= 0 or exact_power(top, n, churn, alpha) < power:
        return None

    def seen(effect: float) -> bool:
        return exact_power(effect, n, churn, alpha) >= power

    guess = min(top, detectable_queries(churn * n, alpha, power, n=n) / n)
    low, high = max(0.0, guess - 0.01), min(top, guess + 0.01)
    while low > 0 and seen(low):
        low, high = max(0.0, low - 0.05), low
    while not seen(high):
        low, high = high, min(top, high + 0.05)
    while high - low > 1e-4:
        middle = (low + high) / 2
        low, high = (low, middle) if seen(middle) else (middle, high)
    return high


def queries_needed(per_query: float, effect: float, alpha: float, boots: float = 0.0) -> int:
    """The smallest number of queries whose mde is at most `effect`, each query adding
    `per_query` to the null spread V (and `boots` times n^2: the boots' variance of the mean
    delta, which more queries do not shrink)."""

    def enough(n: int) -> bool:
        variance = per_query * n + boots * n * n
        return detectable_queries(variance, alpha, n=n) <= effect * n

    return _bisect_queries(enough)


def _bisect_queries(enough: Callable[[int], bool]) -> int:
    high = 1
    while not enough(high):
        if high >= _MOST_QUERIES:
            return _MOST_QUERIES
        high *= 2
    low = high // 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


@lru_cache(maxsize=4096)
def _exact_needed(churn: float, effect: float, alpha: float) -> int:
    """The smallest number of queries whose exact mde (at this churn) is at most `effect`,
    searched from the normal approximation's answer outwards (bisection inside the bracket)."""

    def enough(n: int) -> bool:
        if n > EXACT_LIMIT:
            return detectable_queries(churn * n, alpha, n=n) <= effect * n
        return exact_power(effect, n, churn, alpha) >= POWER

    guess = queries_needed(churn, effect, alpha)
    low, high = max(1, guess * 9 // 10), max(2, guess * 11 // 10 + 1)
    while low > 1 and enough(low):
        low, high = max(1, low * 3 // 4), low
    while not enough(high):
        if high >= _MOST_QUERIES:
            return _MOST_QUERIES
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


def power(
    metric: str,
    deltas: npt.ArrayLike,
    *,
    alpha: float,
    effect: float,
    noise: float = 0.0,
    repeats: int = 1,
    boots: BootComponent | None = None,
) -> Power:
    """The Power of a paired test over per-query `deltas` at level `alpha`.

    `noise` is the part of sum(deltas**2) expected from repeat-to-repeat variation alone (0 when
    unknown, e.g. with one repeat); `repeats` the repeats per side it was measured with; `boots`
    the variation between boots, whose part of the variance is added.
    """
    d = np.asarray(deltas, dtype=np.float64)
    if d.ndim != 1 or d.size == 0 or not np.isfinite(d).all():
        raise ValueError("deltas must be a non-empty 1-D array of finite values")
    if effect <= 0:
        raise ValueError(f"effect must be > 0, not {effect}")
    n = int(d.size)
    added = boots.added if boots is not None else 0.0
    whole = bool(np.isin(d, (-1.0, 0.0, 1.0)).all())
    if whole and added == 0 and n <= EXACT_LIMIT:
        churn = float(np.count_nonzero(d)) / n
        exact = detectable_exact(n, churn, alpha)
        mde = exact if exact is not None else detectable_queries(churn * n, alpha, n=n) / n
        return Power(metric, n, mde, effect, _exact_needed(churn, effect, alpha), None)
    if boots is not None and added > 0 and boots.df_effective < MOST_DF:
        # The two-level test's bar is Student's t, not the normal: the alpha whose normal
        # quantile is that t.
        t = t_quantile(1 - alpha / 2, boots.df_effective)
        alpha = 2 * (1 - NormalDist().cdf(t))
    variance = float((d * d).sum()) + added * n * n
    mde = detectable_queries(variance, alpha, n=n) / n
    repeats_needed = None
    structural = max(variance - noise - added * n * n, 0.0)
    if (noise > 0 or added > 0) and mde > effect:
        for r in range(repeats + 1, _MAX_REPEATS + 1):
            shrunk = structural + (noise + added * n * n) * repeats / r
            if detectable_queries(shrunk, alpha, n=n) / n <= effect:
                repeats_needed = r
                break
    needed = queries_needed((variance - added * n * n) / n, effect, alpha, added)
    return Power(metric, n, mde, effect, needed, repeats_needed)


def repeat_noise(outcomes: npt.ArrayLike) -> float:
    """Sum over queries of the sample variance over repeats / repeats (repeats x queries in):
    the expected contribution of repeat-to-repeat noise to sum(deltas**2) from one side."""
    m = np.asarray(outcomes, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] < 2:
        return 0.0
    return float((m.var(axis=0, ddof=1) / m.shape[0]).sum())
