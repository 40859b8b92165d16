"""The evaluation layer: a whole run scored against a gold set, per query and in aggregate.

Pure: no I/O, no clock, no randomness.  `evaluate` judges every ranking once
(`harness.score.judged.judge`) and computes each requested metric as a column over the queries;
`harness.score.metrics` defines the metrics, their names and the duplicate rule.  `evaluate_runs`
scores several runs at once (a compare's repeats of both sides), each distinct answer once,
giving exactly what `evaluate` gives each run.

Which queries are averaged: only answerable ones (`GoldQuery.answerable`: some grade >= 1, or
declared so by the gold file), in gold order; a query the run does not contain scores 0 on every
metric, as `trec_eval -c` does, and so does an answerable query with no grade >= 1 (a pooled
set's query whose answer is not judged yet: nothing it returns can be relevant; trec_eval's
guard where |relevant| = 0).  Unanswerable queries never enter a quality mean (no vacuous 1.0,
no 0): `NoAnswerSummary` records what the run returned for them
(`metrics.no_answer_false_positive`), and only for them.  Queries with
`outranks` pairs are checked by `metrics.outranks_holds` into `OutranksSummary`.  A slice's mean
is over its answerable queries only; a slice with none has n = 0 and no values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import compress, pairwise
from operator import attrgetter, ne
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from harness.errors import ConfigError, NotComparableError
from harness.score.judged import JudgedRanks, judge, judge_heads, judge_sized, judge_width
from harness.score.metrics import MetricSpec, as_specs, no_answer_false_positive, outranks_holds
from harness.score.unanswered import NoAnswerSummary, OutranksSummary
from harness.values.types import GoldSet, QueryResult

FloatArray = npt.NDArray[np.float64]


@runtime_checkable
class RankingHeads(Protocol):
    """Rankings that can give the first k unique ids of many queries at once (a TREC run read
    column-wise, `harness.score.arrowrun.ArrowRanked`): the ids flattened in the order of `ids`
    and how many each query has (`judged.judge_heads`); `evaluate` then builds no ranking."""

    def heads(self, ids: Sequence[str], k: int) -> tuple[Sequence[str], Sequence[int]]: ...


# --------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class SliceScore:
    """The means over the answerable queries of one slice; `values` is empty when n is 0."""

    n: int
    values: Mapping[str, float]


class _Rows(Mapping[str, Mapping[str, float]]):
    """per_query as a read-only view over the metric columns: no dict per query is built."""

    def __init__(self, ids: tuple[str, ...], columns: Mapping[str, FloatArray]) -> None:
        self._index = {qid: i for i, qid in enumerate(ids)}
        self._columns = columns

    def __getitem__(self, qid: str) -> Mapping[str, float]:
        i = self._index[qid]
        return {name: float(col[i]) for name, col in self._columns.items()}

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


@dataclass(frozen=True, eq=False)
class Evaluation:
    """A run scored against a gold set.

    `query_ids` are the answerable queries in gold order: the row order of every `columns`
    array (read-only float64).  `missing` are answerable queries the run lacks (scored 0), `extra`
    run queries the gold set lacks (ignored, sorted).
    """

    specs: tuple[MetricSpec, ...]
    rel_level: int
    query_ids: tuple[str, ...]
    columns: Mapping[str, FloatArray]
    aggregate: Mapping[str, float]
    slices: Mapping[str, SliceScore]
    no_answer: NoAnswerSummary
    outranks: OutranksSummary
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return len(self.query_ids)

    @cached_property
    def per_query(self) -> Mapping[str, Mapping[str, float]]:
        return _Rows(self.query_ids, self.columns)

    def column(self, name: str) -> FloatArray:
        """`columns[name]`, without keeping it when the columns are gathered on demand
        (`evaluate_runs`): for a reader that keeps what it makes of it."""
        if isinstance(self.columns, _Gathered):
            return self.columns.gather(name)
        return self.columns[name]


def stacked(
    evaluations: Sequence[Evaluation], name: str, rows: npt.NDArray[np.intp]
) -> FloatArray:
    """evaluations x rows: the `name` column of each evaluation at `rows` (positions in its
    query_ids), gathered at once from the pool when they were scored together
    (`evaluate_runs`: `pool_rows`), without a column of each."""
    found = pool_rows(evaluations, rows)
    if found is not None:
        pool, at = found
        column: FloatArray = pool[name][at]
        return column
    return np.stack([ev.column(name)[rows] for ev in evaluations])


def pool_rows(
    evaluations: Sequence[Evaluation], rows: npt.NDArray[np.intp]
) -> tuple[Mapping[str, FloatArray], npt.NDArray[np.intp]] | None:
    """When `evaluations` were scored together (`evaluate_runs`): their pool's columns and,
    evaluations x rows, the pool row of each evaluation's query at `rows` (`pool[name][at]` is
    `stacked`); None otherwise."""
    gathered = [ev.columns for ev in evaluations]
    held = [g for g in gathered if isinstance(g, _Gathered)]
    if not held or len(held) != len(gathered) or len({id(g._pool) for g in held}) != 1:
        return None
    return held[0]._pool, np.stack([g._rows[rows] for g in held])


class _Gathered(Mapping[str, FloatArray]):
    """An evaluation's metric columns as rows of its pool's (`evaluate_runs`): each gathered
    (read-only) when first asked for and kept from then on, so that a compare of several
    runs holds each metric's values once, in the pool, and not again per run."""

    def __init__(self, pool: Mapping[str, FloatArray], rows: npt.NDArray[np.intp]) -> None:
        self._pool, self._rows = pool, rows
        self._held: dict[str, FloatArray] = {}

    def gather(self, name: str) -> FloatArray:
        column = self._pool[name][self._rows]
        column.flags.writeable = False
        return column

    def __getitem__(self, name: str) -> FloatArray:
        if name not in self._held:
            self._held[name] = self.gather(name)
        return self._held[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._pool)

    def __len__(self) -> int:
        return len(self._pool)


