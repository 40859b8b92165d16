"""The metrics that see the holes in the judgements (issue 39): judged@k, bpref and the condensed
(primed) metrics, against ir_measures and pytrec_eval, by hand, and by property.

Expected values, where each comes from:

- judged@k (and uncut `judged`): ir_measures 0.4.3's Judged@k (its JudgedProvider: the ids in
  the top k that the qrels hold at any grade, over min(k, ids returned)), fed each ranking in
  ir_measures' own order (score descending, ties by docid ascending) so that both read one list;
- bpref: pytrec_eval-terrier's bpref (trec_eval 9);
- the primes: pytrec_eval with judged_docs_only_flag=True (trec_eval -J): success_k (hit'@k),
  P_k (p'@k), recall_k (recall'@k), ndcg_cut_k (ndcg'@k), map_cut_k (ap'@k), map (ap'),
  ndcg (ndcg'), recip_rank (mrr'); mrr'@k is recip_rank when its rank 1 / recip_rank is at most
  k, else 0; ndcg_burges' is ndcg_cut_k / ndcg on qrels mapped to 2**grade - 1, with the flag.

Every value is compared for equality, to the last bit: the formulas add and divide in the order
trec_eval and ir_measures do.  A query absent from the run scores 0 in harness (trec_eval -c);
the oracles leave it out, so the expected value is 0.

Data, shaped as issue 39 describes a gold set: judged by pooling what "main" returned.  On the
public collections (../shared/data; skipped in a fresh clone) "main" is a BM25 with Lucene's
parameters (k1 = 1.2, b = 0.75) whose top POOL_DEPTH documents are judged with the official
grades (0 where the official judgements have none: judged not relevant); the official
judgements are kept too.  The run scored is another BM25 (test_metrics_oracle's, k1 = 0.9,
b = 0.4) at depth 100: its head is mostly judged, its tail mostly not.  The generated
collections of test_metrics_generated_oracle (graded 0-4, judged non-relevant documents,
unjudged documents in every run, empty rankings, queries missing) run everywhere.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import ir_measures
import numpy as np
import pytest
import pytrec_eval
from cli_support import run_cli
from conftest import examples, shared_collection
from hypothesis import given, settings
from hypothesis import strategies as st
from test_metrics_generated_oracle import SEEDS, synthetic
from test_metrics_oracle import KS, Bm25, Scored, collection, ranked, rounded

from harness.score.evaluation import evaluate, evaluate_runs
from harness.score.judged import JudgedRanks, judge, judge_heads, judge_sized
from harness.score.metrics import (
    HOLE_METRICS,
    METRICS,
    REGISTRY,
    Kind,
    MetricSpec,
    parse_metric,
    parse_metrics,
    score_query,
)
from harness.score.runfile import load_trec_tables, trec_order
from harness.values.types import GoldQuery, GoldSet

POOL_DEPTH = 10
PRIMED = ("hit", "p", "recall", "ndcg", "ap", "mrr", "ndcg_burges")
UNCUT_PRIMED = ("ap", "ndcg", "mrr", "ndcg_burges")
HOLE_SPECS = parse_metrics(
    ",".join(
        [
            *(f"judged@{k}" for k in KS),
            "judged",
            "bpref",
            *(f"{name}'@{k}" for name in PRIMED for k in KS),
            *(f"{name}'" for name in UNCUT_PRIMED),
        ]
    )
)


# --------------------------------------------------------------------------- the data


@dataclass(frozen=True)
class Judged:
    """A gold set, its qrels (the same judgements) and a scored run."""

    gold: GoldSet
    qrels: dict[str, dict[str, int]]
    run: Scored


def gold_of(qrels: Mapping[str, Mapping[str, int]], source: str) -> GoldSet:
    return GoldSet(
        tuple(GoldQuery(q, f"query {q}", relevant=dict(r)) for q, r in qrels.items()),
        source=source,
        format="native",
        hash=source,
    )


@cache
def pooled(name: str) -> Judged:
    """The collection's BM25 run, judged by pooling another BM25's top POOL_DEPTH (above)."""
    data = collection(name)
    main = Bm25.build(shared_collection(name) / "corpus.jsonl", k1=1.2, b=0.75)
    qrels: dict[str, dict[str, int]] = {}
    for query in data.gold.queries:
        judged = dict(data.qrels[query.id])
        for doc in main.search(query.text, POOL_DEPTH):
            judged.setdefault(doc, 0)  # pooled, and not relevant by the official judgements
        qrels[query.id] = judged
    gold = GoldSet(
        tuple(GoldQuery(q.id, q.text, relevant=qrels[q.id]) for q in data.gold.queries),
        source=f"{name}, pooled",
        format="beir",
        hash=f"{name}-pooled",
    )
    return Judged(gold, qrels, data.run)


def generated(seed: int, ties: bool) -> Judged:
    data = synthetic(seed, ties=ties)
    return Judged(data.gold, data.qrels, data.run)


def ir_order(run: Scored) -> dict[str, list[str]]:
    """Each query's ids in ir_measures' order (score descending, ties by docid ascending)."""
    return {q: [d for d, _ in sorted(docs.items(), key=lambda x: (-x[1], x[0]))]
            for q, docs in run.items()}  # fmt: skip


# --------------------------------------------------------------------------- the oracles

TREC_J = {"hit'": "success", "p'": "P", "recall'": "recall", "ndcg'": "ndcg_cut", "ap'": "map_cut"}
UNCUT_J = {"ap'": "map", "ndcg'": "ndcg", "mrr'": "recip_rank"}


def judged_only_oracle(qrels: Mapping[str, Mapping[str, int]], run: Scored, level: int) -> Scored:
    """bpref and the primes, per query, from pytrec_eval (see the module docstring)."""
    cutoffs = ",".join(map(str, KS))
    measures = {f"{m}.{cutoffs}" for m in TREC_J.values()} | set(UNCUT_J.values()) | {"bpref"}
    found = pytrec_eval.RelevanceEvaluator(
        qrels, measures, relevance_level=level, judged_docs_only_flag=True
    ).evaluate(run)
    plain = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}, relevance_level=level).evaluate(run)
    burges = {
        q: {d: 2**g - 1 if g > 0 else g for d, g in docs.items()} for q, docs in qrels.items()
    }
    graded = pytrec_eval.RelevanceEvaluator(
        burges, {f"ndcg_cut.{cutoffs}", "ndcg"}, judged_docs_only_flag=True
    ).evaluate(run)
    out: Scored = {}
    for q, row in found.items():
        # bpref skips unjudged documents: removing them first (-J) changes nothing.
        assert row["bpref"] == plain[q]["bpref"], q
        values = {
            f"{ours}@{k}": row[f"{theirs}_{k}"] for ours, theirs in TREC_J.items() for k in KS
        }
        values.update({ours: row[theirs] for ours, theirs in UNCUT_J.items()})
        rr = row["recip_rank"]  # the first relevant id of the condensed list is at rank 1 / rr
        values.update({f"mrr'@{k}": rr if rr > 0 and round(1 / rr) <= k else 0.0 for k in KS})
        values.update({f"ndcg_burges'@{k}": graded[q][f"ndcg_cut_{k}"] for k in KS})
        values["ndcg_burges'"] = graded[q]["ndcg"]
        values["bpref"] = plain[q]["bpref"]
        out[q] = values
    return out


def judged_oracle(qrels: Mapping[str, Mapping[str, int]], run: Scored) -> Scored:
    """judged@k per query from ir_measures' Judged@k (and Judged, uncut)."""
    # ir_measures divides by zero on an empty ranking (ZeroDivisionError): those queries are
    # not asked, and checked by hand below (0).
    nonempty = {q: docs for q, docs in run.items() if docs}
    out: Scored = {}
    measures = [*(ir_measures.Judged @ k for k in KS), ir_measures.Judged]
    for m in ir_measures.iter_calc(measures, qrels, nonempty):
        out.setdefault(m.query_id, {})[parse_metric(str(m.measure)).canonical] = m.value
    return out


