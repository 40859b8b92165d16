"""Latency rounds until the answer is clear: a group-sequential rule over rounds of boot pairs.

    round_estimate(base_ms, cand_ms, base_first=) -> RoundEstimate   one round: trimmed mean
                                                         of log(c/b), by order
    plan(first, budget, alpha=) -> Plan                  the boundaries of every look, cached
    last_boundary(first, budget, level) -> float         the last look's alone (a table)
    decide(rounds, plan, tolerance=) -> LatencyTest      the verdict after the last round given
    budget_for(...) -> int | None                         rounds a fresh compare would likely need

Why a design and not a t interval after each round: a 95% t interval recomputed after every round
and stopped on as soon as it excludes 1 calls an A/A "slower" or "faster" far more often than 5%
(every look is another chance; the simulation in `scripts/latency_calibration.py --simulate`
shows it).  Here the compare fixes, before the first look, the rounds it may run (`budget`, K)
and the looks (from `first` = compare.repeats, then after every round up to K), and spends its
error rate over them with the Hwang-Shih-DeCani function alpha * (1 - e^(-g t)) / (1 - e^(-g)),
t = k / K the share of the budget run, g = GAMMA = -4 (close to O'Brien-Fleming's: strict early,
close to the fixed-size test at the budget's end, where an A/A's "no measurable difference" is
decided; in the simulation at a budget of 16 under heavy load it said so of 91% of A/As where
g = -1 said 87%, for the same power at +10%).  The boundaries on the z scale are solved by
numerical integration of the running sum over the looks (Jennison and Turnbull 2000, ch. 19, the
recursive density on a grid; a seeded Monte Carlo in the tests checks the error they spend), and
each is carried to the t scale at the look's degrees of freedom (ch. 11.5, the "significance
level" approach: the same per-look nominal level with k - 1 degrees of freedom, the rounds' own
spread).  The repeated confidence interval estimate +/- c_k * s / sqrt(k) then covers the true
ratio at every look at once with probability about 1 - alpha, so
every decision read from it holds under stopping at any look:

- slower: the whole interval above 1 and the estimate beyond 1 + tolerance (faster: mirrored);
- no measurable difference: the whole repeated interval at 1 - 2 * EQUIVALENCE (90%) inside
  [1 / (1 + tolerance), 1 + tolerance]: two one-sided tests at 5% each, TOST's usual level, with
  boundaries spent the same way (so a ratio exactly on the band's edge is called inside it at
  most about 5% of the time, whenever the compare stops);
- otherwise the next round, and at the budget's end inconclusive, with `budget_for`'s advice.

The two levels (rounds as blocks, queries within them): a round's estimate is the 20%-trimmed mean
of its per-query log ratios (queries time-paired back to back; the trim takes the GC pauses and
load spikes one side of a pair caught, which a plain mean does not survive, at 94% of the mean's
efficiency on normal noise where the median is at 64%), taken per order (baseline first or
second, balanced in every round) and averaged, so an order effect is in neither the estimate nor
its variance.  Its within-round variance (Tukey and
McLaughlin's winsorized variance over hundreds of queries) is known well; the variance between
rounds (boot to boot, the machine's load) is not, and stays in the interval: the variance of a
round's estimate is estimated as max(s^2, mean within-round variance), the rounds' own spread
floored by what the queries alone imply.  The floor never makes the interval narrower than the
rounds' spread says, and it is needed: with 2-4 degrees of freedom s^2 is often far below the
true variance, and without the floor the A/A validity test (tests/verdict/test_latency_rule.py)
fails.
A shrinkage of s^2 toward the within part, or a prior on the between-round variance, would make
intervals narrower whenever boots differ more than the queries show, which is the case the
interval exists for (a boot-level shift is not in any one round's queries): not done.

Why not a confidence sequence (Howard, Ramdas, McAuliffe and Sekhon 2021): valid at every round
without a budget, but wide at these sample sizes: the normal-mixture boundary, even with a known
variance and its mixing tuned to each round count, is at least 3.04 standard errors at 5 to 15
rounds, where this design's last look is 2.08 (budget 15): about twice the rounds for the same
interval, and an unknown variance widens it further.

Pure: no I/O, no clock, no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from harness.values.budget import DEFAULT_BUDGET as DEFAULT_BUDGET
from harness.values.budget import MOST_ROUNDS as MOST_ROUNDS
from harness.values.budget import LatencyBudget as LatencyBudget
from harness.values.budget import parse_budget as parse_budget
from harness.values.types import Verdict
from harness.verdict import latency_bounds
from harness.verdict.distributions import t_quantile
from harness.verdict.latency import LatencyTest, interval_words, ratio_words
from harness.verdict.resample import aligned

# Simultaneous two-sided error of the mean's repeated interval: its share of the latency
# verdict's 0.05 (harness.verdict.latency_tail: the p50/p95/p99 rows have 0.005 each).
ALPHA = 0.035
EQUIVALENCE = 0.05  # each one-sided test of "inside the band" (TOST's usual level)
GAMMA = -4.0  # Hwang-Shih-DeCani spending shape (scripts/latency_calibration.py --simulate)
TRIM = 0.2  # share trimmed off each end of a round's per-query log ratios
MIN_LOOK = 2  # one round shows nothing of the spread between boots
MIN_STRATUM = 5  # queries of each order for a round's estimate by order (round_estimate)
_GRID = 401  # points of the running-sum grid per look: boundaries to about 1e-4 in z
_NORMAL = NormalDist()


@dataclass(frozen=True)
class RoundEstimate:
    """One round: the trimmed mean of its per-query log(candidate / baseline) and that mean's
    variance from the round's queries alone (the within-round part)."""

    log_ratio: float
    within_var: float
    queries: int


