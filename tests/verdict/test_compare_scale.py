"""The shortcuts that keep the compare analysis linear give what the plain per-query formulas
give: top-k drift, first relevant ranks, errored answers; and `compare` is a function of its
inputs and seed."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.results.records import load_run, save_run
from harness.score import evaluation
from harness.score.evaluation import Evaluation, evaluate, evaluate_runs
from harness.score.judged import dedupe
from harness.values.types import ErrorKind, GoldQuery, GoldSet, QueryResult, RefRun, Repeat
from harness.verdict import decide, holes, overlap, scopes, validity
from harness.verdict.comparison import CompareSettings
from harness.verdict.decide import compare


def _gold(n: int) -> GoldSet:
    queries = tuple(
        GoldQuery(id=f"q{i}", text=f"t{i}", relevant={f"d{i}": 2, f"e{i}": 1}, slice=f"s{i % 3}")
        for i in range(n)
    )
    return GoldSet(queries, "test", "native", hashlib.sha256(str(n).encode()).hexdigest())


def _run(gold: GoldSet, seed: int, repeats: int = 4, unique: int = 7, size: int = 10) -> RefRun:
    rng = np.random.default_rng(seed)
    reps = []
    base = rng.integers(0, size + 2, len(gold))
    for r in range(repeats):
        results = []
        for i, q in enumerate(gold.queries):
            rank = int(rng.integers(0, size + 2)) if rng.random() < 0.3 else int(base[i])
            ids = [f"x{j % unique}" for j in range(size)]  # duplicates: dedupe matters
            ids.insert(rank, f"d{i}" if rng.random() < 0.7 else f"e{i}")
            results.append(QueryResult(q.id, tuple(ids), status=200, latency_ns=1_000_000 + i))
        reps.append(Repeat(r, tuple(results)))
    return RefRun("r", "a" * 40, "c", gold.hash, None, "test", {}, tuple(reps), pair_id="p")


def _reference_rank(ids: tuple[str, ...], query: GoldQuery, rel_level: int) -> int | None:
    for rank, doc in enumerate(dedupe(ids), start=1):
        if query.relevant.get(doc, 0) >= rel_level:
            return rank
    return None


@pytest.mark.parametrize("unique, size", [(7, 10), (25, 30)])  # some ranks past max_k (10)
def test_topk_drift_and_ranks_equal_the_per_query_formulas(unique: int, size: int) -> None:
    gold = _gold(300)
    settings = CompareSettings()
    ids = [q.id for q in gold.queries]
    run = _run(gold, 1, unique=unique, size=size)
    side = scopes.score_side(gold, validity.usable(run), ids, settings)
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


# --------------------------------------------------------------------------- pooled scoring


def _random_case(
    seed: int, texts: bool = False
) -> tuple[GoldSet, list[dict[str, tuple[str, ...]]], list[dict[str, tuple[str | None, ...]]]]:
    """A gold set (graded, some unanswerable, some outranks pairs, spans) and runs that repeat
    each other's answers, drop queries, hold duplicates and differ in length (so in width)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    queries = []
    for i in range(n):
        docs = [f"d{j}" for j in rng.choice(12, int(rng.integers(0, 6)), replace=False)]
        relevant = {d: int(rng.integers(0, 4)) for d in docs}
        spans = {d: ("ab",) for d, g in relevant.items() if g and texts}
        pairs = (("d1", "d2"),) if rng.random() < 0.2 else ()
        queries.append(
            GoldQuery(f"q{i}", "t", f"s{i % 3}", relevant, outranks=pairs, spans=spans)
        )
    gold = GoldSet(tuple(queries), "test", "native", "h")
    runs, run_texts = [], []
    for _ in range(int(rng.integers(1, 7))):
        run, got = {}, {}
        previous = runs[int(rng.integers(0, len(runs)))] if runs and rng.random() < 0.7 else {}
        for q in queries:
            if q.id in previous and rng.random() < 0.8:
                run[q.id] = previous[q.id]
            elif rng.random() < 0.9:
                size = int(rng.integers(0, 16))
                run[q.id] = tuple(f"d{j}" for j in rng.integers(0, 14, size))
            else:
                continue
            got[q.id] = tuple(
                None if rng.random() < 0.1 else "xxabyy"[: int(rng.integers(0, 7))]
                for _ in run[q.id]
            )
        runs.append(run)
        run_texts.append(got)
    return gold, runs, run_texts


