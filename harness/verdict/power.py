"""What a gold set could have seen: the minimum detectable effect at 80% power, and what would
bring it down to the effect a user wants to see.  Pure.

The model: a paired test on n queries with per-query differences d_i (candidate - baseline, in
the metric's units: a hit rate in [-1, 1] per query).  The sign-flip test's statistic is
S = sum d_i, and its null spread is V = sum d_i**2.  A real change that moves x queries by a
whole unit each makes S = x + (noise with variance V) and the null spread V + x, so the
two-sided test at level a sees it with probability `power` once

    x - z(power) * sqrt(V) >= z(1 - a/2) * sqrt(V + x),

and never below the exact test's floor: with no noise, x unit changes all one way are called
exactly when x >= `min_detectable_swing(a)` (6 at a = 0.05, 7 at 0.025).  x solves that in
closed form (y = sqrt(V + x) is the root of a quadratic); the minimum detectable effect is
mde = x / n.  Identical deterministic sides (V = 0) on 80 queries at a = 0.025 (two headline
tests): mde = 7 / 80 = 0.0875.

What would reach `effect`: more queries with the same spread per query (V / n held; the
smallest n' whose mde <= effect, by bisection), or more repeats, which shrink the part of V
that is repeat-to-repeat noise (`repeat_noise`: each side's sample variance over its repeats,
divided by its repeat count, summed over queries) as 1/R.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from harness.verdict.stats import min_detectable_swing

POWER = 0.80
_MAX_REPEATS = 30


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


def detectable_queries(variance: float, alpha: float, power: float = POWER) -> float:
    """x in the module docstring: how many whole-unit query changes the test sees at `power`
    on top of per-query differences whose squares sum to `variance`."""
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be in (0, 1), not {alpha} and {power}")
    if variance < 0 or not math.isfinite(variance):
        raise ValueError(f"variance must be finite and >= 0, not {variance}")
    z_a, z_b = NormalDist().inv_cdf(1 - alpha / 2), NormalDist().inv_cdf(power)
    y = (z_a + math.sqrt(z_a * z_a + 4 * (variance + z_b * math.sqrt(variance)))) / 2
    return max(float(min_detectable_swing(alpha)), y * y - variance)


def queries_needed(per_query: float, effect: float, alpha: float) -> int:
    """The smallest number of queries whose mde is at most `effect`, each query adding
    `per_query` to the null spread V."""
    def enough(n: int) -> bool:
        return detectable_queries(per_query * n, alpha) <= effect * n

    high = 1
    while not enough(high):
        high *= 2
    low = high // 2
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
) -> Power:
    """The Power of a paired test over per-query `deltas` at level `alpha`.

    `noise` is the part of sum(deltas**2) expected from repeat-to-repeat variation alone (0 when
    unknown, e.g. with one repeat); `repeats` the repeats per side it was measured with.
    """
    d = np.asarray(deltas, dtype=np.float64)
    if d.ndim != 1 or d.size == 0 or not np.isfinite(d).all():
        raise ValueError("deltas must be a non-empty 1-D array of finite values")
    if effect <= 0:
        raise ValueError(f"effect must be > 0, not {effect}")
    n = int(d.size)
    variance = float((d * d).sum())
    mde = detectable_queries(variance, alpha) / n
    repeats_needed = None
    structural = max(variance - noise, 0.0)
    if noise > 0 and mde > effect:
        for r in range(repeats + 1, _MAX_REPEATS + 1):
            if detectable_queries(structural + noise * repeats / r, alpha) / n <= effect:
                repeats_needed = r
                break
    needed = queries_needed(variance / n, effect, alpha)
    return Power(metric, n, mde, effect, needed, repeats_needed)


def repeat_noise(outcomes: npt.ArrayLike) -> float:
    """Sum over queries of the sample variance over repeats / repeats (repeats x queries in):
    the expected contribution of repeat-to-repeat noise to sum(deltas**2) from one side."""
    m = np.asarray(outcomes, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] < 2:
        return 0.0
    return float((m.var(axis=0, ddof=1) / m.shape[0]).sum())
