"""harness.verdict.stats: the verdict engine, checked against statsmodels and hand arithmetic."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as F
from math import comb
from statistics import NormalDist
from unittest import mock

import numpy as np
import pytest
from conftest import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from oracles import mcnemar, multipletests, scipy_stats
from purity import impurities

from harness.values.types import Verdict
from harness.verdict import resample
from harness.verdict.boots import BootComponent
from harness.verdict.latency import (
    MIN_ROUNDS,
    interval_words,
    latency_summary,
    latency_test,
    ratio_words,
    round_ratio,
    throughput,
)
from harness.verdict.power import detectable_queries, exact_power, power, repeat_noise
from harness.verdict.stats import (
    continuous_test,
    detectable_swing,
    drift,
    hit_rate_test,
    holm,
    mcnemar_exact,
    min_detectable_swing,
    modal,
    paired_bootstrap_ci,
    paired_randomization_test,
    scaled_rate_differences,
    sign_flip_exact,
)

# --------------------------------------------------------------------------- purity


def test_the_tests_import_nothing_that_does_io() -> None:
    modules = tuple(f"harness.verdict.{m}" for m in ("stats", "latency", "resample", "power"))
    assert impurities(*modules) == {module: [] for module in modules}


# --------------------------------------------------------------------------- McNemar


def test_mcnemar_matches_statsmodels_on_every_pair_up_to_60() -> None:
    # Oracle: statsmodels' exact McNemar on the 2x2 table; only the off-diagonal b, c matter.
    for b, c in itertools.product(range(61), repeat=2):
        expected = mcnemar([[7, b], [c, 3]], exact=True).pvalue
        assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12, abs=1e-300), (b, c)


def test_mcnemar_hand_values() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(0, 6) == pytest.approx(2 * 0.5**6)  # 2/64 = 0.03125
    assert mcnemar_exact(0, 5) == pytest.approx(2 * 0.5**5)  # 2/32 = 0.0625
    # 4 vs 10: 2 * P(X <= 4), X ~ Bin(14, 1/2)
    assert mcnemar_exact(10, 4) == pytest.approx(2 * sum(comb(14, i) for i in range(5)) / 2**14)


@given(st.integers(0, 200), st.integers(0, 200))
def test_mcnemar_is_symmetric_and_a_probability(b: int, c: int) -> None:
    p = mcnemar_exact(b, c)
    assert 0 < p <= 1
    assert p == mcnemar_exact(c, b)


@pytest.mark.parametrize(("b", "c"), [(-1, 0), (0, -3), (1.5, 2), (True, 2)])
def test_mcnemar_rejects_non_counts(b: object, c: object) -> None:
    with pytest.raises(ValueError, match="integer >= 0"):
        mcnemar_exact(b, c)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- noise floor


def test_min_detectable_swing_by_arithmetic() -> None:
    # p(0, n) = 2 * 0.5**n: 2/64 = 0.031 < 0.05 <= 2/32 = 0.0625
    assert 2 * 0.5**6 < 0.05 <= 2 * 0.5**5
    assert min_detectable_swing(0.05) == 6
    assert min_detectable_swing() == 6
    # 2/256 = 0.0078 < 0.01 <= 2/128 = 0.0156
    assert 2 * 0.5**8 < 0.01 <= 2 * 0.5**7
    assert min_detectable_swing(0.01) == 8


@given(st.floats(min_value=1e-12, max_value=0.99))
def test_min_detectable_swing_is_the_smallest_significant_sweep(alpha: float) -> None:
    n = min_detectable_swing(alpha)
    assert mcnemar_exact(0, n) < alpha
    assert n == 1 or mcnemar_exact(0, n - 1) >= alpha


def test_detectable_swing_needs_enough_queries() -> None:
    assert detectable_swing(5, 0.05) is None  # 5 queries can never show a swing of 6
    assert detectable_swing(6, 0.05) == 6
    assert detectable_swing(1000, 0.01) == 8
    assert detectable_swing(0, 0.05) is None


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, float("nan")])
def test_alpha_outside_unit_interval_is_rejected(alpha: float) -> None:
    with pytest.raises(ValueError, match="alpha"):
        min_detectable_swing(alpha)


# --------------------------------------------------------------------------- binary verdict


def _deterministic(b: int, c: int, same: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """One repeat per side: b queries only the baseline hits, c only the candidate, `same`
    hit by both (and one missed by both)."""
    base = [True] * b + [False] * c + [True] * same + [False]
    cand = [False] * b + [True] * c + [True] * same + [False]
    return np.array([base]), np.array([cand])


def test_twelve_lost_queries_regress() -> None:
    test = hit_rate_test(*_deterministic(12, 0), alpha=0.05)
    assert test.verdict is Verdict.REGRESSED
    assert test.net == -12
    assert test.p == pytest.approx(2 * 0.5**12)
    assert test.reason == "p = 4.9e-04 < alpha = 0.05"
    assert test.exact == "McNemar exact"


def test_twelve_gained_queries_improve() -> None:
    test = hit_rate_test(*_deterministic(0, 12), alpha=0.05)
    assert test.verdict is Verdict.IMPROVED
    assert (test.b, test.c, test.net) == (0, 12, 12)


def test_three_queries_are_not_significant() -> None:
    # p = 2 * 0.5**3 = 0.25: a swing below the minimum detectable one is never a call.
    test = hit_rate_test(*_deterministic(3, 0), alpha=0.05)
    assert test.verdict is Verdict.NO_DIFFERENCE
    assert test.p == pytest.approx(0.25)
    assert test.reason == "p = 0.250"


def test_net_swing_not_significant_gives_p_in_the_reason() -> None:
    test = hit_rate_test(*_deterministic(10, 4), alpha=0.05)
    # 2 * P(X <= 4), X ~ Bin(14, 1/2) = 2 * (1 + 14 + 91 + 364 + 1001) / 16384 = 0.1796
    assert test.p == pytest.approx(2 * (1 + 14 + 91 + 364 + 1001) / 16384)
    assert test.net == -6
    assert test.verdict is Verdict.NO_DIFFERENCE
    assert test.reason == "p = 0.180"


def test_the_candidates_own_drift_never_excuses_its_losses() -> None:
    # The baseline hits 40 queries in all 3 repeats; the candidate answers nothing to a random
    # third of them in each repeat (so it drifts on most of them): still regressed.
    rng = np.random.default_rng(7)
    base = np.ones((3, 40), dtype=bool)
    cand = rng.random((3, 40)) > 1 / 3
    test = hit_rate_test(base, cand, alpha=0.05)
    assert drift(list(cand)) > 20
    assert test.verdict is Verdict.REGRESSED
    assert test.exact == "exact sign-flip"
    assert test.b == int((cand.sum(axis=0) < 3).sum()) and test.c == 0


@given(st.integers(0, 60), st.integers(0, 60), st.integers(0, 20))
def test_on_deterministic_sides_p_is_statsmodels_mcnemar(b: int, c: int, same: int) -> None:
    # Oracle: statsmodels' exact McNemar on the 2x2 table of the two refs' outcomes.
    test = hit_rate_test(*_deterministic(b, c, same), alpha=0.05)
    expected = mcnemar([[same, b], [c, 1]], exact=True).pvalue
    assert test.p == pytest.approx(expected, rel=1e-12, abs=1e-300)
    if test.p >= 0.05:
        assert test.verdict is Verdict.NO_DIFFERENCE
    else:
        assert test.verdict is (Verdict.IMPROVED if c > b else Verdict.REGRESSED)


def _brute_force_sign_flip(d: list[int]) -> float:
    # Every sign vector enumerated: the definition of the two-sided sign-flip p.
    nonzero = [x for x in d if x]
    observed = abs(sum(nonzero))
    hits = sum(
        abs(sum(s * abs(x) for s, x in zip(signs, nonzero, strict=True))) >= observed
        for signs in itertools.product((1, -1), repeat=len(nonzero))
    )
    return hits / 2 ** len(nonzero)


@given(st.lists(st.integers(-6, 6), min_size=0, max_size=14))
def test_sign_flip_exact_equals_enumeration(d: list[int]) -> None:
    assert sign_flip_exact(np.array(d, dtype=np.int64)) == pytest.approx(
        _brute_force_sign_flip(d), rel=1e-9, abs=1e-12
    )


def test_sign_flip_exact_by_hand() -> None:
    # d = (2, 1): sums over the 4 sign vectors are 3, 1, -1, -3; |S| >= 3 in 2 of 4.
    assert sign_flip_exact(np.array([2, 1])) == pytest.approx(0.5)
    # d = (3, 1, 1): sums 5, 3, 3, 1, -1, -3, -3, -5: |S| >= 5 in 2 of 8.
    assert sign_flip_exact(np.array([3, 1, 1])) == pytest.approx(0.25)
    assert sign_flip_exact(np.array([0, 0])) == 1.0
    assert sign_flip_exact(np.array([2, -2])) == 1.0


def test_sign_flip_exact_scales_to_many_queries() -> None:
    # 50k queries with fractional rate differences: the convolution path, no enumeration.
    rng = np.random.default_rng(1)
    d = rng.integers(-3, 4, size=50_000)
    p = sign_flip_exact(d)
    assert 0 <= p <= 1
    shifted = np.concatenate([d, np.full(2_000, 3)])
    assert sign_flip_exact(shifted) < 1e-6


def test_hit_rates_with_unequal_repeats_are_compared_on_a_common_scale() -> None:
    base = np.array([[True, False], [True, True]])  # rates 1.0, 0.5
    cand = np.array([[False, True], [False, True], [True, True]])  # rates 1/3, 1.0
    scaled, lcm = scaled_rate_differences(base, cand)
    assert lcm == 6 and list(scaled) == [2 - 6, 6 - 3]
    assert hit_rate_test(base, cand, alpha=0.05).net == pytest.approx(-2 / 3 + 1 / 2)


# --------------------------------------------------------------------------- power


def _mcnemar_power_by_enumeration(effect: float, n: int, churn: float, alpha: float) -> float:
    """Oracle for `exact_power`: every query independently moves the change's way (effect),
    churns up or down (churn / 2 each) or stays; enumerate every (moved, up, down) with its
    multinomial probability and ask statsmodels' exact McNemar test of b = down, c = moved + up."""
    called: dict[tuple[int, int], bool] = {}
    total = 0.0
    stay = 1 - effect - churn
    for moved in range(n + 1):
        for up in range(n + 1 - moved):
            for down in range(n + 1 - moved - up):
                rest = n - moved - up - down
                if churn == 0 and up + down:
                    continue
                prob = (
                    math.factorial(n)
                    / (math.factorial(moved) * math.factorial(up) * math.factorial(down)
                       * math.factorial(rest))
                    * effect**moved * (churn / 2) ** (up + down) * stay**rest
                )
                b, c = down, moved + up
                if (b, c) not in called:
                    p = mcnemar([[0, b], [c, 0]], exact=True).pvalue if b + c else 1.0
                    called[b, c] = p < alpha
                total += prob * called[b, c]
    return total


