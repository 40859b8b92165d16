"""Boots as a level of the quality test: the variation between boots that the queries do not show.

    boots = boot_component(baseline, candidate)    # repeats x queries of one metric, per side
    p = boot_p(boots, deltas)                      # the two-level test's p (None: no boots seen)
    lo, hi = widen(delta, lo, hi, boots, confidence)

A service that builds something at random when it starts (an ANN graph, a sampled cache) shifts
every query of a boot by a shared amount.  The R answers of a query on one side then share their
boots with every other query's, and a test that treats the queries' per-repeat answers as
independent draws misses that part of the variance: with a per-boot spread of 0.03 in hit rate
an A/A over 300 queries at R = 3 was called "improved" or "regressed" 16% of the time.

The model, two levels.  y_isr, query i's value (a hit, a reciprocal rank) on side s in boot r, is
mu_is + b_sr + e_isr: a boot shift b_sr shared by the boot's queries (variance sigma_b^2) and
the query's own noise.  A boot's mean over the n queries is m_sr; within a side the boots ask the
same queries, so the spread of m_sr over r is sigma_b^2 + w_s, where w_s = (1 / n^2) sum_i
Var(e_isr) is what the queries' noise alone puts into a boot's mean, estimated from each query's
sample variance over its repeats.  Pooled over both sides (what both sides' boots vary by, with
R_b + R_c - 2 degrees of freedom, the side means taken out):

    S^2 = pooled sample variance of the boot means       w = pooled w_s
    sigma_b^2 = max(0, S^2 - w)                            (method of moments, as ANOVA's)
    added = sigma_b^2 (1 / R_b + 1 / R_c)                  what boots add to Var(mean delta)
    within = sum_i d_i^2 / n^2                             the sign-flip test's Var(mean delta)

The test of "no change" is then the mean delta D against sqrt(within + added) on Student's t with
Satterthwaite's degrees of freedom, df (within + added)^2 / spread^2, spread = S^2 (1 / R_b +
1 / R_c) the variance the boots' means show (the estimate's own uncertainty is that of S^2, whose
df is the boots'): about the boots' df whenever they are seen at all.  That is the price of
putting them in: with R = 3 per side a t on 4 degrees of freedom (3.50 where the normal says 2.24
at alpha 0.025).  Cheaper rules were measured and rejected (`scripts/calibrate.py --only boots`
and docs/calibration.md): a t whose degrees of freedom grow as the boots' share shrinks (df / f^2,
f = added / (within + added)) calls 7.1% of the A/As with a per-boot spread of 0.03 at R = 3,
since it trusts a small estimate of sigma_b as if it were exact.  The p is never taken below the
exact sign-flip test's (`stats.hit_rate_test`): boots can only make a call harder.  When no
boot-to-boot variation is seen (S^2 <= w, as for every deterministic service) nothing changes.

With one boot per side (R = 1) sigma_b cannot be estimated: a boot shift and a real change are the
same thing to the data, and the test is that of these two boots.  With fewer than MIN_DF degrees
of freedom (R = 2 a side: 2) it can, but a t on 2 degrees of freedom (6.2 at 0.025, where the
normal says 2.24) would leave no power worth having: a candidate losing its answer in 20% of
searches at random, with 80 queries, went uncalled.  Below MIN_DF, `BootComponent.estimable` is
False, the test is the queries' own, as before, and the report says that R >= 3 a side puts the
boots in it.

`present`: the boots' means spread more than their queries explain, S^2 / w beyond the 95th
percentile of chi^2_df / df (the spread the queries alone would give).

Pure: no I/O, no clock, no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from harness.verdict.distributions import chi2_sf, t_quantile, t_sf

PRESENT = 0.05  # the level at which boot-to-boot variation is said to be present
MIN_DF = 4  # the boots' degrees of freedom (R_b + R_c - 2) below which they stay out of the test
MOST_DF = 1000  # beyond this many degrees of freedom t is the normal
ROUNDING = 1e-20  # a variance of values in [0, 1] this small is floating-point rounding


@dataclass(frozen=True)
class BootComponent:
    """The between-boot part of one metric's mean delta (module docstring).

    `between`: sigma_b^2, a boot mean's variance beyond its queries' noise (0 when none seen);
    `added`: what it adds to the variance of the mean delta; `within`: that variance from the
    queries and repeats alone; `spread`: the variance of the mean delta the boots' means show;
    `df`: the boots' degrees of freedom (below MIN_DF: not estimable); `p_present`: the
    chance of a spread of boot means this large from the queries alone (None when not
    estimable)."""

    between: float
    added: float
    within: float
    df: int
    spread: float = 0.0
    p_present: float | None = None

    @property
    def estimable(self) -> bool:
        """Enough boots (MIN_DF degrees of freedom) for their variation to be in the test."""
        return self.df >= MIN_DF

    @property
    def present(self) -> bool:
        return self.p_present is not None and self.p_present < PRESENT

    @property
    def share(self) -> float:
        """The boots' share of the mean delta's variance (0 to 1)."""
        total = self.within + self.added
        return self.added / total if total > 0 else 0.0

    @property
    def widening(self) -> float:
        """How many times wider the interval's standard error is with the boots inside."""
        return math.sqrt(1 / (1 - self.share)) if self.share < 1 else math.inf

    @property
    def df_effective(self) -> int:
        """Degrees of freedom of the two-level test's t (MOST_DF: the normal)."""
        if self.added <= 0 or not self.estimable:
            return MOST_DF
        ratio = (self.within + self.added) / self.spread
        return max(self.df, min(MOST_DF, math.floor(self.df * ratio * ratio)))


NONE = BootComponent(0.0, 0.0, 0.0, 0)


