"""harness.score.metrics against pytrec_eval (trec_eval 9) on real BM25 runs over public
collections.

Expected values come from pytrec_eval-terrier: success_k (our hit@k), P_k, recall_k, ndcg_cut_k,
map_cut_k (our ap@k); recip_rank on the run cut at its trec_eval-sorted top k (our mrr@k, also
checked against ir_measures' RR@k); ndcg_cut_k on qrels mapped to 2**grade - 1 (ndcg_burges@k).
pytrec_eval leaves out a query absent from the run; we score it 0 (`trec_eval -c`), so the
expected mean fills those with 0.  SciFact has one or a few binary judgements per query,
Cranfield graded 0-4 with many per query (grade 0 rows are judged non-relevant, read as is).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import ir_measures
import numpy as np
import pytest
import pytrec_eval
from conftest import shared_collection

from harness.score.evaluation import evaluate
from harness.score.metrics import parse_metrics
from harness.score.runfile import load_run, trec_order
from harness.values.types import GoldQuery, GoldSet

KS = (1, 3, 5, 10, 20, 100)
TREC_MEASURES = {
    "hit": "success",
    "p": "P",
    "recall": "recall",
    "ndcg": "ndcg_cut",
    "ap": "map_cut",
}
SPECS = parse_metrics(
    ",".join(f"{name}@{k}" for name in (*TREC_MEASURES, "mrr", "ndcg_burges") for k in KS)
)
TOKEN = re.compile(r"[a-z0-9]+")
Scored = dict[str, dict[str, float]]

# --------------------------------------------------------------------------- a small BM25


@dataclass(frozen=True)
class Bm25:
    """Okapi BM25 (k1=0.9, b=0.4, Lucene's idf) over title + text, scored with numpy."""

    doc_ids: list[str]
    postings: Mapping[str, tuple[np.ndarray, np.ndarray]]  # term -> (doc index, tf part)
    idf: Mapping[str, float]

    @classmethod
    def build(cls, corpus: Path, k1: float = 0.9, b: float = 0.4) -> Bm25:
        doc_ids, counts = [], []
        with corpus.open(encoding="utf-8") as lines:
            for line in lines:
                doc = json.loads(line)
                doc_ids.append(doc["id"])
                counts.append(Counter(TOKEN.findall(f"{doc['title']} {doc['text']}".lower())))
        lengths = np.array([sum(c.values()) for c in counts], dtype=np.float64)
        norm = k1 * (1 - b + b * lengths / lengths.mean())
        by_term: dict[str, tuple[list[int], list[int]]] = {}
        for i, c in enumerate(counts):
            for term, tf in c.items():
                docs, tfs = by_term.setdefault(term, ([], []))
                docs.append(i)
                tfs.append(tf)
        postings, idf = {}, {}
        n = len(doc_ids)
        for term, (docs, tfs) in by_term.items():
            index, freq = np.array(docs), np.array(tfs, dtype=np.float64)
            postings[term] = (index, freq * (k1 + 1) / (freq + norm[index]))
            idf[term] = math.log(1 + (n - len(docs) + 0.5) / (len(docs) + 0.5))
        return cls(doc_ids, postings, idf)

    def search(self, text: str, depth: int = 100) -> dict[str, float]:
        scores = np.zeros(len(self.doc_ids))
        for term in set(TOKEN.findall(text.lower())):
            if term in self.postings:
                index, part = self.postings[term]
                scores[index] += self.idf[term] * part
        top = np.argsort(-scores, kind="stable")[:depth]
        return {self.doc_ids[i]: float(scores[i]) for i in top if scores[i] > 0}


@dataclass(frozen=True)
class Collection:
    gold: GoldSet
    qrels: dict[str, dict[str, int]]
    run: Scored  # BM25 top 100, every 7th query left out


@cache
def collection(name: str) -> Collection:
    path = shared_collection(name)
    qrels: dict[str, dict[str, int]] = {}
    for row in (path / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, grade = row.split("\t")
        qrels.setdefault(qid, {})[doc] = int(grade)
    lines = (path / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line) for line in lines]
    queries = [q for q in queries if q["id"] in qrels]
    gold = GoldSet(
        tuple(GoldQuery(q["id"], q["text"], relevant=qrels[q["id"]]) for q in queries),
        source=str(path),
        format="beir",
        hash=name,
    )
    index = Bm25.build(path / "corpus.jsonl")
    run = {q["id"]: index.search(q["text"]) for i, q in enumerate(queries) if i % 7 != 3}
    return Collection(gold, qrels, run)


def rounded(run: Scored) -> Scored:
    """Scores rounded to 1 decimal: many ties, which trec_eval breaks by docid descending."""
    return {q: {d: round(s, 1) for d, s in docs.items()} for q, docs in run.items()}


def ranked(run: Scored) -> dict[str, list[str]]:
    """The run as harness sees it: each query's ids in runfile's (= trec_eval's) order."""
    return {q: [d for d, _ in trec_order(docs.items())] for q, docs in run.items()}


def cut(run: Scored, k: int) -> Scored:
    return {q: dict(trec_order(docs.items())[:k]) for q, docs in run.items()}


# --------------------------------------------------------------------------- the oracle


def oracle(qrels: dict[str, dict[str, int]], run: Scored, rel_level: int) -> Scored:
    """Expected per-query values keyed by our metric names, from pytrec_eval."""
    cutoffs = ",".join(map(str, KS))
    measures = {f"{m}.{cutoffs}" for m in TREC_MEASURES.values()}
    found = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=rel_level).evaluate(run)
    names = [(f"{ours}@{k}", f"{theirs}_{k}") for ours, theirs in TREC_MEASURES.items() for k in KS]
    out: Scored = {q: {ours: row[theirs] for ours, theirs in names} for q, row in found.items()}
    burges = {
        q: {d: 2**g - 1 if g > 0 else g for d, g in docs.items()} for q, docs in qrels.items()
    }
    graded = pytrec_eval.RelevanceEvaluator(burges, {f"ndcg_cut.{cutoffs}"}).evaluate(run)
    for q, row in graded.items():
        out[q].update({f"ndcg_burges@{k}": row[f"ndcg_cut_{k}"] for k in KS})
    for k in KS:
        rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}, relevance_level=rel_level)
        for q, row in rr.evaluate(cut(run, k)).items():
            out[q][f"mrr@{k}"] = row["recip_rank"]
    return out