def round_estimate(
    baseline_ms: npt.ArrayLike,
    candidate_ms: npt.ArrayLike,
    *,
    base_first: npt.ArrayLike | None = None,
    trim: float = TRIM,
) -> RoundEstimate:
    """The trimmed mean of log(c_i / b_i) over one round's aligned, time-paired queries (> 0).

    With `base_first` (per query, whether the baseline was asked first in its pair) the two
    orders are strata: the estimate is the mean of the two orders' trimmed means, its variance a
    quarter of the sum of theirs.  The runner balances the orders in every round
    (`harness.replay.order`), so an order effect (the first or the second request of a pair
    slower) cancels from the estimate either way; stratified it leaves the variance too, where
    it is no noise of the estimate.  Under bursty CPU load the first request of a pair was about
    5x slower than the second (log ratios of -1.7 and +1.7 by order, an sd of 1.75 within a
    round where each order's own was 0.25-0.6): unstratified, that variance, the floor of the
    rounds' spread in `look`, made every A/A inconclusive.  A round with fewer than MIN_STRATUM
    queries in an order is estimated whole."""
    base, cand = aligned(baseline_ms, candidate_ms)
    if (base <= 0).any() or (cand <= 0).any():
        raise ValueError("latencies must be > 0 ms")
    logs = np.log(cand / base)
    if base_first is not None:
        first = np.asarray(base_first, dtype=bool).ravel()
        if first.shape != logs.shape:
            raise ValueError(f"base_first has {first.size} values for {logs.size} pairs")
        count = int(first.sum())
        if min(count, logs.size - count) >= MIN_STRATUM:
            one, two = trimmed(logs[first], trim), trimmed(logs[~first], trim)
            return RoundEstimate(
                (one.log_ratio + two.log_ratio) / 2,
                (one.within_var + two.within_var) / 4,
                int(logs.size),
            )
    return trimmed(logs, trim)