def assert_equal(ev_values: Mapping[str, Mapping[str, float]], ids: Sequence[str],
                 expected: Scored, names: Sequence[str], what: str) -> None:  # fmt: skip
    """Every expected value equal to harness's, bit for bit; a query the oracle left out: 0."""
    zeros = dict.fromkeys(names, 0.0)
    bad = {}
    for qid in ids:
        want, got = expected.get(qid, zeros), ev_values[qid]
        wrong = {m: (got[m], want[m]) for m in names if got[m] != want[m]}
        if wrong:
            bad[qid] = wrong
    assert not bad, f"{what}: {len(bad)} queries differ, e.g. {next(iter(bad.items()))}"


def check(data: Judged, rel_level: int, what: str) -> None:
    """Every hole metric of `data` against its oracle, per query and in the mean."""
    trec = evaluate(data.gold, ranked(data.run), HOLE_SPECS, rel_level)
    names = [str(s) for s in HOLE_SPECS if s.name != "judged"]
    expected = judged_only_oracle(data.qrels, data.run, rel_level)
    assert_equal(trec.per_query, trec.query_ids, expected, names, f"{what} pytrec_eval")
    for name in names:
        mean = math.fsum(expected.get(q, {name: 0.0})[name] for q in trec.query_ids) / trec.n
        assert trec.aggregate[name] == pytest.approx(mean, rel=1e-12, abs=1e-15), name
    shares = [str(s) for s in HOLE_SPECS if s.name == "judged"]
    ours = evaluate(data.gold, ir_order(data.run), shares, rel_level)
    assert_equal(ours.per_query, ours.query_ids, judged_oracle(data.qrels, data.run), shares,
                 f"{what} ir_measures")  # fmt: skip


