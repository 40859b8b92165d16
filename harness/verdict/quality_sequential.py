"""Anytime-valid early stopping for the quality headline: betting confidence sequences.

    plan = SequentialPlan(metrics=("hit@5", "hit@10"), total=300, alpha=0.05, min_effect=0.1)
    result = decide({"hit@5": d5, "hit@10": d10}, plan)   # deltas in the order asked
    result.verdict, result.stopped_at, result.metrics     # None while undecided

This is not `harness.verdict.sequential`, which stops *resampling* early inside one fixed-sample
test; this rule stops *querying* early: the compare asks the gold set's queries in a seeded random
order (`query_order`), both sides in step, a block at a time, and may stop after any block.

What is bet on.  For each headline metric (hit@k at every cutoff and every `gate_on` metric) a
query gives one paired delta d in [-1, 1]: the candidate's value minus the baseline's, each the
mean over that side's R repeats (a hit rate for hit@k; d is -1, 0 or +1 when both sides are
deterministic, so a tie (0) multiplies every wealth by 1 and the bet is on the discordant pairs
alone, b against c, at p = 1/2).  With y = (d + 1) / 2 in [0, 1] and a candidate mean mu, the
hedged capital process of Waudby-Smith and Ramdas ("Estimating means of bounded random variables
by betting", JRSS-B 2024, section 4, the predictable plug-in bets with hedging):

    mu_hat_t  = (1/2 + sum_{i<=t} y_i) / (t + 1)
    var_t     = (1/4 + sum_{i<=t} (y_i - mu_hat_i)^2) / (t + 1)
    lambda_t  = sqrt(2 log(2 / a) / (var_{t-1} t log(t + 1)))        (predictable: data before t)
    K+_t(mu)  = prod_{i<=t} (1 + min(lambda_i, c / mu) (y_i - mu))
    K-_t(mu)  = prod_{i<=t} (1 - min(lambda_i, c / (1 - mu)) (y_i - mu))
    K_t(mu)   = max(K+_t(mu) / 2, K-_t(mu) / 2),    c = 1/2

Under mu = E[y] both products are non-negative martingales (each factor has mean 1 given the
past), so by Ville's inequality P(sup_t K_t(mu) >= 1/a) <= a: the set {mu : K_s(mu) < 1/a for
every s <= t} (the running intersection) is a confidence sequence, valid at every t at once, so
at any stopping time.  It says "no measurable difference" and gives the bounds the report shows.

The test of "no change" (delta 0) bets on the deltas themselves with the mixture over every bet
lambda in [-1, 1], arcsine-weighted (lambda = cos(psi), psi uniform on (0, pi): the
Krichevsky-Trofimov mixture, a universal portfolio):

    E_t = integral prod_{i<=t} (1 + lambda d_i) dpi(lambda)

a non-negative martingale when every delta has mean 0 given the ones before (each product is one,
and a mixture of martingales is one), two-sided by construction.  For deterministic outcomes
(d in {-1, 0, +1}) it is exactly the betting martingale on the discordant pairs at p = 1/2:
E = 2^(b+c) B(b + 1/2, c + 1/2) / B(1/2, 1/2), ties multiply by 1.  Its anytime p-value is
p = min(1, 1 / sup_t E_t) (Ville: valid at any stopping time), its direction the sign of the mean
delta.  The mixture is computed on MIXTURE midpoints of psi (the integrand is smooth in psi).
Why the mixture and not the confidence sequence's own test at 0: the plug-in bets are tuned for a
narrow interval, not for a fast rejection; the mixture puts its wealth on the bet that turns out
right (a regression of b = 10, c = 0 discordant pairs gives E = 180).  The queries are in a random
order, and under the null the pairs are exchangeable, so every delta has mean 0 given the ones
before it.

The family and the stop.  The anytime p-values of the m headline metrics are Holm-adjusted
across each other (Holm needs only valid p-values, and these are valid at the stopping time), and
each metric's sequence is at level a = alpha_s / m (Bonferroni: all m cover at once). After each
block, from `first` queries on:

- regressed: a metric's Holm-adjusted p < alpha_s with a downward direction (as the fixed-sample
  headline: one regressed row makes the headline regressed);
- improved: a metric improved the same way, none regressed, and every other metric's sequence
  lies above -min_effect (none of them could still hide a regression of the minimum effect);
- never "no measurable difference": a stop for it could hide a change inside the band that the
  rest of the gold set would show at alpha (each look still says whether a metric's sequence
  lies inside (-min_effect, +min_effect), for the report);
- with margins (`compare --non-inferior`): once every margin's sequence lies wholly above
  -margin or wholly below it, the compare stops with quality "inconclusive" (whether anything
  changed inside the margins was not asked further): `harness.verdict.noninferiority` reads
  the sequences at that look, valid at any stopping time;
- otherwise the next block; when the gold set is used up the compare gives the fixed-sample
  verdict, its calls at alpha - alpha_s and its "no measurable difference" an equivalence
  test at alpha over every query (`harness.verdict.equivalence`), never looked at before.

The error budget: alpha_s = SHARE * alpha is spent on the looks, the rest on the fixed-sample test
at the end, so by the union bound the chance of a false call, whenever the compare stops, is at
most alpha (`scripts/calibrate.py --only sequential` measures it, with power and the share of
the gold set asked).  The grid of candidate means has GRID points over [-1, 1] in delta units
(a step of 0.01); a confidence sequence's bounds are the first rejected grid points beyond the
kept ones (the sequence lies strictly between them).

Pure: no I/O, no clock; the order is a seeded permutation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from harness.values.types import Verdict
from harness.verdict.boots import BootComponent, boot_margin, boot_p, boot_path
from harness.verdict.noninferiority import Claim, judge
from harness.verdict.stats import holm

SHARE = 0.5  # of alpha spent on the looks; the rest on the fixed-sample test at the end
GRID = 201  # candidate means over [-1, 1] in delta units: a step of 0.01
TRUNCATION = 0.5  # c: the largest share of the wealth bet on one query
FIRST_LOOK = 20  # no stop before this many queries (a latency round needs queries too)
MIN_BLOCK = 10
MIXTURE = 1000  # points of the bets' mixture
EDGE = 1e-9  # a bound this close to +/- min_effect is on it (grid arithmetic's rounding)

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class SequentialPlan:
    """The design, fixed before the first query: the headline metrics, the gold set's size
    `total`, the queries per block, the error rate and the minimum effect."""

    metrics: tuple[str, ...]
    total: int
    alpha: float = 0.05
    min_effect: float = 0.05
    block: int = 0  # 0: `default_block(total)`
    first: int = FIRST_LOOK
    share: float = SHARE
    # (metric, margin) of compare --non-inferior: a look where every margin is decided stops
    # too (`harness.verdict.noninferiority` reads the sequences there).
    margins: tuple[tuple[str, float], ...] = ()

    @property
    def alpha_looks(self) -> float:
        """The error rate spent on the looks (alpha_s)."""
        return self.alpha * self.share

    @property
    def alpha_fixed(self) -> float:
        """The error rate left for the fixed-sample test when the gold set is used up."""
        return self.alpha - self.alpha_looks

    @property
    def block_size(self) -> int:
        return self.block or default_block(self.total)

    def looks(self, asked: int) -> list[int]:
        """The query counts after which the rule looks, up to `asked`: every block end, the
        first at or past `first`, and the gold set's end."""
        size = self.block_size
        ends = [*range(size, self.total, size), self.total]
        return [n for n in ends if n <= asked and (n >= self.first or n == self.total)]