@pytest.mark.parametrize(("n", "churn"), [(40, 0.0), (40, 0.1), (25, 0.2)])
def test_exact_power_is_mcnemars_summed_over_the_queries_moved(n: int, churn: float) -> None:
    for effect in (0.05, 0.15, 0.3):
        expected = _mcnemar_power_by_enumeration(effect, n, churn, 0.025)
        assert exact_power(effect, n, churn, 0.025) == pytest.approx(expected, abs=1e-9)


def test_the_stated_mde_of_identical_sides_is_called_80_percent_of_the_time() -> None:
    # Identical deterministic answers on 80 queries, two headline tests (alpha / 2): the mde is
    # the effect McNemar's exact test calls with probability 0.80 when each query moves with
    # that probability (statsmodels' test, enumerated); the exact test's floor, 7 of 80 queries
    # all one way, which this rule used to print, would be called only about half the time.
    p = power("hit@10", np.zeros(80), alpha=0.025, effect=0.15)
    assert _mcnemar_power_by_enumeration(p.mde, 80, 0.0, 0.025) == pytest.approx(0.80, abs=2e-3)
    assert _mcnemar_power_by_enumeration(p.mde - 0.003, 80, 0.0, 0.025) < 0.80
    assert _mcnemar_power_by_enumeration(7 / 80, 80, 0.0, 0.025) < 0.6
    assert p.enough and exact_power(0.15, p.queries_needed, 0.0, 0.025) >= 0.80
    assert exact_power(0.15, p.queries_needed - 1, 0.0, 0.025) < 0.80