def trimmed(values: npt.ArrayLike, trim: float = TRIM) -> RoundEstimate:
    """The `trim`-trimmed mean of `values` with Tukey and McLaughlin's variance: the winsorized
    variance / ((1 - 2 trim)^2 n).  With fewer than 3 values the variance is unknown (inf)."""
    x = np.sort(np.asarray(values, dtype=np.float64).ravel())
    n = int(x.size)
    if n == 0 or not np.isfinite(x).all():
        raise ValueError("a round needs at least one finite log ratio")
    g = math.floor(trim * n)
    mean = float(x[g : n - g].mean())
    if n < 3:
        return RoundEstimate(mean, math.inf, n)
    w = np.clip(x, x[g], x[n - g - 1])
    var = float(w.var(ddof=1)) / ((1 - 2 * g / n) ** 2 * n)
    return RoundEstimate(mean, var, n)


@dataclass(frozen=True)
class Plan:
    """The looks (round counts) and their two-sided boundaries, on the z and the t scale."""

    looks: tuple[int, ...]
    z: tuple[float, ...]
    t: tuple[float, ...]
    alpha: float
    gamma: float
    # The equivalence ("no measurable difference") boundaries: two one-sided tests at
    # `equivalence` each, i.e. the two-sided design at 2 * equivalence.
    t_equiv: tuple[float, ...] = ()
    equivalence: float = 0.0

    @property
    def budget(self) -> int:
        return self.looks[-1]

    def boundary(self, rounds: int) -> float:
        """The t-scale multiplier at a look of `rounds` rounds (inf where there is no look)."""
        return self.t[self.looks.index(rounds)] if rounds in self.looks else math.inf

    def equivalence_boundary(self, rounds: int) -> float:
        """The same for the two one-sided tests of "inside the band"."""
        return self.t_equiv[self.looks.index(rounds)] if rounds in self.looks else math.inf


def spent(t: float, alpha: float, gamma: float) -> float:
    """Hwang-Shih-DeCani: the error spent by share t of the budget (gamma 0: linear)."""
    if gamma == 0:
        return alpha * t
    return alpha * (1 - math.exp(-gamma * t)) / (1 - math.exp(-gamma))


@lru_cache(maxsize=256)
def plan(
    first: int,
    budget: int,
    alpha: float = ALPHA,
    gamma: float = GAMMA,
    equivalence: float = EQUIVALENCE,
) -> Plan:
    """Looks after round `first` (at least MIN_LOOK) and every round after it up to `budget`."""
    if not 0 < alpha < 1 or not 0 < equivalence < 0.5:
        raise ValueError(f"alpha must be in (0, 1), not {alpha}")
    if budget < MIN_LOOK or budget > MOST_ROUNDS:
        raise ValueError(f"the budget must be {MIN_LOOK} to {MOST_ROUNDS} rounds, not {budget}")
    first = min(max(first, MIN_LOOK), budget)
    looks = tuple(range(first, budget + 1))
    z = _boundaries(looks, alpha, gamma)
    t = tuple(t_quantile(_NORMAL.cdf(c), k - 1) for c, k in zip(z, looks, strict=True))
    z_eq = _boundaries(looks, 2 * equivalence, gamma)
    t_eq = tuple(t_quantile(_NORMAL.cdf(c), k - 1) for c, k in zip(z_eq, looks, strict=True))
    return Plan(looks, z, t, alpha, gamma, t_eq, equivalence)


def last_boundary(first: int, budget: int, level: float, gamma: float = GAMMA) -> float:
    """The t-scale boundary of the last look of `plan(first, budget)` at two-sided `level` (the
    design's alpha, or 2 * EQUIVALENCE for the equivalence tests): `plan(...).t[-1]` or
    `.t_equiv[-1]`, the same number, read from the table shipped with the package
    (`harness.verdict.latency_bounds`, generated by scripts/latency_bounds.py) when it holds
    it, else computed for this level alone (and remembered)."""
    if budget < MIN_LOOK or budget > MOST_ROUNDS:
        raise ValueError(f"the budget must be {MIN_LOOK} to {MOST_ROUNDS} rounds, not {budget}")
    first = min(max(first, MIN_LOOK), budget)
    known = latency_bounds.lookup(first, budget, level, gamma)
    return known if known is not None else computed_boundary(first, budget, level, gamma)