# --------------------------------------------------------------------------- real collections


@pytest.mark.parametrize("variant", ["exact", "rounded"])
def test_scifact_pooled_agrees_with_pytrec_eval_and_ir_measures(variant: str) -> None:
    data = pooled("scifact")
    if variant == "rounded":  # many score ties: each oracle gets the list in its own order
        data = Judged(data.gold, data.qrels, rounded(data.run))
    check(data, 1, f"scifact {variant}")


@pytest.mark.parametrize("variant", ["exact", "rounded"])
@pytest.mark.parametrize("rel_level", [1, 3])
def test_cranfield_pooled_graded_agrees_with_pytrec_eval_and_ir_measures(
    variant: str, rel_level: int
) -> None:
    data = pooled("cranfield")
    if variant == "rounded":
        data = Judged(data.gold, data.qrels, rounded(data.run))
    check(data, rel_level, f"cranfield {variant} rel_level={rel_level}")


def test_the_pooled_collections_have_the_holes_they_claim() -> None:
    for name in ("scifact", "cranfield"):
        data = pooled(name)
        ev = evaluate(data.gold, ranked(data.run), ["judged@10", "judged@100", "ndcg@10",
                                                    "ndcg'@10", "bpref"])  # fmt: skip
        # The pool covers only part of the run: much of its head, little of its tail.
        assert 0.5 < ev.aggregate["judged@10"] < 0.95, (name, ev.aggregate)
        assert ev.aggregate["judged@100"] < 0.3, (name, ev.aggregate)
        # Judged non-relevant documents in the run, so bpref is not trivially 1 or 0.
        assert 0.1 < ev.aggregate["bpref"] < 0.9, (name, ev.aggregate)
        # Removing the unjudged documents moves relevant ones up.
        assert ev.aggregate["ndcg'@10"] > ev.aggregate["ndcg@10"], (name, ev.aggregate)
        zeros = sum(g == 0 for docs in data.qrels.values() for g in docs.values())
        assert zeros > len(data.qrels) * POOL_DEPTH / 2  # judged not relevant, many per query
    grades = {g for docs in pooled("cranfield").qrels.values() for g in docs.values()}
    assert grades == {0, 1, 2, 3, 4}


# --------------------------------------------------------------------------- generated collections


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("ties", [True, False], ids=["ties", "no-ties"])
@pytest.mark.parametrize("rel_level", [1, 2, 3])
def test_generated_runs_agree_with_pytrec_eval_and_ir_measures(
    seed: int, ties: bool, rel_level: int
) -> None:
    check(generated(seed, ties), rel_level, f"seed {seed} ties={ties} rel_level={rel_level}")


