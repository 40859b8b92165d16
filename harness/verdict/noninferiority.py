"""Non-inferiority: is the candidate shown not worse than the baseline by more than a margin?  Pure.

    claim = judge(low, high, margin)           # Claim.NOT_WORSE | WORSE | NOT_SHOWN
    iv = interval_of(deltas, alpha, boots)      # the 1 - 2 alpha interval (equivalence's)
    ni = decide_margins(margins, {metric: iv}, alpha, headline, called)

The question of a refactor, a dependency bump or a speed branch is not "did anything change?"
but "is it not worse by more than MARGIN?" (`compare --non-inferior 0.02`, `[gate]
non_inferior`).  For each headline metric with a margin, on the paired delta d = candidate -
baseline:

- "not worse" when the interval's lower bound lies above -margin: the one-sided test of
  H0: d <= -margin at level alpha rejects.  The lower bound of the 1 - 2 alpha interval is a
  one-sided level-alpha bound, so the interval is the one "no measurable difference" reads
  (`harness.verdict.equivalence`: Tango's score interval for paired binary outcomes, the t
  interval of the mean delta otherwise, widened by the boots when they vary);
- "worse than the margin" when its upper bound lies below -margin (shown worse by more);
- otherwise "could not show not worse": never a pass (a non-inferiority gate fails closed).

Several metrics are an intersection-union test (Berger 1982): the claim "not worse on every
one" holds when each holds at alpha, with no multiplicity correction.

Under the sequential rule (`harness.verdict.quality_sequential`) the compare may stop after any
block.  A stop reads each metric's anytime-valid confidence sequence at that look (its level
1 - alpha_s / m, both sides; its lower bound alone misses with chance at most alpha_s / 2m, at
any stopping time); a compare that asked the whole gold set reads the fixed-sample interval at
alpha - alpha_s, what the looks left.  By the union bound over the two ways to claim, a true
change of exactly -margin is said "not worse" at most alpha_s / 2m + alpha - alpha_s <= alpha of
the time, however the compare stopped.  `scripts/calibrate.py --only noninferior` measures it.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from harness.verdict.boots import BootComponent
from harness.verdict.distributions import t_quantile
from harness.verdict.equivalence import TANGO, equivalence

FloatArray = npt.NDArray[np.float64]
EDGE = 1e-9  # a bound this close to -margin is on it (the sequences' grid arithmetic)
SEQUENCE = "anytime-valid confidence sequence"


class Claim(enum.StrEnum):
    """One margin's answer (and the overall one: the worst of them)."""

    NOT_WORSE = "not worse"
    WORSE = "worse than the margin"
    NOT_SHOWN = "could not show not worse"


@dataclass(frozen=True)
class MarginRow:
    """One headline metric against its margin: the delta, the interval read (`low`, `high` at
    `confidence`, by `method`), and the claim."""

    metric: str
    margin: float
    delta: float
    low: float
    high: float
    confidence: float
    method: str
    claim: Claim


@dataclass(frozen=True)
class NonInferiority:
    """Every margin's row; the headline metrics without a margin (outside the claim: the
    difference test still decides them) and those of them the difference test called
    regressed; the overall claim and its sentence."""

    rows: tuple[MarginRow, ...]
    alpha: float  # each one-sided test's level
    claim: Claim
    said: str
    unmargined: tuple[str, ...] = ()
    regressed: tuple[str, ...] = ()

    @property
    def fails(self) -> bool:
        """Shown worse than a margin, or a metric outside the claim regressed."""
        return self.claim is Claim.WORSE or bool(self.regressed)


def judge(low: float, high: float, margin: float) -> Claim:
    """The claim an interval [low, high] of the delta makes against `margin` (module doc)."""
    if not margin > 0:
        raise ValueError(f"a margin must be > 0, not {margin}")
    if low >= -margin - EDGE:
        return Claim.NOT_WORSE
    if high <= -margin + EDGE:
        return Claim.WORSE
    return Claim.NOT_SHOWN


def overall_claim(rows: Sequence[MarginRow]) -> Claim:
    """The worst of the rows' claims: any worse is worse, else any not shown is not shown."""
    claims = {r.claim for r in rows}
    if Claim.WORSE in claims:
        return Claim.WORSE
    if Claim.NOT_SHOWN in claims or not rows:
        return Claim.NOT_SHOWN
    return Claim.NOT_WORSE


def _row_words(r: MarginRow) -> str:
    bound = f"{r.confidence:.1%} {'sequence' if r.method == SEQUENCE else 'CI'}"
    return (
        f"{r.metric} {r.delta:+.3f} ({bound} [{r.low:+.3f}, {r.high:+.3f}], margin -{r.margin:g})"
    )