def default_block(total: int) -> int:
    """Queries per block: MIN_BLOCK, or a thirtieth of the gold set when that is more (a look
    costs a pass over the answers so far; thirty looks are plenty)."""
    return max(MIN_BLOCK, math.ceil(total / 30))


def query_order(ids: Sequence[str], seed: int) -> tuple[str, ...]:
    """The order the queries are asked in: a permutation of `ids` drawn from `seed`."""
    rng = np.random.default_rng([seed, 0x5E0])
    return tuple(ids[i] for i in rng.permutation(len(ids)))


@dataclass(frozen=True)
class MetricLook:
    """One headline metric at the last look: n deltas, their mean, the confidence sequence's
    bounds at level 1 - alpha_s / m, the anytime p-value (raw and Holm-adjusted), and its call."""

    metric: str
    n: int
    delta: float
    lower: float
    upper: float
    p: float
    p_adjusted: float
    verdict: Verdict  # IMPROVED, REGRESSED, NO_DIFFERENCE (inside the band) or INCONCLUSIVE
    # With boot-to-boot variation seen (harness.verdict.boots): the two-level test's p at this
    # look, and how far the boots alone may have moved the mean delta (the bounds include it).
    p_boots: float | None = None
    boot_margin: float = 0.0


@dataclass(frozen=True)
class SequentialResult:
    """The rule's answer: the verdict when it stopped (None: not decided by the last look), the
    queries asked when it did (or all those looked at), and each metric at that look."""

    verdict: Verdict | None
    stopped_at: int
    total: int
    metrics: tuple[MetricLook, ...]
    reason: str
    level: float  # each sequence's confidence level, 1 - alpha_s / m

    @property
    def stopped_early(self) -> bool:
        return self.verdict is not None and self.stopped_at < self.total