def test_ir_measures_spellings_give_ir_measures_values() -> None:
    # ir_measures' own names for the same measures, through ir_measures itself (its
    # pytrec_eval provider passes -J for judged_only=True), printed back as given.
    data = generated(1, ties=False)
    names = [
        "Judged@10",
        "Bpref",
        "nDCG(judged_only=True)@10",
        "P(judged_only=True)@5",
        "AP(judged_only=True)",
        "RR(judged_only=True)",
        "Success(judged_only=True)@3",
    ]
    nonempty = {q: docs for q, docs in data.run.items() if docs}
    expected: Scored = {}
    for m in ir_measures.iter_calc(list(map(ir_measures.parse_measure, names)), data.qrels,
                                   nonempty):  # fmt: skip
        expected.setdefault(m.query_id, {})[str(m.measure)] = m.value
    ev = evaluate(data.gold, ir_order(data.run), names)
    assert list(ev.columns) == names
    assert_equal(ev.per_query, ev.query_ids, expected, names, "ir_measures names")


# --------------------------------------------------------------------------- by hand

# Judged: b = 0 (judged, not relevant), c = 1, d = 2, and x = 1, y = 0, z = 0 never returned.
# Returned: a b c d e; a and e unjudged.  R = 3 (c, d, x), N = 3 (b, y, z).
QRELS = {"b": 0, "c": 1, "d": 2, "x": 1, "y": 0, "z": 0}
RANKING = ["a", "b", "c", "d", "e"]


def test_hand_worked_judged_share() -> None:
    got = score_query(RANKING, QRELS, ["judged@1", "judged@2", "judged@5", "judged@10", "judged"])
    assert got["judged@1"] == 0 / 1  # a
    assert got["judged@2"] == 1 / 2  # a b
    assert got["judged@5"] == 3 / 5  # b c d of a b c d e
    assert got["judged@10"] == 3 / 5  # over the 5 returned, not over 10 (ir_measures)
    assert got["judged"] == 3 / 5
    # A judged grade 0 is judged; an unjudged id, with the same gain of 0, is not.
    assert score_query(["b"], QRELS, ["judged@1"])["judged@1"] == 1.0
    assert score_query(["a", "c"], QRELS, ["judged@1"])["judged@1"] == 0.0


def test_hand_worked_bpref() -> None:
    # c: 1 judged non-relevant above (b): 1 - min(1, 3) / min(3, 3); d the same; x not returned.
    got = score_query(RANKING, QRELS, ["bpref"])
    assert got["bpref"] == ((1 - 1 / 3) + (1 - 1 / 3)) / 3
    # More judged non-relevant above than R: capped at R.  R = 1, N = 5, 3 above: 1 - 1/1.
    five = {"r": 1, **{f"n{i}": 0 for i in range(5)}}
    assert score_query(["n0", "n1", "n2", "r"], five, ["bpref"])["bpref"] == 0.0
    # N = 0 (nothing judged not relevant): every relevant id returned scores 1.
    assert score_query(["u", "c", "v", "x"], {"c": 1, "x": 2, "w": 1}, ["bpref"])["bpref"] == 2 / 3
    # min(R, N) < R: R = 3, N = 1, one non-relevant above c and d: 1 - min(1, 3) / min(3, 1).
    got = score_query(["b", "c", "d"], {"b": 0, "c": 1, "d": 1, "x": 1}, ["bpref"])
    assert got["bpref"] == ((1 - 1 / 1) + (1 - 1 / 1)) / 3
    # Unjudged ids anywhere change nothing.
    assert score_query(["u1", "b", "u2", "c", "u3", "d"], QRELS, ["bpref"]) == score_query(
        ["b", "c", "d"], QRELS, ["bpref"]
    )


def test_hand_worked_condensed_metrics() -> None:
    # x, y unjudged; a judged 0; b grade 2; c grade 1 never returned.  Ranking x a y b:
    # condensed a b.  |relevant| = 2 (b, c); ideal gains 2, 1.
    ranking, qrels = ["x", "a", "y", "b"], {"a": 0, "b": 2, "c": 1}
    names = ["hit@2", "hit'@2", "mrr", "mrr'", "mrr'@1", "p'@2", "p'@10", "recall'@2",
             "ndcg'@2", "ap'", "ap'@1", "ndcg_burges'@2"]  # fmt: skip
    got = score_query(ranking, qrels, names)
    assert got["hit@2"] == 0.0 and got["hit'@2"] == 1.0  # x a  /  a b
    assert got["mrr"] == 1 / 4 and got["mrr'"] == 1 / 2 and got["mrr'@1"] == 0.0
    assert got["p'@2"] == 1 / 2
    assert got["p'@10"] == 1 / 10  # still over k: the condensed list is short
    assert got["recall'@2"] == 1 / 2  # c is judged relevant and was not returned
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert got["ndcg'@2"] == (2 / math.log2(3)) / idcg
    assert got["ap'"] == (1 / 2) / 2 and got["ap'@1"] == 0.0
    burges_idcg = (2**2 - 1) / math.log2(2) + (2**1 - 1) / math.log2(3)
    assert got["ndcg_burges'@2"] == pytest.approx(((2**2 - 1) / math.log2(3)) / burges_idcg)


