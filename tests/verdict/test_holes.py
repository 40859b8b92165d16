"""Holes in the judgements: each side's judged share of its top k, per scope, and the warning.

compare_support's gold set is pooled: every answerable query judges its relevant document
(grade 1) and one junk document, `-junk9`, as not relevant (grade 0); every other returned id is
unjudged. A ranking with the relevant document at rank 1 holds both judged documents in its top
10 (2 of 10); a buried one holds only `-junk9` (1 of 10).
"""

from __future__ import annotations

import html
from dataclasses import replace

import pytest
from compare_support import FAST, buried, candidate, make_gold, make_run, ranks

from harness.report.page import render
from harness.values.types import GoldQuery, GoldSet, QueryResult, RefRun, Repeat, Verdict
from harness.verdict.comparison import CompareSettings, Comparison
from harness.verdict.decide import compare
from harness.verdict.holes import MARGIN


def test_the_judged_shares_are_counted_per_side_per_scope_and_over_the_flips() -> None:
    gold = make_gold(n=80, unanswerable=0, pooled=None)
    lost = ranks(buried(*range(1, 61)))  # 60 of 80 queries lose their relevant document
    c = compare(gold, make_run(gold, ranks()), candidate(gold, lost), FAST)
    assert c.holes is not None and c.holes.k == 10
    overall = c.holes.shares[0]
    assert overall.scope == "overall" and overall.n == 80
    # Hand-worked: baseline 2 of 10 judged on every query; candidate 1 of 10 on 60, 2 on 20.
    assert overall.baseline == pytest.approx(2 / 10)
    assert overall.candidate == pytest.approx((60 * 1 + 20 * 2) / 800)
    assert (overall.unjudged_baseline, overall.unjudged_candidate) == (80 * 8, 60 * 9 + 20 * 8)
    flipped = next(s for s in c.holes.shares if s.scope.startswith("flipped at hit@5"))
    assert flipped.n == 60 and flipped.candidate == pytest.approx(0.1)
    assert {s.scope for s in c.holes.shares} >= {"overall", *(s.name for s in c.slices)}
    # 0.125 against 0.200: more than MARGIN apart, in a pooled gold set: said above the tables.
    assert overall.baseline - overall.candidate > MARGIN
    (said,) = [w for w in c.warnings if w.startswith("judgments incomplete")]
    assert "12.5% of the candidate's top-10 documents are judged, against 20.0%" in said
    assert "700 unjudged (query, document) pairs" in said
    listed = [pair for pair in c.holes.unjudged if pair[0] == "candidate"]
    assert len(listed) == 500 and listed[0][1] == "q01"  # flipped queries first, MOST_PAIRS
    for fmt in ("text", "markdown", "html"):
        assert "Judged documents" in render(c, fmt)  # type: ignore[arg-type]
        assert "judgments incomplete" in render(c, fmt)  # type: ignore[arg-type]


def test_a_gold_set_of_relevant_documents_only_is_read_as_complete() -> None:
    # No grade 0 anywhere: a side's judged share is its precision, and a lower one a loss.
    pooled = make_gold(n=80, unanswerable=0, pooled=None)
    complete = replace(
        pooled,
        queries=tuple(
            replace(q, relevant={d: g for d, g in q.relevant.items() if g > 0})
            for q in pooled.queries
        ),
    )
    lost = ranks(buried(*range(1, 61)))
    c = compare(complete, make_run(complete, ranks()), candidate(complete, lost), FAST)
    assert c.holes is not None
    assert c.holes.shares[0].baseline == pytest.approx(0.1)
    assert not any(w.startswith("judgments incomplete") for w in c.warnings)


def test_equal_shares_say_nothing() -> None:
    gold = make_gold(n=80, unanswerable=0, pooled=None)
    c = compare(gold, make_run(gold, ranks()), candidate(gold, ranks()), FAST)
    assert c.holes is not None
    overall = c.holes.shares[0]
    assert overall.baseline == overall.candidate == pytest.approx(0.2)
    assert not any(w.startswith("judgments incomplete") for w in c.warnings)


def _pool_run(gold: GoldSet, sha: str, new: bool) -> RefRun:
    """Answers to `_pool_gold`: q00-q09 miss (their judged junk first, then unjudged documents:
    the candidate's own `new` ones when `new`, else the baseline's), the rest hit at rank 1."""
    results = []
    for i, q in enumerate(gold.queries):
        if i < 10:
            extra = [f"{'new' if new else 'old'}{i}-{j}" for j in range(9)]
            ids = (f"j{i}", *extra)
        else:
            ids = (f"d{i}", f"j{i}", *(f"old{i}-{j}" for j in range(8)))
        results.append(QueryResult(q.id, ids, status=200, latency_ns=1_000_000 + i))
    return RefRun(sha, sha * 40, "c", gold.hash, None, "t", {}, (Repeat(0, tuple(results)),))


