"""Simulated compares for the latency rule: realistic noise, the project's own decision code.

    from latency_simulation import Noise, simulate
    outcome = simulate(Noise(...), effect=0.10, rule="sequential", first=5, budget=12, seed=1)

One simulated compare draws, round by round, every query's latency on both sides and hands each
round to the decision code exactly as `harness compare` does (`latency_rule.round_estimate`, then
`latency_rule.look` after every round from `first` on; or today's rules, for comparison):

- per query a base latency (log-normal across the gold set: 2 ms lookups beside 50 ms ones);
- per round and side a boot shift, heavy-tailed (Student's t with `boot_df` degrees of freedom,
  3 by default, scaled to `boot` standard deviation on the log scale): the boot-to-boot variance
  that must stay in the interval;
- per request log-normal noise (`within`) and GC-pause-like spikes (`spike_rate` of requests
  are 2-5x slower), and machine-load bursts that slow both sides of the pairs they hit (a burst
  covers `burst_share` of a round's queries, x1.5-3, plus extra noise on each side);
- the order effect: the second request of a pair `order_cost` slower (x(1 + order_cost)), half
  of a round's queries baseline-first, drawn afresh each round;
- the candidate's effect: x(1 + effect) on its latency, or + `add_ms` milliseconds;
- a persistent side bias (`side_bias`, log scale): the candidate's side measured that much slower
  in every round of an A/A, as the runner's warm-up order once did (baseline's warm-up, then the
  candidate's: +5.5% at load 7-16, `scripts/latency_noise.py`); a bias inside the band must not
  be called a change.

Rules (`rule=`): "sequential" (harness.verdict.latency_rule, what compare runs), "naive" (the
fixed-size t test recomputed after every round: not valid), "fixed" (that test at `first`
rounds only), "satterthwaite" (the sequential design with a random-effects variance, the
between-round part max(0, s^2 - mean within) plus the within part, carried to Student's t at
Satterthwaite's degrees of freedom: the two-level model that lets fewer rounds decide, shown
for contrast because it is not valid at these round counts), "whole" (the sequential design with
each round one trimmed mean of all its pairs, not one per order: the order effect then counts in
the round's variance; shown for contrast).

Seeded: the same arguments give the same outcome.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.values.types import Verdict
from harness.verdict import latency, latency_rule


@dataclass(frozen=True)
class Noise:
    name: str
    boot: float  # per side per round, log scale
    within: float  # per request, log scale
    spike_rate: float = 0.03
    burst_share: float = 0.0
    order_cost: float = 0.043
    queries: int = 85
    base_ms: float = 1.0
    boot_df: float = 3.0
    side_bias: float = 0.0
    # Which rows hold targets: "all"; "validity" (false calls only: a stress test of the
    # interval); "none" (shown for contrast: the side bias the runner no longer has).
    targets: str = "all"


QUIET = Noise("quiet", boot=0.012, within=0.10, spike_rate=0.01)
LOADED = Noise("loaded", boot=0.035, within=0.25, spike_rate=0.04, burst_share=0.2)
HEAVY = Noise("heavy load", boot=0.06, within=0.35, spike_rate=0.06, burst_share=0.3)
HEAVY_TAILS = Noise(
    "heavy tails",
    boot=0.06,
    within=0.35,
    spike_rate=0.08,
    burst_share=0.3,
    boot_df=2.2,
    targets="validity",
)
SIDE_BIAS = Noise(
    "heavy load, side bias +5%",
    boot=0.06,
    within=0.35,
    spike_rate=0.06,
    burst_share=0.3,
    side_bias=math.log(1.055),
    targets="none",
)
# Bursty CPU hogs (scripts/latency_calibration.py's bursty cell: 4 hogs on 2 CPUs): the first
# request of a pair about 5x slower than the second, each order's own spread moderate, 40
# queries, rounds that agree closely (a spread of about 0.045 between round estimates, live).
BURSTY = Noise(
    "bursty hogs, order 5x",
    boot=0.04,
    within=0.3,
    spike_rate=0.06,
    burst_share=0.3,
    order_cost=4.5,
    queries=40,
)
NOISES = {n.name: n for n in (QUIET, LOADED, HEAVY, BURSTY, HEAVY_TAILS, SIDE_BIAS)}


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    rounds: int  # rounds run before the rule stopped
    advice: int | None  # for INCONCLUSIVE: the budget the rule advised


def _round(
    noise: Noise, rng: np.random.Generator, base: np.ndarray, effect: float, add_ms: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = noise.queries
    df = noise.boot_df
    boots = noise.boot * rng.standard_t(df, size=2) / math.sqrt(df / (df - 2))
    sides = []
    for s in range(2):
        x = base * math.exp(boots[s]) * np.exp(noise.within * rng.standard_normal(n))
        spikes = rng.random(n) < noise.spike_rate
        x = np.where(spikes, x * rng.uniform(2, 5, n), x)
        sides.append(x)
    # Bursts of machine load: both sides of the pairs they hit, each with extra noise of its own.
    burst = rng.random(n) < noise.burst_share
    factor = rng.uniform(1.5, 3.0, n)
    for s in range(2):
        extra = np.exp(0.3 * rng.standard_normal(n))
        sides[s] = np.where(burst, sides[s] * factor * extra, sides[s])
    # The candidate went second on these queries: exactly half of them (rounded down), a fresh
    # random half each round, as `harness.replay.order` balances a round.
    second = np.zeros(n, dtype=bool)
    second[rng.permutation(n)[: n // 2]] = True
    b, c = sides
    c = c * (1 + effect) * math.exp(noise.side_bias) + add_ms
    c = np.where(second, c * (1 + noise.order_cost), c)
    b = np.where(second, b, b * (1 + noise.order_cost))
    return b, c, second


def simulate(
    noise: Noise,
    *,
    effect: float = 0.0,
    add_ms: float = 0.0,
    rule: str = "sequential",
    first: int = 5,
    budget: int = 12,
    seed: int = 0,
    tolerance: float = 0.10,
    gamma: float = latency_rule.GAMMA,
) -> Outcome:
    """One compare under `rule`: "sequential" (latency_rule, looks from `first` to `budget`),
    "naive" (today's t test on median ratios recomputed after every round from `first` on,
    stopped at the first call: not valid), or "fixed" (today's rule at `first` rounds only)."""
    rng = np.random.default_rng(seed)
    base = noise.base_ms * np.exp(0.8 * rng.standard_normal(noise.queries))
    sequential = rule in ("sequential", "satterthwaite", "whole")
    design = latency_rule.plan(first, budget, gamma=gamma) if sequential else None
    estimates: list[latency_rule.RoundEstimate] = []
    ratios: list[float] = []
    last = first if rule == "fixed" else budget
    for k in range(1, last + 1):
        b, c, base_first = _round(noise, rng, base, effect, add_ms)
        if design is not None:
            by_order = None if rule == "whole" else base_first
            estimates.append(latency_rule.round_estimate(b, c, base_first=by_order))
            if k < design.looks[0]:
                continue
            if rule == "satterthwaite":
                seen = satterthwaite_look(estimates, design, tolerance=tolerance)
            else:
                seen = latency_rule.look(estimates, design, tolerance=tolerance)
            if seen.verdict is not None:
                advice = None
                if seen.verdict is Verdict.INCONCLUSIVE:
                    advice = latency_rule.budget_for(
                        seen.log_ratio, seen.spread, first=first, tolerance=tolerance, gamma=gamma
                    )
                return Outcome(seen.verdict, k, advice)
            continue
        ratios.append(latency.round_ratio(b, c))
        if k < first:
            continue
        test = latency.latency_test(ratios, tolerance=tolerance)
        if test.verdict is not Verdict.INCONCLUSIVE or k == last:
            return Outcome(test.verdict, k, test.rounds_needed)
    raise AssertionError("unreachable")


def satterthwaite_look(
    rounds: list[latency_rule.RoundEstimate], design: latency_rule.Plan, *, tolerance: float
) -> latency_rule.Look:
    """`latency_rule.look` with a two-level variance: the between-round part
    tau2 = max(0, s^2 - w) beside the within part w (the mean within-round variance), the
    boundaries carried to Student's t at Satterthwaite's degrees of freedom
    (tau2 + w)^2 / (tau2^2 / (k - 1) + w^2 / df_w), df_w the rounds' within degrees of freedom:
    many when the rounds agree no more than their queries imply, k - 1 when boots dominate."""
    from statistics import NormalDist

    from harness.verdict.distributions import t_quantile

    k = len(rounds)
    y = np.array([r.log_ratio for r in rounds])
    mean = float(y.mean())
    within = float(np.mean([r.within_var for r in rounds]))
    between = max(0.0, float(y.var(ddof=1)) - within)
    var = between + within
    df_w = sum(r.queries - 1 for r in rounds)
    df = var**2 / (between**2 / (k - 1) + within**2 / df_w)
    i = design.looks.index(k)
    z_eq = _equivalence_z(design)

    def carried(z: float) -> float:
        return z if df > 300 else t_quantile(NormalDist().cdf(z), max(1, int(df)))

    se = math.sqrt(var / k)
    half, half_eq = carried(design.z[i]) * se, carried(z_eq[i]) * se
    edge = math.log1p(tolerance)
    verdict = None
    if mean > edge and mean - half > 0:
        verdict = Verdict.REGRESSED
    elif mean < -edge and mean + half < 0:
        verdict = Verdict.IMPROVED
    elif -edge <= mean - half_eq and mean + half_eq <= edge:
        verdict = Verdict.NO_DIFFERENCE
    if verdict is None and k >= design.budget:
        verdict = Verdict.INCONCLUSIVE
    return latency_rule.Look(k, mean, half, math.sqrt(var), verdict, half_eq)


_Z_EQ: dict[tuple[int, ...], tuple[float, ...]] = {}


def _equivalence_z(design: latency_rule.Plan) -> tuple[float, ...]:
    if design.looks not in _Z_EQ:
        _Z_EQ[design.looks] = latency_rule._boundaries(
            design.looks, 2 * design.equivalence, design.gamma
        )
    return _Z_EQ[design.looks]


@dataclass(frozen=True)
class Rates:
    """One noise level's calibration rows, each a (count, trials) pair."""

    noise: str
    aa_calls: tuple[int, int]
    aa_same: tuple[int, int]
    power: dict[str, tuple[int, int]]
    stops: dict[int, int]  # A/A: rounds at the stop -> compares
    advice: tuple[int, int]  # inconclusive A/As whose advised budget, followed, decided
    # At tolerance 0 every call of an A/A is one its interval made by missing 1: the rule's, and
    # today's t test recomputed after every round (not valid under those looks), for contrast.
    strict: tuple[int, int] = (0, 0)
    strict_naive: tuple[int, int] = (0, 0)
    strict_satterthwaite: tuple[int, int] = (0, 0)
    mean_rounds: float = 0.0
    mean_rounds_satterthwaite: float = 0.0
    # The A/A "no measurable difference" rows with each round one trimmed mean of all its pairs
    # (rule "whole": the order effect in the round's variance), for contrast.
    aa_same_whole: tuple[int, int] = (0, 0)


EFFECTS = {"+10%": (0.10, 0.0), "+25%": (0.25, 0.0), "+30 ms": (0.0, 30.0)}


def calibrate(noise: Noise, sims: int, *, first: int, budget: int, seed: int = 0) -> Rates:
    """The calibration rows of `noise`: `sims` simulated compares per row, seeds disjoint."""
    aa = [simulate(noise, first=first, budget=budget, seed=seed + i) for i in range(sims)]
    calls = sum(o.verdict in (Verdict.REGRESSED, Verdict.IMPROVED) for o in aa)
    same = sum(o.verdict is Verdict.NO_DIFFERENCE for o in aa)
    stops: dict[int, int] = {}
    for o in aa:
        stops[o.rounds] = stops.get(o.rounds, 0) + 1
    power = {}
    for j, (name, (effect, add_ms)) in enumerate(EFFECTS.items(), start=1):
        runs = [
            simulate(
                noise,
                effect=effect,
                add_ms=add_ms,
                first=first,
                budget=budget,
                seed=seed + j * 1_000_003 + i,
            )
            for i in range(sims)
        ]
        power[name] = (sum(o.verdict is Verdict.REGRESSED for o in runs), sims)
    # Advice followed: a fresh compare (new seed) with the advised budget, same machine.
    advised = [(i, o.advice) for i, o in enumerate(aa) if o.verdict is Verdict.INCONCLUSIVE]
    decided = 0
    for i, advice in advised:
        if advice is None:
            continue
        again = simulate(noise, first=first, budget=advice, seed=seed + 7_000_003 + i)
        decided += again.verdict is not Verdict.INCONCLUSIVE
    strict = [
        simulate(noise, first=first, budget=budget, seed=seed + 9_000_003 + i, tolerance=0.0)
        for i in range(sims)
    ]
    naive = [
        simulate(
            noise,
            rule="naive",
            first=first,
            budget=budget,
            seed=seed + 9_000_003 + i,
            tolerance=0.0,
        )
        for i in range(sims)
    ]

    satt = [
        simulate(
            noise,
            rule="satterthwaite",
            first=first,
            budget=budget,
            seed=seed + 9_000_003 + i,
            tolerance=0.0,
        )
        for i in range(sims)
    ]
    satt_aa = [
        simulate(noise, rule="satterthwaite", first=first, budget=budget, seed=seed + i)
        for i in range(sims)
    ]

    whole = [
        simulate(noise, rule="whole", first=first, budget=budget, seed=seed + i)
        for i in range(sims)
    ]

    def called(outcomes: list[Outcome]) -> tuple[int, int]:
        return sum(o.verdict in (Verdict.REGRESSED, Verdict.IMPROVED) for o in outcomes), sims

    return Rates(
        noise.name,
        (calls, sims),
        (same, sims),
        power,
        stops,
        (decided, len(advised)),
        called(strict),
        called(naive),
        called(satt),
        float(np.mean([o.rounds for o in aa])),
        float(np.mean([o.rounds for o in satt_aa])),
        (sum(o.verdict is Verdict.NO_DIFFERENCE for o in whole), sims),
    )