@dataclass(frozen=True)
class Sequential:
    """What a sequential compare did: the queries asked of the gold set's `total`, the rule's
    answer at its last look, and the sentence the reports print."""

    asked: int
    total: int
    result: SequentialResult
    said: str
    # The compare's alpha (alpha_s of it spent on the looks; the tables and the last test are
    # at the rest, which is the Comparison's settings.alpha); 0 in comparisons saved before.
    alpha: float = 0.0

    @property
    def decided(self) -> bool:
        """Whether the rule gave the verdict (else the fixed-sample test did, at the end)."""
        return self.result.verdict is not None


@dataclass(frozen=True)
class _Path:
    """One metric's wealth and confidence sequence at every query count 1..n."""

    delta: FloatArray  # running mean of the deltas
    log_sup: FloatArray  # log sup_{s<=t} E_s, the mixture's wealth against delta 0
    lower: FloatArray
    upper: FloatArray
    inside: npt.NDArray[np.bool_]  # every grid point with |m| >= min_effect rejected


_GRID = np.round(np.linspace(-1.0, 1.0, GRID), 12)
_STEP = 2.0 / (GRID - 1)
_BETS = np.cos((np.arange(MIXTURE) + 0.5) * math.pi / MIXTURE)


def mixture_log_e(deltas: FloatArray, at: Sequence[int]) -> FloatArray:
    """log E_n at each n of `at` (query counts, ascending): the arcsine mixture of betting
    martingales on the first n deltas.  Deltas take few distinct values (hit rates over R
    repeats), so each distinct value's log-factors are computed once and counted."""
    d = np.clip(np.asarray(deltas, dtype=np.float64), -1.0, 1.0)
    values, which = np.unique(d, return_inverse=True)
    # Every bet is strictly inside (-1, 1) (midpoints of psi), so 1 + lambda d > 0: finite logs.
    table = np.log1p(values[:, None] * _BETS[None, :])  # values x bets
    ends = np.asarray(at, dtype=np.intp)
    onehot = np.zeros((d.size + 1, len(values)))
    onehot[np.arange(1, d.size + 1), which] = 1.0
    counts = np.cumsum(onehot, axis=0)[ends]  # looks x values
    logs = counts @ table  # looks x bets
    top = logs.max(axis=1)
    return np.asarray(top + np.log(np.exp(logs - top[:, None]).mean(axis=1)), dtype=np.float64)


