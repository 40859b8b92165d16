"""harness.score edges the mutation run (scripts/mutate.py) found unpinned: what evaluate hands
on about unanswerable queries, the shape of an empty per-query matrix, judge's default level."""

from __future__ import annotations

import numpy as np

from harness.score.evaluation import evaluate, per_query_matrix
from harness.score.judged import judge
from harness.values.types import GoldQuery, GoldSet


def gold() -> GoldSet:
    return GoldSet(
        (
            GoldQuery("a1", "first", relevant={"d1": 1, "d2": 2}),
            GoldQuery("a2", "second", relevant={"d3": 1}),
            GoldQuery("u1", "nothing to find"),
        ),
        source="<memory>",
        format="native",
        hash="h",
    )


def test_the_no_answer_summary_keeps_the_threshold_it_was_judged_by() -> None:
    rankings = {"a1": ["d1"], "a2": ["d3"], "u1": ["x", "y"]}
    scores = {"u1": [0.7, 0.2]}
    ev = evaluate(gold(), rankings, ["hit@1"], scores=scores, threshold=0.5)
    assert ev.no_answer.threshold == 0.5
    assert ev.no_answer.query_ids == ("u1",) and ev.no_answer.above_threshold == (True,)
    assert evaluate(gold(), rankings, ["hit@1"]).no_answer.threshold is None


def test_a_matrix_of_no_metrics_has_a_row_per_query_and_no_column() -> None:
    ev = evaluate(gold(), {"a1": ["d1"]}, ["hit@1", "ndcg@3"])
    assert per_query_matrix(ev, []).shape == (2, 0)
    assert per_query_matrix(ev).tolist() == [
        [1.0, ev.per_query["a1"]["ndcg@3"]],
        [0.0, 0.0],
    ]


def test_judge_counts_grade_1_as_relevant_by_default() -> None:
    ranks = judge([["d1", "d2", "x"]], [{"d1": 1, "d2": 2}], 3)
    assert ranks.relevant.tolist() == [[True, True, False]]
    assert ranks.n_relevant.tolist() == [2.0]
    assert judge([["d1"]], [{"d1": 1}], 1, 2).relevant.tolist() == [[False]]
    assert np.array_equal(ranks.gains, [[1.0, 2.0, 0.0]])