def evaluate(
    gold: GoldSet,
    rankings: Mapping[str, Sequence[str]],
    specs: Iterable[MetricSpec | str],
    rel_level: int = 1,
    *,
    scores: Mapping[str, Sequence[float]] | None = None,
    threshold: float | None = None,
    judged_as_zero: bool = False,
    texts: Mapping[str, Sequence[str | None]] | None = None,
) -> Evaluation:
    """Score a run: every metric per answerable query, their means overall and per slice.

    A query missing from `rankings` scores 0 (trec_eval -c); unanswerable queries go to
    `no_answer`, pairs to `outranks`.  `scores` (aligned with each ranking) feed only the
    no-answer threshold check.  Aggregates are empty when the gold set has no answerable query.
    With `judged_as_zero` (`harness metrics`, trec_eval's rule), a query that has judgements
    but none at or above `rel_level` is averaged too, scoring 0 on every metric, as trec_eval
    counts it; it still goes to `no_answer`.
    `texts` (the returned text of each position, per query) are needed by the context metrics
    (`metrics.context_precision`); a query without them returns no context characters.
    """
    chosen = as_specs(specs)
    _need_texts(chosen, texts is not None)
    queries = gold.queries
    all_ids = list(map(attrgetter("id"), queries))
    max_k = max((s.depth for s in chosen), default=1)
    relevant = list(map(attrgetter("relevant"), queries))
    if texts is None and isinstance(rankings, RankingHeads):
        ranks = judge_heads(*rankings.heads(all_ids, max_k), relevant, max_k, rel_level)
    else:
        ranks = judge(
            [rankings.get(qid, ()) for qid in all_ids],
            relevant,
            max_k,
            rel_level,
            texts=None if texts is None else [texts.get(qid) for qid in all_ids],
            spans=None if texts is None else list(map(attrgetter("spans"), queries)),
        )
    index = _GoldIndex(gold)
    computed = {str(spec): _column(spec, ranks) for spec in chosen}
    return _assemble(
        gold, rankings, chosen, rel_level, index.answerable, computed,
        scores=scores, threshold=threshold, judged_as_zero=judged_as_zero, index=index,
    )