@lru_cache(maxsize=1024)
def computed_boundary(first: int, budget: int, level: float, gamma: float = GAMMA) -> float:
    """`last_boundary` computed as `plan` computes it (first clamped as there), no table."""
    if not 0 < level < 1:
        raise ValueError(f"the level must be in (0, 1), not {level}")
    first = min(max(first, MIN_LOOK), budget)
    z = _boundaries(tuple(range(first, budget + 1)), level, gamma)
    return t_quantile(_NORMAL.cdf(z[-1]), budget - 1)


def _boundaries(looks: Sequence[int], alpha: float, gamma: float) -> tuple[float, ...]:
    """Two-sided z boundaries c_k: P(|Z_j| < c_j for j < k, |Z_k| >= c_k) = the error spent
    between look k-1 and k, Z_k = S_k / sqrt(I_k) the standardized running sum (I_k = rounds)."""
    total = looks[-1]
    out: list[float] = []
    grid = weights = density = np.zeros(0)
    prev_info = 0
    before = 0.0
    for k in looks:
        now = spent(k / total, alpha, gamma)
        step = max(now - before, 1e-15)
        before = now
        if not out:  # first look: the plain normal tail
            c = _NORMAL.inv_cdf(1 - step / 2)
        else:
            sd = math.sqrt(k - prev_info)

            mass = weights * density
            lo, hi = 0.0, 40.0 * math.sqrt(k)  # on the sum's scale
            for _ in range(50):
                mid = (lo + hi) / 2
                tails = 1 - _ncdf((mid - grid) / sd) + _ncdf((-mid - grid) / sd)
                lo, hi = (mid, hi) if float((mass * tails).sum()) > step else (lo, mid)
            c = hi / math.sqrt(k)
        out.append(c)
        # The density of S_k on its continuation region (-c sqrt(k), c sqrt(k)).
        edge = c * math.sqrt(k)
        new = np.linspace(-edge, edge, _GRID)
        w = np.full(_GRID, (new[1] - new[0]) / 3)  # Simpson's weights
        w[1:-1:2] *= 4
        w[2:-1:2] *= 2
        if density.size == 0:
            dens = _npdf(new / math.sqrt(k)) / math.sqrt(k)
        else:
            sd = math.sqrt(k - prev_info)
            kernel = _npdf((new[:, None] - grid[None, :]) / sd) / sd
            dens = kernel @ (weights * density)
        grid, weights, density, prev_info = new, w, dens, k
    return tuple(out)


