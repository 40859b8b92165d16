#!/usr/bin/env python
"""Time harness.score.metrics against pytrec_eval (and ranx when importable) on the same synthetic
run.

    python scripts/bench_metrics.py [--queries 100000] [--depth 100] [--seed 0]

Data, from numpy.random.default_rng(seed): each query has 1-5 judged relevant docs (grade 1, or
2-3 for a quarter of them) and a ranking of `depth` ids drawn from a million, each relevant doc
put at a random rank with probability 0.6; repeats are removed so every tool sees the same
list, and the doc at rank r scores depth - r, so every tool sees one order.

Timed, from the run and judgements in memory to the suite's aggregates: harness.evaluate with
the GoldSet built beforehand (as a comparison builds it once for every repeat), and again with
building it; pytrec_eval building its RelevanceEvaluator and evaluating (mrr@k = recip_rank on
the run cut at k); ranx building Qrels and Run and evaluating (after an untimed numba warm-up).
Each tool's aggregates are checked against harness's and the largest gap printed.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable, Mapping

import numpy as np

from harness.score.evaluation import evaluate
from harness.score.metrics import parse_metrics
from harness.types import GoldQuery, GoldSet

SUITE = parse_metrics("hit@5,hit@10,recall@5,recall@10,p@5,p@10,mrr@5,mrr@10,ndcg@5,ndcg@10")
TREC_NAMES = {"hit": "success", "recall": "recall", "p": "P", "ndcg": "ndcg_cut"}
RANX_NAMES = {"hit": "hit_rate", "recall": "recall", "p": "precision", "mrr": "mrr", "ndcg": "ndcg"}
Scored = dict[str, dict[str, float]]


def make_data(
    n_queries: int, depth: int, seed: int
) -> tuple[list[str], list[list[str]], list[dict[str, int]]]:
    rng = np.random.default_rng(seed)
    pool = [f"d{i}" for i in range(1_000_000)]  # shared str objects keep 10M positions small
    drawn = rng.integers(0, len(pool), size=(n_queries, depth + 5)).tolist()
    n_rel = rng.integers(1, 6, size=n_queries).tolist()
    grades = np.where(rng.random((n_queries, 5)) < 0.75, 1, rng.integers(2, 4, (n_queries, 5)))
    placed = (rng.random((n_queries, 5)) < 0.6).tolist()
    where = rng.integers(0, depth, size=(n_queries, 5)).tolist()
    rankings, judgements = [], []
    for i, row in enumerate(drawn):
        relevant = [pool[j] for j in row[depth : depth + n_rel[i]]]
        ranking = [pool[j] for j in row[:depth]]
        for r, doc in enumerate(relevant):
            if placed[i][r]:
                ranking[where[i][r]] = doc
        rankings.append(list(dict.fromkeys(ranking)))
        judgements.append(dict(zip(relevant, grades[i].tolist(), strict=False)))
    return [f"q{i}" for i in range(n_queries)], rankings, judgements


def build_gold(qids: list[str], judgements: list[dict[str, int]]) -> GoldSet:
    queries = tuple(GoldQuery(q, q, relevant=j) for q, j in zip(qids, judgements, strict=True))
    return GoldSet(queries, source="bench", format="native", hash="bench")


def pytrec_eval_means(
    qids: list[str], run: Scored, judgements: list[dict[str, int]]
) -> dict[str, float]:
    import pytrec_eval

    qrels = dict(zip(qids, judgements, strict=True))
    ks = ",".join(str(k) for k in sorted({s.k for s in SUITE}))
    found = pytrec_eval.RelevanceEvaluator(qrels, {f"{m}.{ks}" for m in TREC_NAMES.values()})
    per_query = found.evaluate(run)
    for k in sorted({s.k for s in SUITE if s.name == "mrr"}):
        cut = {q: dict(list(docs.items())[:k]) for q, docs in run.items()}  # already in rank order
        rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut)
        for q, row in rr.items():
            per_query[q][f"mrr_{k}"] = row["recip_rank"]
    keys = {str(s): f"{TREC_NAMES.get(s.name, s.name)}_{s.k}" for s in SUITE}
    return {
        m: float(np.mean([per_query[q].get(key, 0.0) for q in qids])) for m, key in keys.items()
    }


def ranx_means(qids: list[str], run: Scored, judgements: list[dict[str, int]]) -> dict[str, float]:
    from ranx import Qrels, Run  # type: ignore[import-untyped]
    from ranx import evaluate as ranx_evaluate

    names = [f"{RANX_NAMES[s.name]}@{s.k}" for s in SUITE]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's type-safety notes about ranx's own casts
        qrels = Qrels(dict(zip(qids, judgements, strict=True)))
        scores = ranx_evaluate(qrels, Run(run), names, make_comparable=True)
    return {str(s): float(scores[n]) for s, n in zip(SUITE, names, strict=True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    qids, rankings, judgements = make_data(args.queries, args.depth, args.seed)
    by_id = dict(zip(qids, rankings, strict=True))
    run = {q: {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in by_id.items()}
    gold = build_gold(qids, judgements)
    print(f"{args.queries:,} queries x {args.depth} results, seed {args.seed}")
    print(f"suite: {', '.join(map(str, SUITE))}\n")

    tools: dict[str, Callable[[], Mapping[str, float]]] = {
        "harness": lambda: evaluate(gold, by_id, SUITE).aggregate,
        "harness+gold": lambda: evaluate(build_gold(qids, judgements), by_id, SUITE).aggregate,
        "pytrec_eval": lambda: pytrec_eval_means(qids, run, judgements),
    }
    try:
        import ranx  # noqa: F401
    except ImportError:
        print("(ranx is not importable: skipped)")
    else:
        ranx_means(qids[:10], {q: run[q] for q in qids[:10]}, judgements[:10])  # numba warm-up
        tools["ranx"] = lambda: ranx_means(qids, run, judgements)

    seconds: dict[str, float] = {}
    means: dict[str, Mapping[str, float]] = {}
    for name, fn in tools.items():
        start = time.perf_counter()
        means[name] = fn()
        seconds[name] = time.perf_counter() - start
    print(f"{'tool':<13} {'seconds':>8} {'x harness':>10}   largest |mean - harness mean|")
    for name, took in seconds.items():
        gap = max(abs(means[name][m] - means["harness"][m]) for m in means["harness"])
        print(f"{name:<13} {took:8.3f} {took / seconds['harness']:9.1f}x   {gap:.1e}")


if __name__ == "__main__":
    main()
