#!/usr/bin/env python
"""Time harness.score.metrics against pytrec_eval (and ranx when importable) on the same synthetic
run.

    python scripts/bench_metrics.py [--queries 100000] [--depth 100] [--seed 0]
    python scripts/bench_metrics.py --files [--queries 100000] [--depth 100] [--runs 2]

Data, from numpy.random.default_rng(seed): each query has 1-5 judged relevant docs (grade 1, or
2-3 for a quarter of them) and a ranking of `depth` ids drawn from a million, each relevant doc
put at a random rank with probability 0.6; repeats are removed so every tool sees the same
list, and the doc at rank r scores depth - r, so every tool sees one order.

Timed, from the run and judgements in memory to the suite's aggregates: harness.evaluate with
the GoldSet built beforehand (as a comparison builds it once for every repeat), and again with
building it; pytrec_eval building its RelevanceEvaluator and evaluating (mrr@k = recip_rank on
the run cut at k); ranx building Qrels and Run and evaluating (after an untimed numba warm-up).
Each tool's aggregates are checked against harness's and the largest gap printed.

`--files`: end to end, from files on disk to the printed means, each in a fresh process: the
same data written as TREC qrels, a topics TSV and a TREC run; `harness metrics --gold qrels
--queries topics --run run` against a script doing what a pytrec_eval user does
(`pytrec_eval.parse_qrel`, `parse_run`, `RelevanceEvaluator.evaluate`, the means). Interleaved
`--runs` times (harness, pytrec_eval, harness, ...); wall time and peak RSS (`wait4`'s ru_maxrss)
of each, the median over runs and harness / pytrec_eval side by side. Target (issue 17): at most
0.5x pytrec_eval's wall time and at most its peak memory, at 100k x 100 and 20k x 1000.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

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


PYTREC_SCRIPT = """
import sys
import numpy as np
import pytrec_eval
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
ks = "5,10"
per_query = pytrec_eval.RelevanceEvaluator(
    qrels, {"success." + ks, "recall." + ks, "P." + ks, "ndcg_cut." + ks}
).evaluate(run)
for k in (5, 10):  # mrr@k: recip_rank on the run cut at k (trec_eval's order: score, then docid)
    cut = {q: dict(sorted(d.items(), key=lambda p: (p[1], p[0]), reverse=True)[:k])
           for q, d in run.items()}
    for q, row in pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut).items():
        per_query[q]["mrr_" + str(k)] = row["recip_rank"]
names = sorted({m for row in per_query.values() for m in row})
for m in names:
    print(m, float(np.mean([per_query[q].get(m, 0.0) for q in qrels])))
"""


def write_files(
    folder: Path, qids: list[str], rankings: list[list[str]], judgements: list[dict[str, int]]
) -> tuple[Path, Path, Path]:
    qrels, topics, run = folder / "qrels.txt", folder / "topics.tsv", folder / "run.trec"
    with qrels.open("w") as f:
        for q, rel in zip(qids, judgements, strict=True):
            f.writelines(f"{q} 0 {d} {g}\n" for d, g in rel.items())
    with topics.open("w") as f:
        f.writelines(f"{q}\tquery text {q}\n" for q in qids)
    with run.open("w") as f:
        for q, ranking in zip(qids, rankings, strict=True):
            n = len(ranking)
            f.writelines(f"{q} Q0 {d} {i + 1} {n - i} bench\n" for i, d in enumerate(ranking))
    return qrels, topics, run


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one process running `argv` to completion."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:3]} exited with status {proc.returncode}")
    return wall, usage.ru_maxrss / 1024


def end_to_end(args: argparse.Namespace) -> None:
    qids, rankings, judgements = make_data(args.queries, args.depth, args.seed)
    metrics = ",".join(map(str, SUITE))
    exe = Path(sys.executable).with_name("harness")
    with tempfile.TemporaryDirectory(prefix="bench-metrics-") as tmp:
        qrels, topics, run = write_files(Path(tmp), qids, rankings, judgements)
        del rankings, judgements
        size = run.stat().st_size / 2**20
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(f"{args.queries:,} queries x {args.depth} results, seed {args.seed}: "
              f"run file {size:,.0f} MiB; suite {metrics}")
        tools = {
            "harness metrics": [str(exe), "metrics", "--gold", str(qrels), "--queries",
                                str(topics), "--run", str(run), "--metrics", metrics],
            "pytrec_eval": [sys.executable, "-c", PYTREC_SCRIPT, str(qrels), str(run)],
        }
        found: dict[str, list[tuple[float, float]]] = {name: [] for name in tools}
        for _ in range(args.runs):
            for name, argv in tools.items():
                found[name].append(timed(argv))
    print(f"end to end, median of {args.runs} interleaved runs")
    print(f"  {'':<16} {'wall s':>8} {'peak MiB':>9}")
    for name, rows in found.items():
        wall = statistics.median(r[0] for r in rows)
        peak = statistics.median(r[1] for r in rows)
        print(f"  {name:<16} {wall:8.2f} {peak:9.0f}")
    h, p = found["harness metrics"], found["pytrec_eval"]
    wall_ratio = statistics.median(a[0] / b[0] for a, b in zip(h, p, strict=True))
    peak_ratio = statistics.median(a[1] / b[1] for a, b in zip(h, p, strict=True))
    print(f"  harness / pytrec_eval: wall {wall_ratio:.2f}x (target <= 0.5x), "
          f"peak memory {peak_ratio:.2f}x (target <= 1x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--files", action="store_true", help="end to end, from files on disk")
    parser.add_argument("--runs", type=int, default=2, help="interleaved runs for --files")
    args = parser.parse_args()
    if args.files:
        end_to_end(args)
        return

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
