"""Holes in the judgements: each side's judged share of its top k, per scope, and the warning.

compare_support's gold set is pooled: every answerable query judges its relevant document
(grade 1) and one junk document, `-junk9`, as not relevant (grade 0); every other returned id is
unjudged. A ranking with the relevant document at rank 1 holds both judged documents in its top
10 (2 of 10); a buried one holds only `-junk9` (1 of 10).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from compare_support import FAST, buried, candidate, make_gold, make_run, ranks

from harness.report.page import render
from harness.verdict.compare import compare
from harness.verdict.holes import MARGIN


def test_the_judged_shares_are_counted_per_side_per_scope_and_over_the_flips() -> None:
    gold = make_gold(n=80, unanswerable=0)
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
    pooled = make_gold(n=80, unanswerable=0)
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
    gold = make_gold(n=80, unanswerable=0)
    c = compare(gold, make_run(gold, ranks()), candidate(gold, ranks()), FAST)
    assert c.holes is not None
    overall = c.holes.shares[0]
    assert overall.baseline == overall.candidate == pytest.approx(0.2)
    assert not any(w.startswith("judgments incomplete") for w in c.warnings)