def sentence(
    rows: Sequence[MarginRow], claim: Claim, alpha: float, regressed: Sequence[str]
) -> str:
    """The report's line after "non-inferiority: CLAIM": which metrics, then each one's
    interval against its margin."""
    if not rows:
        return "no headline metric has a margin: nothing was shown, and this is not a pass"

    def named(wanted: Claim) -> str:
        return ", ".join(r.metric for r in rows if r.claim is wanted)

    if claim is Claim.NOT_WORSE:
        said = f"{named(claim)}: each shown not worse than the baseline by more than its margin"
    elif claim is Claim.WORSE:
        said = f"{named(claim)}: shown worse than the baseline by more than the margin"
    else:
        said = (
            f"{named(claim)}: the interval reaches past the margin, so not worse is not shown "
            "(more queries narrow it; this is not a pass)"
        )
    shown = "; ".join(_row_words(r) for r in rows)
    said += f" ({shown}; one-sided tests at {alpha:g})"
    if regressed:
        said += f"; and {', '.join(regressed)}, without a margin, regressed"
    return said


def assemble(
    rows: Sequence[MarginRow], alpha: float, unmargined: Sequence[str], regressed: Sequence[str]
) -> NonInferiority:
    claim = overall_claim(rows)
    said = sentence(rows, claim, alpha, regressed)
    return NonInferiority(tuple(rows), alpha, claim, said, tuple(unmargined), tuple(regressed))


@dataclass(frozen=True)
class Interval:
    """What a margin reads, from any source: the delta and its interval at `confidence`."""

    delta: float
    low: float
    high: float
    confidence: float
    method: str


def decide_margins(
    margins: Mapping[str, float],
    intervals: Mapping[str, Interval],
    alpha: float,
    headline: Sequence[str],
    called: Mapping[str, bool],
) -> NonInferiority:
    """Each margin judged on its metric's interval; `headline`: the headline metrics, in order;
    `called`: whether the difference test called each regressed.  A margin whose metric has no
    interval (no query analysed) is "could not show"."""
    rows = []
    for metric in (m for m in headline if m in margins):
        margin, iv = margins[metric], intervals.get(metric)
        if iv is None:
            iv = Interval(0.0, -1.0, 1.0, 1 - 2 * alpha, "no query analysed")
        claim = judge(iv.low, iv.high, margin) if iv.method != "no query analysed" else None
        found = (iv.delta, iv.low, iv.high, iv.confidence, iv.method)
        rows.append(MarginRow(metric, margin, *found, claim or Claim.NOT_SHOWN))
    outside = [m for m in headline if m not in margins]
    return assemble(rows, alpha, outside, [m for m in outside if called.get(m, False)])


def interval_of(
    deltas: npt.ArrayLike, alpha: float, boots: BootComponent | None = None
) -> Interval:
    """The 1 - 2 alpha interval of the mean of `deltas`: equivalence's
    (`harness.verdict.equivalence`: Tango's score interval for -1/0/+1 deltas, else the t
    interval, widened by the boots when they vary), each t bound pushed out by Hall's
    correction for the deltas' skewness when it makes that bound more cautious (`_skewed`)."""
    d = np.asarray(deltas, dtype=np.float64)
    eq = equivalence(d, alpha=alpha, band=1.0, boots=boots)
    mean = float(d.mean()) if d.size else 0.0
    low, high, method = eq.low, eq.high, eq.method
    if method != TANGO and d.size > 2:
        low, high = _skewed(d, alpha, low, high)
        method = f"{method}, skewness-corrected"
    return Interval(mean, low, high, eq.confidence, method)


def _skewed(d: FloatArray, alpha: float, low: float, high: float) -> tuple[float, float]:
    """[low, high] widened by the first-order Edgeworth (Cornish-Fisher) correction of the
    studentized mean's quantiles (Hall 1992, The Bootstrap and Edgeworth Expansion, ch. 2; Johnson
    1978): P(T <= x) = Phi(x) + g (2x^2 + 1) phi(x) / (6 sqrt(n)), g the skewness, so the lower
    bound's multiplier grows by -g (2z^2 + 1) / (6 sqrt(n)) when g < 0, the upper's by g (...)
    when g > 0; never narrowed.  A loss is skewed: most queries unchanged, some lost (-1), a few
    won; the t bound alone, from a low spread when few losses were drawn, said "not worse" of a
    true -0.05 in 6.0% of 3,000 simulated flaky compares, this in 5.2% [4.8, 5.7] of 10,000
    (docs/calibration.md)."""
    n = d.size
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd <= 0:
        return low, high
    skew = float(np.mean((d - mean) ** 3)) / sd**3
    z = NormalDist().inv_cdf(1 - alpha)
    base = t_quantile(1 - alpha, n - 1)
    step = (2 * z * z + 1) / (6 * math.sqrt(n)) * sd / math.sqrt(n)
    low = min(low, mean - base * sd / math.sqrt(n) - max(0.0, -skew) * step)
    high = max(high, mean + base * sd / math.sqrt(n) + max(0.0, skew) * step)
    return max(low, -1.0), min(high, 1.0)