def _assemble(
    gold: GoldSet,
    rankings: Mapping[str, Sequence[str]],
    chosen: tuple[MetricSpec, ...],
    rel_level: int,
    answerable: npt.NDArray[np.bool_],
    computed: Mapping[str, FloatArray],
    *,
    scores: Mapping[str, Sequence[float]] | None = None,
    threshold: float | None = None,
    judged_as_zero: bool = False,
    index: _GoldIndex | None = None,
) -> Evaluation:
    """The Evaluation of a run whose metrics are `computed` (each a column over every gold
    query, 0 where it has no grade >= 1; or, from `evaluate_runs`, a `_Gathered` already over
    the answerable ones); `answerable` is `GoldQuery.answerable` of each;
    `index` is `_GoldIndex(gold)`, when already made."""
    queries = gold.queries
    index = index or _GoldIndex(gold)
    all_ids = index.ids
    scored = answerable
    if judged_as_zero:
        scored = answerable | np.array([bool(q.relevant) for q in queries], dtype=bool)
    ids = tuple(compress(all_ids, scored.tolist()))
    columns: Mapping[str, FloatArray]
    if isinstance(computed, _Gathered):  # already over the scored queries; read when asked
        columns = computed
        aggregate, slices = _scopes(computed, index.slice_owner[scored], index.slice_of,
                                    computed.gather)  # fmt: skip
    else:
        columns = {}
        for spec in chosen:
            column = computed[str(spec)][scored]
            column.flags.writeable = False
            columns[str(spec)] = column
        aggregate, slices = _scopes(columns, index.slice_owner[scored], index.slice_of)
        columns = MappingProxyType(columns)
    no_ids, no_any, no_above = [], [], []
    for q in compress(queries, (~answerable).tolist()):
        got = no_answer_false_positive(
            rankings.get(q.id, ()), None if scores is None else scores.get(q.id), threshold
        )
        no_ids.append(q.id)
        no_any.append(got.returned_any)
        no_above.append(got.above_threshold)
    pairs = index.pairs
    held = tuple(outranks_holds(rankings.get(qid, ()), c, s) for qid, c, s in pairs)
    return Evaluation(
        specs=chosen,
        rel_level=rel_level,
        query_ids=ids,
        columns=columns,
        aggregate=MappingProxyType(aggregate),
        slices=MappingProxyType(slices),
        no_answer=NoAnswerSummary(tuple(no_ids), tuple(no_any), tuple(no_above), threshold),
        outranks=OutranksSummary(pairs, held),
        missing=tuple(qid for qid in ids if qid not in rankings),
        extra=tuple(sorted(set(rankings).difference(all_ids))),
    )


def _scopes(
    columns: Mapping[str, FloatArray],
    owner: npt.NDArray[np.intp],
    slice_of: Mapping[str, int],
    read: Callable[[str], FloatArray] | None = None,
) -> tuple[dict[str, float], dict[str, SliceScore]]:
    """The means of each column overall and per slice (`owner[i]`: row i's slice); `read`:
    how a column is read (default: `columns[name]`)."""
    read = read or columns.__getitem__
    aggregate: dict[str, float] = {}
    sums: dict[str, npt.NDArray[Any]] = {}
    for name in columns:
        col = read(name)
        if len(owner):
            aggregate[name] = float(col.mean())
        sums[name] = np.bincount(owner, weights=col, minlength=len(slice_of))
    sizes = np.bincount(owner, minlength=len(slice_of))
    slices = {
        name: SliceScore(
            n=int(sizes[i]),
            values={m: float(s[i] / sizes[i]) for m, s in sums.items()} if sizes[i] else {},
        )
        for name, i in slice_of.items()
    }
    return aggregate, slices


def evaluate_judged(
    query_ids: Sequence[str],
    judged: JudgedRanks,
    present: npt.NDArray[np.bool_],
    extra: tuple[str, ...],
    specs: Iterable[MetricSpec | str],
    rel_level: int = 1,
) -> Evaluation:
    """`evaluate(gold, run, specs, rel_level, judged_as_zero=True)` of a gold set read from TREC
    qrels without topics (every query judged, so every query averaged; one slice "default"; no
    outranks), its run already judged (`harness.score.trec.join`: `judged` rows and `present`
    in the order of `query_ids`; `extra` the run's other queries, sorted)."""
    chosen = as_specs(specs)
    _need_texts(chosen, False)
    answerable = judged.answerable
    ids = tuple(query_ids)
    columns: dict[str, FloatArray] = {}
    for spec in chosen:
        column = _column(spec, judged)
        column.flags.writeable = False
        columns[str(spec)] = column
    aggregate, slices = _scopes(columns, np.zeros(len(ids), dtype=np.intp), {"default": 0})
    unanswerable = (~answerable).tolist()
    no_ids = tuple(compress(ids, unanswerable))
    return Evaluation(
        specs=chosen,
        rel_level=rel_level,
        query_ids=ids,
        columns=MappingProxyType(columns),
        aggregate=MappingProxyType(aggregate),
        slices=MappingProxyType(slices),
        no_answer=NoAnswerSummary(
            no_ids, tuple(compress(present.tolist(), unanswerable)), (None,) * len(no_ids), None
        ),
        outranks=OutranksSummary(),
        missing=tuple(compress(ids, (~present).tolist())),
        extra=extra,
    )


class _GoldIndex:
    """What every evaluation of one gold set reads from it: the query ids, which are
    answerable, each query's slice (as a position in `gold.slices`), the outranks pairs."""

    def __init__(self, gold: GoldSet) -> None:
        queries = gold.queries
        self.ids = list(map(attrgetter("id"), queries))
        self.answerable = np.fromiter(
            map(attrgetter("answerable"), queries), dtype=bool, count=len(queries)
        )
        self.slice_of = {name: i for i, name in enumerate(gold.slices)}
        self.slice_owner = np.fromiter(
            map(self.slice_of.__getitem__, map(attrgetter("slice"), queries)), dtype=np.intp
        )
        self.pairs = tuple((q.id, c, s) for q in queries for c, s in q.outranks)


