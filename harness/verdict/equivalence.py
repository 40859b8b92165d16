"""Equivalence: can the data rule out a change of the band's size?  Two one-sided tests.  Pure.

    eq = equivalence(deltas, alpha=0.05, band=0.05, boots=boots)
    eq.inside          # the 1 - 2 alpha interval lies inside (-band, +band): "no change"
    eq.ruled_out       # the smallest change the interval rules out, either way
    eq.queries_needed  # about how many queries would rule the band out (None: none would)

"No measurable difference" is a claim of its own, with its own error: that the true change is
smaller than the band.  Schuirmann's two one-sided tests (TOST) make it at level alpha by asking
whether the 1 - 2 alpha confidence interval of the delta lies inside (-band, +band); the chance
of the claim when the true change is the band's size or more is then at most alpha.  Several
headline metrics all inside their bands is an intersection-union test (Berger 1982): each at
alpha, and no multiplicity correction, which would only throw away the claim's power.  A test that
found nothing, or the power it would have had (`harness.verdict.power`, kept as advice for
planning), is not such a claim: the data are.

The interval, by what the per-query deltas d_i (candidate - baseline, each the side's mean over its
repeats) are:

- Every d_i is -1, 0 or +1 (both sides deterministic, or one repeat a side): paired binary
  outcomes, b = queries only the baseline hits, c = only the candidate.  Tango's score interval
  for the difference of paired proportions (Stat Med 1998), the one Fagerland, Lydersen and
  Laake recommend (BMC Med Res Methodol 2013): the delta0 whose score statistic

      T(delta0) = (c - b - n delta0) / sqrt(n (2 p1(delta0) + delta0 - delta0^2))

  stays within +/- z(1 - alpha), p1(delta0) the restricted maximum-likelihood estimate of the
  baseline-only share under delta = delta0 (a quadratic's root).  It needs no discordance to be
  finite: with b = c = 0 the interval is +/- z^2 / (n + z^2), so 80 identical queries rule out
  +/- 0.033 at alpha 0.05, and a change of 0.1 is ruled out from 25 queries on.
- Otherwise (hit rates over repeats, continuous metrics): the mean delta's t interval on n - 1
  degrees of freedom, widened by the variation between boots when there is any
  (`harness.verdict.boots.widen`: the two-level interval the tests use).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from harness.verdict.boots import BootComponent, widen
from harness.verdict.distributions import t_quantile

_STEPS = 80  # bisection steps: far below float resolution on [-1, 1]
_MOST_QUERIES = 1 << 24
TANGO = "Tango's score interval (paired binary outcomes)"
T_INTERVAL = "t interval of the mean delta"
TWO_LEVEL = "two-level t interval (queries and boots)"


@dataclass(frozen=True)
class Equivalence:
    """One metric's equivalence interval: the 1 - 2 alpha confidence interval of its delta."""

    low: float
    high: float
    confidence: float  # 1 - 2 alpha
    band: float
    method: str
    n: int
    queries_needed: int | None = None  # about how many would rule the band out; None: none would

    @property
    def inside(self) -> bool:
        """The interval rules out a change of the band's size either way."""
        return -self.band < self.low and self.high < self.band

    @property
    def ruled_out(self) -> float:
        """The smallest change (either way) that the interval rules out."""
        return max(abs(self.low), abs(self.high))


def _z(alpha: float) -> float:
    from statistics import NormalDist

    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), not {alpha}")
    return NormalDist().inv_cdf(1 - alpha)


def _baseline_only(b: float, c: float, n: float, delta: float) -> float:
    """The restricted MLE of the baseline-only share p1 under p2 - p1 = delta (module doc)."""
    big_b = b + c - delta * (2 * n + b - c)
    disc = big_b * big_b + 8 * n * b * delta * (1 - delta)
    p1 = (big_b + math.sqrt(max(0.0, disc))) / (4 * n)
    return min(max(p1, max(0.0, -delta)), (1 - delta) / 2)


def tango_statistic(b: float, c: float, n: float, delta: float) -> float:
    """T(delta) of the module docstring: positive when the data lie above delta."""
    p1 = _baseline_only(b, c, n, delta)
    variance = n * (2 * p1 + delta - delta * delta)
    diff = c - b - n * delta
    if variance <= 0:
        return math.copysign(math.inf, diff) if diff else 0.0
    return diff / math.sqrt(variance)


