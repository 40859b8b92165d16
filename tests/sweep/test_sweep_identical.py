"""A sweep whose every value gave the same rankings says so instead of "keep it" (the demo's
`--param RRF_K=...` is such a knob: the demo service never reads RRF_K)."""

from __future__ import annotations

import json

from compare_support import FAST, buried, make_gold, make_run, ranks

from harness.sweep.render import render_sweep
from harness.sweep.summary import identical_rankings, summarise
from harness.values.types import ErrorKind

POINTS = ((("RRF_K", "20"),), (("RRF_K", "60"),), (("RRF_K", "100"),))


def test_identical_rankings_are_told_and_nothing_is_kept() -> None:
    gold = make_gold()
    runs = [make_run(gold, ranks()) for _ in POINTS]
    assert identical_rankings(runs)
    sweep, _ = summarise(gold, POINTS, runs, 0, ["mrr@10"], FAST)
    text = render_sweep(sweep, "text")
    assert "every value gave identical rankings" in text
    assert "the service may not read RRF_K" in text
    assert "keep it" not in text
    assert json.loads(render_sweep(sweep, "json"))["identical_rankings"] is True


def test_one_changed_ranking_or_a_failed_query_claims_nothing() -> None:
    gold = make_gold()
    same = make_run(gold, ranks())
    moved = make_run(gold, ranks(buried(7)))
    assert not identical_rankings([same, same, moved])
    failed = make_run(gold, ranks(), errors={(0, "q01"): ErrorKind.TIMEOUT})
    assert not identical_rankings([same, failed])
    assert not identical_rankings([same])
    sweep, _ = summarise(gold, POINTS, [same, same, moved], 0, ["mrr@10"], FAST)
    assert "identical rankings" not in render_sweep(sweep, "text")
