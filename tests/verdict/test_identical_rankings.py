"""Identical rankings get one verdict whichever command reads them (issue 43, item 3): `compare`
(the sequential rule, `compare_asked`) and `compare-runs` (the fixed-sample `compare`) agree on
"no measurable difference" where the data show it, and where they cannot (a small gold set),
both say "inconclusive" with what would settle it, the same words."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import calibrate

from harness.values.types import Verdict
from harness.verdict.asked import compare_asked
from harness.verdict.comparison import CompareSettings
from harness.verdict.decide import compare


@pytest.mark.parametrize(
    ("queries", "mode", "expected"),
    [
        (50, "deterministic", Verdict.INCONCLUSIVE),  # +-z^2/(n+z^2) = 0.051 > the band
        (120, "deterministic", Verdict.NO_DIFFERENCE),
        (300, "deterministic", Verdict.NO_DIFFERENCE),
        (300, "flaky 10%", Verdict.NO_DIFFERENCE),
    ],
)
def test_compare_and_compare_runs_agree_on_identical_rankings(
    queries: int, mode: str, expected: Verdict
) -> None:
    rng = np.random.default_rng(queries)
    gold = calibrate.gold_set(queries)
    p = calibrate.hit_probabilities(mode, queries, rng)
    p = np.round(p)  # identical rankings: every repeat of both sides answers alike
    ranks = rng.integers(1, 11, queries)
    base = calibrate.run(gold, p, ranks, 3, rng)
    cand = calibrate.run(gold, p, ranks, 3, rng, sha="b")
    settings = CompareSettings(resamples=200)
    fixed = compare(gold, base, cand, settings)
    sequential = compare_asked(gold, base, cand, settings, [q.id for q in gold.queries])
    assert fixed.verdict_quality is sequential.verdict_quality is expected
    assert fixed.quality_reason == sequential.quality_reason
    if expected is Verdict.INCONCLUSIVE:  # and says what would settle it
        assert "ruling out 0.05 needs about" in fixed.quality_reason
        assert fixed.quality_reason.rstrip(")").endswith("mines candidates to judge")