def tango_interval(b: float, c: float, n: float, alpha: float) -> tuple[float, float]:
    """The 1 - 2 alpha score interval of (c - b) / n (Tango 1998), by bisection on each side of
    the estimate (T decreases in delta)."""
    if n <= 0 or b < 0 or c < 0 or b + c > n:
        raise ValueError(f"need 0 <= b, c and b + c <= n > 0, not b={b} c={c} n={n}")
    z = _z(alpha)
    est = (c - b) / n

    def root(lo: float, hi: float, above: bool) -> float:
        # above: the largest delta with T(delta) >= -z; else the smallest with T <= z
        for _ in range(_STEPS):
            mid = (lo + hi) / 2
            t = tango_statistic(b, c, n, mid)
            if (t >= -z) if above else (t > z):
                lo = mid
            else:
                hi = mid
        return lo if above else hi

    edge = 1 - 1e-12
    # An end the data cannot rule out even next to +/-1 is the metric's own end.
    low = -1.0 if tango_statistic(b, c, n, -edge) <= z else root(-edge, est, above=False)
    high = 1.0 if tango_statistic(b, c, n, edge) >= -z else root(est, edge, above=True)
    return low, high


def _binary(deltas: npt.NDArray[np.float64]) -> tuple[int, int] | None:
    """(b, c) when every delta is -1, 0 or +1; else None."""
    if not np.all(np.isin(deltas, (-1.0, 0.0, 1.0))):
        return None
    return int(np.count_nonzero(deltas < 0)), int(np.count_nonzero(deltas > 0))


def _tango_needed(b: int, c: int, n: int, alpha: float, band: float) -> int | None:
    """The fewest queries (at least n) at which counts in the same shares, b and c scaled, would
    rule the band out; None when the change seen is already the band's size or more."""
    if abs(c - b) / n >= band:
        return None

    def inside(m: int) -> bool:
        low, high = tango_interval(b * m / n, c * m / n, m, alpha)
        return -band < low and high < band

    if inside(n):
        return n
    lo, hi = n, n
    while not inside(hi):
        lo, hi = hi, hi * 2
        if hi > _MOST_QUERIES:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if inside(mid) else (mid, hi)
    return hi


def equivalence(
    deltas: npt.ArrayLike,
    *,
    alpha: float,
    band: float,
    boots: BootComponent | None = None,
) -> Equivalence:
    """The equivalence interval of the mean of `deltas` (one per query, in [-1, 1] for a rate)
    at 1 - 2 alpha, against +/- `band` (module docstring)."""
    d = np.asarray(deltas, dtype=np.float64)
    n = int(d.size)
    if n == 0:
        return Equivalence(-1.0, 1.0, 1 - 2 * alpha, band, TANGO, 0, None)
    counts = _binary(d)
    if counts is not None and (boots is None or boots.added <= 0):
        b, c = counts
        low, high = tango_interval(b, c, n, alpha)
        needed = _tango_needed(b, c, n, alpha, band)
        return Equivalence(low, high, 1 - 2 * alpha, band, TANGO, n, needed)
    mean = float(d.mean())
    sd = float(d.std(ddof=1)) if n > 1 else math.inf
    half = t_quantile(1 - alpha, max(1, n - 1)) * sd / math.sqrt(n) if n > 1 else math.inf
    low, high = mean - half, mean + half
    method = T_INTERVAL
    if boots is not None and boots.estimable and boots.added > 0:
        low, high = widen(mean, low, high, boots, 1 - 2 * alpha)
        method = TWO_LEVEL
    needed = None
    if abs(mean) < band and math.isfinite(half):  # the half width shrinks as 1 / sqrt(n)
        room, widest = band - abs(mean), max(high - mean, mean - low)
        needed = n if widest < room else min(_MOST_QUERIES, math.ceil(n * (widest / room) ** 2) + 1)
    low, high = max(low, -1.0), min(high, 1.0)
    return Equivalence(low, high, 1 - 2 * alpha, band, method, n, needed)
