"""The synthetic comparison inputs of tests/verdict/test_compare.py, tests/report/test_report.py and
tests/report/test_run_summary.py: a gold set and in-memory RefRuns (no services).

The gold set has 80 answerable queries q01..q80 (slices: news q01-q40, howto q41-q70, rare
q71-q80), each with one relevant document "<qid>-rel", and 6 unanswerable queries u1..u6 (slice
news).  A side's answers come from a function (repeat, query) -> rank of the relevant document
(None: not returned), so every expectation built on them can be counted by hand.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import replace

from harness.values.types import (
    ErrorKind,
    GoldQuery,
    GoldSet,
    QueryResult,
    RefRun,
    Repeat,
    RunFailure,
)
from harness.verdict.comparison import CompareSettings, Comparison
from harness.verdict.decide import compare

Rank = Callable[[int, GoldQuery], int | None]
Millis = Callable[[int, GoldQuery], float]

BASE_SHA = "1" * 40
CAND_SHA = "2" * 40
# 2,000 resamples: enough for the verdicts below, and the suite stays quick.  A minimum effect of
# 0.12: 80 identical deterministic answers see 0.111 at 80% power (harness.verdict.power), so at
# the default 0.10 every A/A here would be "inconclusive", which is right, and not what these
# tests are about (test_compare.py checks that case at 0.10).
FAST = CompareSettings(resamples=2_000, min_effect=0.12)


def _slice(i: int) -> str:
    return "news" if i <= 40 else "howto" if i <= 70 else "rare"


def make_gold(n: int = 80, unanswerable: int = 6, pooled: bool | None = False) -> GoldSet:
    """`n` answerable queries, each judging its relevant document (grade 1) and one junk one
    (grade 0), and `unanswerable` more.  The judgements are the whole truth (`pooled` False,
    as a native header's "judged": "complete"): every other id is junk, known not relevant;
    None reads it from the grades, a pool (`harness.verdict.holes.pooled_gold`)."""
    queries = [
        GoldQuery(
            id=f"q{i:02d}",
            text=f"how do I configure widget {i}",
            slice=_slice(i),
            relevant={f"q{i:02d}-rel": 1, f"q{i:02d}-junk9": 0},
            outranks=((f"q{i:02d}-rel", f"q{i:02d}-stale"),) if i % 10 == 0 else (),
        )
        for i in range(1, n + 1)
    ]
    queries += [
        GoldQuery(id=f"u{i}", text=f"unanswerable question {i}", slice="news")
        for i in range(1, unanswerable + 1)
    ]
    digest = hashlib.sha256(f"synthetic-{n}-{unanswerable}".encode()).hexdigest()
    return GoldSet(
        queries=tuple(queries),
        source="gold/synthetic.jsonl",
        format="native",
        hash=digest,
        pooled=pooled,
    )


def ranks(overrides: Mapping[str, int | None] = (), default: int = 1) -> Rank:
    """Rank `default` for every answerable query, except the ones named; None = buried."""
    table = dict(overrides)
    return lambda _rep, q: table.get(q.id, default)


def ranking(q: GoldQuery, rank: int | None, stale_first: bool = False) -> tuple[str, ...]:
    """Ten results: junk, the relevant document at `rank`; unanswerable q01-style: nothing."""
    if not q.answerable:
        return () if q.id in ("u1", "u2", "u3", "u4") else (f"{q.id}-junk0",)
    ids = [f"{q.id}-junk{j}" for j in range(max(10, rank or 0))]
    if rank is not None:
        ids[rank - 1] = f"{q.id}-rel"
    if stale_first:
        ids.insert(0, f"{q.id}-stale")
    return tuple(ids)


def base_ms(_rep: int, q: GoldQuery) -> float:
    return 2.0 + int(q.id[1:]) % 7  # 2..8 ms, spread between queries


def make_run(
    gold: GoldSet,
    rank: Rank,
    *,
    ref: str = "main",
    sha: str = BASE_SHA,
    repeats: int = 3,
    ms: Millis = base_ms,
    errors: Mapping[tuple[int, str], ErrorKind] = (),  # (repeat, query id) -> error
    gold_hash: str | None = None,
    build_failure: RunFailure | None = None,
    failures: Mapping[int, RunFailure] = (),
    unconfirmed: frozenset[int] = frozenset(),
    stale_first: frozenset[str] = frozenset(),
    pair_id: str | None = "measured-together",
    reused: bool = False,
) -> RefRun:
    errors, failures = dict(errors), dict(failures)

    def answer(rep: int, q: GoldQuery) -> QueryResult:
        latency = round(ms(rep, q) * 1e6)
        if (rep, q.id) in errors:
            return QueryResult(q.id, error=errors[rep, q.id], detail="boom", latency_ns=latency)
        return QueryResult(
            q.id, ranking(q, rank(rep, q), q.id in stale_first), status=200, latency_ns=latency
        )

    reps = tuple(
        Repeat(
            index=r,
            results=() if r in failures else tuple(answer(r, q) for q in gold.queries),
            teardown_confirmed=r not in unconfirmed,
            failure=failures.get(r),
        )
        for r in range(repeats)
    )
    return RefRun(
        ref=ref,
        sha=sha,
        config_hash="c" * 64,
        gold_hash=gold.hash if gold_hash is None else gold_hash,
        corpus_hash=None,
        tool_version="0.test",
        host={},
        repeats=() if build_failure else reps,
        build_failure=build_failure,
        pair_id=pair_id,
        reused=reused,
    )


def candidate(gold: GoldSet, rank: Rank, **kwargs: object) -> RefRun:
    return make_run(gold, rank, ref="feat/x", sha=CAND_SHA, **kwargs)  # type: ignore[arg-type]


def run_pair(
    cand_rank: Rank, base_rank: Rank | None = None, s: CompareSettings = FAST, **cand: object
) -> Comparison:
    gold = make_gold()
    base = make_run(gold, base_rank or ranks())
    return compare(gold, base, candidate(gold, cand_rank, **cand), s)


def buried(*numbers: int) -> dict[str, int | None]:
    return {f"q{i:02d}": None for i in numbers}


def with_scores(run: RefRun, gold: GoldSet, top: float) -> RefRun:
    """Every answer with results gets scores: `top` for an answerable query's first result
    (0.2 for an unanswerable one's), falling by 0.01 a rank."""
    reps = []
    for rep in run.repeats:
        results = []
        for r in rep.results:
            first = top if gold.by_id[r.query_id].answerable else 0.2
            scores = tuple(first - 0.01 * i for i in range(len(r.ids))) if r.ids else ()
            results.append(replace(r, scores=scores))
        reps.append(replace(rep, results=tuple(results)))
    return replace(run, repeats=tuple(reps))


def slower(rep: int, q: GoldQuery) -> float:
    return 1.5 * base_ms(rep, q) * (1 + 0.01 * ((rep + int(q.id[1:])) % 3))


def slow(rep: int, q: GoldQuery) -> float:
    """1.5x base_ms, give or take 8% per query and 1% per repeat."""
    i = int(q.id[1:])
    return 1.5 * base_ms(rep, q) * (1 + 0.04 * (i % 5 - 2)) * (1 + 0.01 * ((rep + i) % 3))


def regressed_candidate(gold: GoldSet) -> RefRun:
    """tests/report/test_report.py's regressed candidate (its golden reports; test_report_oracle.py
    holds their numbers against references): it loses 12 howto answers and 2 rare ones, wins
    back 2, pushes q05 to rank 7, is 1.5x slower (`slow`), errors once on q33 and answers q10
    stale first."""
    return candidate(
        gold,
        ranks({**buried(*range(41, 53), 71, 72), "q05": 7}),
        ms=slow,
        errors={(1, "q33"): ErrorKind.TIMEOUT},
        stale_first=frozenset({"q10"}),
    )


def scored() -> tuple[Comparison, RefRun, RefRun]:
    """A regression (q41-q52 buried, 1.5x slower) whose services return scores: every plot of
    the HTML report has something to draw."""
    gold = make_gold()
    base = with_scores(make_run(gold, ranks()), gold, 0.9)
    cand = with_scores(candidate(gold, ranks(buried(*range(41, 53))), ms=slower), gold, 0.8)
    return compare(gold, base, cand, CompareSettings(resamples=500)), base, cand


def with_every_section(c: Comparison) -> Comparison:
    """`c` with what the HTML page shows in sections of its own: floors (one not met), errored
    answers with a sample body, prepare steps and the retrieval/generation 2x2."""
    from harness.values.types import FloorRow
    from harness.verdict.comparison import ErrorKindSummary, PrepareStep
    from harness.verdict.twobytwo import Cell, CellQueries, Move, TwoByTwo, TwoByTwoComparison

    ids = [f"q{i:02d}" for i in range(1, 81)]
    cells = list(Cell)

    def table(shift: int) -> TwoByTwo:
        return TwoByTwo(
            k=5,
            cells=tuple(
                CellQueries(cell, tuple(q for j, q in enumerate(ids) if (j + shift) % 4 == n))
                for n, cell in enumerate(cells)
            ),
            answers="answers.jsonl",
        )

    moves = tuple(
        Move(b, a, tuple(q for j, q in enumerate(ids) if j % 4 == n and (j + 1) % 4 == m))
        for n, b in enumerate(cells)
        for m, a in enumerate(cells)
    )
    return replace(
        c,
        floors=(
            FloorRow("overall", "hit@5", "at least", 0.9, 0.85, 80, False),
            FloorRow("overall", "mrr@10", "at least", 0.5, 0.85, 80, True),
        ),
        errors=(
            ErrorKindSummary(
                side="candidate",
                kind="http_status",
                count=3,
                asked=258,
                statuses=((500, 3),),
                sample='{"detail": "index shard 3 is not loaded ' + "x" * 500 + '"}',
                sample_query="q07",
                advice="read the service log: the service answered 500",
            ),
        ),
        prepare=(
            PrepareStep("baseline", "prepare[0]", 1.25, 3),
            PrepareStep("candidate", "prepare[0]", 2.5, 3),
        ),
        twobytwo=TwoByTwoComparison(table(0), table(1), moves),
    )
