"""The equivalence interval ("no measurable difference"), against an independent oracle.

Tango's score interval is checked against `oracles.tango_reference`, a transcription of the
published formula solved by scipy's brentq (the contingencytables R package's way), and against
its closed form with no discordant query, z^2 / (n + z^2). Its error rate as a test of
equivalence is simulated in scripts/calibrate.py (`--only equivalence`).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import tango_reference

from harness.verdict.boots import BootComponent
from harness.verdict.equivalence import (
    T_INTERVAL,
    TANGO,
    TWO_LEVEL,
    equivalence,
    tango_interval,
)


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(2, 400).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1))).flatmap(
    lambda nd: st.tuples(st.just(nd[0]), st.integers(0, nd[1]), st.just(nd[1]))
))  # fmt: skip
def test_tango_matches_the_reference_transcription(case: tuple[int, int, int]) -> None:
    # At least one concordant query: with every query discordant the published formula's root
    # leaves its domain (a negative square root), in R as here.
    n, b, discordant = case
    c = discordant - b
    ours = tango_interval(b, c, n, 0.05)
    assert ours == pytest.approx(tango_reference(b, c, n, 0.10), abs=1e-7)
    assert ours[0] <= (c - b) / n <= ours[1]


@pytest.mark.parametrize("n", [1, 6, 20, 38, 80, 300])
def test_no_discordant_query_rules_out_z2_over_n_plus_z2(n: int) -> None:
    z2 = NormalDist().inv_cdf(0.95) ** 2
    low, high = tango_interval(0, 0, n, 0.05)
    assert high == pytest.approx(z2 / (n + z2), abs=1e-9) and low == pytest.approx(-high)


def test_identical_rankings_rule_out_the_band_from_a_size_on() -> None:
    # The smallest gold set of identical deterministic answers that rules out +/-0.05 at 90%:
    # n > z^2 (1 - 0.05) / 0.05 = 51.4, so 52 queries (docs/verdict.md says so).
    z2 = NormalDist().inv_cdf(0.95) ** 2
    assert math.ceil(z2 * 0.95 / 0.05) == 52
    assert not equivalence(np.zeros(51), alpha=0.05, band=0.05).inside
    eq = equivalence(np.zeros(52), alpha=0.05, band=0.05)
    assert eq.inside and eq.method == TANGO and eq.queries_needed == 52
    small = equivalence(np.zeros(38), alpha=0.05, band=0.05)
    assert small.queries_needed == 52 and small.ruled_out == pytest.approx(z2 / (38 + z2))


def test_a_change_as_large_as_the_band_needs_no_more_queries_to_be_ruled_out() -> None:
    d = np.zeros(100)
    d[:6] = 1.0  # +0.06, outside the band of 0.05: no number of queries rules the band out
    eq = equivalence(d, alpha=0.05, band=0.05)
    assert not eq.inside and eq.queries_needed is None


def test_rates_over_repeats_use_the_t_interval_and_boots_widen_it() -> None:
    rng = np.random.default_rng(3)
    d = rng.choice([-1 / 3, 0.0, 1 / 3], size=200, p=[0.2, 0.6, 0.2])
    eq = equivalence(d, alpha=0.05, band=0.05)
    half = NormalDist().inv_cdf(0.95) * d.std(ddof=1) / math.sqrt(200)
    assert eq.method == T_INTERVAL
    assert eq.high - eq.low == pytest.approx(2 * half, rel=0.01)  # t on 199 df, about z
    boots = BootComponent(between=1e-3, added=4e-4, within=float(d.var() / 200), df=8, spread=6e-4)
    wide = equivalence(d, alpha=0.05, band=0.05, boots=boots)
    assert wide.method == TWO_LEVEL and wide.high - wide.low > eq.high - eq.low
