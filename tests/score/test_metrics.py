"""harness.score.metrics: hand-worked arithmetic, edge cases, Hypothesis properties, a scalar
reference.

The pytrec_eval agreement on real runs lives in test_metrics_oracle.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from math import log2

import numpy as np
import pytest
from conftest import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from purity import imported_modules

from harness.errors import NotComparableError
from harness.score import context, evaluation, judged, metrics, unanswered
from harness.score.evaluation import evaluate, paired, per_query_matrix
from harness.score.judged import dedupe
from harness.score.metrics import (
    METRICS,
    Kind,
    MetricSpec,
    no_answer_false_positive,
    outranks_holds,
    parse_metric,
    parse_metrics,
    score_query,
)
from harness.values.types import GoldQuery, GoldSet

# The metrics of rankings alone; the context metrics (they read texts) are in test_context.py.
ALL_NAMES = tuple(name for name, d in METRICS.items() if not d.texts)


def gold_of(*queries: GoldQuery) -> GoldSet:
    return GoldSet(queries=queries, source="test", format="native", hash="0" * 64)


# --------------------------------------------------------------------------- purity


def test_metrics_imports_nothing_that_does_io() -> None:
    imported = imported_modules(
        metrics.__file__, judged.__file__, evaluation.__file__, context.__file__,
        unanswered.__file__,
    )
    allowed = {
        "harness.score.context",
        "__future__",
        "enum",
        "re",
        "collections.abc",
        "dataclasses",
        "functools",
        "itertools",
        "operator",
        "types",
        "typing",
        "numpy",
        "numpy.typing",
        "harness.errors",
        "harness.score.evaluation",
        "harness.score.judged",
        "harness.score.metrics",
        "harness.score.unanswered",
        "harness.values.types",
    }
    assert imported <= allowed, f"metrics must stay pure, imports {sorted(imported - allowed)}"


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("k", [1, 5, 10, 100, 1000])
def test_names_parse_and_print_back_identically(name: str, k: int) -> None:
    spec = parse_metric(f"{name}@{k}")
    assert spec == MetricSpec(name, k)
    assert str(spec) == f"{name}@{k}"


def test_kinds_pick_the_statistical_test() -> None:
    assert parse_metric("hit@5").kind is Kind.BINARY
    assert {parse_metric(f"{n}@5").kind for n in ALL_NAMES if n != "hit"} == {Kind.CONTINUOUS}
    assert [kind.value for kind in Kind] == ["binary", "continuous"]


@pytest.mark.parametrize(
    "bad",
    ["", "hit", "ndcg@", "ndcg@0", "ndcg@-1", "ndcg@010", "ndcg@1.5", "ndcg @10", "foo@10",
     "NDCG@10", "ndcg@10 ", "@10", "map@10"],
)  # fmt: skip
def test_non_canonical_names_raise_with_the_known_list(bad: str) -> None:
    with pytest.raises(ValueError, match="known metrics: hit@k, recall@k, p@k") as info:
        parse_metric(bad)
    assert repr(bad) in str(info.value)


@pytest.mark.parametrize(
    ("bad", "meant"),
    [("PRECISION@10", "p@10"), ("SUCCESS@5", "hit@5"), ("nDCG@010", "ndcg@10"),
     ("rr@3", "mrr@3"), ("map@100", "ap@100"), (" ndcg @ 5", "ndcg@5")],
)  # fmt: skip
def test_errors_suggest_the_canonical_spelling(bad: str, meant: str) -> None:
    with pytest.raises(ValueError, match=f"did you mean {meant}\\?"):
        parse_metric(bad)


def test_spec_checks_itself() -> None:
    with pytest.raises(ValueError, match="unknown metric 'nope'"):
        MetricSpec("nope", 3)
    with pytest.raises(ValueError, match="cutoff of ndcg must be an integer >= 1"):
        MetricSpec("ndcg", 0)
    with pytest.raises(ValueError, match="cutoff"):
        MetricSpec("ndcg", True)


def test_parse_metrics_keeps_order_and_drops_repeats() -> None:
    specs = parse_metrics("ndcg@10, hit@5,ndcg@10,p@1")
    assert [str(s) for s in specs] == ["ndcg@10", "hit@5", "p@1"]
    with pytest.raises(ValueError, match="no metric given"):
        parse_metrics(" , ")
    with pytest.raises(ValueError, match="'hit@0'"):
        parse_metrics("ndcg@10,hit@0")


@given(st.sampled_from(ALL_NAMES), st.integers(1, 10**6))
def test_parse_is_the_inverse_of_str(name: str, k: int) -> None:
    spec = MetricSpec(name, k)
    assert parse_metric(str(spec)) == spec


# --------------------------------------------------------------------------- hand-worked

# Judged: a=3, b=1, c=0 (judged, not relevant), d=2.  Returned with a repeat of a:
#   raw     x a c a b y d
#   deduped x a c b y d      -> ranks 1..6, grades 0 3 0 1 0 2; |relevant| = 3 (a, b, d)
RELEVANT = {"a": 3, "b": 1, "c": 0, "d": 2}
RANKING = ["x", "a", "c", "a", "b", "y", "d"]


def scores(
    ranking: Sequence[str], relevant: Mapping[str, int], rel_level: int = 1
) -> dict[str, float]:
    names = [f"{n}@{k}" for n in ALL_NAMES for k in (1, 2, 4, 5, 10)]
    return score_query(ranking, relevant, names, rel_level)


def test_hand_worked_binary_metrics() -> None:
    s = scores(RANKING, RELEVANT)
    assert s["hit@1"] == 0 and s["hit@2"] == 1
    assert s["recall@2"] == pytest.approx(1 / 3)
    assert s["recall@4"] == pytest.approx(2 / 3)
    assert s["recall@10"] == pytest.approx(3 / 3)
    assert s["p@2"] == pytest.approx(1 / 2)
    assert s["p@4"] == pytest.approx(2 / 4)
    assert s["p@10"] == pytest.approx(3 / 10)  # 6 unique ids, still over 10
    assert s["mrr@1"] == 0 and s["mrr@5"] == pytest.approx(1 / 2)
    assert s["ap@4"] == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert s["ap@10"] == pytest.approx((1 / 2 + 2 / 4 + 3 / 6) / 3)


def test_hand_worked_ndcg() -> None:
    s = scores(RANKING, RELEVANT)
    dcg4 = 3 / log2(3) + 1 / log2(5)
    idcg4 = 3 / log2(2) + 2 / log2(3) + 1 / log2(4)
    assert s["ndcg@4"] == pytest.approx(dcg4 / idcg4, abs=1e-12)
    dcg10 = dcg4 + 2 / log2(7)
    assert s["ndcg@10"] == pytest.approx(dcg10 / idcg4, abs=1e-12)  # only 3 positive grades
    burges4 = (7 / log2(3) + 1 / log2(5)) / (7 / log2(2) + 3 / log2(3) + 1 / log2(4))
    assert s["ndcg_burges@4"] == pytest.approx(burges4, abs=1e-12)
    assert s["ndcg@1"] == 0 and s["ndcg_burges@1"] == 0


def test_rel_level_moves_binary_relevance_but_not_ndcg() -> None:
    # rel_level 2: relevant = a (rank 2), d (rank 6); b (grade 1) no longer counts.
    one, two = scores(RANKING, RELEVANT), scores(RANKING, RELEVANT, rel_level=2)
    assert two["recall@4"] == pytest.approx(1 / 2)
    assert two["p@4"] == pytest.approx(1 / 4)
    assert two["mrr@5"] == pytest.approx(1 / 2)
    assert two["ap@10"] == pytest.approx((1 / 2 + 2 / 6) / 2)
    # trec_eval's ndcg_cut ignores -l: the graded metrics are unchanged.
    assert two["ndcg@10"] == one["ndcg@10"] and two["ndcg_burges@4"] == one["ndcg_burges@4"]


def test_rel_level_must_be_at_least_one() -> None:
    with pytest.raises(ValueError, match="rel_level must be an integer >= 1"):
        score_query(["a"], {"a": 1}, ["hit@1"], rel_level=0)


# --------------------------------------------------------------------------- edge cases


def test_empty_ranking_scores_zero_everywhere() -> None:
    assert set(scores([], RELEVANT).values()) == {0.0}


def test_k_larger_than_the_list() -> None:
    s = score_query(["a", "b"], {"a": 1, "b": 1}, ["p@5", "recall@100", "ndcg@100", "ap@50"])
    assert s == pytest.approx({"p@5": 2 / 5, "recall@100": 1.0, "ndcg@100": 1.0, "ap@50": 1.0})


def test_all_duplicate_list_counts_once() -> None:
    s = score_query(["a", "a", "a"], {"a": 1, "b": 1}, ["p@3", "recall@3", "hit@1", "ndcg@3"])
    ideal = 1 / log2(2) + 1 / log2(3)
    assert s == pytest.approx({"p@3": 1 / 3, "recall@3": 1 / 2, "hit@1": 1.0, "ndcg@3": 1 / ideal})


def test_duplicates_are_dropped_before_the_cutoff() -> None:
    # The second unique id sits at raw position 51; after dedupe it is rank 2.
    s = score_query(["x"] * 50 + ["a"], {"a": 1}, ["hit@2", "mrr@2", "p@2", "hit@1"])
    assert s == {"hit@2": 1.0, "mrr@2": 1 / 2, "p@2": 1 / 2, "hit@1": 0.0}


def test_repeated_relevant_doc_is_not_counted_twice() -> None:
    s = score_query(["a", "a"], {"a": 1}, ["p@2", "ndcg@2", "ap@2"])
    assert s == {"p@2": 1 / 2, "ndcg@2": 1.0, "ap@2": 1.0}


def test_non_positive_grades_are_judged_but_never_relevant() -> None:
    # a = -1 and c = 0: no gain, not relevant, not in the ideal.
    s = score_query(["a", "c", "b"], {"a": -1, "c": 0, "b": 1}, ["ndcg@3", "mrr@3", "recall@3"])
    assert s == pytest.approx({"ndcg@3": (1 / log2(4)) / 1, "mrr@3": 1 / 3, "recall@3": 1.0})


def test_unanswerable_query_has_no_quality_score() -> None:
    with pytest.raises(ValueError, match="no_answer_false_positive"):
        score_query(["a"], {"a": 0}, ["ndcg@10"])
    with pytest.raises(ValueError, match="no grade >= 1"):
        score_query([], {}, ["hit@1"])


def test_a_string_is_not_a_ranking() -> None:
    with pytest.raises(TypeError, match="not a string"):
        score_query("abc", {"a": 1}, ["hit@1"])


def test_dedupe_keeps_first_occurrences() -> None:
    assert dedupe(["b", "a", "b", "c", "a"]) == ("b", "a", "c")
    assert dedupe([]) == ()


# --------------------------------------------------------------------------- no answer, outranks


def test_no_answer_false_positive() -> None:
    assert no_answer_false_positive([]) == metrics.NoAnswerOutcome(False, None)
    assert no_answer_false_positive(["a"]) == metrics.NoAnswerOutcome(True, None)
    assert no_answer_false_positive(["a", "b"], [0.2, 0.1], threshold=0.5).above_threshold is False
    assert no_answer_false_positive(["a", "b"], [0.9, 0.1], threshold=0.5).above_threshold is True
    # strictly above: equal to the threshold is not a false positive; NaN never is
    assert no_answer_false_positive(["a"], [0.5], threshold=0.5).above_threshold is False
    assert no_answer_false_positive(["a"], [math.nan], threshold=0.5).above_threshold is False
    assert no_answer_false_positive([], [], threshold=0.5) == metrics.NoAnswerOutcome(False, False)
    assert no_answer_false_positive(["a"], [0.9]).above_threshold is None  # no threshold set
    with pytest.raises(ValueError, match="2 scores for 1 ids"):
        no_answer_false_positive(["a"], [0.1, 0.2], threshold=0.0)


@pytest.mark.parametrize(
    ("ranking", "holds"),
    [
        (["new", "old"], True),  # correction above the stale fact
        (["old", "new"], False),  # stale fact above
        (["x", "new"], True),  # stale absent
        (["old", "x"], False),  # correction absent
        (["x", "y"], False),  # both absent: correct missing fails
        ([], False),
        (["old", "new", "old"], False),  # first occurrences decide
        (["new", "old", "new"], True),
    ],
)
def test_outranks_rule(ranking: list[str], holds: bool) -> None:
    assert outranks_holds(ranking, "new", "old") is holds


def test_outranks_pair_naming_one_id_twice_never_holds() -> None:
    assert outranks_holds(["a"], "a", "a") is False


# --------------------------------------------------------------------------- evaluate


def small_gold() -> GoldSet:
    return gold_of(
        GoldQuery("q1", "t", slice="s1", relevant={"a": 1, "b": 2}),
        GoldQuery("q2", "t", slice="s2", relevant={"c": 1}, outranks=(("c", "z"), ("c", "y"))),
        GoldQuery("u1", "t", slice="s1", relevant={"a": 0}),  # unanswerable
        GoldQuery("q3", "t", slice="s1", relevant={"d": 1}),  # missing from the run
        GoldQuery("u2", "t", slice="s3", outranks=(("m", "n"),)),  # unanswerable, not in run
    )


RUN = {
    "q1": ["b", "x", "a"],
    "q2": ["y", "c", "z"],
    "u1": ["a", "e"],
    "zz": ["a"],  # not in the gold set
}


def test_evaluate_means_over_answerable_queries_with_missing_as_zero() -> None:
    ev = evaluate(small_gold(), RUN, parse_metrics("hit@1,mrr@3,recall@2,ndcg@3"))
    assert ev.query_ids == ("q1", "q2", "q3") and ev.n == 3
    assert ev.missing == ("q3",) and ev.extra == ("zz",)
    assert ev.per_query["q1"]["hit@1"] == 1.0
    assert ev.per_query["q2"] == pytest.approx(
        {"hit@1": 0.0, "mrr@3": 1 / 2, "recall@2": 1.0, "ndcg@3": (1 / log2(3)) / 1}
    )
    assert ev.per_query["q3"] == {"hit@1": 0.0, "mrr@3": 0.0, "recall@2": 0.0, "ndcg@3": 0.0}
    assert "u1" not in ev.per_query and len(ev.per_query) == 3
    q1_ndcg = (2 / log2(2) + 1 / log2(4)) / (2 / log2(2) + 1 / log2(3))
    assert ev.aggregate == pytest.approx(
        {
            "hit@1": (1 + 0 + 0) / 3,
            "mrr@3": (1 + 1 / 2 + 0) / 3,
            "recall@2": (1 / 2 + 1 + 0) / 3,
            "ndcg@3": (q1_ndcg + 1 / log2(3) + 0) / 3,
        }
    )


def test_evaluate_slices_carry_their_n() -> None:
    ev = evaluate(small_gold(), RUN, ["hit@1", "mrr@3"])
    assert set(ev.slices) == {"s1", "s2", "s3"}
    assert ev.slices["s1"].n == 2  # q1 and q3; u1 is unanswerable
    assert ev.slices["s1"].values == pytest.approx({"hit@1": (1 + 0) / 2, "mrr@3": (1 + 0) / 2})
    assert ev.slices["s2"].n == 1 and ev.slices["s2"].values == pytest.approx(
        {"hit@1": 0.0, "mrr@3": 1 / 2}
    )
    assert ev.slices["s3"].n == 0 and ev.slices["s3"].values == {}  # no vacuous score


def test_evaluate_counts_unanswerable_queries_in_the_no_answer_rate() -> None:
    ev = evaluate(small_gold(), RUN, ["hit@1"])
    na = ev.no_answer
    assert na.query_ids == ("u1", "u2") and na.returned_any == (True, False)
    assert na.n == 2 and na.false_positives == 1 and na.rate == 1 / 2
    assert na.n_scored == 0 and na.above_rate is None

    with_scores = evaluate(
        small_gold(), RUN, ["hit@1"], scores={"u1": [0.3, 0.1]}, threshold=0.25
    ).no_answer
    assert with_scores.above_threshold == (True, None)  # u2 has no scores
    assert with_scores.n_scored == 1 and with_scores.above == 1 and with_scores.above_rate == 1.0
    below = evaluate(small_gold(), RUN, ["hit@1"], scores={"u1": [0.3, 0.1]}, threshold=0.3)
    assert below.no_answer.above_threshold == (False, None)


def test_evaluate_scores_outranks_pairs_of_every_query() -> None:
    ev = evaluate(small_gold(), RUN, ["hit@1"])
    assert ev.outranks.pairs == (("q2", "c", "z"), ("q2", "c", "y"), ("u2", "m", "n"))
    # c (rank 2) above z (rank 3) holds; y (rank 1) above c fails; u2 returned nothing: fails.
    assert ev.outranks.held == (True, False, False)
    assert ev.outranks.n_held == 1 and ev.outranks.rate == 1 / 3


def test_evaluate_without_answerable_queries_has_no_means() -> None:
    ev = evaluate(gold_of(GoldQuery("u", "t", relevant={"a": 0})), {"u": []}, ["ndcg@10"])
    assert ev.n == 0 and dict(ev.aggregate) == {} and ev.slices["default"].n == 0
    assert ev.columns["ndcg@10"].shape == (0,) and ev.no_answer.rate == 0.0
    assert per_query_matrix(ev).shape == (0, 1)


def test_columns_are_read_only_and_aligned() -> None:
    ev = evaluate(small_gold(), RUN, ["hit@1", "mrr@3"])
    with pytest.raises(ValueError, match="read-only"):
        ev.columns["hit@1"][0] = 0.5
    matrix = per_query_matrix(ev, ["mrr@3", "hit@1"])
    assert matrix.tolist() == [[1.0, 1.0], [0.5, 0.0], [0.0, 0.0]]
    with pytest.raises(KeyError, match="not evaluated: p@1"):
        per_query_matrix(ev, ["p@1"])


def test_paired_arrays_and_what_makes_them_not_comparable() -> None:
    gold = small_gold()
    base = evaluate(gold, RUN, ["hit@1", "mrr@3"])
    cand = evaluate(gold, {**RUN, "q3": ["d"]}, ["hit@1", "mrr@3"])
    b, c = paired(base, cand, "hit@1")
    assert b.tolist() == [1.0, 0.0, 0.0] and c.tolist() == [1.0, 0.0, 1.0]
    with pytest.raises(NotComparableError, match="baseline was not evaluated on p@5"):
        paired(base, cand, "p@5")
    with pytest.raises(NotComparableError, match="candidate was not evaluated on mrr@3"):
        paired(base, evaluate(gold, RUN, ["hit@1"]), "mrr@3")
    fewer = evaluate(gold_of(*gold.queries[:2]), RUN, ["hit@1"])
    with pytest.raises(NotComparableError, match="different answerable queries") as info:
        paired(base, fewer, "hit@1")
    assert "q3" in str(info.value)
    with pytest.raises(NotComparableError, match="rel_level differs: baseline 1, candidate 2"):
        paired(base, evaluate(gold, RUN, ["hit@1"], rel_level=2), "hit@1")


# --------------------------------------------------------------------------- properties

DOCS = [f"d{i}" for i in range(12)]
rankings_st = st.lists(st.sampled_from(DOCS), max_size=25)
judgements_st = st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 4), max_size=8).filter(
    lambda rel: any(g >= 1 for g in rel.values())
)
specs_st = st.lists(
    st.builds(MetricSpec, st.sampled_from(ALL_NAMES), st.integers(1, 15)), min_size=1, max_size=6
)


def reference(
    ranking: Sequence[str], relevant: Mapping[str, int], spec: MetricSpec, level: int
) -> float:
    """Each metric written the slow, obvious way from its docstring: the scalar reference."""
    top = list(dict.fromkeys(ranking))[: spec.k]
    rel = [relevant.get(d, 0) >= level for d in top]
    n_rel = sum(g >= level for g in relevant.values())
    gain = [max(relevant.get(d, 0), 0) for d in top]
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[: spec.k]
    if spec.name == "ndcg_burges":
        gain, ideal = [2**g - 1 for g in gain], [2**g - 1 for g in ideal]
    dcg = sum(g / log2(i + 2) for i, g in enumerate(gain))
    idcg = sum(g / log2(i + 2) for i, g in enumerate(ideal))
    first = next((i + 1 for i, r in enumerate(rel) if r), None)
    return {
        "hit": float(any(rel)),
        "recall": sum(rel) / n_rel if n_rel else 0.0,
        "p": sum(rel) / spec.k,
        "mrr": 1 / first if first else 0.0,
        "ndcg": dcg / idcg if idcg else 0.0,
        "ndcg_burges": dcg / idcg if idcg else 0.0,
        "ap": sum(sum(rel[: i + 1]) / (i + 1) for i, r in enumerate(rel) if r) / n_rel
        if n_rel
        else 0.0,
    }[spec.name]


@settings(max_examples=examples(300))
@given(rankings_st, judgements_st, specs_st, st.integers(1, 3))
def test_vectorised_metrics_equal_the_scalar_reference(
    ranking: list[str], relevant: dict[str, int], specs: list[MetricSpec], level: int
) -> None:
    got = score_query(ranking, relevant, specs, level)
    for spec in specs:
        assert got[str(spec)] == pytest.approx(reference(ranking, relevant, spec, level), abs=1e-12)
        assert 0.0 <= got[str(spec)] <= 1.0


@settings(max_examples=examples(50))
@given(st.lists(st.tuples(rankings_st, judgements_st), min_size=1, max_size=8), specs_st)
def test_a_batch_scores_each_row_as_if_alone(
    cases: list[tuple[list[str], dict[str, int]]], specs: list[MetricSpec]
) -> None:
    gold = gold_of(*(GoldQuery(f"q{i}", "t", relevant=rel) for i, (_, rel) in enumerate(cases)))
    ev = evaluate(gold, {f"q{i}": r for i, (r, _) in enumerate(cases)}, specs)
    for i, (ranking, relevant) in enumerate(cases):
        assert ev.per_query[f"q{i}"] == score_query(ranking, relevant, specs)
    for name, column in ev.columns.items():
        assert ev.aggregate[name] == pytest.approx(float(np.mean(column)))


@given(judgements_st, st.integers(1, 15), st.data())
def test_swapping_a_relevant_doc_below_a_lesser_one_never_raises_mrr_or_ndcg(
    relevant: dict[str, int], k: int, data: st.DataObject
) -> None:
    ranking = list(data.draw(st.permutations(DOCS)))
    grade = [max(relevant.get(d, 0), 0) for d in ranking]
    candidates = [i for i, g in enumerate(grade) if g >= 1]
    i = data.draw(st.sampled_from(candidates))
    lower = [j for j in range(i + 1, len(ranking)) if grade[j] <= grade[i]]
    assume(lower)
    j = data.draw(st.sampled_from(lower))
    demoted = ranking.copy()
    demoted[i], demoted[j] = demoted[j], demoted[i]
    names = [f"mrr@{k}", f"ndcg@{k}", f"ndcg_burges@{k}"]
    before, after = score_query(ranking, relevant, names), score_query(demoted, relevant, names)
    for name in names:
        assert after[name] <= before[name] + 1e-12, name


@given(judgements_st, st.integers(1, 15), st.lists(st.sampled_from(DOCS), max_size=5))
def test_a_perfect_ranking_scores_one(relevant: dict[str, int], k: int, junk: list[str]) -> None:
    # All positive grades, highest first (ties in any order), then anything.
    perfect = sorted((d for d, g in relevant.items() if g > 0), key=lambda d: -relevant[d])
    names = [f"ndcg@{k}", f"ndcg_burges@{k}", f"mrr@{k}", f"hit@{k}"]
    got = score_query(perfect + junk, relevant, names)
    assert got == pytest.approx(dict.fromkeys(names, 1.0), abs=1e-12)
    n_rel = sum(g >= 1 for g in relevant.values())
    if k >= n_rel:
        assert score_query(perfect, relevant, [f"recall@{k}", f"ap@{k}"]) == pytest.approx(
            {f"recall@{k}": 1.0, f"ap@{k}": 1.0}
        )


@given(st.lists(st.sampled_from(DOCS)))
def test_dedupe_is_idempotent_and_keeps_first_occurrences(ids: list[str]) -> None:
    once = dedupe(ids)
    assert dedupe(once) == once
    assert set(once) == set(ids) and len(once) == len(set(ids))
    assert [ids.index(d) for d in once] == sorted(ids.index(d) for d in once)


def test_the_same_answer_scores_bit_identically_in_any_batch() -> None:
    # Found by Hypothesis: a matrix product summed this row in a width-dependent order, so a
    # paired test saw a 3e-17 delta between two identical answers.
    relevant = {"d0": 1, "d1": 1, "d2": 2, "d3": 3}
    alone = score_query(["d0"], relevant, ["ndcg_burges@4", "ap@40"])
    wide = gold_of(GoldQuery("a", "t", relevant=relevant), GoldQuery("b", "t", relevant={"z": 1}))
    ev = evaluate(
        wide, {"a": ["d0"], "b": [f"x{i}" for i in range(40)]}, ["ndcg_burges@4", "ap@40"]
    )
    assert ev.per_query["a"] == alone


# --------------------------------------------------------------------------- trec_eval's n


def test_judged_queries_with_no_relevant_document_count_as_zero_like_trec_eval() -> None:
    import pytrec_eval

    qrels = {
        "q1": {"d1": 1, "d2": 0},
        "q2": {"d3": 0, "d4": 0},  # judged, nothing relevant: trec_eval scores it 0
        "q3": {"d5": 2},
        "q4": {},  # not judged at all: not a trec_eval query
    }
    run = {"q1": ["d2", "d1"], "q2": ["d3"], "q3": ["d9", "d5"], "q4": ["d1"]}
    gold = GoldSet(
        tuple(GoldQuery(q, q, relevant=r) for q, r in qrels.items()), "t", "trec", "h"
    )
    ev = evaluation.evaluate(gold, run, ["ndcg@10", "recall@10", "p@5"], judged_as_zero=True)
    assert ev.query_ids == ("q1", "q2", "q3") and ev.n == 3
    scored = {q: {d: float(10 - i) for i, d in enumerate(ids)} for q, ids in run.items()}
    judged = {q: r for q, r in qrels.items() if r}
    found = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut.10", "recall.10", "P.5"}).evaluate(
        {q: scored[q] for q in judged}
    )
    assert len(found) == 3  # pytrec_eval's n
    for ours, theirs in (("ndcg@10", "ndcg_cut_10"), ("recall@10", "recall_10"), ("p@5", "P_5")):
        mean = sum(row[theirs] for row in found.values()) / len(found)
        assert ev.aggregate[ours] == pytest.approx(mean, abs=1e-12), ours
    assert ev.per_query["q2"] == {"ndcg@10": 0.0, "recall@10": 0.0, "p@5": 0.0}
    # compare's rule is unchanged: only answerable queries are averaged
    assert evaluation.evaluate(gold, run, ["ndcg@10"]).query_ids == ("q1", "q3")


# --------------------------------------------------------------------------- other tools' names


@pytest.mark.parametrize(
    ("given", "name", "k"),
    [("nDCG@10", "ndcg", 10), ("P@5", "p", 5), ("RR@10", "mrr", 10), ("AP@100", "ap", 100),
     ("R@100", "recall", 100), ("Success@5", "hit", 5), ("AP", "ap", None),
     ("nDCG", "ndcg", None), ("RR", "mrr", None), ("P_5", "p", 5), ("ndcg_cut_10", "ndcg", 10),
     ("recall_100", "recall", 100),
     ("map_cut_100", "ap", 100), ("success_5", "hit", 5), ("recip_rank", "mrr", None),
     ("map", "ap", None), ("ndcg", "ndcg", None), ("ap", "ap", None), ("mrr", "mrr", None)],
)  # fmt: skip
def test_ir_measures_and_trec_eval_names_map_onto_the_registry_and_print_as_given(
    given: str, name: str, k: int | None
) -> None:
    spec = parse_metric(given)
    assert spec == MetricSpec(name, k)
    assert str(spec) == given
    assert parse_metric(str(spec)) == spec


def test_two_spellings_of_one_metric_are_refused_naming_both() -> None:
    # Issue 27: asked together they used to become one column under the first name, silently.
    with pytest.raises(ValueError, match=r"nDCG@10 and ndcg_cut_10 are two names of one metric"):
        parse_metrics("nDCG@10,ndcg_cut_10")
    with pytest.raises(ValueError, match=r"map and AP are two names of one metric \(ap\)"):
        parse_metrics("map,hit@5,AP")
    # One name given twice is one column, as before; and each spelling alone keeps its name.
    assert [str(s) for s in parse_metrics("nDCG@10,map,nDCG@10")] == ["nDCG@10", "map"]
    assert [str(s) for s in parse_metrics("ndcg_cut_10")] == ["ndcg_cut_10"]


def test_uncut_metrics_read_the_whole_ranking() -> None:
    # Relevant at ranks 2 and 12 of a 12-long list; two judged relevant, one unreturned (grade 3).
    ranking = [f"x{i}" for i in range(1, 13)]
    relevant = {"x2": 1, "x12": 2, "missing": 3}
    got = score_query(ranking, relevant, ["ap", "mrr", "ndcg", "ap@10", "ndcg@10"])
    assert got["ap"] == pytest.approx((1 / 2 + 2 / 12) / 3)
    assert got["ap@10"] == pytest.approx((1 / 2) / 3)
    assert got["mrr"] == 0.5
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert got["ndcg"] == pytest.approx((1 / math.log2(3) + 2 / math.log2(13)) / idcg)
    assert got["ndcg@10"] == pytest.approx((1 / math.log2(3)) / idcg)


@pytest.mark.parametrize("name", ["hit", "recall", "p"])
def test_set_metrics_need_a_cutoff(name: str) -> None:
    with pytest.raises(ValueError, match=f"{name} needs a cutoff"):
        MetricSpec(name, None)