def _pool_gold(n: int = 80) -> GoldSet:
    # Pooled from the baseline's top 10: its relevant document and one judged junk (grade 0).
    queries = tuple(
        GoldQuery(id=f"q{i:02d}", text=f"query {i}", relevant={f"d{i}": 1, f"j{i}": 0})
        for i in range(n)
    )
    return GoldSet(queries, "pooled", "native", "p" * 64)


def test_a_pooled_gold_set_never_says_no_change_where_its_holes_could_hide_the_band() -> None:
    # The candidate brings up 9 new, unjudged documents on each of the 10 queries both sides
    # miss: b = c = 0, and the 90% interval (+/-0.033 at n = 80) lies inside +/-0.12; but were
    # one of them relevant on each, hit@10 would rise by 10/80 = 0.125, past the band.
    gold = _pool_gold()
    settings = CompareSettings(min_effect=0.12, resamples=200)
    c = compare(gold, _pool_run(gold, "a", new=False), _pool_run(gold, "b", new=True), settings)
    assert c.holes is not None
    hit10 = next(r for r in c.holes.reach if r.k == 10)
    # Each side ranks 9 unjudged documents of its own there: either could gain.
    assert hit10.up == pytest.approx(10 / 80) == hit10.down
    assert (hit10.queries, hit10.documents) == (10, 180)
    assert c.verdict_quality is Verdict.INCONCLUSIVE
    assert c.quality_reason.startswith("judgments incomplete: hit@5's 90% interval")
    # The same gold set, both sides answering alike: nothing only one side ranks, no reach.
    same = compare(gold, _pool_run(gold, "a", new=False), _pool_run(gold, "b", new=False),
                   settings)  # fmt: skip
    assert same.verdict_quality is Verdict.NO_DIFFERENCE
    assert same.holes is not None and all(r.up == r.down == 0 for r in same.holes.reach)


# --------------------------------------------------------------------------- condensed lists


def _displaced(pooled: bool | None, rank: int | None) -> tuple[GoldSet, Comparison]:
    """30 of 80 queries moved from rank 1 to `rank` (None: dropped) by the candidate."""
    gold = make_gold(n=80, unanswerable=0, pooled=pooled)
    moved = ranks(dict.fromkeys((f"q{i:02d}" for i in range(1, 31)), rank))
    return gold, compare(gold, make_run(gold, ranks()), candidate(gold, moved), FAST)


def test_a_pooled_call_made_by_unjudged_documents_alone_is_inconclusive() -> None:
    # Rank 15: fourteen documents above the relevant one, thirteen of them unjudged. On every
    # returned document hit@10 regresses (30 queries lost); on the judged documents alone (the
    # condensed list: junk9, then the relevant one) nothing is lost. Were those thirteen junk,
    # the loss is real; were some relevant, there is none: only judging them can tell.
    _, c = _displaced(None, 15)
    hit10 = c.overall.row("hit@10")
    assert hit10 is not None and hit10.verdict is Verdict.REGRESSED
    assert c.holes is not None
    twins = {r.metric: r for r in c.holes.condensed}
    assert list(twins) == ["hit'@5", "hit'@10", "ndcg'@10", "bpref"]
    assert twins["hit'@10"].delta == 0 and twins["hit'@10"].verdict is Verdict.NO_DIFFERENCE
    assert twins["hit'@10"].p_adjusted is not None and twins["bpref"].p_adjusted is None
    assert c.verdict_quality is Verdict.INCONCLUSIVE
    assert c.quality_reason.startswith(
        "judgments incomplete: hit@5, hit@10 regressed, but not on the judged documents alone "
        "(hit@5 -0.375"
    )
    assert "hit'@10 +0.000 (p = 1.000)" in c.quality_reason
    for fmt in ("text", "markdown", "html"):
        page = html.unescape(render(c, fmt))  # type: ignore[arg-type]
        assert "on the judged documents alone (condensed lists" in page and "hit'@10" in page


def test_a_pooled_call_that_holds_on_the_judged_documents_stands() -> None:
    # Dropped: the relevant document is gone from the candidate's list, condensed or not.
    _, c = _displaced(None, None)
    assert c.holes is not None
    twin = next(r for r in c.holes.condensed if r.metric == "hit'@10")
    assert twin.verdict is Verdict.REGRESSED and twin.delta == pytest.approx(-30 / 80)
    assert c.verdict_quality is Verdict.REGRESSED
    assert c.quality_reason == "hit@5, hit@10 regressed"


def test_complete_judgements_are_not_condensed() -> None:
    # The same displacement on a gold set whose judgements are the whole truth: a loss.
    gold, c = _displaced(False, 15)
    assert c.holes is not None and c.holes.condensed == () and c.holes.reach == ()
    assert c.verdict_quality is Verdict.REGRESSED
    # Said by the native header: "judged": "complete" is read as such, grade 0s or not.
    header = replace(gold, pooled=None)
    assert compare(header, make_run(header, ranks()), candidate(header, ranks()), FAST).holes