def _same(a: Evaluation, b: Evaluation) -> None:
    assert a.query_ids == b.query_ids and list(a.columns) == list(b.columns)
    for name in a.columns:
        assert a.columns[name].tobytes() == b.columns[name].tobytes(), name
        assert a.columns[name].dtype == b.columns[name].dtype
    assert dict(a.aggregate) == dict(b.aggregate)
    assert dict(a.slices) == dict(b.slices)
    assert (a.no_answer, a.outranks, a.missing, a.extra) == (
        b.no_answer, b.outranks, b.missing, b.extra
    )


def test_pooled_scoring_is_bit_identical_to_scoring_each_run() -> None:
    specs = ["hit@1", "hit@5", "recall@10", "p@3", "mrr@10", "ndcg@5", "ndcg@10", "mrr", "ndcg",
             "ap@10", "ndcg_burges@5"]
    for seed in range(150):
        gold, runs, _ = _random_case(seed)
        for level in (1, 2):
            pooled = evaluate_runs(gold, runs, specs, level)
            assert len(pooled.evaluations) == len(runs)
            for run, got in zip(runs, pooled.evaluations, strict=True):
                _same(got, evaluate(gold, run, specs, level))


def test_pooled_scoring_with_texts_is_bit_identical() -> None:
    specs = ["context_precision@5", "context_recall@10", "ndcg@10"]
    for seed in range(60):
        gold, runs, texts = _random_case(seed, texts=True)
        pooled = evaluate_runs(gold, runs, specs, texts=texts)
        for run, text, got in zip(runs, texts, pooled.evaluations, strict=True):
            _same(got, evaluate(gold, run, specs, texts=text))


def test_compare_with_pooled_scoring_equals_scoring_each_repeat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The whole Comparison (every p, interval, flip) as when each repeat is scored alone."""
    real = evaluation.evaluate_runs

    def each_alone(gold: GoldSet, runs: Any, specs: Any, rel_level: int, texts: Any) -> Any:
        pooled = real(gold, runs, specs, rel_level, texts=texts)
        alone = [
            evaluate(gold, run, specs, rel_level, texts=None if texts is None else texts[r])
            for r, run in enumerate(runs)
        ]
        return replace(pooled, evaluations=tuple(alone))

    gold = _gold(400)
    base, cand = _run(gold, 5), replace(_run(gold, 6), sha="b" * 40)
    settings = CompareSettings(resamples=2000)
    pooled = compare(gold, base, cand, settings)
    monkeypatch.setattr(scopes, "evaluate_runs", each_alone)
    assert compare(gold, base, cand, settings) == pooled



def _pooled(n: int) -> GoldSet:
    """`_gold` with a judged non-relevant document per query (a pool: the holes are read)."""
    queries = tuple(replace(q, relevant={**q.relevant, f"x{i % 5}": 0})
                    for i, q in enumerate(_gold(n).queries))  # fmt: skip
    return replace(_gold(n), queries=queries)


def test_the_analysis_shortcuts_change_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """reach walking only the queries where an answer could count, RBO's table of the lists
    both sides share, the pool scored CHUNK rows at a time and the two records' ids held once:
    the whole Comparison (every p, interval, hole and overlap) as without them."""
    gold = _pooled(300)
    runs = (_run(gold, 5), replace(_run(gold, 6), sha="b" * 40))
    paths = [save_run(tmp_path / str(i), run) for i, run in enumerate(runs)]
    settings = CompareSettings(resamples=2000)
    monkeypatch.setattr(evaluation, "CHUNK", 7)
    fast = compare(gold, *map(load_run, paths), settings)
    assert fast.holes is not None and fast.holes.reach and fast.holes.reach[0].queries
    assert fast.changes is not None and 0 < fast.changes.scopes[0].rbo < 1
    monkeypatch.setattr(evaluation, "CHUNK", 1 << 30)
    monkeypatch.setattr(holes, "_open", lambda *args: None)
    monkeypatch.setattr(
        overlap, "_per_query",
        lambda ids, b, c, k: overlap._pairs(ids, b, c, k, min(len(b.pool_rows), len(c.pool_rows))),
    )  # fmt: skip
    monkeypatch.setattr(decide, "share_strings", lambda repeats: None)
    assert compare(gold, *map(load_run, paths), settings) == fast
