"""Boots as a level of the quality test (harness.verdict.boots), and what compare does with it:
hand arithmetic for the estimate, scipy for the t and chi-square tails, a simulation for the
promise (a per-boot shift does not make an A/A "improved" or "regressed" more than alpha)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from compare_support import FAST, candidate, make_gold, make_run
from oracles import scipy_stats

from harness.values.types import GoldQuery, Verdict
from harness.verdict.boots import (
    MIN_DF,
    BootComponent,
    boot_component,
    boot_margin,
    boot_p,
    boot_path,
    margin,
    widen,
)
from harness.verdict.decide import compare
from harness.verdict.distributions import chi2_sf, t_sf
from harness.verdict.power import power
from harness.verdict.stats import hit_rate_test, sign_flip_exact


def test_the_estimate_is_the_spread_of_boot_means_less_the_queries_noise() -> None:
    # Two queries, three boots a side.  Baseline boot means 1/2, 1, 1/2 (sample variance 1/12),
    # each query's sample variance over its boots: (1/3, 1/3) -> w_b = (1/3 + 1/3) / 4 = 1/6;
    # candidate every boot (1, 0): means 1/2 each, no spread, w_c = 0.  Pooled over 4 df:
    # S^2 = (2 * 1/12 + 2 * 0) / 4 = 1/24, w = (2 * 1/6 + 0) / 4 = 1/12: S^2 < w, no boots.
    base = np.array([[1, 0], [1, 1], [0, 1]], dtype=float)
    cand = np.array([[1, 0], [1, 0], [1, 0]], dtype=float)
    b = boot_component(base, cand)
    assert b.df == 4 and b.between == 0.0 and b.added == 0.0
    assert b.spread == pytest.approx((1 / 24) * (1 / 3 + 1 / 3))
    # deltas per query: (1 - 2/3, 0 - 2/3) -> within = (1/9 + 4/9) / 2^2
    assert b.within == pytest.approx((1 / 9 + 4 / 9) / 4)
    assert b.p_present == pytest.approx(scipy_stats.chi2.sf(4 * (1 / 24) / (1 / 12), 4))
    assert boot_p(b, 0.3) is None and not b.present


def test_boots_that_move_every_query_together_are_seen() -> None:
    # Every boot of a side answers alike within itself, but boots differ: 1 1 1 1 / 0 0 0 0 /
    # 1 1 1 1 on the baseline: no query varies except with its boot.  w is what the queries'
    # own variance says, S^2 the boot means' (1/3); the excess is the boots'.
    base = np.array([[1] * 4, [0] * 4, [1] * 4], dtype=float)
    cand = np.array([[1] * 4, [1] * 4, [0] * 4], dtype=float)
    b = boot_component(base, cand)
    s2 = (2 * (1 / 3) + 2 * (1 / 3)) / 4  # each side's boot means 1, 0, 1 (or 1, 1, 0): 1/3
    w = (2 * (4 * (1 / 3)) / 16 + 2 * (4 * (1 / 3)) / 16) / 4  # each query's variance 1/3
    assert b.between == pytest.approx(s2 - w)
    assert b.added == pytest.approx((s2 - w) * (1 / 3 + 1 / 3))
    assert b.present


def test_one_boot_per_side_cannot_be_estimated() -> None:
    b = boot_component(np.ones((1, 5)), np.zeros((1, 5)))
    assert not b.estimable and b.df == 0 and b.p_present is None and b.added == 0.0


def test_two_boots_a_side_are_too_few_to_be_in_the_test() -> None:
    # A candidate losing its answer in 20% of searches at random, 2 boots a side, 80 queries:
    # with the boots in (a t on 2 degrees of freedom, 6.2 at 0.025) it would go uncalled half
    # the time; below MIN_DF they stay out, the exact test calls it, and the report says why.
    rng = np.random.default_rng(3)
    base = np.ones((2, 80), dtype=bool)
    cand = rng.random((2, 80)) >= 0.2
    boots = boot_component(base, cand)
    assert boots.df == 2 < MIN_DF and not boots.estimable and boots.added == 0.0
    test = hit_rate_test(base, cand, alpha=0.025, boots=boots)
    assert test.verdict is Verdict.REGRESSED and test.exact == "exact sign-flip"


def test_the_two_level_p_is_students_t_on_satterthwaites_degrees_of_freedom() -> None:
    b = BootComponent(between=0.001, added=0.0006, within=0.0007, df=4, spread=0.0011)
    df = math.floor(4 * ((0.0007 + 0.0006) / 0.0011) ** 2)  # 5.58: 5
    assert b.df_effective == df == 5
    z = 0.05 / math.sqrt(0.0013)
    assert boot_p(b, 0.05) == pytest.approx(2 * scipy_stats.t.sf(z, df), rel=1e-10)
    q = scipy_stats.t.isf(0.025, df)
    assert margin(b, 0.95) == pytest.approx(q * math.sqrt(0.0013), rel=1e-9)
    assert boot_margin(b, 0.95) == pytest.approx(q * math.sqrt(0.0006), rel=1e-9)
    lo, hi = widen(0.05, 0.04, 0.06, b, 0.95)
    assert (lo, hi) == pytest.approx((0.05 - q * math.sqrt(0.0013), 0.05 + q * math.sqrt(0.0013)))
    assert widen(0.05, -0.5, 0.6, b, 0.95) == (-0.5, 0.6)  # never narrower than given


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7, 8, 30])
def test_the_tails_are_scipys(df: int) -> None:
    for x in (0.01, 0.7, 2.5, 9.0, 40.0):
        assert t_sf(x, df) == pytest.approx(scipy_stats.t.sf(x, df), rel=1e-9, abs=1e-15)
        assert chi2_sf(x, df) == pytest.approx(scipy_stats.chi2.sf(x, df), rel=1e-9, abs=1e-15)


def test_the_running_sums_give_each_looks_estimate() -> None:
    rng = np.random.default_rng(4)
    base = (rng.random((3, 90)) < 0.5).astype(float)
    cand = (rng.random((5, 90)) < 0.6).astype(float)
    at = [20, 30, 61, 90]
    for n, got in zip(at, boot_path(base, cand, at), strict=True):
        want = boot_component(base[:, :n], cand[:, :n])
        assert got.df == want.df and got.p_present == pytest.approx(want.p_present)
        for field in ("between", "added", "within", "spread"):
            assert getattr(got, field) == pytest.approx(getattr(want, field), abs=1e-15)


def _boot_aa(rng: np.random.Generator, n: int, repeats: int, spread: float) -> list[np.ndarray]:
    """One A/A of `n` queries hitting with p in [0.2, 0.8], each boot shifting every p by a
    shared normal draw of sd `spread`: each side's repeats x queries hits."""
    p = rng.uniform(0.2, 0.8, n)
    return [
        np.array(
            [rng.random(n) < np.clip(p + rng.normal(0, spread), 0, 1) for _ in range(repeats)]
        )
        for _ in range(2)
    ]


