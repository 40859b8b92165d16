"""harness.verdict.sequential: grouped draws give the distributions per-query draws give.

The grouped resamplers draw different random numbers from the per-query ones they replace, so
the checks are distributional: against exact enumeration (sign flips), against the per-query
bootstrap kept in `stats.paired_bootstrap_ci`, and against the moments of the binomial and
multinomial laws the groups are drawn from.  Tolerances are about 4 standard errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.verdict import sequential
from harness.verdict.sequential import (
    _PickDraws,
    _SignDraws,
    bootstrap_intervals,
    distinct_columns,
    lattice_bootstrap_interval,
    popcount,
    sign_flip_p,
)
from harness.verdict.stats import (
    drift,
    modal,
    paired_bootstrap_ci,
    paired_randomization_test,
)

NEVER = (0.0, 2.0)  # bounds no p is settled against: every resample is drawn


def test_distinct_columns_count_each_column_once() -> None:
    deltas = np.array([[0.5, 0.5, -0.5, 0.0, 0.5], [1.0, 1.0, -1.0, 0.0, 2.0]])
    groups = distinct_columns(deltas)
    found = {tuple(col): int(size) for col, size in zip(groups.values.T, groups.sizes, strict=True)}
    assert found == {(0.5, 1.0): 2, (-0.5, -1.0): 1, (0.0, 0.0): 1, (0.5, 2.0): 1}
    signless = distinct_columns(deltas, signless=True)
    merged = {
        tuple(col): int(size) for col, size in zip(signless.values.T, signless.sizes, strict=True)
    }
    assert merged == {(0.5, 1.0): 3, (0.0, 0.0): 1, (0.5, 2.0): 1}


def test_distinct_columns_of_many_distinct_values_fall_back_to_rows() -> None:
    # 4 metrics of 60,000 distinct values: the mixed-radix key would overflow int64.
    deltas = np.random.default_rng(0).normal(size=(4, 60_000))
    deltas[:, 1] = deltas[:, 0]
    groups = distinct_columns(deltas)
    assert groups.sizes.sum() == 60_000 and groups.sizes.max() == 2
    assert groups.values.shape == (4, 59_999)


def test_popcount_counts_bits_with_or_without_numpy_2() -> None:
    words = np.random.default_rng(1).integers(0, 2**63, size=500, dtype=np.uint64) * 2 + 1
    expected = [bin(int(w)).count("1") for w in words]
    assert popcount(words).tolist() == expected
    table = sequential._BYTE_ONES[np.ascontiguousarray(words).view(np.uint8).reshape(-1, 8)]
    assert table.sum(axis=1).tolist() == expected


@pytest.mark.parametrize("size", [1, 5, 63, 64, 65, 200])
def test_sign_draws_are_binomial_half(size: int) -> None:
    draws = _SignDraws(np.array([size]))
    rng = np.random.default_rng(size)
    ones = draws.draw(rng, 20_000)
    per_group = np.zeros(20_000)
    for w in range(draws.width):  # the words of the one group
        per_group += ones[:, w]
    assert per_group.min() >= 0 and per_group.max() <= size
    assert abs(per_group.mean() - size / 2) < 4 * math.sqrt(size / 4 / 20_000)
    assert per_group.var() == pytest.approx(size / 4, rel=0.1)


def test_pick_draws_are_multinomial() -> None:
    sizes = np.array([1, 2, 3, 40, 100])  # the first three by picks, the rest by binomials
    n = 200  # 54 queries whose deltas are all 0 take the rest
    counts = _PickDraws(sizes, n).draw(np.random.default_rng(3), 20_000)
    p = sizes / n
    assert (counts.sum(axis=1) <= n).all()
    assert np.abs(counts.mean(axis=0) - n * p).max() < 4 * math.sqrt(n * 0.5 * 0.5 / 20_000)
    np.testing.assert_allclose(counts.var(axis=0), n * p * (1 - p), rtol=0.1)


def test_grouped_sign_flip_p_matches_exact_enumeration() -> None:
    # 15 non-zero deltas with ties (so groups hold several queries): 2**15 sign vectors.
    deltas = np.array(
        [0.2, 0.2, 0.2, -0.2, 0.4, 0.4, -0.4, 0.6, 0.2, 0.2, -0.2, 0.4, 0.2, 0.6, 0.8]
    )
    exact = paired_randomization_test(np.zeros(15), deltas, seed=0, resamples=1 << 15)
    (sampled,) = sign_flip_p(deltas[None, :], seed=0, resamples=40_000, bounds=NEVER)
    assert abs(sampled - exact) < 4 * math.sqrt(exact * (1 - exact) / 40_000)


def test_grouped_sign_flip_p_matches_the_per_query_draw_on_continuous_deltas() -> None:
    data = np.random.default_rng(5)
    deltas = np.round(data.normal(0.02, 0.3, size=400), 2)  # ties, as metrics of ranks have
    (grouped,) = sign_flip_p(deltas[None, :], seed=1, resamples=40_000, bounds=NEVER)
    per_query = paired_randomization_test(np.zeros(400), deltas, seed=1, resamples=40_000)
    assert abs(grouped - per_query) < 4 * math.sqrt(2 * per_query * (1 - per_query) / 40_000)


def test_grouped_bootstrap_matches_the_per_query_bootstrap() -> None:
    data = np.random.default_rng(6)
    base = data.integers(0, 6, 300) / 5
    cand = np.clip(base + data.choice([-0.2, 0.0, 0.2, 0.4], 300), 0, 1)
    _, lo, hi = paired_bootstrap_ci(base, cand, seed=2, resamples=40_000)
    ((glo, ghi),) = bootstrap_intervals(
        (cand - base)[None, :], seed=2, resamples=40_000, confidence=0.95, sequential=False
    )
    # A 2.5% quantile of 40,000 means has a standard error of about
    # sqrt(0.025 * 0.975 / 40_000) / phi(1.96) = 0.0134 standard deviations of the mean; the
    # means lie on a lattice of step 0.2 / 300, and the two may land a step apart.
    sd = float((cand - base).std()) / math.sqrt(300)
    tolerance = 4 * 0.0134 * sd + 2 * 0.2 / 300
    assert abs(glo - lo) < tolerance and abs(ghi - hi) < tolerance


def test_grouped_draws_are_seeded() -> None:
    deltas = np.random.default_rng(7).integers(-3, 4, size=(3, 500)) / 3
    first = sign_flip_p(deltas, seed=4, resamples=2000, bounds=(0.01, 0.05))
    assert sign_flip_p(deltas, seed=4, resamples=2000, bounds=(0.01, 0.05)) == first
    one = bootstrap_intervals(deltas, seed=4, resamples=2000, confidence=0.95)
    assert bootstrap_intervals(deltas, seed=4, resamples=2000, confidence=0.95) == one
    assert bootstrap_intervals(deltas, seed=5, resamples=2000, confidence=0.95) != one


def test_rows_without_any_change_give_zero_intervals_and_p_one() -> None:
    zeros = np.zeros((2, 50))
    assert bootstrap_intervals(zeros, seed=0, resamples=500, confidence=0.95) == [(0.0, 0.0)] * 2
    assert sign_flip_p(zeros, seed=0, resamples=500, bounds=NEVER) == [1.0, 1.0]


def test_outcome_arrays_and_lists_give_the_same_drift_and_modal() -> None:
    outcomes = np.random.default_rng(8).random((5, 300)) < 0.6
    assert drift(outcomes) == drift([list(row) for row in outcomes])
    assert (modal(outcomes) == modal([list(row) for row in outcomes])).all()


def test_sign_flip_p_does_not_depend_on_the_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    deltas = np.random.default_rng(9).integers(-4, 5, size=(3, 700)) / 4
    wide = sign_flip_p(deltas, seed=3, resamples=3000, bounds=(0.01, 0.05))
    monkeypatch.setattr(sequential, "SIGN_CELLS", 64)  # a few resamples per chunk
    assert sign_flip_p(deltas, seed=3, resamples=3000, bounds=(0.01, 0.05)) == wide


def test_the_lattice_bootstrap_of_two_queries_by_hand() -> None:
    # Deltas +1 and 0: a resample's sum is Binomial(2, 1/2): 0, 1, 2 with 1/4, 1/2, 1/4, so
    # the mean's 2.5% and 97.5% quantiles are 0 and 1.
    assert lattice_bootstrap_interval(np.array([1, 0]), 1, confidence=0.95) == (0.0, 1.0)
    # In units of 1/5 (5 repeats a side): +3/5 and -1/5, sums of two picks -2, 2, 6 (fifths).
    assert lattice_bootstrap_interval(np.array([3, -1]), 5, confidence=0.95) == (-0.2, 0.6)
    assert lattice_bootstrap_interval(np.zeros(4, dtype=np.int64), 5, confidence=0.95) == (
        0.0,
        0.0,
    )


@pytest.mark.parametrize("n", [40, 400, 4000])
def test_the_lattice_bootstrap_is_what_drawing_estimates(n: int) -> None:
    data = np.random.default_rng(n)
    scaled = np.clip(data.integers(0, 6, n) - data.integers(0, 6, n) + 1, -5, 5)
    exact = lattice_bootstrap_interval(scaled, 5, confidence=0.95)
    ((lo, hi),) = bootstrap_intervals(
        (scaled / 5)[None, :], seed=1, resamples=40_000, confidence=0.95, sequential=False
    )
    assert exact is not None
    # Monte Carlo error of a 2.5% quantile of 40,000 means: about 0.0134 sd (see above), plus
    # the lattice step 1 / (5 n) the two may land apart.
    tolerance = 4 * 0.0134 * float((scaled / 5).std()) / math.sqrt(n) + 2 / (5 * n)
    assert abs(exact[0] - lo) < tolerance and abs(exact[1] - hi) < tolerance


def test_the_lattice_bootstrap_gives_way_to_drawing_past_its_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sequential, "EXACT_POINTS", 100)
    assert lattice_bootstrap_interval(np.ones(20, dtype=np.int64), 5, confidence=0.95) is None
