"""The shortcuts that keep the compare analysis linear give what the plain per-query formulas
give: top-k drift, first relevant ranks, errored answers; and `compare` is a function of its
inputs and seed."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np

from harness.score.metrics import dedupe
from harness.types import ErrorKind, GoldQuery, GoldSet, QueryResult, RefRun, Repeat
from harness.verdict import scopes, validity
from harness.verdict.compare import compare
from harness.verdict.comparison import CompareSettings


def _gold(n: int) -> GoldSet:
    queries = tuple(
        GoldQuery(id=f"q{i}", text=f"t{i}", relevant={f"d{i}": 2, f"e{i}": 1}, slice=f"s{i % 3}")
        for i in range(n)
    )
    return GoldSet(queries, "test", "native", hashlib.sha256(str(n).encode()).hexdigest())


def _run(gold: GoldSet, seed: int, repeats: int = 4) -> RefRun:
    rng = np.random.default_rng(seed)
    reps = []
    base = rng.integers(0, 12, len(gold))
    for r in range(repeats):
        results = []
        for i, q in enumerate(gold.queries):
            rank = int(rng.integers(0, 12)) if rng.random() < 0.3 else int(base[i])
            ids = [f"x{j % 7}" for j in range(10)]  # duplicates: dedupe matters
            ids.insert(rank, f"d{i}" if rng.random() < 0.7 else f"e{i}")
            results.append(QueryResult(q.id, tuple(ids), status=200, latency_ns=1_000_000 + i))
        reps.append(Repeat(r, tuple(results)))
    return RefRun("r", "a" * 40, "c", gold.hash, None, "test", {}, tuple(reps), pair_id="p")


def _reference_rank(ids: tuple[str, ...], query: GoldQuery, rel_level: int) -> int | None:
    for rank, doc in enumerate(dedupe(ids), start=1):
        if query.relevant.get(doc, 0) >= rel_level:
            return rank
    return None


def test_topk_drift_and_ranks_equal_the_per_query_formulas() -> None:
    gold = _gold(300)
    settings = CompareSettings()
    ids = [q.id for q in gold.queries]
    side = scopes.score_side(gold, validity.usable(_run(gold, 1)), ids, settings)
    for k in (1, 3, 5, 10):
        expected = [len({dedupe(a[qid].ids)[:k] for a in side.answers}) > 1 for qid in ids]
        assert side.topk_drift(ids, k).tolist() == expected
    for level in (1, 2):
        for q in gold.queries:
            expected_ranks = [_reference_rank(a[q.id].ids, q, level) for a in side.answers]
            assert side.ranks(q, level) == expected_ranks


def test_errored_answers_are_counted_with_or_without_the_shortcut() -> None:
    gold = _gold(50)
    run = _run(gold, 2, repeats=3)
    assert validity.errored_problems(gold, run, "baseline", 0) == ([], [])
    first = run.repeats[1]
    broken = list(first.results)
    broken[7] = replace(broken[7], ids=(), error=ErrorKind.TIMEOUT)
    del broken[9]  # q9 has no answer in that repeat: "missing"
    run = replace(
        run, repeats=(run.repeats[0], replace(first, results=tuple(broken)), run.repeats[2])
    )
    invalid, _ = validity.errored_problems(gold, run, "baseline", 0)
    assert len(invalid) == 1 and "2 errored answers" in invalid[0]
    assert "missing 1" in invalid[0] and "timeout 1" in invalid[0] and "q7, q9" in invalid[0]
    kinds = {k.kind: (k.count, k.asked) for k in validity.error_kinds(gold, run, "baseline")}
    assert kinds == {"missing": (1, 150), "timeout": (1, 150)}


def test_compare_is_a_function_of_its_inputs_and_seed() -> None:
    gold = _gold(400)
    base, cand = _run(gold, 3), replace(_run(gold, 4), sha="b" * 40)
    settings = CompareSettings()
    first = compare(gold, base, cand, settings)
    again = compare(gold, base, cand, settings)
    assert first == again
    other = compare(gold, base, cand, replace(settings, seed=settings.seed + 1))
    assert [r.metric for r in other.overall.rows] == [r.metric for r in first.overall.rows]
