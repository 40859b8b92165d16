#!/usr/bin/env python
"""Calibrate the verdict on pooled gold sets: "no measurable difference" bounded by the holes,
and calls that must hold on the judged documents alone (condensed lists).

    python scripts/calibrate.py --only holes [--sims 2000] [--seed 0] [--jobs 2]

Each simulation draws a service over 300 queries, 70% of them hit (the relevant document at a
rank in 1..10 of a 20-document answer), and builds the gold set the way teams do: by judging
one run's top 10 (the pool), its relevant document graded 1 and the rest graded 0 (a pooled set:
a query judged only 0 is answerable, nothing relevant found yet), nothing else judged.  In two
determinism modes:

- "deterministic": one run a side, every answer the same each time;
- "flaky 10%": three runs a side; on 10% of the queries each run reorders the answer (the
  relevant document at a rank redrawn in 1..15, the other documents shuffled), so the other
  runs rank documents the pool never saw, on both sides.

The scenarios (the pool made from the baseline's first run, except the last):

- "A/A": the candidate is the same service (the rate: "no measurable difference");
- "hidden +5 pp": on 15 queries the baseline misses the candidate finds a truly relevant
  document the pool never saw, at rank 1: judged against the pool it still misses there, so
  without the bound the gold set reads it as no change (the rate: a false "no measurable
  difference", at most 5% wanted);
- "-10 pp": loses its relevant document on 30 hit queries (the rate: "regressed");
- "displaced": on 30 hit queries ranks 10 documents the pool never saw above the relevant one,
  pushing it out of the top 10: "regressed" only if those ten are junk, which nobody judged
  (the rate: a "regressed" that the judgements do not support, at most 5% wanted; the honest
  answer is "inconclusive: judgments incomplete");
- "... after judging the holes": the row's gold set with every unjudged document of either
  side's top 10 judged by the truth, as `harness judge pairs --all` and a merge would (the
  displacing documents are not relevant: that displacement is a true loss);
- "displaced, pool from the candidate": the same, the other way round: the pool judged the
  candidate's first run, and the baseline ranks 10 unjudged documents above its relevant one
  on 30 queries (the rate: an unsupported "improved").

Each row is decided by `harness.verdict.decide.compare` (the whole compare, scoring included)
with the default settings (band 0.05), and printed with its Wilson 95% interval; "without the
bound" repeats a row with the holes' reach removed, "without the check" with the condensed
lists' check removed: what the rules said before.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from harness.values.types import GoldQuery, GoldSet, QueryResult, RefRun, Repeat, Verdict
from harness.verdict import decide
from harness.verdict import headline as headline_module
from harness.verdict.comparison import CompareSettings

QUERIES = 300
DEPTH = 20  # documents an answer returns
MODES = ("deterministic", "flaky 10%")
SETTINGS = CompareSettings(resamples=100)
ROWS = (
    ("A/A", Verdict.NO_DIFFERENCE),
    ("hidden +5 pp", Verdict.NO_DIFFERENCE),
    ("hidden +5 pp, without the bound", Verdict.NO_DIFFERENCE),
    ("A/A, after judging the holes", Verdict.NO_DIFFERENCE),
    ("hidden +5 pp, after judging the holes", Verdict.IMPROVED),
    ("-10 pp", Verdict.REGRESSED),
    ("displaced", Verdict.REGRESSED),
    ("displaced, after judging the holes", Verdict.REGRESSED),
    ("displaced, without the check", Verdict.REGRESSED),
    ("displaced, pool from the candidate", Verdict.IMPROVED),
    ("displaced, pool from the candidate, without the check", Verdict.IMPROVED),
)

Answers = list[list[tuple[str, ...]]]  # run x query -> ranked ids


def _run(runs: Answers, gold: GoldSet, sha: str) -> RefRun:
    repeats = tuple(
        Repeat(r, tuple(
            QueryResult(q.id, ids, status=200, latency_ns=1_000_000 + i)
            for i, (q, ids) in enumerate(zip(gold.queries, rankings, strict=True))
        ))
        for r, rankings in enumerate(runs)
    )  # fmt: skip
    return RefRun(sha, sha * 40, "c", gold.hash, None, "sim", {}, repeats)


Service = tuple[np.ndarray, np.ndarray, np.ndarray]  # per query: hit, its rank, flaky


def _service(mode: str, rng: np.random.Generator) -> Service:
    """The simulated service (module docstring): which queries it hits, where, and which
    of them it reorders run to run."""
    hits = rng.random(QUERIES) < 0.7
    ranks = rng.integers(1, 11, QUERIES)
    flaky = rng.random(QUERIES) < 0.10 if mode != "deterministic" else np.zeros(QUERIES, bool)
    return hits, ranks, flaky


def _runs(mode: str, service: Service, rng: np.random.Generator) -> Answers:
    """One side's runs of `service`: one when deterministic, else three."""
    hits, ranks, flaky = service

    def answer(i: int, rank: int | None, order: range | np.ndarray) -> tuple[str, ...]:
        others = [f"x{i}-{j}" for j in order]
        if rank is not None:
            others.insert(rank - 1, f"d{i}")
        return tuple(others[:DEPTH])

    runs: Answers = []
    for _ in range(1 if mode == "deterministic" else 3):
        run = []
        for i in range(QUERIES):
            if flaky[i]:
                rank = int(rng.integers(1, 16)) if hits[i] else None
                run.append(answer(i, rank, rng.permutation(DEPTH + 5)))
            else:
                run.append(answer(i, int(ranks[i]) if hits[i] else None, range(DEPTH)))
        runs.append(run)
    return runs