def test_churn_raises_the_exact_mde() -> None:
    quiet = power("hit@10", np.zeros(100), alpha=0.025, effect=0.10)
    churned = power("hit@10", np.array([1.0, -1.0] * 3 + [0.0] * 94), alpha=0.025, effect=0.10)
    assert quiet.mde < churned.mde
    assert exact_power(churned.mde, 100, 0.06, 0.025) == pytest.approx(0.80, abs=2e-3)


def test_noise_raises_the_detectable_change_by_the_closed_form() -> None:
    # Without n: x - z_a sqrt(V + x) = z_b sqrt(V + x), the change's own spread x included.
    z_a, z_b = NormalDist().inv_cdf(0.975), NormalDist().inv_cdf(0.8)
    v = 40.0
    x = detectable_queries(v, 0.05)
    assert x - z_a * math.sqrt(v + x) == pytest.approx(z_b * math.sqrt(v + x), rel=1e-5)
    c = (z_a + z_b) ** 2  # x = (z_a + z_b) sqrt(V + x): the root of x^2 - c x - c V
    assert x == pytest.approx((c + math.sqrt(c * c + 4 * c * v)) / 2, rel=1e-5)
    # With n queries the number moved is binomial: variance x (1 - x / n), a little less.
    x100 = detectable_queries(v, 0.05, n=100)
    assert x100 - z_a * math.sqrt(v + x100) == pytest.approx(
        z_b * math.sqrt(v + x100 * (1 - x100 / 100)), rel=1e-5
    )
    assert x100 < x


