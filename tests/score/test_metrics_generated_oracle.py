"""harness.score.metrics against pytrec_eval and ir_measures on generated data: the README's
agreement claim, checked in every checkout (no ../shared needed).

tests/score/test_metrics_oracle.py does the same on real BM25 runs over SciFact and Cranfield, which
skip in a fresh clone; this file builds seeded synthetic collections that stress the same rules:
graded judgements 0-4 (grade-0 rows judged non-relevant), many score ties (scores on a coarse
grid; trec_eval breaks ties by docid descending, as harness.score.runfile.trec_order does),
unjudged documents in the run, queries missing from the run (0 on every metric, as
`trec_eval -c`), queries with an empty ranking, and rankings shorter than the cutoffs.

Expected values: pytrec_eval-terrier through test_metrics_oracle.oracle (success_k, P_k,
recall_k, ndcg_cut_k, map_cut_k; recip_rank on the run cut at k; ndcg_cut_k on 2**grade - 1
for ndcg_burges), and ir_measures' RR@k for mrr@k on a tie-free run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import ir_measures
import pytest
from test_metrics_oracle import KS, SPECS, Scored, oracle, ranked

from harness.score.evaluation import evaluate
from harness.values.types import GoldQuery, GoldSet

SEEDS = range(6)


@dataclass(frozen=True)
class Synthetic:
    gold: GoldSet
    qrels: dict[str, dict[str, int]]
    run: Scored


def synthetic(seed: int, *, ties: bool, queries: int = 60, docs: int = 400) -> Synthetic:
    """A seeded collection: every query answerable (some grade >= 1; unanswerable queries are
    left out of harness's means by design, which pytrec_eval does not know about)."""
    rng = random.Random(seed)
    pool = [f"d{i:03d}" for i in range(docs)]
    qrels: dict[str, dict[str, int]] = {}
    run: Scored = {}
    for n in range(queries):
        qid = f"q{n:02d}"
        judged = rng.sample(pool, rng.randint(1, 25))
        grades = {d: rng.choice([0, 0, 1, 1, 2, 3, 4]) for d in judged}
        grades[judged[0]] = max(grades[judged[0]], 1)
        qrels[qid] = grades
        if n % 7 == 3:
            continue  # missing from the run
        if n % 11 == 5:
            run[qid] = {}  # present, but an empty ranking
            continue
        depth = rng.choice([3, 8, 15, 40, 120])  # some shorter than the cutoffs
        # Retrieved: some judged documents (relevant or not), the rest unjudged.
        hits = rng.sample(judged, rng.randint(0, len(judged)))
        others = rng.sample([d for d in pool if d not in grades], depth)
        chosen = (hits + others)[:depth]
        if ties:
            scores = {d: float(rng.randint(0, 6)) / 2 for d in chosen}
        else:
            scores = {d: rng.random() * 10 for d in chosen}
        run[qid] = scores
    gold = GoldSet(
        tuple(GoldQuery(q, f"query {q}", relevant=r) for q, r in qrels.items()),
        source=f"<synthetic seed {seed}>",
        format="native",
        hash=f"synthetic-{seed}",
    )
    return Synthetic(gold, qrels, run)


def assert_agrees(data: Synthetic, rel_level: int) -> None:
    expected = oracle(data.qrels, data.run, rel_level)
    ev = evaluate(data.gold, ranked(data.run), SPECS, rel_level)
    assert ev.n == len(data.gold)
    assert set(ev.missing) == set(ev.query_ids) - set(data.run)
    zeros = dict.fromkeys(map(str, SPECS), 0.0)
    for qid in ev.query_ids:
        want = expected.get(qid, zeros)  # absent from the run (or nothing returned): 0
        got = ev.per_query[qid]
        bad = {m: (got[m], want[m]) for m in want if abs(got[m] - want[m]) > 1e-9}
        assert not bad, f"rel_level={rel_level} query {qid}: {bad}"
    for metric in map(str, SPECS):
        mean = sum(expected.get(q, zeros)[metric] for q in ev.query_ids) / ev.n
        assert ev.aggregate[metric] == pytest.approx(mean, abs=1e-9), metric


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("ties", [True, False], ids=["ties", "no-ties"])
@pytest.mark.parametrize("rel_level", [1, 2, 3])
def test_generated_runs_agree_with_pytrec_eval(seed: int, ties: bool, rel_level: int) -> None:
    assert_agrees(synthetic(seed, ties=ties), rel_level)


@pytest.mark.parametrize("seed", SEEDS)
def test_mrr_agrees_with_ir_measures_rr_at_k(seed: int) -> None:
    # ir_measures' RR@k (msmarco provider) breaks score ties by docid ascending, trec_eval
    # descending: so this second oracle gets the tie-free run.
    data = synthetic(seed, ties=False)
    expected: Scored = {}
    for m in ir_measures.iter_calc([ir_measures.RR @ k for k in KS], data.qrels, data.run):
        expected.setdefault(m.query_id, {})[f"mrr@{m.measure['cutoff']}"] = m.value
    ev = evaluate(data.gold, ranked(data.run), [f"mrr@{k}" for k in KS])
    for qid in ev.query_ids:
        want = expected.get(qid, dict.fromkeys(ev.per_query[qid], 0.0))
        assert ev.per_query[qid] == pytest.approx(want, abs=1e-9), qid


def test_the_generated_data_exercises_what_it_claims_to() -> None:
    data = synthetic(0, ties=True)
    rankings = ranked(data.run)
    tied = sum(len(docs) - len(set(docs.values())) for docs in data.run.values())
    assert tied > 500  # the tie rule decides many positions
    assert len(data.run) < len(data.gold)  # some queries missing
    assert any(not docs for docs in data.run.values())  # some rankings empty
    assert any(0 < len(r) < max(KS) for r in rankings.values())  # shorter than a cutoff
    grades = {g for docs in data.qrels.values() for g in docs.values()}
    assert grades == {0, 1, 2, 3, 4}
    unjudged = {d for q, docs in data.run.items() for d in docs if d not in data.qrels[q]}
    assert unjudged
    # Some query has relevant documents at or above each level, so no level is vacuous.
    for level in (1, 2, 3):
        assert any(max(r.values()) >= level for r in data.qrels.values())
    # And the values are not all 0 or 1: the comparison has something to disagree about.
    ev = evaluate(data.gold, rankings, ["ndcg@10", "ap@100"])
    assert 0.05 < ev.aggregate["ndcg@10"] < 0.95 and 0.0 < ev.aggregate["ap@100"] < 1.0


# Uncut (whole-ranking) AP, nDCG and RR: trec_eval's map, ndcg and recip_rank, as pytrec_eval
# computes them over the trec_eval-sorted run, and ir_measures' AP, nDCG and RR on a tie-free run.
UNCUT = {"map": "map", "ndcg": "ndcg", "recip_rank": "recip_rank"}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("ties", [True, False], ids=["ties", "no-ties"])
@pytest.mark.parametrize("rel_level", [1, 2])
def test_uncut_metrics_agree_with_pytrec_eval(seed: int, ties: bool, rel_level: int) -> None:
    import pytrec_eval

    data = synthetic(seed, ties=ties)
    evaluator = pytrec_eval.RelevanceEvaluator(data.qrels, set(UNCUT), relevance_level=rel_level)
    expected = evaluator.evaluate(data.run)
    ev = evaluate(data.gold, ranked(data.run), list(UNCUT), rel_level)
    for qid in ev.query_ids:
        want = expected.get(qid, dict.fromkeys(UNCUT, 0.0))
        got = ev.per_query[qid]
        for ours, theirs in UNCUT.items():
            assert got[ours] == pytest.approx(want[theirs], abs=1e-9), (qid, ours)


@pytest.mark.parametrize("seed", SEEDS)
def test_uncut_metrics_agree_with_ir_measures(seed: int) -> None:
    data = synthetic(seed, ties=False)
    names = ["AP", "nDCG", "RR"]
    expected: Scored = {}
    measures = list(map(ir_measures.parse_measure, names))
    for m in ir_measures.iter_calc(measures, data.qrels, data.run):
        expected.setdefault(m.query_id, {})[str(m.measure)] = m.value
    ev = evaluate(data.gold, ranked(data.run), names)
    assert list(ev.columns) == names  # printed back as given
    for qid in ev.query_ids:
        want = expected.get(qid, dict.fromkeys(names, 0.0))
        assert ev.per_query[qid] == pytest.approx(want, abs=1e-9), qid