ALL_HOLES = [
    *(f"judged@{k}" for k in (1, 3, 10)),
    "judged",
    "bpref",
    *(f"{n}'@{k}" for n in PRIMED for k in (1, 3, 10)),
    *(f"{n}'" for n in UNCUT_PRIMED),
]


def test_an_empty_ranking_scores_0_on_every_hole_metric() -> None:
    # judged@k: nothing returned, 0 (ir_measures divides 0 by 0 there); bpref: no term, 0 / R;
    # the primes: the condensed list is empty too.
    got = score_query([], QRELS, ALL_HOLES)
    assert got == dict.fromkeys(ALL_HOLES, 0.0)


def test_an_all_unjudged_ranking_scores_0_on_every_hole_metric() -> None:
    # judged@k = 0 / min(k, 4); bpref skips all four; the condensed list is empty.
    got = score_query(["u1", "u2", "u3", "u4"], QRELS, ALL_HOLES)
    assert got == dict.fromkeys(ALL_HOLES, 0.0)


def test_duplicates_count_once_before_the_cut() -> None:
    # b b c a c d  ->  b c a d: 4 unique ids; b, c, d judged.
    ranking = ["b", "b", "c", "a", "c", "d"]
    got = score_query(ranking, QRELS, ["judged@2", "judged@3", "judged@10", "bpref", "mrr'@1",
                                       "p'@3", "hit'@2"])  # fmt: skip
    assert got["judged@2"] == 2 / 2  # b c
    assert got["judged@3"] == 2 / 3  # b c a
    assert got["judged@10"] == 3 / 4  # over the 4 unique ids returned
    assert got["bpref"] == ((1 - 1 / 3) + (1 - 1 / 3)) / 3  # the repeated b counts once
    assert got["mrr'@1"] == 0.0  # condensed b c d
    assert got["p'@3"] == 2 / 3
    assert got["hit'@2"] == 1.0
    assert got == score_query(list(dict.fromkeys(ranking)), QRELS, list(got))


def test_a_negative_grade_is_judged_not_relevant_where_trec_eval_calls_it_unjudged() -> None:
    # No gold file holds one (the readers refuse it: map negative grades to 0); judge() takes
    # any mapping, and says what it does.  ir_measures' Judged@k counts any qrels entry, so
    # it agrees; trec_eval skips a negative grade in bpref and drops it under -J.
    qrels, ranking = {"q": {"b": -1, "c": 1, "d": 2, "x": 1, "y": 0}}, ["a", "b", "c", "d", "e"]
    run = {"q": {d: float(10 - i) for i, d in enumerate(ranking)}}
    got = score_query(ranking, qrels["q"], ["judged@5", "bpref", "mrr'"])
    judged_at_5 = next(ir_measures.iter_calc([ir_measures.Judged @ 5], qrels, run)).value
    assert got["judged@5"] == judged_at_5 == 3 / 5
    # R = 3 (c, d, x), N = 2 (b, y): c and d each have b above: 1 - min(1, 3) / min(3, 2).
    assert got["bpref"] == ((1 - 1 / 2) + (1 - 1 / 2)) / 3
    trec = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}).evaluate(run)["q"]["bpref"]
    assert trec == (1 + 1) / 3  # b skipped as unjudged: no non-relevant above c or d
    assert got["mrr'"] == 1 / 2  # condensed b c d; trec_eval -J: c d, recip_rank 1
    assert pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}, judged_docs_only_flag=True
                                          ).evaluate(run)["q"]["recip_rank"] == 1.0  # fmt: skip


# --------------------------------------------------------------------------- properties