def test_a_five_query_set_cannot_see_a_ten_point_change() -> None:
    p = power("hit@10", -np.ones(5), alpha=0.05, effect=0.10)
    assert p.mde > 1 and not p.enough
    assert p.queries_needed > 100
    assert exact_power(0.10, p.queries_needed, 1.0, 0.05) >= 0.80


def test_boots_add_their_variance_to_the_mde() -> None:
    d = np.random.default_rng(5).uniform(-0.5, 0.5, 300)
    without = power("hit@10", d, alpha=0.025, effect=0.10)
    boots = BootComponent(between=0.0009, added=0.0006, within=float((d * d).sum()) / 300**2,
                          df=4, spread=0.001)
    withboots = power("hit@10", d, alpha=0.025, effect=0.10, boots=boots)
    variance = float((d * d).sum()) + 0.0006 * 300**2
    # The two-level test's bar is Student's t at the boots' 4 degrees of freedom: the alpha
    # whose normal quantile is that t.
    bar = 2 * (1 - NormalDist().cdf(float(scipy_stats.t.ppf(1 - 0.025 / 2, 4))))
    assert withboots.mde == pytest.approx(detectable_queries(variance, bar, n=300) / 300)
    assert withboots.mde > detectable_queries(variance, 0.025, n=300) / 300
    assert withboots.mde > without.mde


def test_repeat_noise_is_what_more_repeats_remove() -> None:
    rng = np.random.default_rng(3)
    outcomes = rng.random((3, 200)) < 0.5  # every query a coin flip in every repeat
    noise = repeat_noise(outcomes) * 2  # both sides alike
    deltas = rng.random((3, 200)).mean(axis=0) - outcomes.mean(axis=0)
    p = power("hit@10", deltas, alpha=0.05, effect=0.10, noise=noise, repeats=3)
    if not p.enough:
        assert p.repeats_needed is None or p.repeats_needed > 3
    assert repeat_noise(outcomes[:1]) == 0.0  # one repeat: no noise estimate


@given(st.lists(st.floats(-1, 1), min_size=1, max_size=50), st.floats(0.01, 1))
def test_power_is_monotone_in_the_spread(deltas: list[float], effect: float) -> None:
    d = np.array(deltas) * 0.9  # fractional differences: the normal approximation's rule
    # Halving a denormal (5e-324) gives 0: all-whole differences, McNemar's exact rule, which
    # needs a query or so more than the normal one at a vanishing spread. Compare within a rule.
    assume(not np.isin(d * 0.5, (-1.0, 0.0, 1.0)).all())
    low = power("m", d * 0.5, alpha=0.05, effect=effect)
    high = power("m", d, alpha=0.05, effect=effect)
    assert low.mde <= high.mde + 1e-12
    assert low.queries_needed <= high.queries_needed


# --------------------------------------------------------------------------- repeats


def test_drift_counts_queries_that_flip_between_repeats() -> None:
    outcomes = [
        [True, False, True, False],
        [True, False, False, False],
        [True, True, False, False],
    ]
    assert drift(outcomes) == 2  # queries 1 and 2
    assert drift([[True, False]]) == 0  # one repeat cannot drift


def test_modal_takes_the_majority_and_resolves_ties_to_a_miss() -> None:
    three = [[True, True, False], [True, False, False], [False, True, False]]
    assert modal(three).tolist() == [True, True, False]
    two = [[True, False, True], [False, False, True]]
    assert modal(two).tolist() == [False, False, True]  # 1 of 2 is a tie: a miss


def test_ragged_or_empty_outcomes_are_rejected() -> None:
    with pytest.raises(ValueError, match="same number of queries"):
        drift([[True, False], [True]])
    with pytest.raises(ValueError, match="at least one repeat"):
        modal([])


# --------------------------------------------------------------------------- bootstrap


def test_bootstrap_of_identical_scores_is_exactly_zero() -> None:
    scores = np.array([0.2, 0.5, 1.0, 0.0])
    assert paired_bootstrap_ci(scores, scores.copy(), seed=1) == (0.0, 0.0, 0.0)


def test_bootstrap_of_a_constant_shift_is_that_shift() -> None:
    base = np.array([0.25, 0.5, 0.0, 0.75])
    delta, lo, hi = paired_bootstrap_ci(base, base + 0.25, seed=1)
    assert (delta, lo, hi) == pytest.approx((0.25, 0.25, 0.25))


def test_bootstrap_ci_covers_the_true_delta_about_as_often_as_it_claims() -> None:
    # 100 synthetic paired samples with a known true mean delta of 0.05: a 90% CI must cover it
    # in roughly 90 of them (binomial sd is 3, so 80..98 is a > 3-sigma band).
    data = np.random.default_rng(20240501)
    covered = 0
    for trial in range(100):
        base = data.uniform(0, 1, size=60)
        cand = base + 0.05 + data.normal(0, 0.2, size=60)
        _, lo, hi = paired_bootstrap_ci(base, cand, seed=trial, resamples=1000, confidence=0.9)
        covered += lo <= 0.05 <= hi
    assert 80 <= covered <= 98


