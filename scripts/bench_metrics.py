#!/usr/bin/env python
"""Time harness.metrics against pytrec_eval (and ranx when importable) on the same synthetic run.

    python scripts/bench_metrics.py [--queries 100000] [--depth 100] [--seed 0]

The data comes from numpy.random.default_rng(seed): every query gets 1-5 judged relevant docs
(grades 1-3, a quarter of them graded above 1) and a ranking of `depth` unique ids, each
relevant doc placed at a random rank with probability 0.6.  Ranking i gives the doc at rank r
the score depth - r, so every tool sees one order.  Timed: from the in-memory run (harness: ranked
id lists; the others: the doc -> score dicts they take) and judgements to the aggregates of the
suite below, each tool building its own structures (GoldSet; Qrels/Run; RelevanceEvaluator).
The aggregates are cross-checked and the largest gap printed.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from harness.metrics import evaluate, parse_metrics
from harness.types import GoldQuery, GoldSet

SUITE = parse_metrics("hit@5,hit@10,recall@5,recall@10,p@5,p@10,mrr@5,mrr@10,ndcg@5,ndcg@10")
TREC_NAMES = {"hit": "success", "recall": "recall", "p": "P", "ndcg": "ndcg_cut"}
RANX_NAMES = {"hit": "hit_rate", "recall": "recall", "p": "precision", "mrr": "mrr", "ndcg": "ndcg"}


def make_data(
    n_queries: int, depth: int, seed: int
) -> tuple[list[str], list[list[str]], list[dict[str, int]]]:
    rng = np.random.default_rng(seed)
    pool = [f"d{i}" for i in range(max(10 * depth, 50_000))]  # shared str objects: little memory
    qids = [f"q{i}" for i in range(n_queries)]
    rankings: list[list[str]] = []
    judgements: list[dict[str, int]] = []
    for _ in range(n_queries):
        picked = rng.choice(len(pool), size=depth + 5, replace=False)
        n_rel = int(rng.integers(1, 6))
        relevant = [pool[j] for j in picked[depth : depth + n_rel]]
        grades = np.where(rng.random(n_rel) < 0.75, 1, rng.integers(2, 4, size=n_rel))
        ranking = [pool[j] for j in picked[:depth]]
        for doc in relevant:
            if rng.random() < 0.6:
                ranking[int(rng.integers(0, depth))] = doc
        rankings.append(list(dict.fromkeys(ranking)))
        judgements.append(dict(zip(relevant, map(int, grades), strict=True)))
    return qids, rankings, judgements


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def run_harness(
    qids: list[str], rankings: list[list[str]], judgements: list[dict[str, int]]
) -> Mapping[str, float]:
    gold = GoldSet(
        tuple(GoldQuery(q, q, relevant=j) for q, j in zip(qids, judgements, strict=True)),
        source="bench",
        format="native",
        hash="bench",
    )
    return evaluate(gold, dict(zip(qids, rankings, strict=True)), SUITE).aggregate


def scored(qids: list[str], rankings: list[list[str]]) -> dict[str, dict[str, float]]:
    """The run as pytrec_eval and ranx take it: doc -> score, depth - rank."""
    return {
        q: {d: float(len(r) - i) for i, d in enumerate(r)}
        for q, r in zip(qids, rankings, strict=True)
    }


def run_pytrec_eval(
    qids: list[str], run: dict[str, dict[str, float]], judgements: list[dict[str, int]]
) -> dict[str, float]:
    import pytrec_eval

    qrels = dict(zip(qids, judgements, strict=True))
    ks = sorted({s.k for s in SUITE})
    wanted = {f"{TREC_NAMES[n]}.{','.join(map(str, ks))}" for n in TREC_NAMES}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, wanted).evaluate(run)
    # trec_eval's recip_rank has no cutoff: mrr@k is recip_rank on the run cut at k.
    for k in ks:
        cut = {q: dict(list(docs.items())[:k]) for q, docs in run.items()}
        rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut)
        for q, row in rr.items():
            per_query[q][f"mrr_{k}"] = row["recip_rank"]
    out = {}
    for spec in SUITE:
        key = f"{TREC_NAMES.get(spec.name, spec.name)}_{spec.k}"
        out[str(spec)] = float(np.mean([per_query.get(q, {}).get(key, 0.0) for q in qids]))
    return out


def run_ranx(
    qids: list[str], scored_run: dict[str, dict[str, float]], judgements: list[dict[str, int]]
) -> dict[str, float]:
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    qrels = Qrels(dict(zip(qids, judgements, strict=True)))
    run = Run(scored_run)
    names = [f"{RANX_NAMES[s.name]}@{s.k}" for s in SUITE]
    scores = ranx_evaluate(qrels, run, names, make_comparable=True)
    return {str(s): float(scores[n]) for s, n in zip(SUITE, names, strict=True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    qids, rankings, judgements = make_data(args.queries, args.depth, args.seed)
    run = scored(qids, rankings)
    suite = ", ".join(map(str, SUITE))
    print(f"{args.queries:,} queries x {args.depth} results, seed {args.seed}: {suite}")
    tools: list[tuple[str, Callable[[], Mapping[str, float]]]] = [
        ("harness", lambda: run_harness(qids, rankings, judgements)),
        ("pytrec_eval", lambda: run_pytrec_eval(qids, run, judgements)),
    ]
    try:
        import ranx  # noqa: F401

        # ranx compiles with numba on first use: warm it up on a few queries, untimed.
        run_ranx(qids[:10], {q: run[q] for q in qids[:10]}, judgements[:10])
        tools.append(("ranx", lambda: run_ranx(qids, run, judgements)))
    except ImportError:
        print("  (ranx not importable: skipped)")

    seconds: dict[str, float] = {}
    results: dict[str, Mapping[str, float]] = {}
    for name, fn in tools:
        seconds[name], results[name] = timed(fn)
    base = seconds["harness"]
    print(f"\n{'tool':<12} {'seconds':>9} {'vs harness':>11}  largest |aggregate gap| vs harness")
    for name in seconds:
        gap = max(abs(results[name][m] - results["harness"][m]) for m in results["harness"])
        ratio = seconds[name] / base
        print(f"{name:<12} {seconds[name]:9.3f} {ratio:10.1f}x  {gap:.2e}")


if __name__ == "__main__":
    main()
