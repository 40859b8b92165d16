"""Where a series of per-commit measurements stepped: a scan over every split, each point
weighted by its own interval, with a stated false-alarm rate and a minimum step.  Pure (seeded).

    found = changes(series, Detection(false_alarm=0.01, band=0.05))
    found[0].kind, found[0].start, found[0].end, found[0].delta, found[0].p

The model.  Commit i (oldest first) was measured in R_i repeats (boots); its level m_i is their
mean and its own variance v_i = s_i^2 / R_i, s_i^2 shrunk towards the variance pooled over every
commit (two pseudo-repeats' weight: with 2-3 boots one commit's own s^2 is a poor guess).
Commits were measured at different times, so a commit's level also moves with what the machine
did then: the excess variance between commits, tau^2, is read from the first differences
m_{i+1} - m_i by their median absolute deviation (robust to the steps being looked for: one step
is one large difference among many small ones), less the part the points' own variances explain.
Each point's variance is v_i + tau^2; a deterministic service's quality has v_i = tau^2 = 0,
floored at a tiny value, so that any difference is exact and only the band decides.

The test.  For every split k (after commit k) the weighted means L_k of commits 0..k and R_k of
k+1..n-1, delta_k = R_k - L_k and Z_k = delta_k / sqrt(1/W_L + 1/W_R) (W the sums of the weights
1/(v_i + tau^2)): the likelihood-ratio scan for one mean shift with known variances (CUSUM).  The
statistic is max |Z_k| over the splits whose delta_k is at least the band (the minimum step: a
shift smaller than the band is not looked for), and its p-value is the share of `sims` series
drawn with no shift at all and the same variances whose max |Z_k| over every split (not only
the band's: conservative) reaches it.  A split with p <= false_alarm * LEVEL_SHARE is a step (half
the stated rate: see LEVEL_SHARE); the segments on either side are scanned again the same way
(binary segmentation).  With no shift anywhere the
first scan is the only one that can fire, so the chance of any flag in a series is at most
`false_alarm` under the model; that first scan's null redraws every variance from each simulated
series as from the data (the studentized null of the whole procedure: 40 points estimate tau^2
with an error the null must carry), the scans inside it take the whole series' variances as
known (scripts/calibrate_watch.py measures the rate, and what the confirming compare leaves).

Step or drift.  Between its neighbouring splits, each split is refitted as a ramp: the level
flat, then linear from commit s to commit e, then flat (a step is e = s + 1); the best (s, e) by
weighted least squares.  A ramp over at least DRIFT_SPAN intervals whose fit beats the best
single step by more than DRIFT_CHI2 (a chi-square with one degree of freedom at 0.01) is a
drift.  Neighbouring changes of one series that go the same way, none a jump of the band's size
between adjacent commits and at most DRIFT_SPAN commits apart, merge into one drift over their
union (a sparsely measured ramp is cut into a staircase of sub-band steps).  A short ramp (2
intervals) stays a step over its range, for bisection to split.

Excursions.  One or two commits that are a segment of their own between two splits going
opposite ways (the level left and came back: a busy machine when they were measured, or a
change reverted at once) are set aside and the series scanned again without them: watch reports
what lasts; such flags are the alerts that do not repeat.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

FLOOR = 1e-12  # the least variance a point has: a deterministic level is exact, not infinite
PRIOR_REPEATS = 2.0  # the pooled variance's weight in each commit's own (pseudo-repeats)
MAD_SCALE = 1.482602218505602  # MAD -> standard deviation for a normal
DRIFT_SPAN = 3  # a ramp over fewer intervals is a step over a short range
DRIFT_CHI2 = 6.634896601021214  # chi-square(1) at 0.99
EXCURSION = 2  # a level away for at most this many commits, then back, is not a change
# The scan tests at this share of the stated false-alarm rate: its null redraws the variances
# it estimated, and where the noise between commits is about a commit's own standard error the
# estimates' error still lets the bootstrap's tail run thin (2-2.7% flagged at a stated 1%,
# tests/watch/test_watch.py); at half the level every noise mix measured stays under the rate.
LEVEL_SHARE = 0.5


class Kind(enum.StrEnum):
    STEP = "step"
    DRIFT = "drift"


@dataclass(frozen=True)
class Series:
    """One quantity per commit, oldest first: `values[i]` the commit's repeats (boots).  Quality:
    each repeat's mean over the queries; latency: each boot's log p50, so steps are ratios."""

    name: str
    shas: tuple[str, ...]
    values: tuple[tuple[float, ...], ...]
    log_scale: bool = False  # latency: delta is a log ratio, the band a ratio - 1

    def __post_init__(self) -> None:
        if len(self.shas) != len(self.values):
            raise ValueError("a series needs one tuple of repeats per commit")
        if any(not v for v in self.values):
            raise ValueError("every commit of a series needs at least one repeat")


@dataclass(frozen=True)
class Detection:
    false_alarm: float = 0.01  # per series: the chance of any flag when nothing changed
    band: float = 0.05  # the least step looked for (quality: absolute; latency: a ratio - 1)
    sims: int = 4000  # series drawn for the scan's null distribution
    seed: int = 0


@dataclass(frozen=True)
class Change:
    """A flagged change of `series` between commits `start` and `end` (indices into its
    commits; a step found between adjacent measured commits has end = start + 1)."""

    series: str
    kind: Kind
    start: int
    end: int
    before: float  # the level before (quality: the metric; latency: ms)
    after: float
    delta: float  # after - before (latency: the log ratio)
    z: float
    p: float  # the scan's Monte Carlo p-value for the split that found it
    largest_jump: float  # the largest change between adjacent commits inside the range
    # The range the best ramp of at least DRIFT_SPAN intervals around it spans (start, end):
    # where to look when a fresh compare of the step's two commits calls nothing.
    reach: tuple[int, int] = (0, 0)

    @property
    def ratio(self) -> float:
        return math.exp(self.delta)


@dataclass(frozen=True)
class Levels:
    """The points as the test sees them: each commit's level and variance (own + between)."""

    means: FloatArray
    variance: FloatArray
    tau2: float
    # tau^2 as the null draws it: the larger of the robust estimate and the mean squared
    # successive difference's, which is unbiased with no change and far less noisy, so that a
    # robust estimate read low by chance (often 0) does not make the null too narrow.
    tau2_null: float = 0.0