def test_bootstrap_on_a_large_sample_is_centred_and_narrow() -> None:
    data = np.random.default_rng(7)
    base = data.uniform(0, 1, size=1000)
    cand = base + 0.05 + data.normal(0, 0.1, size=1000)
    delta, lo, hi = paired_bootstrap_ci(base, cand, seed=0)
    assert delta == pytest.approx(float(np.mean(cand - base)))
    assert lo < 0.05 < hi
    assert lo < delta < hi
    assert hi - lo < 4 * 1.96 * 0.1 / np.sqrt(1000)  # about 2 * 1.96 standard errors wide


def test_bootstrap_is_deterministic_and_independent_of_chunking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = np.random.default_rng(3)
    base, cand = data.uniform(size=37), data.uniform(size=37)
    first = paired_bootstrap_ci(base, cand, seed=11, resamples=500)
    assert paired_bootstrap_ci(base, cand, seed=11, resamples=500) == first
    assert paired_bootstrap_ci(base, cand, seed=12, resamples=500) != first
    monkeypatch.setattr(resample, "CHUNK_ELEMENTS", 37 * 7)  # 72 chunks instead of 1
    assert paired_bootstrap_ci(base, cand, seed=11, resamples=500) == first


def test_bootstrap_matches_a_naive_loop() -> None:
    # Oracle: the textbook loop, one resample at a time, fed the same random indices.
    base = np.array([0.1, 0.4, 0.4, 0.9, 0.3])
    cand = np.array([0.2, 0.4, 0.6, 0.7, 0.8])
    indices = np.random.default_rng(5).integers(0, 5, size=(200, 5))
    means = [float(np.mean(cand[row] - base[row])) for row in indices]
    expected = np.percentile(means, [2.5, 97.5])
    _, lo, hi = paired_bootstrap_ci(base, cand, seed=5, resamples=200)
    assert (lo, hi) == pytest.approx(tuple(expected), abs=1e-12)


