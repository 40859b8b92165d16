#!/usr/bin/env python
"""Realistic benchmark data: judgements, runs and repeated answers shaped like real evaluations.

    python scripts/realistic_data.py OUT [--queries 20000] [--depth 100] [--seed 0]
        [--slices 10] [--drift 0.03] [--effect 0.05] [--repeats 0] [--id-space 10000000]

writes into OUT:

- `qrels.txt`   TREC qrels (`qid 0 docid grade`): grades 1-3 and judged non-relevant (0);
- `topics.tsv`  `qid<TAB>text` (for `harness metrics --queries`);
- `run.trec`    a TREC run (`qid Q0 docid rank score tag`), `depth` lines a query, in
                trec_eval's order (score descending, ties by docid descending);
- `gold.jsonl`  the same judgements as harness's native gold set, each query in one of
                `slices` slices;
- with `--repeats R`: `baseline/repeat-{r}.jsonl` and `candidate/repeat-{r}.jsonl`, native
  JSONL runs (`{"id": qid, "ranking": [...]}`), R repeats of each side (see `repeats`).

As a module (`sys.path.insert(0, "scripts"); import realistic_data as rd`):

    shape = rd.Shape(queries=20_000, depth=100, seed=0)   # every knob; frozen
    rd.qrels(shape)   -> Qrels     (query, doc, grade) arrays, one row a judgement
    rd.run(shape)     -> Ranking   (queries, depth) doc codes and scores, trec_eval's order
    rd.gold(shape)    -> GoldSet   harness's gold set (harness.values.types), with slices
    rd.repeats(shape, 5) -> Iterator[Answers]: baseline repeats 0..4, then candidate 0..4
    rd.query_ids(shape), rd.doc_ids(codes), rd.slice_of(shape)
    rd.write(shape, folder, repeats=0) -> {name: path}

Everything is a pure function of the Shape: the same Shape gives the same bytes.

The shape (issue 28), per query:

- judgements: 1-10 relevant documents (geometric, mean about 2.4; grade 1, 2 or 3 with
  probability 0.5, 0.3, 0.2) and 0-15 judged non-relevant documents (grade 0), as a pooled
  assessment leaves them; every query has at least one relevant document;
- ranking: `depth` distinct document ids drawn from `id_space` ids (so ids recur across
  queries only by chance, as in a large corpus: no shared filler ids); each judged document gets
  a rank drawn from an exponential whose mean grows as its grade falls (3: 2, 2: 5, 1: 12,
  judged non-relevant: 10) times a per-query difficulty (lognormal, sigma 1), so highly relevant
  documents tend to the top, hard queries miss, and a document whose rank falls past `depth` is
  missed; unjudged documents fill the other ranks;
- scores: a top score in [10, 30) falling by exponential gaps to about half of it at `depth`,
  rounded to 3 decimals, so a few adjacent scores tie (as real scorers' floats do);
- slice: one of `slices` ("s0", "s1", ...), of unequal sizes (weights 1/(j+1)); each slice has
  a query when there are at least `slices` queries.

Repeats (`repeats`): each side's repeat 0 is its canonical ranking (the run, cut at `depth`);
in each later repeat, each query's answer independently differs from that side's repeat 0 with
probability `drift` (two of its documents swap places, or one in the top 10 is replaced by a
document not in the ranking). The candidate's canonical ranking is the baseline's with an effect
on a fraction |effect| of queries, drawn independently of the drift: for effect > 0 the best
judged relevant document moves to rank 1 (brought in from past `depth` when missed), for
effect < 0 the first relevant document in the ranking moves to the last rank.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]

MAX_RELEVANT = 10
MAX_NON_RELEVANT = 15
JUDGED = MAX_RELEVANT + MAX_NON_RELEVANT  # judged columns of a query's candidate row
GRADE_WEIGHTS = (0.5, 0.3, 0.2)  # grade 1, 2, 3 among relevant documents
RANK_MEAN = {0: 10.0, 1: 12.0, 2: 5.0, 3: 2.0}  # mean of a judged document's rank, by grade
TOP_TEN = 10


@dataclass(frozen=True)
class Shape:
    """Every knob of the generated data; the data is a pure function of it."""

    queries: int = 1_000
    depth: int = 20  # distinct document ids per ranking
    seed: int = 0
    slices: int = 10
    drift: float = 0.03  # probability an answer differs from its side's repeat 0
    effect: float = 0.05  # fraction of queries the candidate improves (< 0: worsens)
    id_space: int = 10_000_000  # document ids are "d0" .. "d{id_space - 1}"
    tag: str = "realistic"

    def __post_init__(self) -> None:
        if self.queries < 1 or self.depth < 1 or self.slices < 1:
            raise ValueError("queries, depth and slices must be at least 1")
        if self.id_space < 10 * (self.depth + JUDGED):
            raise ValueError(f"id_space must be at least {10 * (self.depth + JUDGED)}")
        if not 0 <= self.drift <= 1 or not -1 <= self.effect <= 1:
            raise ValueError("drift must be in [0, 1] and effect in [-1, 1]")


@dataclass(frozen=True)
class Qrels:
    """Judgements, one row each, grouped by query (in query order): query index, doc code,
    grade (0 = judged non-relevant)."""

    query: Ints
    doc: Ints
    grade: Ints

    def __len__(self) -> int:
        return len(self.query)


@dataclass(frozen=True)
class Ranking:
    """One ranking a query, row i for query i: `docs[i]` doc codes in rank order (trec_eval's:
    score descending, ties by docid string descending), `scores[i]` their scores."""

    docs: Ints  # (queries, depth)
    scores: Floats  # (queries, depth)


@dataclass(frozen=True)
class Answers:
    """One repeat of one side: what the service answered to every query, in query order."""

    side: str  # "baseline" | "candidate"
    index: int  # the repeat, 0-based
    docs: Ints  # (queries, depth) doc codes in rank order
    changed: npt.NDArray[np.bool_]  # (queries,) differs from this side's repeat 0
    latency_ns: Ints  # (queries,)

    def ids(self) -> list[tuple[str, ...]]:
        """Each query's ranked doc ids as strings."""
        names = doc_ids(self.docs.ravel())
        d = self.docs.shape[1]
        return [tuple(names[i : i + d]) for i in range(0, len(names), d)]