def _pool(judged: list[tuple[str, ...]], seed: int) -> GoldSet:
    """The gold set a team builds by judging one run's top 10."""
    queries = tuple(
        GoldQuery(
            id=f"q{i}",
            text=f"query {i}",
            relevant={d: int(d == f"d{i}") for d in ids[:10]},
            declared=True,  # a pool: judged, nothing relevant found yet, is still answerable
        )
        for i, ids in enumerate(judged)
    )
    digest = hashlib.sha256(f"pool-{seed}".encode()).hexdigest()
    return GoldSet(queries, "simulated pool", "native", digest)


def _stable_hits(runs: Answers) -> np.ndarray:
    """The queries whose relevant document every run ranks in its top 10."""
    return np.array([all(f"d{i}" in run[i][:10] for run in runs) for i in range(QUERIES)])


def _displace(runs: Answers, chosen: list[int]) -> Answers:
    """Ten documents nobody judged above everything, on the `chosen` queries, in every run."""
    out = [list(run) for run in runs]
    for run in out:
        for i in chosen:
            run[i] = (*(f"new{i}-{j}" for j in range(10)), *run[i])[:DEPTH]
    return out


def simulate(row: str, mode: str, seed: int) -> Verdict:
    """One compare of the row's scenario in `mode` (module docstring)."""
    rng = np.random.default_rng(seed)
    service = _service(mode, rng)
    base, cand = _runs(mode, service, rng), _runs(mode, service, rng)
    if row.startswith("displaced, pool from the candidate"):
        # The pool judged the candidate's first run; the baseline is the one displaced.
        chosen = rng.choice(np.flatnonzero(_stable_hits(cand)), 30, replace=False).tolist()
        return _decide(row, _pool(cand[0], seed), _displace(base, chosen), cand)
    gold = _pool(base[0], seed)
    if row.startswith("hidden"):
        missed = np.flatnonzero(~service[0])
        chosen = rng.choice(missed, round(0.05 * QUERIES), replace=False).tolist()
        cand = [[(f"new{i}", *ids[: DEPTH - 1]) if i in chosen else ids
                 for i, ids in enumerate(run)] for run in cand]  # fmt: skip
    elif row == "-10 pp":
        chosen = rng.choice(np.flatnonzero(_stable_hits(base)), 30, replace=False).tolist()
        cand = [[tuple(d for d in ids if d != f"d{i}") if i in chosen else ids
                 for i, ids in enumerate(run)] for run in cand]  # fmt: skip
    elif row.startswith("displaced"):
        chosen = rng.choice(np.flatnonzero(_stable_hits(base)), 30, replace=False).tolist()
        cand = _displace(cand, chosen)
    return _decide(row, gold, base, cand)


def _judged(gold: GoldSet, sides: tuple[Answers, Answers]) -> GoldSet:
    """`gold` with every unjudged document of either side's top 10 judged by the truth (the
    relevant document d{i} and the new one of the hidden gain are relevant; the rest, the
    displacing ones included, are not): what `harness judge pairs --all` and a merge give."""
    queries = []
    for i, q in enumerate(gold.queries):
        shown = {d for runs in sides for run in runs for d in run[i][:10]}
        new = {d: int(d in (f"d{i}", f"new{i}")) for d in sorted(shown - set(q.relevant))}
        queries.append(GoldQuery(q.id, q.text, relevant={**q.relevant, **new}, declared=True))
    digest = hashlib.sha256((gold.hash + "judged").encode()).hexdigest()
    return GoldSet(tuple(queries), "simulated pool, judged", "native", digest)


def _decide(row: str, gold: GoldSet, base: Answers, cand: Answers) -> Verdict:
    if "after judging" in row:
        gold = _judged(gold, (base, cand))
    with contextlib.ExitStack() as stack:
        if row.endswith("without the bound"):
            stack.enter_context(_patched("hidden", lambda *_a, **_k: None))
        if row.endswith("without the check"):
            stack.enter_context(_patched("unheld", lambda *_a, **_k: None))
        c = decide.compare(gold, _run(base, gold, "a"), _run(cand, gold, "b"), SETTINGS)
        return c.verdict_quality


@contextlib.contextmanager
def _patched(name: str, value: object) -> Iterator[None]:
    real = getattr(headline_module, name)
    setattr(headline_module, name, value)
    try:
        yield
    finally:
        setattr(headline_module, name, real)


def _rate(row: str, mode: str, sims: range, seed: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in sims:
        verdict = simulate(row, mode, seed * 1_000_003 + s)
        counts[verdict.value] = counts.get(verdict.value, 0) + 1
    return counts


def main(sims: int, seed: int, jobs: int) -> int:
    from calibrate import wilson

    print(f"pooled gold sets (one run's top 10 judged), {QUERIES} queries, "
          f"band ±{SETTINGS.min_effect:g}, alpha {SETTINGS.alpha:g}")  # fmt: skip
    print(f"{'scenario':<54} {'determinism':<13} {'sims':>5} {'rate':>7}  95% CI   verdicts")
    chunk = 25
    cells = [(row, wanted, mode) for row, wanted in ROWS for mode in MODES]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        tasks = [
            [pool.submit(_rate, row, mode, range(a, min(a + chunk, sims)), seed)
             for a in range(0, sims, chunk)]
            for row, _, mode in cells
        ]  # fmt: skip
        for (row, wanted, mode), parts in zip(cells, tasks, strict=True):
            counts: dict[str, int] = {}
            for part in parts:
                for key, value in part.result().items():
                    counts[key] = counts.get(key, 0) + value
            hits = counts.get(wanted.value, 0)
            lo, hi = wilson(hits, sims)
            spread = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            print(f"{row:<54} {mode:<13} {sims:>5} {hits / sims:>7.1%}  [{lo:.1%}, {hi:.1%}]  "
                  f"{wanted.value}; {spread}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(200, 0, 2))