@pytest.mark.parametrize(
    ("base", "cand", "match"),
    [
        ([0.1, 0.2], [0.1], "aligned"),
        ([], [], "aligned"),
        ([[0.1]], [[0.2]], "aligned"),
        ([0.1, float("nan")], [0.1, 0.2], "finite"),
    ],
)
def test_misaligned_or_missing_scores_are_rejected(
    base: list[float], cand: list[float], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        paired_bootstrap_ci(base, cand, seed=0)
    with pytest.raises(ValueError, match=match):
        paired_randomization_test(base, cand, seed=0)


# --------------------------------------------------------------------------- randomization


def test_randomization_of_identical_scores_is_one() -> None:
    scores = np.array([0.3, 0.6, 0.0])
    assert paired_randomization_test(scores, scores.copy(), seed=0) == 1.0


def test_randomization_exact_path_matches_hand_enumeration() -> None:
    # deltas 1, 2, 3 (a zero delta is dropped); the 8 signed sums are
    # +6, +4 (-1+2+3), +2 (1-2+3), 0 (-1-2+3), 0 (1+2-3), -2, -4, -6: |sum| >= 6 in 2 of 8.
    base = np.zeros(4)
    cand = np.array([1.0, 2.0, 0.0, 3.0])
    assert paired_randomization_test(base, cand, seed=0, resamples=8) == 2 / 8
    # deltas 1, 1: sums +2, 0, 0, -2: |sum| >= 2 in 2 of 4.
    assert paired_randomization_test(np.zeros(2), np.ones(2), seed=0) == 2 / 4


def test_randomization_counts_ties_through_float_rounding() -> None:
    # deltas 1, 2, -3, 7 in tenths: obs = 7; |x + 7| >= 7 for the 5 sign patterns of (1, 2, -3)
    # with x >= 0 (6, 4, 2, 0, 0), and |x - 7| >= 7 for the 5 with x <= 0: 10 of 16.
    # In floats 0.1 + 0.2 - 0.3 + 0.7 and -(0.1 + 0.2 - 0.3) - 0.7 differ in the last bit.
    assert paired_randomization_test(np.zeros(4), np.array([1, 2, -3, 7]), seed=0) == 10 / 16
    tenths = np.array([0.1, 0.2, -0.3, 0.7])
    assert paired_randomization_test(np.zeros(4), tenths, seed=0) == 10 / 16


def test_randomization_exact_path_matches_rational_enumeration() -> None:
    # Oracle: the same enumeration in exact fractions.  In floats several of these 64 signed
    # sums land a rounding error below |obs| although they equal it; they must still count.
    deltas = [F(9, 10), F(-2, 5), F(-2, 5), F(3, 20), F(3, 10), F(-2, 3)]
    observed = abs(sum(deltas))
    expected = sum(
        abs(sum(sign * d for sign, d in zip(signs, deltas, strict=True))) >= observed
        for signs in itertools.product((1, -1), repeat=len(deltas))
    )
    assert expected == 60
    floats = np.array([float(d) for d in deltas])
    assert paired_randomization_test(np.zeros(6), floats, seed=0) == expected / 64


def test_randomization_of_a_consistent_shift_is_as_small_as_it_can_be() -> None:
    data = np.random.default_rng(2)
    base = data.uniform(size=50)
    # 2**50 sign vectors: only the all-plus and all-minus ones reach |obs|, so no sampled one does.
    p = paired_randomization_test(base, base + 0.1, seed=0, resamples=2000)
    assert p == 1 / 2001


def test_randomization_monte_carlo_is_deterministic_for_a_seed() -> None:
    data = np.random.default_rng(4)
    base, cand = data.uniform(size=40), data.uniform(size=40)
    p = paired_randomization_test(base, cand, seed=9, resamples=999)
    assert paired_randomization_test(base, cand, seed=9, resamples=999) == p
    assert 0 < p <= 1
    assert p * 1000 == pytest.approx(round(p * 1000))  # (count + 1) / (resamples + 1)


def test_randomization_monte_carlo_approaches_the_exact_value() -> None:
    # 12 nonzero deltas: exact with 4096 resamples, Monte Carlo with 4095; they must agree
    # to within Monte Carlo error (sd of a proportion near 0.1 over 4095 draws is about 0.005).
    deltas = np.array([0.3, 0.1, 0.25, -0.05, 0.2, 0.15, -0.1, 0.3, 0.05, 0.1, -0.2, 0.35])
    exact = paired_randomization_test(np.zeros(12), deltas, seed=0, resamples=4096)
    sampled = paired_randomization_test(np.zeros(12), deltas, seed=0, resamples=4095)
    assert abs(exact - sampled) < 0.025


# --------------------------------------------------------------------------- continuous verdict


def test_continuous_improvement_and_regression() -> None:
    data = np.random.default_rng(8)
    base = data.uniform(0, 0.8, size=200)
    cand = base + 0.1 + data.normal(0, 0.05, size=200)
    up = continuous_test(base, cand, alpha=0.05, seed=0, resamples=2000)
    assert up.verdict is Verdict.IMPROVED
    assert up.mean_baseline == pytest.approx(float(base.mean()))
    assert up.mean_candidate == pytest.approx(float(cand.mean()))
    assert up.delta == pytest.approx(up.mean_candidate - up.mean_baseline)
    assert 0 < up.ci_low < up.delta < up.ci_high
    assert up.p < 0.05
    assert up.reason.startswith("p = ") and "95% CI [+0.0" in up.reason
    down = continuous_test(cand, base, alpha=0.05, seed=0, resamples=2000)
    assert down.verdict is Verdict.REGRESSED
    assert down.ci_high < 0


def test_continuous_identical_is_no_difference() -> None:
    scores = np.array([0.1, 0.5, 0.9])
    test = continuous_test(scores, scores.copy(), alpha=0.05, seed=0)
    assert test.verdict is Verdict.NO_DIFFERENCE
    assert (test.delta, test.ci_low, test.ci_high, test.p) == (0.0, 0.0, 0.0, 1.0)
    assert test.reason == "p = 1.000"


def test_continuous_test_rarely_calls_a_change_that_is_not_there() -> None:
    # 200 samples with no true shift (the candidate's noise is symmetric around the baseline):
    # at alpha 0.05 about 10 may be called by chance, never many more (binomial sd is 3).
    data = np.random.default_rng(10)
    called = 0
    for trial in range(200):
        base = data.uniform(size=30)
        cand = base + data.normal(0, 0.1, size=30)
        test = continuous_test(base, cand, alpha=0.05, seed=trial, resamples=400)
        called += test.verdict is not Verdict.NO_DIFFERENCE
        if test.p >= 0.05:
            assert test.verdict is Verdict.NO_DIFFERENCE
    assert called <= 20


# --------------------------------------------------------------------------- Holm


def test_holm_by_hand() -> None:
    # sorted 0.01, 0.03, 0.04 times 3, 2, 1 = 0.03, 0.06, 0.04; running max 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0]  # capped
    assert holm([]) == []


@given(
    st.lists(
        st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.01, 0.05, 1.0])),
        min_size=1,
        max_size=30,
    )
)
@settings(max_examples=examples(50))
def test_holm_matches_statsmodels(pvalues: list[float]) -> None:
    # Oracle: statsmodels multipletests(method="holm"), second element = adjusted p-values.
    # It runs a full gc.collect() at every call (80-250 ms in a test process holding the
    # suite's objects): skipped here, where it changes no number.
    with mock.patch("gc.collect", lambda *_: 0):
        expected = multipletests(pvalues, method="holm")[1]
    assert holm(pvalues) == pytest.approx(list(expected), rel=1e-12, abs=1e-300)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=50))