DOCS = [f"d{i}" for i in range(12)]
rankings_st = st.lists(st.sampled_from(DOCS), max_size=25)
judgements_st = st.dictionaries(st.sampled_from(DOCS), st.integers(0, 4), max_size=8).filter(
    lambda rel: any(g >= 1 for g in rel.values())
)
primes_st = st.lists(
    st.builds(MetricSpec, st.sampled_from([f"{n}'" for n in PRIMED]), st.integers(1, 15)),
    min_size=1,
    max_size=6,
)


def bpref_reference(ranking: Sequence[str], relevant: Mapping[str, int], level: int) -> float:
    """trec_eval's m_bpref.c loop, transcribed."""
    num_rel = sum(g >= level for g in relevant.values())
    num_nonrel = sum(0 <= g < level for g in relevant.values())
    nonrel_so_far, total = 0, 0.0
    for doc in dict.fromkeys(ranking):
        if doc not in relevant:
            continue
        if relevant[doc] < level:
            nonrel_so_far += 1
        elif nonrel_so_far > 0:
            total += 1.0 - min(nonrel_so_far, num_rel) / min(num_nonrel, num_rel)
        else:
            total += 1.0
    return total / num_rel if num_rel else 0.0


def judged_reference(ranking: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """ir_measures' JudgedEvaluator, transcribed (0 for an empty ranking)."""
    top = list(dict.fromkeys(ranking))[:k]
    return sum(d in relevant for d in top) / len(top) if top else 0.0


@settings(max_examples=examples(300))
@given(rankings_st, judgements_st, primes_st, st.integers(1, 3))
def test_a_prime_is_the_metric_of_the_ranking_without_its_unjudged_ids(
    ranking: list[str], relevant: dict[str, int], specs: list[MetricSpec], level: int
) -> None:
    plain = [MetricSpec(s.name.rstrip("'"), s.k) for s in specs]
    condensed = [d for d in ranking if d in relevant]
    got = score_query(ranking, relevant, specs, level)
    want = score_query(condensed, relevant, plain, level)
    for spec, same in zip(specs, plain, strict=True):
        assert got[str(spec)] == want[str(same)], spec
        assert 0.0 <= got[str(spec)] <= 1.0


@settings(max_examples=examples(300))
@given(rankings_st, judgements_st, st.integers(1, 15), st.integers(1, 3), st.data())
def test_bpref_and_judged_equal_their_references_and_ignore_inserted_unjudged_ids(
    ranking: list[str], relevant: dict[str, int], k: int, level: int, data: st.DataObject
) -> None:
    names = [f"judged@{k}", "bpref"]
    got = score_query(ranking, relevant, names, level)
    assert got["bpref"] == bpref_reference(ranking, relevant, level)
    assert got[f"judged@{k}"] == judged_reference(ranking, relevant, k)
    assert 0.0 <= got["bpref"] <= 1.0 and 0.0 <= got[f"judged@{k}"] <= 1.0
    # Unjudged ids inserted anywhere: bpref and every prime unchanged.
    padded = list(ranking)
    for i in range(data.draw(st.integers(0, 5))):
        padded.insert(data.draw(st.integers(0, len(padded))), f"unjudged{i}")
    primes = ["bpref", *(f"{n}'@{k}" for n in PRIMED)]
    assert score_query(padded, relevant, primes, level) == score_query(
        ranking, relevant, primes, level
    )


# --------------------------------------------------------------------------- the registry


def test_names_parse_print_back_and_pick_their_test() -> None:
    for text, canonical in [("judged@10", "judged@10"), ("Judged@10", "judged@10"),
                            ("Judged", "judged"), ("bpref", "bpref"), ("Bpref", "bpref"),
                            ("ndcg'@10", "ndcg'@10"), ("hit'@5", "hit'@5"), ("ap'", "ap'"),
                            ("mrr'@10", "mrr'@10"), ("nDCG(judged_only=True)@10", "ndcg'@10"),
                            ("AP(judged_only=True)", "ap'")]:  # fmt: skip
        spec = parse_metric(text)
        assert str(spec) == text and spec.canonical == canonical
        assert parse_metric(str(spec)) == spec
    assert parse_metric("hit'@5").kind is Kind.BINARY
    assert {parse_metric(n).kind for n in ("judged@5", "bpref", "ndcg'@5")} == {Kind.CONTINUOUS}
    assert set(REGISTRY) == set(METRICS) | set(HOLE_METRICS)
    assert not set(METRICS) & set(HOLE_METRICS)


def test_cutoff_rules() -> None:
    with pytest.raises(ValueError, match="bpref reads the whole ranking and takes no cutoff"):
        parse_metric("bpref@10")
    for name in ("hit'", "p'", "recall'"):
        with pytest.raises(ValueError, match=f"{name} needs a cutoff"):
            MetricSpec(name, None)
    with pytest.raises(ValueError, match=r"did you mean ndcg'@10\?"):
        parse_metric("NDCG'@10")
    with pytest.raises(ValueError, match="unknown metric"):
        parse_metric("judged'@10")  # a condensed list is all judged: no prime for judged@k


def test_a_prime_judges_the_whole_ranking_a_plain_metric_its_cutoff() -> None:
    # The condensed top 1 is the 7th id returned: a prime reads past its cutoff.
    assert parse_metric("ndcg@10").depth == 10
    assert parse_metric("ndcg'@10").depth == parse_metric("ndcg").depth
    ranking = [f"u{i}" for i in range(6)] + ["r"]
    assert score_query(ranking, {"r": 1}, ["hit'@1", "hit@1"]) == {"hit'@1": 1.0, "hit@1": 0.0}


def test_judged_is_scored_on_a_query_with_nothing_relevant_when_it_is_averaged() -> None:
    # `harness metrics` (judged_as_zero, trec_eval's rule) averages a query whose judgements
    # are all 0: every quality metric scores it 0, judged@k scores what it returned, as
    # ir_measures' Judged@k does for any judged query.
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"c": 0, "d": 0}}
    run = {"q1": {"a": 2.0, "x": 1.0}, "q2": {"c": 2.0, "y": 1.0}}
    ev = evaluate(gold_of(qrels, "two"), ir_order(run), ["judged@10", "ndcg@10", "bpref"],
                  judged_as_zero=True)  # fmt: skip
    assert ev.per_query["q2"] == {"judged@10": 1 / 2, "ndcg@10": 0.0, "bpref": 0.0}
    want = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.Judged @ 10],
                                                               qrels, run)}  # fmt: skip
    assert {q: ev.per_query[q]["judged@10"] for q in qrels} == want == {"q1": 0.5, "q2": 0.5}
    # Without judged_as_zero the query is unanswerable and averaged nowhere.
    assert evaluate(gold_of(qrels, "two"), ir_order(run), ["judged@10"]).query_ids == ("q1",)