def _ncdf(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The normal CDF, vectorized without scipy: Numerical Recipes' erfc (Chebyshev fit,
    relative error < 1.2e-7 everywhere, tails included), ample for boundaries to 1e-4."""
    z = np.abs(x) / math.sqrt(2)
    t = 1 / (1 + 0.5 * z)
    poly = (
        -z * z
        - 1.26551223
        + t
        * (
            1.00002368
            + t
            * (
                0.37409196
                + t
                * (
                    0.09678418
                    + t
                    * (
                        -0.18628806
                        + t
                        * (
                            0.27886807
                            + t
                            * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))
                        )
                    )
                )
            )
        )
    )
    upper = 0.5 * t * np.exp(poly)  # P(Z > |x|)
    return np.asarray(np.where(x >= 0, 1 - upper, upper), dtype=np.float64)


def _npdf(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.asarray(np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi), dtype=np.float64)


@dataclass(frozen=True)
class Look:
    """What the rounds so far say: estimate (log scale), the interval's half-width, the spread
    used (the standard deviation of one round's estimate), and the decision (None: go on)."""

    rounds: int
    log_ratio: float
    half: float
    spread: float
    verdict: Verdict | None
    half_equiv: float = math.inf  # the equivalence tests' half-width (1 - 2 * equivalence)


def look(rounds: Sequence[RoundEstimate], design: Plan, *, tolerance: float = 0.10) -> Look:
    """The decision after `len(rounds)` rounds: a verdict at a look that settles it, the budget's
    end undecided is INCONCLUSIVE, anything else None (run another round)."""
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be in [0, 1), not {tolerance}")
    k = len(rounds)
    if k == 0:
        raise ValueError("no rounds to look at")
    y = np.array([r.log_ratio for r in rounds], dtype=np.float64)
    mean = float(y.mean())
    if k < MIN_LOOK:
        return Look(
            k, mean, math.inf, math.inf, None if k < design.budget else Verdict.INCONCLUSIVE
        )
    within = float(np.mean([r.within_var for r in rounds]))
    spread = math.sqrt(max(float(y.var(ddof=1)), within))
    half = design.boundary(k) * spread / math.sqrt(k)
    half_eq = design.equivalence_boundary(k) * spread / math.sqrt(k)
    edge = math.log1p(tolerance)
    verdict: Verdict | None = None
    if math.isfinite(half):
        if mean > edge and mean - half > 0:
            verdict = Verdict.REGRESSED
        elif mean < -edge and mean + half < 0:
            verdict = Verdict.IMPROVED
        elif -edge <= mean - half_eq and mean + half_eq <= edge:
            verdict = Verdict.NO_DIFFERENCE
    if verdict is None and k >= design.budget:
        verdict = Verdict.INCONCLUSIVE
    return Look(k, mean, half, spread, verdict, half_eq)


def budget_for(
    log_ratio: float,
    spread: float,
    *,
    first: int,
    tolerance: float = 0.10,
    power: float = 0.8,
    alpha: float = ALPHA,
    gamma: float = GAMMA,
) -> int | None:
    """The smallest budget whose last look would decide with chance about `power` if the ratio
    and spread were those seen: the budget's boundary half-width plus the `power` quantile of the
    estimate's own error fits between the estimate and 1 (beyond the band: and that error keeps
    the estimate beyond it) or between the estimate and the band's edge (inside it).  None when
    no budget up to MOST_ROUNDS would (a ratio on the band's edge)."""

    # Only the last look's boundary of each budget tried is read: from the table shipped with
    # the package (`latency_bounds`) when it holds it, else computed (the same numbers).
    def last(budget: int, beyond: bool) -> float:
        if not 0 < alpha < 1:  # as plan() refuses it
            raise ValueError(f"alpha must be in (0, 1), not {alpha}")
        level = alpha if beyond else 2 * EQUIVALENCE
        return last_boundary(first, budget, level, gamma)

    return _smallest_budget(log_ratio, spread, first, tolerance, power, last)


def budget_for_by_plans(
    log_ratio: float,
    spread: float,
    *,
    first: int,
    tolerance: float = 0.10,
    power: float = 0.8,
    alpha: float = ALPHA,
    gamma: float = GAMMA,
) -> int | None:
    """`budget_for` as it was computed before the table: a whole `plan` for every budget tried
    (seconds of CPU). Kept as the reference tests/verdict/test_latency_advice.py and
    scripts/bench_advice.py check the table's advice against; not for use."""

    def last(budget: int, beyond: bool) -> float:
        design = plan(first, budget, alpha, gamma)
        return design.t[-1] if beyond else design.t_equiv[-1]

    return _smallest_budget(log_ratio, spread, first, tolerance, power, last)


def _smallest_budget(
    log_ratio: float,
    spread: float,
    first: int,
    tolerance: float,
    power: float,
    last: Callable[[int, bool], float],
) -> int | None:
    """`budget_for`'s search, `last(budget, beyond)` the last look's boundary of a budget (the
    call's test beyond the band, the equivalence test inside it)."""
    edge = math.log1p(tolerance)
    size = abs(log_ratio)
    beyond = size > edge
    if size == edge or not math.isfinite(spread):
        return None
    extra = _NORMAL.inv_cdf(power)

    def enough(budget: int) -> bool:
        se = spread / math.sqrt(budget)
        bound = last(budget, beyond)
        if beyond:  # the interval clear of 1, and the estimate still beyond the band
            return (bound + extra) * se < size and extra * se < size - edge
        return (bound + extra) * se < edge - size

    # The last look's boundary falls with the budget and so does the half-width: bisect.
    lo, hi = max(first, MIN_LOOK + 1), MOST_ROUNDS
    if not enough(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid + 1, hi)
    return lo


def decide(
    rounds: Sequence[RoundEstimate],
    design: Plan,
    *,
    tolerance: float = 0.10,
    confidence: float = 1 - ALPHA,
) -> LatencyTest:
    """The latency verdict of the rounds run, in words: what `look` decided and why it stopped
    ("decided after 6 of at most 10 rounds" / "the budget of 10 rounds is spent"), the repeated
    interval, and for INCONCLUSIVE the budget that would likely decide (`budget_for`)."""
    seen = look(rounds, design, tolerance=tolerance)
    k = seen.rounds
    ratio = math.exp(seen.log_ratio)
    per_round = tuple(math.exp(r.log_ratio) for r in rounds)
    if not math.isfinite(seen.half):
        why = (
            f"{ratio_words(ratio)} over {k} round{'s' * (k != 1)}: too few rounds to tell "
            f"boot-to-boot variance from a change; run with --latency-budget {MIN_LOOK + 1} or more"
        )
        return LatencyTest(
            ratio,
            ratio,
            ratio,
            Verdict.INCONCLUSIVE,
            why,
            per_round,
            MIN_LOOK + 1,
            budget=design.budget,
            stop=why,
        )
    lo, hi = math.exp(seen.log_ratio - seen.half), math.exp(seen.log_ratio + seen.half)
    band = interval_words(ratio, lo, hi, confidence)
    if seen.verdict is None:  # asked before the budget's end: the runner goes on
        stop = f"undecided after {k} of at most {design.budget} rounds"
        return LatencyTest(
            ratio,
            lo,
            hi,
            Verdict.INCONCLUSIVE,
            f"{band}: {stop}",
            per_round,
            budget=design.budget,
            stop=stop,
        )
    if seen.verdict is Verdict.NO_DIFFERENCE:  # shown with the interval that decided it
        level = 1 - 2 * design.equivalence
        lo, hi = (
            math.exp(seen.log_ratio - seen.half_equiv),
            math.exp(seen.log_ratio + seen.half_equiv),
        )
        band = interval_words(ratio, lo, hi, level)
    if seen.verdict is not Verdict.INCONCLUSIVE:
        stop = f"decided after {k} round{'s' * (k != 1)} (budget {design.budget})"
        return LatencyTest(
            ratio,
            lo,
            hi,
            seen.verdict,
            f"{band}; {stop}",
            per_round,
            budget=design.budget,
            stop=stop,
        )
    beyond = abs(seen.log_ratio) > math.log1p(tolerance)
    needed = budget_for(
        seen.log_ratio,
        seen.spread,
        first=design.looks[0],
        tolerance=tolerance,
        alpha=design.alpha,
        gamma=design.gamma,
    )
    stop = f"the budget of {design.budget} rounds is spent"
    what = (
        "reaches 1.00, so the change is not certain"
        if beyond
        else (f"reaches past the ±{tolerance:.0%} band")
    )
    more = (
        f"a budget of about {needed} rounds (--latency-budget {needed}) would likely decide"
        if needed is not None
        else f"the ratio sits on the edge of the ±{tolerance:.0%} band: more rounds will not tell"
    )
    reason = f"{band}: {stop} and the interval {what}; {more}"
    return LatencyTest(
        ratio,
        lo,
        hi,
        Verdict.INCONCLUSIVE,
        reason,
        per_round,
        needed,
        budget=design.budget,
        stop=stop,
    )