def _path(deltas: FloatArray, level: float, min_effect: float, at: Sequence[int]) -> _Path:
    """One metric at each look of `at` (query counts): the sup of the test's wealth over the
    looks so far, the mean delta, and the confidence sequence (intersected over the looks)."""
    y = (np.clip(deltas, -1.0, 1.0) + 1.0) / 2.0
    n = y.size
    t = np.arange(1, n + 1, dtype=np.float64)
    mean = (0.5 + np.cumsum(y)) / (t + 1)
    var = (0.25 + np.cumsum((y - mean) ** 2)) / (t + 1)
    before = np.concatenate(([0.25], var[:-1]))  # var_{t-1}, with var_0 = 1/4
    lam = np.sqrt(2 * math.log(2 / level) / (before * t * np.log(t + 1)))
    mu = (_GRID + 1.0) / 2.0
    with np.errstate(divide="ignore"):
        cap_up = np.where(mu > 0, TRUNCATION / mu, np.inf)
        cap_down = np.where(mu < 1, TRUNCATION / (1 - mu), np.inf)
    gap = y[:, None] - mu[None, :]
    rows = np.asarray(at, dtype=np.intp) - 1
    up = np.cumsum(np.log1p(np.minimum(lam[:, None], cap_up) * gap), axis=0)[rows]
    down = np.cumsum(np.log1p(-np.minimum(lam[:, None], cap_down) * gap), axis=0)[rows]
    log_k = np.maximum(up, down) - math.log(2)
    kept = np.logical_and.accumulate(log_k < math.log(1 / level), axis=0)
    zero = GRID // 2
    any_kept = kept.any(axis=1)
    first = np.where(any_kept, kept.argmax(axis=1), zero)
    last = np.where(any_kept, GRID - 1 - kept[:, ::-1].argmax(axis=1), zero)
    outside = np.abs(_GRID) >= min_effect - 1e-12
    inside = np.logical_not(kept[:, outside].any(axis=1))
    return _Path(
        delta=(np.cumsum(deltas) / t)[rows],
        log_sup=np.maximum.accumulate(mixture_log_e(deltas, at)),
        lower=np.maximum(_GRID[first] - _STEP, -1.0),
        upper=np.minimum(_GRID[last] + _STEP, 1.0),
        inside=inside & any_kept,
    )


def _at(
    paths: Mapping[str, _Path],
    j: int,
    n: int,
    plan: SequentialPlan,
    boots: Mapping[str, BootComponent] | None = None,
) -> tuple[MetricLook, ...]:
    raw = [float(min(1.0, math.exp(-paths[m].log_sup[j]))) for m in plan.metrics]
    adjusted = holm(raw)
    level = plan.alpha_looks / max(len(plan.metrics), 1)
    two_level = {m: boot_p(b, float(paths[m].delta[j])) for m, b in (boots or {}).items()}
    p_boots = [two_level.get(m) for m in plan.metrics]
    boots_adjusted = dict(
        zip(plan.metrics, holm([1.0 if p is None else p for p in p_boots]), strict=True)
    )
    looks = []
    for metric, p, adj, p_boot in zip(plan.metrics, raw, adjusted, p_boots, strict=True):
        path = paths[metric]
        move = 0.0 if boots is None else boot_margin(boots[metric], 1 - level)
        lower, upper = float(path.lower[j]) - move, float(path.upper[j]) + move
        # A call needs the boots' test too when they vary: the wealth bet on the queries sees
        # a shift every query of a boot shares as a real change.
        boots_agree = p_boot is None or boots_adjusted[metric] < plan.alpha_looks
        if adj < plan.alpha_looks and boots_agree:
            verdict = Verdict.IMPROVED if path.delta[j] > 0 else Verdict.REGRESSED
        # The sequence is the open interval (lower, upper), its ends rejected: inside the band
        # when they are at most +/- min_effect. Compared with a rounding allowance: the ends are
        # grid points less a step, which for min effects 0.05 or 0.2 come out exactly equal to
        # the band's edges (a strict test there never said "no measurable difference").
        elif (
            path.inside[j]
            and -plan.min_effect - EDGE <= lower
            and upper <= plan.min_effect + EDGE
        ):
            verdict = Verdict.NO_DIFFERENCE
        else:
            verdict = Verdict.INCONCLUSIVE
        looks.append(
            MetricLook(
                metric=metric,
                n=n,
                delta=float(path.delta[j]),
                lower=max(lower, -1.0),
                upper=min(upper, 1.0),
                p=p,
                p_adjusted=adj,
                verdict=verdict,
                p_boots=p_boot,
                boot_margin=move,
            )
        )
    return tuple(looks)