def boot_component(baseline: npt.ArrayLike, candidate: npt.ArrayLike) -> BootComponent:
    """The between-boot component of one metric from each side's repeats x queries values (the
    repeats of a side are its boots; each side's rows align with the other's columns)."""
    sides = [np.asarray(m, dtype=np.float64) for m in (baseline, candidate)]
    if any(m.ndim != 2 for m in sides) or sides[0].shape[1] != sides[1].shape[1]:
        raise ValueError("values must be repeats x queries with the same queries on both sides")
    n = sides[0].shape[1]
    if n == 0 or any(m.shape[0] == 0 for m in sides):
        return NONE
    deltas = sides[1].mean(axis=0) - sides[0].mean(axis=0)
    within = float((deltas * deltas).sum()) / (n * n)
    df = sum(m.shape[0] - 1 for m in sides)
    if df == 0:
        return BootComponent(0.0, 0.0, within, 0)
    several = [m for m in sides if m.shape[0] > 1]
    spread = sum(float(m.mean(axis=1).var(ddof=1)) * (m.shape[0] - 1) for m in several)
    noise = sum(float(m.var(axis=0, ddof=1).sum()) / (n * n) * (m.shape[0] - 1) for m in several)
    s2, w = _settled(spread / df), _settled(noise / df)
    between = max(0.0, s2 - w)
    scale = sum(1 / m.shape[0] for m in sides)
    # With no query varying between repeats, any spread of the boot means is the boots'.
    p_present = chi2_sf(df * s2 / w, df) if w > 0 else 0.0 if s2 > 0 else 1.0
    if df < MIN_DF:
        between = 0.0
    return BootComponent(between, between * scale, within, df, s2 * scale, p_present)


def _settled(variance: float) -> float:
    """A variance, with the rounding of means of equal values (1e-33 and the like) taken as 0:
    a deterministic service's boots agree exactly."""
    return variance if variance > ROUNDING else 0.0


def boot_path(
    baseline: npt.ArrayLike, candidate: npt.ArrayLike, at: Sequence[int]
) -> list[BootComponent]:
    """`boot_component` of the first n queries, for each n of `at` (a sequential rule's looks),
    from running sums: the same numbers, without a pass over the queries per look."""
    sides = [np.asarray(m, dtype=np.float64) for m in (baseline, candidate)]
    if any(m.ndim != 2 for m in sides) or sides[0].shape[1] != sides[1].shape[1]:
        raise ValueError("values must be repeats x queries with the same queries on both sides")
    if any(m.shape[0] == 0 for m in sides):
        return [NONE for _ in at]
    ends = np.asarray(at, dtype=np.intp)
    zero = np.zeros(1)
    deltas = sides[1].mean(axis=0) - sides[0].mean(axis=0)
    squares = np.concatenate((zero, np.cumsum(deltas * deltas)))[ends]
    df = sum(m.shape[0] - 1 for m in sides)
    scale = sum(1 / m.shape[0] for m in sides)
    spread = np.zeros(len(ends))
    noise = np.zeros(len(ends))
    for m in sides:
        if m.shape[0] < 2:
            continue
        sums = np.concatenate((np.zeros((m.shape[0], 1)), np.cumsum(m, axis=1)), axis=1)[:, ends]
        means = sums / np.maximum(ends, 1)
        spread += means.var(axis=0, ddof=1) * (m.shape[0] - 1)
        per_query = np.concatenate((zero, np.cumsum(m.var(axis=0, ddof=1))))[ends]
        noise += per_query / np.maximum(ends, 1) ** 2 * (m.shape[0] - 1)
    out = []
    for j, n in enumerate(ends.tolist()):
        if n == 0:
            out.append(NONE)
            continue
        within = float(squares[j]) / (n * n)
        if df == 0:
            out.append(BootComponent(0.0, 0.0, within, 0))
            continue
        s2, w = _settled(float(spread[j]) / df), _settled(float(noise[j]) / df)
        between = max(0.0, s2 - w) if df >= MIN_DF else 0.0
        p_present = chi2_sf(df * s2 / w, df) if w > 0 else 0.0 if s2 > 0 else 1.0
        out.append(BootComponent(between, between * scale, within, df, s2 * scale, p_present))
    return out


def boot_p(boots: BootComponent, delta: float) -> float | None:
    """The two-level test's two-sided p for a mean delta (None when the boots add nothing, and
    the queries' own test stands)."""
    if boots.added <= 0:
        return None
    z = abs(delta) / math.sqrt(boots.within + boots.added)
    df = boots.df_effective
    if df >= MOST_DF:
        return min(1.0, 2 * (1 - NormalDist().cdf(z)))
    return min(1.0, 2 * t_sf(z, df))


def margin(boots: BootComponent, confidence: float) -> float:
    """The two-level interval's half width at `confidence` (0 when the boots add nothing)."""
    if boots.added <= 0:
        return 0.0
    df = boots.df_effective
    q = 1 - (1 - confidence) / 2
    scale = NormalDist().inv_cdf(q) if df >= MOST_DF else t_quantile(q, df)
    return scale * math.sqrt(boots.within + boots.added)


def boot_margin(boots: BootComponent, confidence: float) -> float:
    """How far the boots alone may have moved the mean delta, at `confidence` (t on the
    two-level test's degrees of freedom times sqrt(added); 0 when the boots add nothing)."""
    if boots.added <= 0:
        return 0.0
    return margin(boots, confidence) * math.sqrt(boots.added / (boots.within + boots.added))


def widen(
    delta: float, low: float, high: float, boots: BootComponent | None, confidence: float
) -> tuple[float, float]:
    """An interval [low, high] around `delta` made at least as wide as the two-level one."""
    if boots is None or boots.added <= 0:
        return low, high
    half = margin(boots, confidence)
    return min(low, delta - half), max(high, delta + half)