@dataclass(frozen=True, eq=False)
class PooledEvaluations:
    """Several runs over one gold set scored together (`evaluate_runs`).

    `evaluations[r]` is `evaluate` of run r.  The distinct (query, ranking) pairs of all runs
    are the rows of `judged` (`judged.JudgedRanks`, cut at `max_k`): `rows[r][i]` is the row
    of run r's ranking of gold query i (gold order), `rankings[row]` that ranking (empty when
    the run lacks the query).
    """

    evaluations: tuple[Evaluation, ...]
    judged: JudgedRanks
    rows: tuple[npt.NDArray[np.intp], ...]
    rankings: tuple[Sequence[str], ...]
    owner: npt.NDArray[np.intp]  # the gold position of each row's query
    max_k: int


def evaluate_runs(
    gold: GoldSet,
    runs: Sequence[Mapping[str, Sequence[str]]],
    specs: Iterable[MetricSpec | str],
    rel_level: int = 1,
    *,
    texts: Sequence[Mapping[str, Sequence[str | None]]] | None = None,
) -> PooledEvaluations:
    """`evaluate(gold, runs[r], specs, rel_level, texts=texts[r])` for every run r, value for
    value, but each distinct (query, ranking, texts) is judged and scored once: the repeats of
    a service mostly return the same list for a query, and two refs often do too.  The
    metrics score a ranking the same in any batch (`metrics._row_sums`), so a run's columns
    are its rows of the pool's; the pool is cut to each run's own `judge` width first.
    """
    chosen = as_specs(specs)
    _need_texts(chosen, texts is not None)
    queries = gold.queries
    index = _GoldIndex(gold)
    all_ids = index.ids
    n = len(all_ids)
    max_k = max((s.depth for s in chosen), default=1)
    relevant = list(map(attrgetter("relevant"), queries))
    keyed: list[list[Any]] = []
    for r, run in enumerate(runs):
        lists: list[Any] = [run.get(qid, ()) for qid in all_ids]
        if texts is not None:
            got = texts[r].get
            lists = list(zip(lists, (got(qid) for qid in all_ids), strict=True))
        keyed.append(lists)
    # Pool rows: the first run's every query, then each later run's answers that differ from
    # the run before it, unless an earlier run gave that same answer (`seen`).
    pool: list[Any] = list(keyed[0]) if keyed else []
    owner: list[int] = list(range(n)) if keyed else []
    seen: dict[tuple[int, Any], int] = {}
    current: list[int] = list(range(n))
    rows = [np.arange(n, dtype=np.intp)] if keyed else []
    pairs = texts is not None
    for before, lists in pairwise(keyed):
        changed = np.fromiter(map(ne, lists, before), dtype=bool, count=n)
        for i in np.flatnonzero(changed).tolist():
            old, new = before[i], lists[i]  # a tuple of ids is its own key
            if pairs or type(old) is not tuple or type(new) is not tuple:
                old, new = _frozen(old, pairs), _frozen(new, pairs)
            seen.setdefault((i, old), current[i])
            key = (i, new)
            if key not in seen:
                seen[key] = len(pool)
                pool.append(lists[i])
                owner.append(i)
            current[i] = seen[key]
        rows.append(np.array(current, dtype=np.intp))
    del seen, keyed  # the pool is made: what it was found with is not kept while it is scored
    pool_rankings = pool if texts is None else [p[0] for p in pool]
    judged, sizes = judge_sized(
        pool_rankings,
        [relevant[i] for i in owner],
        max_k,
        rel_level,
        texts=None if texts is None else [p[1] for p in pool],
        spans=None if texts is None else [queries[i].spans for i in owner],
    )
    positive = max((sum(g > 0 for g in rel.values()) for rel in relevant), default=0)
    by_width: dict[int, dict[str, FloatArray]] = {}
    evaluations = []
    for run, row in zip(runs, rows, strict=True):
        width = judge_width(sizes[row], positive, max_k)
        if width not in by_width:
            # Every row at the pool's own width is the pool itself: not copied.
            by_width[width] = _columns(chosen, judged, width)
        computed = _Gathered(by_width[width], row[index.answerable])
        evaluations.append(
            _assemble(
                gold, run, chosen, rel_level, index.answerable, computed, index=index
            )
        )
    return PooledEvaluations(
        tuple(evaluations),
        judged,
        tuple(rows),
        tuple(pool_rankings),
        np.array(owner, dtype=np.intp),
        max_k,
    )


