#!/usr/bin/env python
"""Calibrate "no measurable difference" on pooled gold sets: the bound by the holes.

    python scripts/calibrate.py --only holes [--sims 2000] [--seed 0] [--jobs 2]

Each simulation draws a deterministic service over 300 queries (70% of them hit at a rank in
1..10, as `scripts/calibrate.py`'s deterministic mode), then builds the gold set the way teams
do: by judging the baseline's top 10, its relevant document graded 1 and the rest of its top 10
graded 0 (a pool, `"judged": "pooled"`: a query judged only 0 is answerable, nothing relevant
found yet), nothing else judged. The candidate then:

- "A/A": answers exactly as the baseline (the rate reported: "no measurable difference");
- "hidden +5 pp": finds a truly relevant document the pool never saw, at rank 1, on 5% of the
  queries the baseline misses' worth (15 queries): judged against the pool it misses there as
  before, so without the bound the gold set reads it as no change. The rate reported is
  "no measurable difference" (a false no-change: the target is at most 5%);
- "-10 pp": loses its relevant document on 10% of the queries (the rate of "regressed").

Each row is decided by `harness.verdict.compare.compare` (the whole compare, scoring included)
with the default settings (band 0.05), and printed with its Wilson 95% interval; "without the
bound" repeats the hidden row with the holes' reach removed, what the rule said before.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from harness.types import GoldQuery, GoldSet, QueryResult, RefRun, Repeat, Verdict
from harness.verdict import compare as compare_module
from harness.verdict.comparison import CompareSettings

QUERIES = 300
SETTINGS = CompareSettings(resamples=100)
ROWS = (
    ("A/A", Verdict.NO_DIFFERENCE),
    ("hidden +5 pp", Verdict.NO_DIFFERENCE),
    ("hidden +5 pp, without the bound", Verdict.NO_DIFFERENCE),
    ("-10 pp", Verdict.REGRESSED),
)


def _run(rankings: list[tuple[str, ...]], gold: GoldSet, sha: str) -> RefRun:
    results = tuple(
        QueryResult(q.id, ids, status=200, latency_ns=1_000_000 + i)
        for i, (q, ids) in enumerate(zip(gold.queries, rankings, strict=True))
    )
    return RefRun(sha, sha * 40, "c", gold.hash, None, "sim", {}, (Repeat(0, results),))


def simulate(row: str, seed: int) -> Verdict:
    """One compare of the row's scenario (module docstring)."""
    rng = np.random.default_rng(seed)
    hits = rng.random(QUERIES) < 0.7
    ranks = rng.integers(1, 11, QUERIES)
    base = []
    for i in range(QUERIES):
        ids = [f"x{i}-{j}" for j in range(10)]
        if hits[i]:
            ids[ranks[i] - 1] = f"d{i}"
        base.append(tuple(ids))
    # The pool: the baseline's top 10 judged, its relevant document 1, the rest 0.
    queries = tuple(
        GoldQuery(
            id=f"q{i}",
            text=f"query {i}",
            relevant={d: int(d == f"d{i}") for d in base[i]},
            declared=True,  # a pool: judged, nothing relevant found yet, is still answerable
        )
        for i in range(QUERIES)
    )
    digest = hashlib.sha256(f"pool-{seed}".encode()).hexdigest()
    gold = GoldSet(queries, "simulated pool", "native", digest)
    cand = list(base)
    if row.startswith("hidden"):
        missed = np.flatnonzero(~hits)
        for i in rng.choice(missed, size=round(0.05 * QUERIES), replace=False).tolist():
            cand[i] = (f"new{i}", *base[i][:9])  # truly relevant, never judged
    elif row == "-10 pp":
        for i in rng.choice(np.flatnonzero(hits), size=round(0.10 * QUERIES), replace=False):
            cand[int(i)] = tuple(f"x{int(i)}-{j}" for j in range(10))
    baseline, candidate = _run(base, gold, "a"), _run(cand, gold, "b")
    if row.endswith("without the bound"):
        real = compare_module.pooled_gold
        compare_module.pooled_gold = lambda _gold: False  # type: ignore[assignment]
        try:
            return compare_module.compare(gold, baseline, candidate, SETTINGS).verdict_quality
        finally:
            compare_module.pooled_gold = real
    return compare_module.compare(gold, baseline, candidate, SETTINGS).verdict_quality


def _rate(row: str, sims: range, seed: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in sims:
        verdict = simulate(row, seed * 1_000_003 + s)
        counts[verdict.value] = counts.get(verdict.value, 0) + 1
    return counts


def main(sims: int, seed: int, jobs: int) -> int:
    from calibrate import wilson

    print(f"pooled gold sets (the baseline's top 10 judged), {QUERIES} deterministic queries, "
          f"band ±{SETTINGS.min_effect:g}, alpha {SETTINGS.alpha:g}")  # fmt: skip
    print(f"{'scenario':<32} {'sims':>5} {'rate':>7}  95% CI           verdicts")
    chunk = 50
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        tasks = [
            [pool.submit(_rate, row, range(a, min(a + chunk, sims)), seed)
             for a in range(0, sims, chunk)]
            for row, _ in ROWS
        ]  # fmt: skip
        for (row, wanted), parts in zip(ROWS, tasks, strict=True):
            counts: dict[str, int] = {}
            for part in parts:
                for key, value in part.result().items():
                    counts[key] = counts.get(key, 0) + value
            hits = counts.get(wanted.value, 0)
            lo, hi = wilson(hits, sims)
            spread = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            print(f"{row:<32} {sims:>5} {hits / sims:>7.1%}  [{lo:.1%}, {hi:.1%}]  "
                  f"{wanted.value}; {spread}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(200, 0, 2))