def test_a_per_boot_shift_is_not_called_a_change() -> None:
    # 300 simulated A/As of 300 queries, 5 boots a side, each boot shifting every query by
    # N(0, 0.03): with the boots inside the test, "improved" or "regressed" at alpha 0.05 stays
    # near alpha; treating the 5 answers of a query as independent draws calls far more.
    rng = np.random.default_rng(25)
    with_boots = without = 0
    for _ in range(300):
        base, cand = _boot_aa(rng, 300, 5, 0.03)
        boots = boot_component(base, cand)
        with_boots += hit_rate_test(base, cand, alpha=0.05, boots=boots).p < 0.05
        without += hit_rate_test(base, cand, alpha=0.05).p < 0.05
    assert with_boots <= 0.075 * 300  # 5% and its simulation error
    assert without >= 0.12 * 300


def test_without_boot_variation_the_exact_test_stands() -> None:
    rng = np.random.default_rng(7)
    base = rng.random((3, 200)) < 0.5
    cand = rng.random((3, 200)) < 0.6
    boots = boot_component(base, cand)
    test = hit_rate_test(base, cand, alpha=0.05, boots=replace(boots, added=0.0))
    scaled = cand.sum(axis=0) - base.sum(axis=0)
    assert test.p == sign_flip_exact(scaled) and test.exact == "exact sign-flip"