# --------------------------------------------------------------------------- every judge fills them


def heads_of(rankings: Sequence[Sequence[str]], k: int) -> tuple[list[str], list[int]]:
    tops = [list(dict.fromkeys(r))[:k] for r in rankings]
    return [d for top in tops for d in top], [len(top) for top in tops]


def assert_same_holes(a: JudgedRanks, b: JudgedRanks) -> None:
    for field in ("judged", "n_nonrelevant", "n_ranked", "gains", "relevant", "n_relevant"):
        x, y = getattr(a, field), getattr(b, field)
        assert x is not None and y is not None, field
        assert np.array_equal(x, y), field


@pytest.mark.parametrize("max_k", [3, 10, 2**62])
def test_every_judge_variant_fills_the_holes_alike(tmp_path: Path, max_k: int) -> None:
    data = generated(2, ties=True)
    ids = [q.id for q in data.gold.queries]
    rankings = [ranked(data.run).get(q, []) for q in ids]
    judgements = [data.qrels[q] for q in ids]
    base = judge(rankings, judgements, max_k)
    assert base.judged is not None and base.judged.dtype == np.bool_
    assert_same_holes(base, judge_sized(rankings, judgements, max_k)[0])
    assert_same_holes(base, judge_heads(*heads_of(rankings, max_k), judgements, max_k))
    texts = [[None] * len(r) for r in rankings]
    assert_same_holes(base, judge(rankings, judgements, max_k, texts=texts,
                                  spans=[{}] * len(ids)))  # fmt: skip
    # The column-wise TREC path (`harness metrics` on TREC files).
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    write_trec(data, qrels, run)
    tables = load_trec_tables(qrels, run, max_k)
    assert tables is not None and tables.qrels.names == ids
    assert_same_holes(base, tables.joined.judged)
    # select: a subset of rows, as judge gives them alone.
    rows = np.array([0, 5, 9], dtype=np.intp)
    alone = judge([rankings[i] for i in rows], [judgements[i] for i in rows], max_k)
    assert_same_holes(alone, base.select(rows, alone.width))
    # And by hand: judged at a grade 0, not past the list's end.
    for q, ranking in enumerate(rankings):
        top = list(dict.fromkeys(ranking))[:max_k]
        want = [d in judgements[q] for d in top]
        assert base.judged[q].tolist() == want + [False] * (base.width - len(top))


