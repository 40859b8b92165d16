#!/usr/bin/env python
"""How the compare analysis scales with the gold set: seconds and microseconds per query.

    python scripts/bench_scale.py [--sizes 1000,10000,50000] [--repeats 5] [--slices 8] [--seed 0]

Times `harness.verdict.compare.compare` (everything after the replay: scoring every repeat of
both sides, the exact and resampled tests with the default 10,000 resamples, power, slices with
Holm, flips, latency over time-paired rounds) on synthetic runs: each query has one to three
judged documents, its rank redrawn per repeat so some queries drift, the candidate 5% better at
hit@10, queries spread over `--slices` slices; both runs share a pair_id so latency is paired.
One untimed compare of 200 queries runs first (as pyperf warms up): it loads the modules the
analysis imports on use (scipy.special), a once-per-process cost, not a per-query one.
Target (issue 17): 50k queries in at most 10 s, the time per query flat from 1k to 50k.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time

import numpy as np

from harness.types import GoldQuery, GoldSet, QueryResult, RefRun, Repeat
from harness.verdict.compare import compare
from harness.verdict.comparison import CompareSettings


def gold_set(n: int, slices: int, rng: np.random.Generator) -> GoldSet:
    sizes = rng.integers(1, 4, n)
    queries = tuple(
        GoldQuery(
            id=f"q{i}",
            text=f"query {i}",
            relevant={f"d{i}-{j}": 1 + (j == 0) for j in range(int(sizes[i]))},
            slice=f"s{i % slices}",
        )
        for i in range(n)
    )
    return GoldSet(queries, "bench", "native", hashlib.sha256(str(n).encode()).hexdigest())


def side(gold: GoldSet, repeats: int, boost: float, sha: str, rng: np.random.Generator) -> RefRun:
    n = len(gold)
    base_rank = rng.integers(1, 16, n)
    reps = []
    for r in range(repeats):
        drift = rng.random(n) < 0.05
        rank = np.where(drift, rng.integers(1, 16, n), base_rank)
        rank = np.where(rng.random(n) < boost, 1, rank)
        latency = (rng.lognormal(0, 0.1, n) * 1_000_000).astype(np.int64)
        results = []
        filler = tuple(f"x{j}" for j in range(20))
        for i, q in enumerate(gold.queries):
            ids = list(filler)
            ids.insert(int(rank[i]) - 1, next(iter(q.relevant)))
            results.append(
                QueryResult(q.id, tuple(ids[:20]), status=200, latency_ns=int(latency[i]))
            )
        reps.append(Repeat(r, tuple(results)))
    return RefRun(sha, sha * 40, "c", gold.hash, None, "bench", {}, tuple(reps), pair_id="p")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--slices", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    settings = CompareSettings()
    print(
        f"compare() with {args.repeats} repeats a side, {args.slices} slices, "
        f"{settings.resamples:,} resamples (target: 50k queries <= 10 s, flat per query)"
    )
    rng = np.random.default_rng(args.seed)
    warm = gold_set(200, args.slices, rng)
    compare(warm, side(warm, 2, 0.0, "a", rng), side(warm, 2, 0.05, "b", rng), settings)
    print(f"  {'queries':>8} {'seconds':>8} {'us/query':>9}  quality verdict")
    for n in map(int, args.sizes.split(",")):
        rng = np.random.default_rng(args.seed)
        gold = gold_set(n, args.slices, rng)
        base = side(gold, args.repeats, 0.0, "a", rng)
        cand = side(gold, args.repeats, 0.05, "b", rng)
        t0 = time.perf_counter()
        comparison = compare(gold, base, cand, settings)
        took = time.perf_counter() - t0
        print(f"  {n:>8,} {took:8.2f} {took / n * 1e6:9.0f}  {comparison.verdict_quality.value}")


if __name__ == "__main__":
    main()