def _boot_ranks(shifts: list[float], seed: int) -> object:
    """A rank function for make_run: query i hits (rank 1) in repeat r when its own uniform draw
    is below 0.5 + the repeat's shift, else is buried."""
    draws = np.random.default_rng(seed).random((len(shifts), 200))

    def rank(rep: int, q: GoldQuery) -> int | None:
        return 1 if draws[rep, int(q.id[1:]) - 1] < 0.5 + shifts[rep] else None

    return rank


def test_compare_puts_the_boots_in_the_headline_and_says_how_much() -> None:
    # Five boots a side; the baseline's boots happen to run 0.07 above the candidate's on
    # average (shifts +0.15, -0.05, ... against their negatives), with no change in the code.
    # Read as independent answers that is a regression (z about 4); with the boots inside, the
    # boots' own spread says a gap of that size is what boots do: no call.
    gold = make_gold(80)
    shifts = [0.15, -0.05, 0.15, -0.05, 0.15]
    base = make_run(gold, _boot_ranks(shifts, 1), repeats=5)  # type: ignore[arg-type]
    cand = candidate(gold, _boot_ranks([-s for s in shifts], 2), repeats=5)  # type: ignore[arg-type]
    c = compare(gold, base, cand, FAST)
    row = c.overall.row("hit@5")
    assert row is not None and row.boots is not None and row.hit is not None
    assert row.boots.present and row.boots.added > 0
    assert row.hit.test.exact == "two-level t, boots inside"
    assert row.p == pytest.approx(boot_p(row.boots, row.delta))
    outcomes = [np.array([[a.ids[:1] == (f"{a.query_id}-rel",) for a in rep.results
                           if a.query_id.startswith("q")] for rep in run.repeats])
                for run in (base, cand)]
    assert hit_rate_test(outcomes[0], outcomes[1], alpha=0.05).p < 0.01  # without the boots
    assert c.verdict_quality not in (Verdict.IMPROVED, Verdict.REGRESSED)
    # Nor "no measurable difference": the mde the row states is the two-level test's, boots
    # inside (a +10 pp change at R = 3 with a per-boot spread of 0.03 was otherwise called "no
    # measurable difference" 48% of the time: the mde of the queries alone claimed 80% power).
    d = outcomes[1].mean(axis=0) - outcomes[0].mean(axis=0)
    alone = power("hit@5", d, alpha=FAST.alpha / 2, effect=FAST.min_effect, repeats=5)
    inside = power("hit@5", d, alpha=FAST.alpha / 2, effect=FAST.min_effect, repeats=5,
                   boots=row.boots)
    assert row.power is not None and row.power.mde == pytest.approx(inside.mde)
    assert row.power.mde > 1.2 * alone.mde and not row.power.enough
    assert c.verdict_quality is Verdict.INCONCLUSIVE
    assert c.boots is not None and c.boots.present
    assert c.boots.share == pytest.approx(
        max(r.boots.share for r in c.overall.rows if r.deciding and r.boots)
    )
    assert any("boots differ more than their queries explain" in f for f in c.findings)
    assert row.ci_low is None and row.hit.ci_low is not None and row.hit.ci_high is not None
    assert row.hit.ci_high - row.hit.ci_low >= 2 * margin(row.boots, 0.95) - 1e-12