def _call(looks: Sequence[MetricLook], plan: SequentialPlan) -> tuple[Verdict | None, str]:
    regressed = [m.metric for m in looks if m.verdict is Verdict.REGRESSED]
    improved = [m.metric for m in looks if m.verdict is Verdict.IMPROVED]
    if regressed:
        return Verdict.REGRESSED, f"{', '.join(regressed)} regressed"
    low = -plan.min_effect
    if improved and all(m.verdict is Verdict.IMPROVED or m.lower > low for m in looks):
        return Verdict.IMPROVED, f"{', '.join(improved)} improved, none regressed"
    margins = dict(plan.margins)
    held = [m for m in looks if m.metric in margins]
    if held and all(judge(m.lower, m.upper, margins[m.metric]) is not Claim.NOT_SHOWN
                    for m in held):  # fmt: skip
        # Whether anything changed inside the margins is not asked further: the quality
        # verdict is inconclusive, the answer asked for is the margins' (read at this look).
        return Verdict.INCONCLUSIVE, (
            "stopped once every non-inferiority margin was decided; whether anything changed "
            "inside the margins was not asked further"
        )
    # Never "no measurable difference" before the gold set is used up: a stop there could hide a
    # change inside the band that the rest of the queries would show; the claim is the last
    # test's (`harness.verdict.equivalence`, over every query), whatever the sequences say.
    return None, "not decided"


def decide(
    deltas: Mapping[str, Sequence[float] | FloatArray],
    plan: SequentialPlan,
    values: Mapping[str, tuple[FloatArray, FloatArray]] | None = None,
) -> SequentialResult:
    """The rule over the deltas asked so far (each metric's, in the order asked; the same
    length for every metric): the first look that decides, else the last look's state.
    `values`: each metric's per-repeat values (baseline's and candidate's, repeats x queries in
    the order asked), from which each look estimates the variation between boots
    (`harness.verdict.boots`); without them the boots are not looked at."""
    arrays = {m: np.asarray(deltas[m], dtype=np.float64) for m in plan.metrics}
    sizes = {a.size for a in arrays.values()}
    if len(sizes) != 1:
        raise ValueError(f"every metric needs the same number of deltas, not {sorted(sizes)}")
    (asked,) = sizes
    if asked > plan.total:
        raise ValueError(f"{asked} deltas for a gold set of {plan.total}")
    level = plan.alpha_looks / max(len(plan.metrics), 1)
    if asked == 0:
        return SequentialResult(None, 0, plan.total, (), "no query asked", 1 - level)
    looks = plan.looks(asked)
    points = looks or [asked]  # before the first look: the state, never a decision
    paths = {m: _path(a, level, plan.min_effect, points) for m, a in arrays.items()}
    last: tuple[MetricLook, ...] = ()
    along = {m: boot_path(b, c, points) for m, (b, c) in (values or {}).items()}
    for j, n in enumerate(points):
        boots = {m: path[j] for m, path in along.items()} if values is not None else None
        last = _at(paths, j, n, plan, boots)
        if not looks:
            break
        verdict, reason = _call(last, plan)
        if verdict is not None:
            return SequentialResult(verdict, n, plan.total, last, reason, 1 - level)
    return SequentialResult(None, points[-1], plan.total, last, "not decided", 1 - level)