def test_evaluate_runs_gives_each_run_what_evaluate_gives() -> None:
    data = generated(3, ties=False)
    runs = [ranked(data.run), ir_order(data.run), ranked(generated(4, ties=False).run)]
    pooled_runs = evaluate_runs(data.gold, runs, HOLE_SPECS, 2)
    for run, got in zip(runs, pooled_runs.evaluations, strict=True):
        alone = evaluate(data.gold, run, HOLE_SPECS, 2)
        assert dict(got.per_query) == dict(alone.per_query)


def test_a_hand_built_judged_ranks_without_holes_is_refused_by_name() -> None:
    gains = np.array([[1.0, 0.0]])
    ranks = JudgedRanks(gains, gains > 0, np.array([1.0]), gains, np.array([True]))
    refused = r"JudgedRanks\.judged: make the JudgedRanks with judge\(\)"
    for name in ("judged@2", "bpref", "ndcg'@2"):
        with pytest.raises(ValueError, match=refused):
            parse_metric(name).compute(ranks)


# --------------------------------------------------------------------------- the CLI


def write_trec(data: Judged, qrels: Path, run: Path) -> None:
    with qrels.open("w", encoding="utf-8") as out:
        for q, docs in data.qrels.items():
            out.writelines(f"{q} 0 {d} {g}\n" for d, g in docs.items())
    with run.open("w", encoding="utf-8") as out:
        for q, docs in data.run.items():
            out.writelines(f"{q} Q0 {d} {i} {s} test\n"
                           for i, (d, s) in enumerate(trec_order(docs.items()), 1))  # fmt: skip


@pytest.mark.parametrize("path", ["trec", "jsonl"])
def test_harness_metrics_prints_them_equal_to_the_oracles(tmp_path: Path, path: str) -> None:
    # trec: qrels and run read column-wise (judge_columns); jsonl: a native run, read by the
    # exact readers (judge).  Values printed by the CLI, against the oracles themselves.
    data = generated(5, ties=True)
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    write_trec(data, qrels, run)
    if path == "jsonl":
        run = tmp_path / "run.jsonl"
        run.write_text("".join(json.dumps({"id": q, "ranking": r}) + "\n"
                               for q, r in ranked(data.run).items()), encoding="utf-8")  # fmt: skip
    names = "Judged@10,bpref,ndcg'@10,mrr'@10,AP(judged_only=True)"
    done = run_cli("harness", "metrics", "--gold", qrels, "--run", run, "--metrics", names,
                   "--rel-level", "2", "--per-query", "--format", "json", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    per_query = json.loads(done.stdout)["per_query"]
    expected = judged_only_oracle(data.qrels, data.run, 2)
    for qid, values in per_query.items():
        want = expected.get(qid, {})
        assert values["bpref"] == want.get("bpref", 0.0), qid
        assert values["ndcg'@10"] == want.get("ndcg'@10", 0.0), qid
        assert values["mrr'@10"] == want.get("mrr'@10", 0.0), qid
        assert values["AP(judged_only=True)"] == want.get("ap'", 0.0), qid
    # Judged@10 in trec_eval's order here: ties at the cutoff may pick other ids than
    # ir_measures' order would, so the reference is the transcribed formula on the same list.
    for qid, values in per_query.items():
        ranking = ranked(data.run).get(qid, [])
        assert values["Judged@10"] == judged_reference(ranking, data.qrels[qid], 10), qid
    text = run_cli("harness", "metrics", "--gold", qrels, "--run", run, "--metrics", names,
                   cwd=tmp_path)  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0].split() == ["scope", "n", *names.split(",")]