def assert_agrees(name: str, variant: str, rel_level: int) -> None:
    data = collection(name)
    run = rounded(data.run) if variant == "rounded" else data.run
    expected = oracle(data.qrels, run, rel_level)
    ev = evaluate(data.gold, ranked(run), SPECS, rel_level)
    assert ev.n == len(data.gold) and set(ev.missing) == set(ev.query_ids) - set(run)
    zeros = dict.fromkeys(map(str, SPECS), 0.0)
    for qid in ev.query_ids:
        want = expected.get(qid, zeros)  # absent from the run: 0, as trec_eval -c
        got = ev.per_query[qid]
        bad = {m: (got[m], want[m]) for m in want if abs(got[m] - want[m]) > 1e-9}
        assert not bad, f"{name} {variant} rel_level={rel_level} query {qid}: {bad}"
    for metric in map(str, SPECS):
        mean = sum(expected.get(q, zeros)[metric] for q in ev.query_ids) / ev.n
        assert ev.aggregate[metric] == pytest.approx(mean, abs=1e-9), metric


@pytest.mark.parametrize("variant", ["exact", "rounded"])
def test_scifact_agrees_with_pytrec_eval(variant: str) -> None:
    assert_agrees("scifact", variant, rel_level=1)


@pytest.mark.parametrize("variant", ["exact", "rounded"])
@pytest.mark.parametrize("rel_level", [1, 3])
def test_cranfield_graded_agrees_with_pytrec_eval(variant: str, rel_level: int) -> None:
    assert_agrees("cranfield", variant, rel_level)


def test_the_runs_exercise_what_they_claim_to() -> None:
    for name in ("scifact", "cranfield"):
        data = collection(name)
        ties = sum(len(docs) - len(set(docs.values())) for docs in rounded(data.run).values())
        assert ties > 1000, f"{name}: rounding made too few ties to test the tie rule"
        assert 0 < len(data.run) < len(data.gold)  # some queries are missing from the run
    ev = evaluate(collection("scifact").gold, ranked(collection("scifact").run), ["ndcg@10"])
    assert 0.5 < ev.aggregate["ndcg@10"] < 0.75  # BM25 on SciFact: about 0.66 with all queries
    grades = {g for docs in collection("cranfield").qrels.values() for g in docs.values()}
    assert grades == {0, 1, 2, 3, 4}


def test_mrr_agrees_with_ir_measures_rr_at_k() -> None:
    # ir_measures computes RR@k with its msmarco provider, which breaks score ties by docid
    # ascending (trec_eval: descending): on the rounded run 4 of 6 cutoffs differ for SciFact
    # query 72, so this second oracle gets the tie-free run.
    data = collection("scifact")
    expected: Scored = {}
    for m in ir_measures.iter_calc([ir_measures.RR @ k for k in KS], data.qrels, data.run):
        expected.setdefault(m.query_id, {})[f"mrr@{m.measure['cutoff']}"] = m.value
    ev = evaluate(data.gold, ranked(data.run), [f"mrr@{k}" for k in KS])
    assert set(expected) == set(ev.query_ids)  # it scores queries absent from the run 0 too
    for qid, want in expected.items():
        assert ev.per_query[qid] == pytest.approx(want, abs=1e-9), qid


def test_a_trec_run_file_round_trip_gives_the_same_scores(tmp_path: Path) -> None:
    data = collection("cranfield")
    run = rounded(data.run)
    path = tmp_path / "run.trec"
    with path.open("w", encoding="utf-8") as out:
        for qid, docs in run.items():
            # Written in an order trec_eval would not use, with a meaningless rank column.
            for rank, (doc, score) in enumerate(sorted(docs.items())):
                out.write(f"{qid} Q0 {doc} {rank % 3} {score} bm25\n")
    loaded = load_run(path)
    assert loaded.format == "trec" and loaded.rankings == {
        q: tuple(r) for q, r in ranked(run).items()
    }
    expected = oracle(data.qrels, run, 1)
    ev = evaluate(data.gold, loaded.rankings, SPECS)
    for qid in expected:
        assert ev.per_query[qid] == pytest.approx(expected[qid], abs=1e-9), qid