def test_holm_is_capped_monotone_and_never_below_raw(pvalues: list[float]) -> None:
    adjusted = holm(pvalues)
    assert all(raw <= adj <= 1 for raw, adj in zip(pvalues, adjusted, strict=True))
    pairs = sorted(zip(pvalues, adjusted, strict=True))
    assert all(a[1] <= b[1] for a, b in itertools.pairwise(pairs))


@pytest.mark.parametrize("bad", [[0.1, 1.5], [-0.01], [float("nan")]])
def test_holm_rejects_non_probabilities(bad: list[float]) -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm(bad)


# --------------------------------------------------------------------------- latency


def test_latency_summary_of_one_to_a_hundred_ms() -> None:
    ns = np.arange(1, 101) * 1_000_000
    summary = latency_summary(ns)
    # "linear": value at rank (n - 1) * q, ranks from 0, values are rank + 1 ms
    assert summary.p50 == pytest.approx(1 + 99 * 0.50)  # 50.5
    assert summary.p95 == pytest.approx(1 + 99 * 0.95)  # 95.05
    assert summary.p99 == pytest.approx(1 + 99 * 0.99)  # 99.01
    assert summary.max == 100.0
    assert summary.mean == pytest.approx(50.5)
    assert summary.n == 100


def test_latency_summary_rejects_empty() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        latency_summary([])


def test_a_rounds_ratio_is_the_median_of_its_per_query_ratios() -> None:
    # per-query ratios 2/1, 2/2, 4/4 = [2, 1, 1]: the median is 1, the ratio of sums would be 8/7
    assert round_ratio([1.0, 2.0, 4.0], [2.0, 2.0, 4.0]) == 1.0
    with pytest.raises(ValueError, match="> 0"):
        round_ratio([1.0, 0.0], [1.0, 1.0])


T_975_2 = 4.302652729911275  # Student's t, 0.975 quantile, 2 degrees of freedom (tables: 4.303)


def test_three_rounds_at_half_again_regress_with_a_t_interval_on_the_logs() -> None:
    test = latency_test(np.exp([0.3, 0.4, 0.5]))
    # mean of the logs 0.4, standard deviation 0.1, half-width t * 0.1 / sqrt(3)
    half = T_975_2 * 0.1 / np.sqrt(3)
    assert test.ratio == pytest.approx(np.exp(0.4))  # 1.49
    assert (test.ci_low, test.ci_high) == pytest.approx((np.exp(0.4 - half), np.exp(0.4 + half)))
    assert test.ci_low > 1.1  # exp(0.152) = 1.16: the whole interval is past the band
    assert test.verdict is Verdict.REGRESSED
    assert test.reason == "1.49x slower (95% CI 1.16-1.91)"  # exp(0.152), exp(0.648)
    assert test.rounds == pytest.approx(tuple(np.exp([0.3, 0.4, 0.5])))


def test_the_interval_matches_statsmodels_t_confidence_interval() -> None:
    from statsmodels.stats.weightstats import DescrStatsW

    ratios = [1.21, 1.35, 1.18, 1.30, 1.26]
    low, high = DescrStatsW(np.log(ratios)).tconfint_mean(alpha=0.05)
    test = latency_test(ratios)
    assert (test.ci_low, test.ci_high) == pytest.approx((np.exp(low), np.exp(high)))


def test_a_faster_candidate_improves_and_says_so_in_one_unit() -> None:
    test = latency_test([1 / 1.50, 1 / 1.52, 1 / 1.48])
    assert test.verdict is Verdict.IMPROVED
    assert test.ratio == pytest.approx(1 / 1.5, rel=1e-3)
    # the interval in speed-ups too, low to high: never "1.50x faster (95% CI 0.64-0.69)"
    low, high = 1 / test.ci_high, 1 / test.ci_low
    assert test.reason == f"1.50x faster (95% CI {low:.2f}-{high:.2f})"
    assert 1.1 < low < 1.5 < high


def test_identical_rounds_are_no_difference() -> None:
    test = latency_test([1.0, 1.01, 1 / 1.01])
    assert test.verdict is Verdict.NO_DIFFERENCE
    assert 1 / 1.1 <= test.ci_low <= test.ci_high <= 1.1