def _padded(series: Series) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """The repeats as a commits x most-repeats array, and which cells hold one."""
    most = max(len(v) for v in series.values)
    x = np.zeros((len(series.values), most))
    mask = np.zeros(x.shape, dtype=bool)
    for i, v in enumerate(series.values):
        x[i, : len(v)] = v
        mask[i, : len(v)] = True
    return x, mask


def _batch(
    x: FloatArray, mask: npt.NDArray[np.bool_]
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """(means, variances, tau2, tau2 for the null) of a batch of series: x is sims x commits x
    repeats."""
    counts = mask.sum(axis=-1).astype(np.float64)
    means = np.where(mask, x, 0.0).sum(axis=-1) / counts
    sq = np.where(mask, (x - means[..., None]) ** 2, 0.0).sum(axis=-1)
    dof = counts - 1
    total_dof = float(np.sum(dof[0])) if dof.ndim > 1 else float(np.sum(dof))
    pooled = (
        sq.sum(axis=-1, keepdims=True) / total_dof
        if total_dof > 0
        else np.zeros_like(means[..., :1])
    )
    own = (sq + PRIOR_REPEATS * pooled) / (dof + PRIOR_REPEATS) / counts
    tau2 = np.zeros(means.shape[:-1])
    tau2_null = tau2
    if means.shape[-1] > 2:
        diffs = np.diff(means, axis=-1)
        centre = np.median(diffs, axis=-1, keepdims=True)
        spread = MAD_SCALE * np.median(np.abs(diffs - centre), axis=-1)
        explained = np.median(own[..., :-1] + own[..., 1:], axis=-1)
        tau2 = np.maximum(0.0, (spread**2 - explained) / 2)
        mssd = np.mean(diffs**2, axis=-1) - np.mean(own[..., :-1] + own[..., 1:], axis=-1)
        tau2_null = np.maximum(tau2, mssd / 2)
    variance = np.maximum(own + tau2[..., None], FLOOR)
    return means, variance, tau2, tau2_null


def levels(series: Series) -> Levels:
    """Each commit's mean and variance (see the module)."""
    x, mask = _padded(series)
    means, variance, tau2, tau2_null = _batch(x[None], mask[None])
    return Levels(means[0], variance[0], float(tau2[0]), float(tau2_null[0]))


def _scan(x: FloatArray, w: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(delta_k, Z_k) for every split k of the rows of `x` (last axis: commits), weights `w`
    (the same shape as x, or one row for all)."""
    w = np.broadcast_to(w, x.shape)
    cw = np.cumsum(w, axis=-1)[..., :-1]
    total = np.sum(w, axis=-1, keepdims=True)
    cx = np.cumsum(x * w, axis=-1)[..., :-1]
    left = cx / cw
    right = (np.sum(x * w, axis=-1, keepdims=True) - cx) / (total - cw)
    delta = right - left
    z = delta / np.sqrt(1 / cw + 1 / (total - cw))
    return delta, z


def _null_max(
    x: FloatArray,
    mask: npt.NDArray[np.bool_],
    fitted: Levels,
    sims: int,
    seed: Sequence[int],
    studentized: bool,
) -> FloatArray:
    """max |Z_k| of `sims` series with no shift, drawn from the fitted variances (each commit's
    own within its repeats, tau^2 between commits).  `studentized`: every variance estimated
    again from each draw as from the data, the null of the whole procedure; else the variances
    taken as known (a segment inside a series, whose variances the whole series estimated)."""
    rng = np.random.default_rng(list(seed))
    if not studentized:
        draws = rng.standard_normal((sims, len(fitted.variance))) * np.sqrt(fitted.variance)
        _, z = _scan(draws, 1 / fitted.variance)
        known: FloatArray = np.max(np.abs(z), axis=-1)
        return known
    counts = mask.sum(axis=-1)
    within = np.sqrt(np.maximum(fitted.variance - fitted.tau2, 0.0) * counts)
    shape = (sims, *x.shape)
    draws = rng.standard_normal(shape) * within[None, :, None]
    draws += rng.standard_normal((sims, x.shape[0], 1)) * math.sqrt(fitted.tau2_null)
    means, variance, _, _ = _batch(draws, np.broadcast_to(mask, shape))
    _, z = _scan(means, 1 / variance)
    out: FloatArray = np.max(np.abs(z), axis=-1)
    return out


@dataclass(frozen=True)
class _Split:
    at: int  # after this commit
    delta: float
    z: float
    p: float


def _segment(
    data: tuple[FloatArray, npt.NDArray[np.bool_]],
    fitted: Levels,
    lo: int,
    hi: int,
    band: float,
    d: Detection,
    name: str,
) -> list[_Split]:
    """Binary segmentation of commits lo..hi-1.  The whole series is tested against the null of
    the whole procedure (its variances estimated from each draw); a segment inside it, once a
    step was found, with the whole series' variances (a handful of points estimates none)."""
    if hi - lo < 2:
        return []
    whole = (lo, hi) == (0, len(fitted.means))
    part = Levels(fitted.means[lo:hi], fitted.variance[lo:hi], fitted.tau2, fitted.tau2_null)
    delta, z = _scan(part.means, 1 / part.variance)
    eligible = np.abs(delta) >= band * (1 - 1e-9)
    if not eligible.any():
        return []
    k = int(np.argmax(np.where(eligible, np.abs(z), -1.0)))
    seed = (d.seed, lo, hi, sum(name.encode()))
    x, mask = data[0][lo:hi], data[1][lo:hi]
    null = _null_max(x, mask, part, d.sims, seed, studentized=whole)
    observed = abs(float(z[k]))
    p = (1 + int(np.sum(null >= observed))) / (d.sims + 1)
    if p > d.false_alarm * LEVEL_SHARE:
        return []
    at = lo + k
    here = _Split(at, float(delta[k]), float(z[k]), p)
    return [
        *_segment(data, fitted, lo, at + 1, band, d, name),
        here,
        *_segment(data, fitted, at + 1, hi, band, d, name),
    ]


def _ramp_fit(y: FloatArray, w: FloatArray, s: int, e: int) -> tuple[float, float, float]:
    """(weighted RSS, level before, level after) of flat - linear from s to e - flat."""
    i = np.arange(len(y), dtype=np.float64)
    f = np.clip((i - s) / (e - s), 0.0, 1.0)
    a = np.stack([1 - f, f], axis=1)
    aw = a * w[:, None]
    coef, *_ = np.linalg.lstsq(aw.T @ a, aw.T @ y, rcond=None)
    rss = float(np.sum(w * (y - a @ coef) ** 2))
    return rss, float(coef[0]), float(coef[1])


def _best(y: FloatArray, w: FloatArray, ramp: bool) -> tuple[float, int, int]:
    """The best step (ramp=False) or ramp of at least DRIFT_SPAN intervals: (RSS, s, e)."""
    best = (math.inf, 0, 1)
    n = len(y)
    for s in range(n - 1):
        ends = range(s + DRIFT_SPAN, n) if ramp else (s + 1,)
        for e in ends:
            rss = _ramp_fit(y, w, s, e)[0]
            if rss < best[0] - 1e-12:
                best = (rss, s, e)
    return best


def _excursions(splits: Sequence[_Split]) -> list[int]:
    """The commits that are a segment of their own, of at most EXCURSION commits, between two
    splits going opposite ways: a level that left and came back (the machine was busy when
    they were measured, or a change was reverted at once), not a lasting change of the branch."""
    return [
        i
        for a, b in itertools.pairwise(splits)
        if b.at - a.at <= EXCURSION and (a.delta > 0) != (b.delta > 0)
        for i in range(a.at + 1, b.at + 1)
    ]


def _subseries(series: Series, kept: Sequence[int]) -> Series:
    return Series(
        series.name,
        tuple(series.shas[i] for i in kept),
        tuple(series.values[i] for i in kept),
        series.log_scale,
    )


def changes(series: Series, d: Detection = Detection()) -> tuple[Change, ...]:
    """The changes of one series, oldest first (see the module).  An excursion
    (`_excursions`) is set aside and the series scanned again without it, as often as that
    finds one (a flag needs the first scan of the whole series to fire, so the false-alarm rate
    stays the first scan's)."""
    kept = list(range(len(series.shas)))
    band = math.log1p(d.band) if series.log_scale else d.band
    for _ in range(len(kept)):
        part = _subseries(series, kept)
        lv = levels(part)
        splits = _segment(_padded(part), lv, 0, len(lv.means), band, d, series.name)
        away = set(_excursions(splits))
        if not away or len(kept) - len(away) < 2:
            break
        kept = [k for i, k in enumerate(kept) if i not in away]
    found = _described(part, lv, splits, band)
    return tuple(
        replace(
            c, start=kept[c.start], end=kept[c.end], reach=(kept[c.reach[0]], kept[c.reach[1]])
        )
        for c in found
    )


def _described(
    series: Series, lv: Levels, splits: Sequence[_Split], band: float
) -> tuple[Change, ...]:
    """Each split as a step or a ramp (see the module), drifts merged."""
    w = 1 / lv.variance
    found: list[Change] = []
    for i, split in enumerate(splits):
        lo = splits[i - 1].at + 1 if i else 0
        hi = splits[i + 1].at + 1 if i + 1 < len(splits) else len(lv.means)
        y, wy = lv.means[lo:hi], w[lo:hi]
        step_rss, s, e = _best(y, wy, ramp=False)
        ramp_rss, rs, re = _best(y, wy, ramp=True)
        kind = Kind.STEP
        if ramp_rss < step_rss - DRIFT_CHI2:
            kind, s, e = Kind.DRIFT, rs, re
        elif lo + s != split.at:  # the refit moved the step: keep the scan's place
            s, e = split.at - lo, split.at - lo + 1
        _, before, after = _ramp_fit(y, wy, s, e)
        start, end = lo + s, lo + e
        reach = (lo + rs, lo + re) if math.isfinite(ramp_rss) else (start, end)
        reach = (min(reach[0], start), max(reach[1], end))
        jumps = np.diff(lv.means[start : end + 1])
        found.append(
            Change(
                series.name,
                kind,
                start,
                end,
                math.exp(before) if series.log_scale else before,
                math.exp(after) if series.log_scale else after,
                after - before,
                split.z,
                split.p,
                float(jumps[np.argmax(np.abs(jumps))]),
                reach,
            )
        )
    return _merged(found, band, series.log_scale)


def _gradual(c: Change, band: float) -> bool:
    return c.kind is Kind.DRIFT or abs(c.largest_jump) < band * (1 - 1e-9)


def _merged(found: list[Change], band: float, log_scale: bool) -> tuple[Change, ...]:
    """Neighbouring changes of one series that go the same way, none of them a jump of the
    band's size between adjacent commits, and no more than DRIFT_SPAN commits apart, as one
    drift over their union (binary segmentation cuts a sparsely measured ramp into a staircase
    of sub-band steps, none of which a compare of its two ends would call); the strongest's
    test is kept, and the delta is the union's, from the level before the first to the level
    after the last (the pieces' fits overlap: the sum of their deltas counts the overlap twice)."""
    out: list[Change] = []
    for c in found:
        last = out[-1] if out else None
        if (
            last is not None
            and (last.delta > 0) == (c.delta > 0)
            and _gradual(last, band)
            and _gradual(c, band)
            and c.start - last.end <= DRIFT_SPAN
        ):
            strongest = last if abs(last.z) >= abs(c.z) else c
            jump = max(last.largest_jump, c.largest_jump, key=abs)
            delta = math.log(c.after / last.before) if log_scale else c.after - last.before
            out[-1] = Change(
                c.series,
                Kind.DRIFT,
                last.start,
                max(last.end, c.end),
                last.before,
                c.after,
                delta,
                strongest.z,
                strongest.p,
                jump,
                (min(last.reach[0], c.reach[0]), max(last.reach[1], c.reach[1])),
            )
        else:
            out.append(c)
    return tuple(out)