CHUNK = 1 << 14
"""Rows scored at a time by `_columns`: a metric's temporaries (a few arrays of rows x width)
stay a few MB at any size of pool."""


def _columns(
    chosen: Sequence[MetricSpec], judged: JudgedRanks, width: int
) -> dict[str, FloatArray]:
    """Every metric of `chosen` on every row of `judged` cut to `width` (`JudgedRanks.select`),
    CHUNK rows at a time: a metric scores a ranking the same in any batch
    (`metrics._row_sums`), so the columns are those of the whole."""
    n = len(judged.answerable)
    parts: dict[str, list[FloatArray]] = {str(spec): [] for spec in chosen}
    for start in range(0, n, CHUNK):
        rows = np.arange(start, min(n, start + CHUNK), dtype=np.intp)
        cut = judged.select(rows, width)
        for spec in chosen:
            parts[str(spec)].append(_column(spec, cut))
    return {
        name: np.concatenate(found) if found else np.zeros(0) for name, found in parts.items()
    }


def _column(spec: MetricSpec, ranks: JudgedRanks) -> FloatArray:
    """The metric's value on every row: 0 on a query with no grade >= 1 for a quality metric
    (an unanswerable one has no quality score, and only `judged_as_zero` averages it; an
    answerable one has nothing relevant to find yet), the value itself for one that describes
    the judgements (judged@k, as ir_measures scores any judged query)."""
    values = spec.compute(ranks)
    return np.where(ranks.answerable, values, 0.0) if spec.quality else values


def _frozen(answer: Any, with_texts: bool) -> Any:
    """A ranking, or a (ranking, texts) pair, as a hashable value: equal ones, equal values."""
    if with_texts:
        ids, texts = answer
        return (tuple(ids), None if texts is None else tuple(texts))
    return tuple(answer)


def returned_texts(answers: Mapping[str, QueryResult]) -> dict[str, tuple[str | None, ...]]:
    """The returned texts of the answers that have them (query.texts); a query without them
    returns no context character."""
    return {qid: r.texts for qid, r in answers.items() if r.texts is not None}


def per_query_matrix(
    evaluation: Evaluation, specs: Iterable[MetricSpec | str] | None = None
) -> FloatArray:
    """An (n queries x m metrics) array, rows in `evaluation.query_ids` order, columns in the
    order of `specs` (default: the evaluation's own)."""
    names = [str(s) for s in (evaluation.specs if specs is None else as_specs(specs))]
    absent = [n for n in names if n not in evaluation.columns]
    if absent:
        raise KeyError(f"not evaluated: {', '.join(absent)}; evaluated: {list(evaluation.columns)}")
    if not names:
        return np.zeros((evaluation.n, 0))
    return np.column_stack([evaluation.columns[n] for n in names])


def paired(
    baseline: Evaluation, candidate: Evaluation, metric: MetricSpec | str
) -> tuple[FloatArray, FloatArray]:
    """The two per-query arrays of one metric, aligned query by query, for a paired test.

    Raises NotComparableError naming what differs (query order, rel_level, a metric missing).
    """
    name = str(metric)
    for side, ev in (("baseline", baseline), ("candidate", candidate)):
        if name not in ev.columns:
            raise NotComparableError(
                f"{side} was not evaluated on {name}",
                [f"  evaluated: {', '.join(ev.columns) or 'nothing'}", "evaluate both on it"],
            )
    if baseline.query_ids != candidate.query_ids:
        only = sorted(set(baseline.query_ids) ^ set(candidate.query_ids))[:5]
        raise NotComparableError(
            "baseline and candidate were scored on different answerable queries",
            [
                f"  query_ids differ (e.g. {', '.join(only) or 'same ids, other order'})",
                "score both against the same gold set",
            ],
        )
    if baseline.rel_level != candidate.rel_level:
        raise NotComparableError(
            f"rel_level differs: baseline {baseline.rel_level}, candidate {candidate.rel_level}"
        )
    return baseline.columns[name], candidate.columns[name]


def _need_texts(chosen: Sequence[MetricSpec], have: bool) -> None:
    """ConfigError when a chosen metric reads the returned texts and the run has none."""
    if not have and (reading := [str(s) for s in chosen if s.needs_texts]):
        raise ConfigError(
            f"{', '.join(reading)} read the returned context texts, and this run has none",
            hint="set query.texts to the JMESPath of each result's text (a native run file "
            "has none: drop those metrics)",
        )
