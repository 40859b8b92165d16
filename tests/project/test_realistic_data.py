"""scripts/realistic_data.py, the benchmarks' data: its shape is what its docstring says.

Graded judgements with judged non-relevant documents, distinct ids in every ranking from a large
id space, relevant documents at spread ranks and some missed, the drift rate between repeats,
the slices, and the same data for the same seed (files byte for byte).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from harness.gold import load_gold
from harness.score.runfile import load_run

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "realistic_data.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("realistic_data", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["realistic_data"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


rd = _load()
SHAPE = rd.Shape(queries=4_000, depth=20, seed=3)


def test_grades_one_to_three_and_judged_non_relevant() -> None:
    judged = rd.qrels(SHAPE)
    assert set(judged.grade.tolist()) == {0, 1, 2, 3}
    per_query = np.bincount(judged.query, weights=judged.grade >= 1, minlength=SHAPE.queries)
    assert (per_query >= 1).all()  # every query answerable
    zeros = np.bincount(judged.query, weights=judged.grade == 0, minlength=SHAPE.queries)
    assert 0.8 < (zeros > 0).mean() < 1.0  # most, not all, queries have grade-0 judgements
    keys = judged.query * SHAPE.id_space + judged.doc
    assert len(np.unique(keys)) == len(keys)  # no document judged twice for a query


def test_rankings_hold_distinct_ids_from_a_large_space() -> None:
    ranking = rd.run(SHAPE)
    assert ranking.docs.shape == (SHAPE.queries, SHAPE.depth)
    ordered = np.sort(ranking.docs, axis=1)
    assert not (ordered[:, 1:] == ordered[:, :-1]).any()
    # No shared filler: an id recurs across queries only by chance in a 10M-id space.
    assert len(np.unique(ranking.docs)) > 0.99 * ranking.docs.size


def test_scores_in_trec_eval_order_with_a_few_ties() -> None:
    ranking = rd.run(rd.Shape(queries=2_000, depth=100, seed=1))
    assert (np.diff(ranking.scores, axis=1) <= 0).all()
    rows, cols = np.nonzero(ranking.scores[:, 1:] == ranking.scores[:, :-1])
    assert 0 < len(rows) < 0.02 * ranking.scores.size
    for r, c in zip(rows.tolist(), cols.tolist(), strict=True):  # trec_eval: docid descending
        above, below = rd.doc_ids(ranking.docs[r, c : c + 2])
        assert above > below


def test_relevant_documents_at_realistic_ranks_some_missed() -> None:
    judged, ranking = rd.qrels(SHAPE), rd.run(SHAPE)
    found = {(q, d): r for q, row in enumerate(ranking.docs.tolist()) for r, d in enumerate(row)}
    ranks = [found.get((q, d)) for q, d, g in zip(
        judged.query.tolist(), judged.doc.tolist(), judged.grade.tolist(), strict=True) if g >= 1]
    placed = [r for r in ranks if r is not None]
    assert 0.1 < 1 - len(placed) / len(ranks) < 0.5  # some relevant documents are missed
    counts = np.bincount(placed, minlength=SHAPE.depth)
    assert counts[0] > counts[5] > counts[15] > 0  # towards the top, spread over the ranking
    top_grade = {(q, d): g for q, d, g in zip(
        judged.query.tolist(), judged.doc.tolist(), judged.grade.tolist(), strict=True)}
    first = [top_grade.get((q, row[0]), -1) for q, row in enumerate(ranking.docs.tolist())]
    assert first.count(3) > first.count(1)  # the highly relevant tend to rank first


def test_slices() -> None:
    slices = rd.slice_of(SHAPE)
    assert sorted(set(slices.tolist())) == list(range(10))
    sizes = np.bincount(slices)
    assert sizes.max() > 2 * sizes.min()  # unequal, as real slices are
    assert sorted(set(rd.slice_of(rd.Shape(queries=10)).tolist())) == list(range(10))
    gold = rd.gold(rd.Shape(queries=300))
    assert len(gold.slices) == 10 and len(gold) == 300


def _sides(shape: Any, count: int) -> Iterator[tuple[str, list[Any]]]:
    answers = list(rd.repeats(shape, count))
    for side in ("baseline", "candidate"):
        yield side, [a for a in answers if a.side == side]


def test_drift_rate_between_repeats() -> None:
    shape = rd.Shape(queries=20_000, depth=20, seed=5)
    for _, reps in _sides(shape, 4):
        assert [a.index for a in reps] == [0, 1, 2, 3]
        first = reps[0].docs
        assert not reps[0].changed.any()
        for a in reps[1:]:
            differs = (a.docs != first).any(axis=1)
            assert (differs == a.changed).all()
            # 3% of 20,000: sd = sqrt(20000 * 0.03 * 0.97) = 24 answers; 5 sd either side
            assert abs(differs.sum() - 600) < 5 * 24
            ordered = np.sort(a.docs, axis=1)
            assert not (ordered[:, 1:] == ordered[:, :-1]).any()  # still distinct ids


def test_candidate_effect() -> None:
    shape = rd.Shape(queries=20_000, depth=20, seed=6, drift=0.0)
    base, cand = (reps[0].docs for _, reps in _sides(shape, 1))
    changed = (base != cand).any(axis=1).mean()
    assert 0.02 < changed <= 0.05  # the 5% chosen, less those already best-first
    judged = rd.qrels(shape)
    relevant = set(zip(judged.query[judged.grade >= 1].tolist(),
                       judged.doc[judged.grade >= 1].tolist(), strict=True))
    hit = {name: np.mean([any((q, d) in relevant for d in row[:10])
                          for q, row in enumerate(docs.tolist())])
           for name, docs in (("base", base), ("cand", cand))}
    assert 0.005 < hit["cand"] - hit["base"] < 0.05  # a small improvement
    worse = rd.Shape(queries=20_000, depth=20, seed=6, drift=0.0, effect=-0.05)
    base2, cand2 = (reps[0].docs for _, reps in _sides(worse, 1))
    assert (base2 == base).all() and 0.02 < (base2 != cand2).any(axis=1).mean() <= 0.05


def test_same_seed_same_data_other_seed_other_data() -> None:
    a, b = rd.run(SHAPE), rd.run(rd.Shape(queries=4_000, depth=20, seed=3))
    assert (a.docs == b.docs).all() and (a.scores == b.scores).all()
    assert (rd.qrels(SHAPE).doc == rd.qrels(SHAPE).doc).all()
    assert not (rd.run(rd.Shape(queries=4_000, depth=20, seed=4)).docs == a.docs).all()
    first = [x.docs for x in rd.repeats(SHAPE, 2)]
    again = [x.docs for x in rd.repeats(SHAPE, 3)]  # asking for more changes none of the first
    assert all((x == y).all() for x, y in zip(first[:2], again[:2], strict=True))


def test_files_are_what_harness_reads_and_the_same_bytes_for_a_seed(tmp_path: Path) -> None:
    args = ["--queries", "300", "--depth", "30", "--seed", "2", "--repeats", "2"]
    for out in ("a", "b"):
        subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / out), *args],
                       check=True, capture_output=True)
    names = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.*"))
    assert [str(n) for n in names] == [
        "baseline/repeat-0.jsonl", "baseline/repeat-1.jsonl",
        "candidate/repeat-0.jsonl", "candidate/repeat-1.jsonl",
        "gold.jsonl", "qrels.txt", "run.trec", "topics.tsv",
    ]
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    native = load_gold(tmp_path / "a" / "gold.jsonl")
    trec = load_gold(tmp_path / "a" / "qrels.txt", queries=tmp_path / "a" / "topics.tsv")
    assert [q.relevant for q in native.queries] == [q.relevant for q in trec.queries]
    assert len(native.slices) == 10
    assert native.queries == rd.gold(rd.Shape(queries=300, depth=30, seed=2)).queries
    run = load_run(tmp_path / "a" / "run.trec")
    ranking = rd.run(rd.Shape(queries=300, depth=30, seed=2))
    assert [list(run.rankings[f"q{i}"]) for i in range(300)] == [
        rd.doc_ids(row) for row in ranking.docs]
    repeat = load_run(tmp_path / "a" / "candidate" / "repeat-1.jsonl")
    answers = list(rd.repeats(rd.Shape(queries=300, depth=30, seed=2), 2))[3]
    assert [repeat.rankings[f"q{i}"] for i in range(300)] == answers.ids()


def test_bad_shape_is_a_usage_error() -> None:
    with pytest.raises(ValueError, match="id_space"):
        rd.Shape(id_space=100)
    done = subprocess.run([sys.executable, str(SCRIPT), "/nonexistent-never", "--depth", "0"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "at least 1" in done.stderr