def query_ids(shape: Shape) -> list[str]:
    return [f"q{i}" for i in range(shape.queries)]


def doc_ids(codes: npt.ArrayLike) -> list[str]:
    """The id of each doc code ("d" + the code in decimal)."""
    return ["d" + str(c) for c in np.asarray(codes).tolist()]


def _rng(shape: Shape, stream: int) -> np.random.Generator:
    """An independent generator per purpose, so each part stays the same whatever else is
    drawn (the run does not change when repeats are asked for)."""
    return np.random.default_rng([shape.seed, stream])


@dataclass(frozen=True)
class _World:
    candidates: Ints  # (queries, depth + JUDGED) distinct doc codes per row
    n_relevant: Ints
    n_judged: Ints
    grades: Ints  # (queries, JUDGED): relevant first, then grade 0; -1 past n_judged
    order: Ints  # (queries, depth + JUDGED) candidate columns in rank order


def _distinct_rows(rng: np.random.Generator, rows: int, width: int, space: int) -> Ints:
    """`rows` rows of `width` distinct codes in [0, space), each row uniform."""
    out = rng.integers(0, space, size=(rows, width), dtype=np.int64)
    bad = np.arange(rows)
    while len(bad):
        part = np.sort(out[bad], axis=1)
        bad = bad[(part[:, 1:] == part[:, :-1]).any(axis=1)]
        out[bad] = rng.integers(0, space, size=(len(bad), width), dtype=np.int64)
    return out


def _world(shape: Shape) -> _World:
    n, width = shape.queries, shape.depth + JUDGED
    rng = _rng(shape, 1)
    candidates = _distinct_rows(rng, n, width, shape.id_space)
    n_relevant = np.minimum(rng.geometric(0.42, n), MAX_RELEVANT).astype(np.int64)
    n_judged = n_relevant + rng.integers(0, MAX_NON_RELEVANT + 1, n)
    col = np.arange(JUDGED)
    relevant_grade = rng.choice([1, 2, 3], size=(n, JUDGED), p=GRADE_WEIGHTS)
    grades = np.where(col < n_relevant[:, None], relevant_grade, 0)
    grades = np.where(col < n_judged[:, None], grades, -1)
    difficulty = rng.lognormal(0.0, 1.0, n)
    mean = np.select([grades == g for g in (3, 2, 1, 0)], [RANK_MEAN[g] for g in (3, 2, 1, 0)])
    judged_key = rng.exponential(1.0, (n, JUDGED)) * mean * difficulty[:, None]
    # Unjudged documents (and unused judged columns) spread evenly, about one a rank.
    filler_key = rng.uniform(0.0, width, (n, width))
    keys = filler_key
    keys[:, :JUDGED] = np.where(grades >= 0, judged_key, filler_key[:, :JUDGED])
    order = np.argsort(keys, axis=1, kind="stable")
    return _World(candidates, n_relevant, n_judged, grades, order)


def qrels(shape: Shape) -> Qrels:
    """Every judgement: each query's relevant documents (grades 1-3), then its judged
    non-relevant ones (grade 0)."""
    w = _world(shape)
    mask = w.grades >= 0
    query = np.broadcast_to(np.arange(shape.queries)[:, None], mask.shape)[mask]
    return Qrels(query.astype(np.int64), w.candidates[:, :JUDGED][mask], w.grades[mask])


