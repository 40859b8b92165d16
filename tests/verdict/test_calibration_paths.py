"""The calibration scripts' fast path decides as compare does.

`scripts/calibrate_headline.py` turns simulated answers straight into per-query values and
decides the headline with compare's own row, Holm and headline code, skipping the scoring of
rankings; `scripts/calibrate.py --fast`, `scripts/calibrate_sequential.py` and
`scripts/calibrate_noninferior.py` rely on it for their thousands of simulations.  Here both
paths run on the same simulated compares, in every determinism mode, and must give the same
verdict (and, fixed-sample, the same mde; the same margins' claims and intervals)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import calibrate
import calibrate_noninferior
import calibrate_sequential
from calibrate_headline import headline, metric_values

from harness.values.types import Verdict
from harness.verdict.decide import compare

SCENARIOS = [
    calibrate.Scenario("A/A", 120, 1, "deterministic", Verdict.IMPROVED),
    calibrate.Scenario("A/A", 120, 3, "redrawn", Verdict.IMPROVED),
    calibrate.Scenario("A/A", 120, 3, "per-boot 0.03", Verdict.IMPROVED),
    calibrate.Scenario("+10 pp hit@10", 120, 1, "redrawn", Verdict.IMPROVED),
    calibrate.Scenario("+10 pp hit@10", 120, 3, "flaky 10%", Verdict.IMPROVED),
    calibrate.Scenario("30% empty", 120, 3, "per-boot 0.01", Verdict.REGRESSED),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: f"{s.name} {s.mode} R={s.repeats}")
def test_the_fast_headline_is_compares(scenario: calibrate.Scenario) -> None:
    for seed in range(3):
        full, _, _ = calibrate.simulate(scenario, seed)
        fast, _, _ = calibrate.simulate(scenario, seed, fast=True)
        assert fast is full, seed


def test_the_fast_mde_is_compares() -> None:
    import numpy as np

    rng = np.random.default_rng(11)
    gold = calibrate.gold_set(100)
    p = (rng.random(100) < 0.7).astype(float)
    q = p.copy()
    q[np.flatnonzero(p == 1)[:3]] = 0.0
    ranks = rng.integers(1, 11, 100)
    base, cand = calibrate.draw_hits(p, 1, rng), calibrate.draw_hits(q, 1, rng)
    c = compare(
        gold, calibrate.as_run(gold, base, ranks), calibrate.as_run(gold, cand, ranks, "b"),
        calibrate.SETTINGS,
    )
    verdict, reason, power = headline(
        metric_values(base == 1, ranks), metric_values(cand == 1, ranks), calibrate.SETTINGS
    )
    assert (verdict, reason) == (c.verdict_quality, c.quality_reason)
    assert power == c.power


ROWS = [
    calibrate_sequential.Row(0.0, 3, "per-boot 0.03", queries=120),
    calibrate_sequential.Row(0.10, 1, "redrawn", queries=120),
    calibrate_sequential.Row(0.20, 1, "deterministic", queries=120),
    calibrate_sequential.Row(0.0, 5, "redrawn", queries=120),
    calibrate_sequential.Row(0.10, 1, "redrawn", continuous=True, queries=120),
]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.effect} {r.mode} R={r.repeats}")
def test_the_fast_sequential_compare_is_compare_asked(row: calibrate_sequential.Row) -> None:
    for seed in range(3):
        assert calibrate_sequential.simulate(row, seed) == calibrate_sequential.simulate(
            row, seed, fast=False
        ), seed


def test_the_references_bound_the_rule_from_the_right_side() -> None:
    """The references the sequential table ends with: McNemar's exact power is its size under
    no change (at most alpha) and grows with the effect; a test told only the effect's size asks
    more of the gold set than one told its direction too."""
    row = calibrate_sequential.Row
    size = calibrate_sequential.best_fixed_power(row(0.0, 1, "redrawn", queries=60))
    assert 0.02 < size <= 0.05
    small, large = (
        calibrate_sequential.best_fixed_power(row(e, 1, "redrawn", queries=60)) for e in (0.1, 0.2)
    )
    assert size < small < large
    told = calibrate_sequential.oracle_asked(row(0.2, 1, "redrawn"), 200, 0)
    blind = calibrate_sequential.oracle_asked(row(0.2, 1, "redrawn"), 200, 0, two_sided=True)
    assert told < blind < 1.0


NONINFERIOR = [
    calibrate_noninferior.Row(False, "deterministic", 5, True),  # stops early: ~2/3 asked
    calibrate_noninferior.Row(True, "flaky 10%", 3, True, queries=120),
    calibrate_noninferior.Row(True, "per-boot 0.03", 3, False, queries=120),
    calibrate_noninferior.Row(False, "redrawn", 1, False, queries=120),
    calibrate_noninferior.Row(True, "deterministic", 5, False, queries=120),
]


@pytest.mark.parametrize(
    "row", NONINFERIOR, ids=lambda r: f"{'seq' if r.sequential else 'fixed'} {r.mode} {r.worse}"
)
def test_the_fast_margins_are_compares(row: calibrate_noninferior.Row) -> None:
    # scripts/calibrate_noninferior.py decides the margins from the per-query values; compare
    # (or compare_asked on the runs cut where the runner's looks stop) from the scored runs.
    for seed in range(2):
        fast, asked = calibrate_noninferior.margins(row, seed)
        full, asked_full = calibrate_noninferior.margins(row, seed, fast=False)
        assert asked == asked_full and fast.claim is full.claim, seed
        for a, b in zip(fast.rows, full.rows, strict=True):
            assert (a.metric, a.method, a.claim) == (b.metric, b.method, b.claim)
            assert (a.low, a.high, a.confidence) == pytest.approx((b.low, b.high, b.confidence))
    if row.sequential and row.queries == 300:
        assert asked < row.queries  # the margins stopped it: the early stop is on this path
