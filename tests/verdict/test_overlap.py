"""How much the rankings changed: rank-biased overlap and Jaccard@k, by hand and by property.

RBO_ext is Webber, Moffat and Zobel's (TOIS 2010, eq. 32). Expected values are worked by hand
from the formula; the property checks its own bounds (eq. 11 and 13): for two lists of depth
k, RBO_min <= RBO_ext <= RBO_min + RBO_res, RBO_res = p^k at most (the weight past depth k).
"""

from __future__ import annotations

import pytest
from compare_support import FAST, buried, candidate, make_gold, make_run, ranks
from hypothesis import given
from hypothesis import strategies as st

from harness.report.page import render
from harness.verdict.decide import compare
from harness.verdict.overlap import jaccard, rbo


def test_hand_worked_values() -> None:
    # Swapped top 2 at p = 0.9: X_1 = 0, X_2 = 2, so (0.1 / 0.9) * (2 / 2 * 0.81) + 1 * 0.81.
    assert rbo(["x", "y"], ["y", "x"]) == pytest.approx(0.1 / 0.9 * 0.81 + 0.81)
    assert rbo(list("abc"), list("abc")) == pytest.approx(1.0)
    assert rbo(list("abc"), list("def")) == 0.0
    # A shorter list that agrees so far is extrapolated to agree on: 1.
    assert rbo(["x"], ["x", "y"]) == pytest.approx(1.0)
    assert rbo([], []) == 1.0 and rbo([], ["a"]) == 0.0
    assert jaccard(list("abcd"), list("cdef"), 4) == pytest.approx(2 / 6)
    assert jaccard([], [], 10) == 1.0


documents = st.lists(st.sampled_from("abcdefghijklmnop"), max_size=10, unique=True)


@given(documents, documents)
def test_rbo_is_symmetric_bounded_and_inside_its_own_bounds(a: list[str], b: list[str]) -> None:
    value = rbo(a, b)
    assert value == pytest.approx(rbo(b, a)) and -1e-12 <= value <= 1 + 1e-12
    k = min(len(a), len(b))
    if k:
        p = 0.9
        low = (1 - p) / p * sum(len(set(a[:d]) & set(b[:d])) / d * p**d for d in range(1, k + 1))
        if len(a) == len(b):
            assert low - 1e-12 <= value <= low + p**k + 1e-12


def test_every_report_says_how_much_the_rankings_changed() -> None:
    gold = make_gold(n=80, unanswerable=0)
    moved = ranks(buried(*range(1, 21)))  # 20 queries lose their first document
    c = compare(gold, make_run(gold, ranks()), candidate(gold, moved), FAST)
    assert c.changes is not None
    overall = c.changes.scopes[0]
    assert overall.scope == "overall" and overall.changed == 20
    # A buried query's top 10: the relevant document at rank 1 replaced by junk0; 9 shared of 11.
    one = rbo(["q01-rel", *(f"q01-junk{j}" for j in range(1, 10))],
              [f"q01-junk{j}" for j in range(10)])  # fmt: skip
    assert overall.rbo == pytest.approx((20 * one + 60 * 1.0) / 80)
    assert overall.jaccard == pytest.approx((20 * 9 / 11 + 60) / 80)
    assert [q.query_id for q in c.changes.most_changed][:1] == ["q01"]
    for fmt in ("text", "markdown", "html"):
        assert "How much the rankings changed" in render(c, fmt)  # type: ignore[arg-type]