def _ranked(shape: Shape, w: _World) -> Ints:
    return np.take_along_axis(w.candidates, w.order[:, : shape.depth], axis=1)


def run(shape: Shape) -> Ranking:
    """The run: `depth` distinct documents a query with scores, in trec_eval's order."""
    docs = _ranked(shape, _world(shape))
    rng = _rng(shape, 2)
    n, d = docs.shape
    top = rng.uniform(10.0, 30.0, n)
    gaps = rng.exponential(1.0, (n, d)) * (top / (2 * d))[:, None]
    gaps[:, 0] = 0.0
    scores = np.round(top[:, None] - np.cumsum(gaps, axis=1), 3)
    _ties_by_docid(docs, scores)
    return Ranking(docs, scores)


def _ties_by_docid(docs: Ints, scores: Floats) -> None:
    """Order each run of equal scores in a row by docid string descending, in place."""
    rows = np.nonzero(scores[:, 1:] == scores[:, :-1])[0]
    for r in np.unique(rows).tolist():
        row_scores = scores[r].tolist()
        names = doc_ids(docs[r])
        order = sorted(range(len(names)), key=lambda j: (row_scores[j], names[j]), reverse=True)
        docs[r] = docs[r][order]


def slice_of(shape: Shape) -> Ints:
    """Each query's slice index: unequal sizes, every slice used when queries >= slices."""
    rng = _rng(shape, 3)
    weights = 1.0 / np.arange(1, shape.slices + 1)
    found = rng.choice(shape.slices, size=shape.queries, p=weights / weights.sum())
    first = min(shape.slices, shape.queries)
    found[:first] = rng.permutation(shape.slices)[:first]
    return found.astype(np.int64)


def gold(shape: Shape) -> Any:
    """harness's GoldSet of these judgements (ids "q0".., slices "s0".., text "query i")."""
    from harness.gold.canonical import canonical_hash
    try:
        from harness.values.types import GoldQuery, GoldSet
    except ImportError:  # a tree (bench_scale.py --tree OLD) from before harness/values/
        old = importlib.import_module("harness.types")  # by name: this tree has no such module
        GoldQuery, GoldSet = old.GoldQuery, old.GoldSet

    queries = tuple(
        GoldQuery(id=q, text=f"query {i}", slice=f"s{s}", relevant=rel)
        for i, (q, s, rel) in enumerate(_judgements(shape))
    )
    return GoldSet(queries, "realistic", "native", canonical_hash(queries))


def _judgements(shape: Shape) -> Iterator[tuple[str, int, dict[str, int]]]:
    j = qrels(shape)
    names = doc_ids(j.doc)
    grades = j.grade.tolist()
    bounds = np.searchsorted(j.query, np.arange(shape.queries + 1)).tolist()
    for i, (q, s) in enumerate(zip(query_ids(shape), slice_of(shape).tolist(), strict=True)):
        a, b = bounds[i], bounds[i + 1]
        yield q, s, dict(zip(names[a:b], grades[a:b], strict=True))


def repeats(shape: Shape, count: int) -> Iterator[Answers]:
    """`count` repeats of the baseline, then `count` of the candidate (see the module doc)."""
    w = _world(shape)
    base = _ranked(shape, w)
    unused = np.take_along_axis(w.candidates, w.order[:, shape.depth :], axis=1)
    cand = _with_effect(shape, w, base)
    for stream, (side, canonical) in enumerate((("baseline", base), ("candidate", cand))):
        rng = _rng(shape, 10 + stream)
        latency_scale = rng.lognormal(np.log(20e6), 0.5, shape.queries)  # per query, ~20 ms
        for r in range(count):
            docs = canonical.copy()
            changed = np.zeros(shape.queries, dtype=bool)
            if r > 0:
                changed = rng.random(shape.queries) < shape.drift
                _drift(rng, docs, unused, np.flatnonzero(changed))
            latency = latency_scale * rng.lognormal(0.0, 0.15, shape.queries)
            yield Answers(side, r, docs, changed, latency.astype(np.int64))


def _drift(rng: np.random.Generator, docs: Ints, unused: Ints, rows: Ints) -> None:
    """Change each of `rows`' rankings, in place: swap two documents, or replace one of the
    top 10 with the first candidate document not in the ranking."""
    d = docs.shape[1]
    tops = rng.integers(0, min(TOP_TEN, d), len(rows)).tolist()
    others = rng.integers(1, max(d, 2), len(rows)).tolist()
    swaps = (rng.random(len(rows)) < 0.5).tolist()
    for i, a, b, swap in zip(rows.tolist(), tops, others, swaps, strict=True):
        if swap and d > 1:
            b = (a + b) % d  # another position
            docs[i, a], docs[i, b] = docs[i, b], docs[i, a]
        else:
            present = set(docs[i].tolist())
            docs[i, a] = next(x for x in unused[i].tolist() if x not in present)