def test_one_round_is_inconclusive_and_says_how_many() -> None:
    test = latency_test([1.6])
    assert MIN_ROUNDS == 2
    assert test.verdict is Verdict.INCONCLUSIVE
    assert test.rounds_needed == 3
    assert test.reason == (
        "1.60x slower over 1 round: too few rounds to tell boot-to-boot variance from a change; "
        "run with --repeats 3 or more"
    )


def test_two_steady_rounds_can_call_a_large_change() -> None:
    # logs 0.405 and 0.438: sd 0.0234, half-width 12.71 * 0.0234 / sqrt(2) = 0.21
    test = latency_test([1.50, 1.55])
    assert test.verdict is Verdict.REGRESSED
    assert 1.1 < test.ci_low < 1.3 and 1.8 < test.ci_high < 1.9


def test_one_slow_boot_is_inconclusive_not_a_confident_ratio() -> None:
    # The A/A: repeat medians 1.05 / 1.14 / 9.83 ms on one side.  Time-paired, a burst
    # slows both sides of its pairs; left over in one round's ratio, it widens the interval.
    test = latency_test([1.02, 0.98, 2.2])
    assert test.verdict is Verdict.INCONCLUSIVE
    assert test.ci_low < 1 < 1.1 < test.ci_high
    needed = test.rounds_needed
    assert needed is not None and needed > 3
    assert f"about {needed} rounds (--repeats {needed}) would likely tell" in test.reason
    # at that many rounds, with the spread seen, the half-width fits beside the band edge
    logs = np.log([1.02, 0.98, 2.2])
    half = stats_t_half(float(logs.std(ddof=1)), needed)
    assert half < abs(logs.mean())


def stats_t_half(spread: float, n: int) -> float:
    from scipy.stats import t

    return float(t.ppf(0.975, n - 1) * spread / np.sqrt(n))


def test_a_ratio_past_the_band_with_a_wide_interval_is_inconclusive() -> None:
    test = latency_test([1.05, 1.4, 1.2])
    assert test.ratio > 1.1 > test.ci_low
    assert test.verdict is Verdict.INCONCLUSIVE
    assert "the interval reaches 1.00, so the change is not certain" in test.reason


def test_a_small_certain_slowdown_inside_the_band_is_not_a_call() -> None:
    # 1.05x with a tight interval entirely above 1: certain, but inside the ±10% tolerance
    test = latency_test([1.049, 1.05, 1.051])
    assert test.ci_low > 1 and test.ci_high < 1.1
    assert test.verdict is Verdict.NO_DIFFERENCE


def test_beyond_the_band_and_certain_is_a_call_even_if_the_interval_reaches_into_it() -> None:
    # 1.50x with the interval 1.06-2.13: above 1 throughout, so slower (asv's rule)
    test = latency_test([1.3, 1.5, 1.72])
    assert 1 < test.ci_low < 1.1 < test.ratio
    assert test.verdict is Verdict.REGRESSED


@given(st.lists(st.floats(0.2, 5.0), min_size=1, max_size=8))
def test_swapping_the_sides_swaps_slower_and_faster(ratios: list[float]) -> None:
    forward, backward = latency_test(ratios), latency_test([1 / r for r in ratios])
    mirror = {Verdict.REGRESSED: Verdict.IMPROVED, Verdict.IMPROVED: Verdict.REGRESSED}
    assert backward.verdict is mirror.get(forward.verdict, forward.verdict)
    assert backward.ratio == pytest.approx(1 / forward.ratio)


def test_latency_test_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="round ratios"):
        latency_test([])
    with pytest.raises(ValueError, match="round ratios"):
        latency_test([1.0, 0.0])


def test_interval_words_are_one_direction_and_one_unit() -> None:
    assert interval_words(1.52, 1.45, 1.60) == "1.52x slower (95% CI 1.45-1.60)"
    assert interval_words(1 / 1.52, 1 / 1.60, 1 / 1.45) == "1.52x faster (95% CI 1.45-1.60)"
    assert interval_words(1.0, 0.95, 1.05) == "1.00x, the same (95% CI 0.95-1.05)"


def test_throughput_is_the_mean_over_rounds_with_a_t_interval() -> None:
    flow = throughput([1000.0, 1100.0, 1200.0], concurrency=4)
    half = T_975_2 * 100.0 / np.sqrt(3)  # standard deviation of 1000, 1100, 1200 is 100
    assert (flow.qps, flow.rounds, flow.concurrency) == (1100.0, 3, 4)
    assert (flow.ci_low, flow.ci_high) == pytest.approx((1100.0 - half, 1100.0 + half))


def test_ratio_words() -> None:
    assert ratio_words(1.52) == "1.52x slower"
    assert ratio_words(1 / 1.10) == "1.10x faster"
    assert ratio_words(1.0) == "1.00x, the same"
