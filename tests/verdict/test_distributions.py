"""harness.verdict.distributions against exact fractions and scipy (the oracle, test-only here)."""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import bdtr, betaincinv, gammaln, stdtrit

from harness.verdict import distributions as dist
from harness.verdict.sequential import ERROR, _beyond


def _exact_half_cdfs(n: int) -> list[float]:
    """P(X <= k) for X ~ Binomial(n, 1/2), k = 0..n: sum(C(n, i), i <= k) / 2**n as exact
    fractions, correctly rounded (a running sum of the integers, one division per k)."""
    total, cdfs = 0, []
    for i in range(n + 1):
        total += math.comb(n, i)
        cdfs.append(float(Fraction(total, 2**n)))
    return cdfs


@pytest.mark.parametrize("n", [0, 1, 2, 3, 12, 101, 1000, 1001])
def test_half_binomial_cdf_is_the_exact_ratio_correctly_rounded(n: int) -> None:
    exact = _exact_half_cdfs(n)
    for k in range(-1, n + 2):
        expected = 0.0 if k < 0 else exact[min(k, n)]
        assert dist.half_binomial_cdf(k, n) == expected


def test_mcnemar_p_of_a_clean_swing_is_exactly_a_power_of_two() -> None:
    from harness.verdict.stats import mcnemar_exact

    # 12 discordant pairs all one way: p = 2 / 2**12, exactly (bdtr gave 0.0004882812500000001).
    assert mcnemar_exact(0, 12) == 2.0**-11
    assert mcnemar_exact(12, 0) == 2.0**-11


@pytest.mark.parametrize("n", [0, 1, 2, 5, 50, 1001, 4000])
def test_half_binomial_pmf_is_exact_and_symmetric(n: int) -> None:
    pmf = dist.half_binomial_pmf(n)
    assert pmf.shape == (n + 1,)
    for i in (0, 1, n // 3, n // 2, n - 1, n):
        if 0 <= i <= n:
            assert pmf[i] == float(Fraction(math.comb(n, i), 2**n))
    assert np.array_equal(pmf, pmf[::-1])
    assert math.isclose(float(pmf.sum()), 1.0, rel_tol=1e-12)


def test_past_the_exact_limit_the_half_binomial_is_scipys() -> None:
    n = dist.EXACT_N + 1
    assert dist.half_binomial_cdf(n // 2 - 150, n) == float(bdtr(n // 2 - 150, n, 0.5))
    pmf = dist.half_binomial_pmf(n)
    i = np.arange(n + 1, dtype=np.float64)
    expected = np.exp(gammaln(n + 1.0) - gammaln(i + 1.0) - gammaln(n - i + 1.0) - n * math.log(2))
    assert np.array_equal(pmf, expected)


@settings(max_examples=examples(300), deadline=None)
@given(
    n=st.integers(1, 12_000),
    share=st.floats(0.0, 1.0),
    p=st.sampled_from([1e-6, 1e-3, 0.01, 0.025, 0.05, 0.3, 0.5, 0.9, 0.999]),
)
def test_binomial_cdf_matches_scipy(n: int, share: float, p: float) -> None:
    k = min(n, int(share * n))
    expected = float(bdtr(k, n, p))
    got = dist.binomial_cdf(k, n, p)
    if expected > 1e-290:
        assert got == pytest.approx(expected, rel=1e-10)
    else:
        assert got < 1e-280


def test_binomial_cdf_edges() -> None:
    assert dist.binomial_cdf(-1, 10, 0.3) == 0.0
    assert dist.binomial_cdf(10, 10, 0.3) == 1.0
    assert dist.binomial_cdf(3, 10, 0.0) == 1.0
    assert dist.binomial_cdf(3, 10, 1.0) == 0.0
    with pytest.raises(ValueError):
        dist.binomial_cdf(3, 10, 1.5)


def test_t_quantile_matches_scipy() -> None:
    # One test over the whole grid (46 df x 8 q): each miss is listed, not one case per point.
    misses = []
    for df in [*range(1, 41), 49, 99, 100, 250, 1000, 5000]:
        # Its series has df / 2 terms, whose rounding adds up: ~1e-15 at df <= 100, 3e-12 at 5000.
        rel = 1e-13 if df <= 100 else 1e-11
        for q in [0.6, 0.75, 0.9, 0.95, 0.975, 0.99, 0.995, 0.9995]:
            got, expected = dist.t_quantile(q, df), float(stdtrit(df, q))
            if got != pytest.approx(expected, rel=rel) or dist.t_quantile(1.0 - q, df) != -got:
                misses.append(f"df={df} q={q}: {got!r} vs scipy {expected!r}")
    assert not misses, "\n".join(misses)


def test_t_quantile_closed_forms() -> None:
    # df = 2: t = (2q - 1) / sqrt(2 q (1 - q)); df = 1: tan(pi (q - 1/2)).
    for q in (0.6, 0.9, 0.975, 0.999):
        assert dist.t_quantile(q, 2) == pytest.approx((2 * q - 1) / math.sqrt(2 * q * (1 - q)))
        assert dist.t_quantile(q, 1) == pytest.approx(math.tan(math.pi * (q - 0.5)))
    assert dist.t_quantile(0.5, 7) == 0.0


@pytest.mark.parametrize("bad", [(0.975, 0), (0.975, 2.5), (0.0, 3), (1.0, 3)])
def test_t_quantile_refuses_what_it_cannot_answer(bad: tuple[float, float]) -> None:
    with pytest.raises(ValueError):
        dist.t_quantile(bad[0], bad[1])  # type: ignore[arg-type]


def _clopper_pearson_beyond(hits: int, draws: int, below: float, above: float, looks: int) -> bool:
    half = ERROR / looks / 2
    lower = 0.0 if hits == 0 else float(betaincinv(hits, draws - hits + 1, half))
    upper = 1.0 if hits >= draws else float(betaincinv(hits + 1, draws - hits, 1 - half))
    return upper < below or lower > above


@pytest.mark.parametrize("draws", [250, 1000, 4000])
@pytest.mark.parametrize("bounds", [(0.05 / 7, 0.05), (0.025, 0.025), (0.01, 0.05)])
@pytest.mark.parametrize("looks", [1, 6])
def test_the_stopping_rule_is_the_clopper_pearson_interval_for_every_count(
    draws: int, bounds: tuple[float, float], looks: int
) -> None:
    below, above = bounds
    for hits in range(draws + 1):
        assert _beyond(hits, draws, below, above, looks) == _clopper_pearson_beyond(
            hits, draws, below, above, looks
        ), hits


def test_a_compare_of_a_few_hundred_queries_never_imports_scipy() -> None:
    """scipy.special's import is a third of a CPU-second: only past EXACT_N is it paid."""
    code = """
import sys
import numpy as np
from harness.verdict.stats import hit_rate_test, continuous_tests, mcnemar_exact
from harness.verdict.latency import latency_test
from harness.verdict.sequential import sign_flip_p, bootstrap_intervals
rng = np.random.default_rng(0)
b, c = rng.random((3, 300)) < 0.6, rng.random((3, 300)) < 0.7
hit_rate_test(b, c, alpha=0.05)
mcnemar_exact(20, 40)
deltas = rng.normal(size=(2, 300))
sign_flip_p(deltas, seed=1, resamples=2000, bounds=(0.01, 0.05))
bootstrap_intervals(deltas, seed=1, resamples=2000, confidence=0.95)
latency_test([1.01, 0.99, 1.02, 1.0], tolerance=0.1)
print(sorted(m for m in sys.modules if m.startswith("scipy")))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"