def _with_effect(shape: Shape, w: _World, base: Ints) -> Ints:
    rng = _rng(shape, 4)
    cand = base.copy()
    chosen = np.flatnonzero(rng.random(shape.queries) < abs(shape.effect))
    # the position of each candidate column in rank order
    rank_of = np.argsort(w.order, axis=1)
    for i in chosen.tolist():
        relevant = np.flatnonzero(w.grades[i] >= 1)
        ranks = rank_of[i, relevant]
        if shape.effect > 0:
            best = relevant[np.lexsort((ranks, -w.grades[i, relevant]))[0]]
            doc = w.candidates[i, best]
            row = [x for x in cand[i].tolist() if x != doc]
            cand[i] = [doc, *row[: shape.depth - 1]]
        else:
            inside = ranks[ranks < shape.depth]
            if len(inside):
                at = int(inside.min())
                row = cand[i].tolist()
                cand[i] = [*row[:at], *row[at + 1 :], row[at]]
    return cand


# --------------------------------------------------------------------------- files


def write(shape: Shape, folder: Path, repeats_per_side: int = 0) -> dict[str, Path]:
    """Write the files of the module doc into `folder` (created); their paths by name."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "qrels": folder / "qrels.txt",
        "topics": folder / "topics.tsv",
        "run": folder / "run.trec",
        "gold": folder / "gold.jsonl",
    }
    judgements = list(_judgements(shape))
    with paths["qrels"].open("w") as f:
        for q, _, rel in judgements:
            f.writelines(f"{q} 0 {d} {g}\n" for d, g in rel.items())
    with paths["topics"].open("w") as f:
        f.writelines(f"q{i}\tquery {i}\n" for i in range(shape.queries))
    with paths["gold"].open("w") as f:
        header = {"format": "harness-gold", "version": 1,
                  "description": f"realistic_data.py {_describe(shape)}"}
        f.write(json.dumps(header, sort_keys=True) + "\n")
        for i, (q, s, rel) in enumerate(judgements):
            line = {"id": q, "query": f"query {i}", "relevant": rel, "slice": f"s{s}"}
            f.write(json.dumps(line, sort_keys=True) + "\n")
    del judgements
    ranking = run(shape)
    _write_trec(paths["run"], query_ids(shape), ranking, shape.tag)
    for answers in repeats(shape, repeats_per_side):
        path = folder / answers.side / f"repeat-{answers.index}.jsonl"
        path.parent.mkdir(exist_ok=True)
        with path.open("w") as f:
            for q, ids in zip(query_ids(shape), answers.ids(), strict=True):
                f.write(json.dumps({"id": q, "ranking": ids}) + "\n")
        paths[f"{answers.side}-{answers.index}"] = path
    return paths


def _write_trec(path: Path, qids: Sequence[str], ranking: Ranking, tag: str) -> None:
    d = ranking.docs.shape[1]
    ranks = [str(r) for r in range(1, d + 1)]
    step = max(1, 200_000 // d)
    with path.open("w") as f:
        for at in range(0, len(qids), step):
            names = doc_ids(ranking.docs[at : at + step].ravel())
            scores = [f"{s:.3f}" for s in ranking.scores[at : at + step].ravel().tolist()]
            lines = []
            for i, q in enumerate(qids[at : at + step]):
                for j in range(d):
                    k = i * d + j
                    lines.append(f"{q} Q0 {names[k]} {ranks[j]} {scores[k]} {tag}\n")
            f.writelines(lines)


def _describe(shape: Shape) -> str:
    return (f"--queries {shape.queries} --depth {shape.depth} --seed {shape.seed} "
            f"--slices {shape.slices} --drift {shape.drift} --effect {shape.effect} "
            f"--id-space {shape.id_space}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("out", type=Path, help="folder to write into (created)")
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--slices", type=int, default=10)
    parser.add_argument("--drift", type=float, default=0.03)
    parser.add_argument("--effect", type=float, default=0.05)
    parser.add_argument("--id-space", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=0, help="repeats of each side to write")
    args = parser.parse_args(argv)
    try:
        shape = Shape(args.queries, args.depth, args.seed, args.slices, args.drift, args.effect,
                      args.id_space)
    except ValueError as exc:
        parser.error(str(exc))
    for name, path in write(shape, args.out, args.repeats).items():
        print(f"{name:<14} {path}  {path.stat().st_size / 2**20:,.1f} MiB")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
