"""The parts of a Comparison beside the metric rows: flips, unanswerable queries, outranks
pairs and latency.

Part of `harness.verdict.decide` (its docstring states every rule: flip ranks as the upper median
over repeats, impact order, modal counts, paired latency); pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from harness.score.evaluation import Evaluation
from harness.values.types import GoldSet, RefRun, Repeat, Verdict
from harness.verdict import stats, threshold, validity
from harness.verdict.comparison import (
    CompareSettings,
    Direction,
    Flip,
    Flips,
    Latency,
    Machine,
    NoAnswer,
    Outranks,
    QueryDelta,
    QueryDeltas,
    RepeatMeans,
    TopScores,
)
from harness.verdict.latency import Throughput, latency_summary, throughput
from harness.verdict.latency_rule import MIN_LOOK, decide, plan, round_estimate
from harness.verdict.latency_tail import TailRow, headline, tail_rows
from harness.verdict.order_effect import OrderEffect, order_effect
from harness.verdict.scopes import Side


def flips(
    metric: str,
    k: int,
    ids: Sequence[str],
    gold: GoldSet,
    base: Side,
    cand: Side,
    settings: CompareSettings,
) -> Flips:
    """The analysed answerable queries (`ids`) whose modal `metric` (hit@k) outcome differs,
    with their first relevant rank on each side, largest impact first, then by query id."""
    b_hit = stats.modal(base.matrix(metric) > 0.5)
    c_hit = stats.modal(cand.matrix(metric) > 0.5)
    flipped = np.flatnonzero(b_hit != c_hit)
    medians = [_upper_medians(s.first_ranks(flipped, settings.rel_level)) for s in (base, cand)]
    found = []
    for i, before, after in zip(flipped.tolist(), *medians, strict=True):
        query = gold.by_id[ids[i]]
        found.append(
            Flip(
                query_id=query.id,
                slice=query.slice,
                text=query.text,
                rank_before=before,
                rank_after=after,
                direction=Direction.NEWLY_HIT if c_hit[i] else Direction.NEWLY_MISSED,
                impact=abs(_rr(after) - _rr(before)),
            )
        )
    # Rounded so that equal impacts reached by different arithmetic tie, and the id decides.
    found.sort(key=lambda f: (-round(f.impact, 12), f.query_id))
    return Flips(metric, k, tuple(found))


def query_deltas(
    metric: str,
    ids: Sequence[str],
    gold: GoldSet,
    base: Side,
    cand: Side,
    flipped: Flips | None,
) -> QueryDeltas:
    """Per query of `ids`, the candidate's mean `metric` over its usable repeats less the
    baseline's, ascending (ties by query id), each marked with its flip in `flipped`."""
    deltas = cand.matrix(metric).mean(axis=0) - base.matrix(metric).mean(axis=0)
    marks = {f.query_id: f.direction for f in flipped.flips} if flipped is not None else {}
    found = [
        QueryDelta(qid, gold.by_id[qid].slice, float(d), marks.get(qid))
        for qid, d in zip(ids, deltas.tolist(), strict=True)
    ]
    # Rounded so that equal deltas reached by different arithmetic tie, and the id decides.
    found.sort(key=lambda q: (round(q.delta, 12), q.query_id))
    return QueryDeltas(metric, None if flipped is None else flipped.metric, tuple(found))


def _upper_medians(ranks: npt.NDArray[np.intp]) -> list[int | None]:
    """Per column of `ranks` (repeats x queries, 0 = not returned), the upper median over the
    repeats, not returned counting as worst (None)."""
    if ranks.shape[0] == 0:
        return [None] * ranks.shape[1]
    worst = np.where(ranks == 0, np.iinfo(np.intp).max, ranks)
    median = np.sort(worst, axis=0)[ranks.shape[0] // 2]
    return [None if r == np.iinfo(np.intp).max else r for r in median.tolist()]


def _rr(rank: int | None) -> float:
    return 0.0 if rank is None else 1.0 / rank


def _modal_counts(flags: Sequence[Sequence[Sequence[bool]]]) -> tuple[int, list[int]]:
    """The number of items (as the last side with a repeat has them) and, per side (its flags
    per repeat, one per item), how many items are True in the modal outcome over repeats."""
    widths = [len(per_rep[0]) for per_rep in flags if per_rep]
    counts = [
        int(stats.modal(list(per_rep)).sum()) if per_rep and per_rep[0] else 0 for per_rep in flags
    ]
    return (widths[-1] if widths else 0), counts


def _returned_any(ev: Evaluation, ids: set[str]) -> list[bool]:
    na = ev.no_answer
    return [a for q, a in zip(na.query_ids, na.returned_any, strict=True) if q in ids]


def _held(ev: Evaluation, ids: set[str]) -> list[bool]:
    o = ev.outranks
    return [h for p, h in zip(o.pairs, o.held, strict=True) if p[0] in ids]


def no_answer(ids: set[str], sides: Sequence[Side]) -> NoAnswer:
    """Unanswerable queries among `ids` that returned anything, modal over repeats, per side."""
    n, counts = _modal_counts([[_returned_any(ev, ids) for ev in s.evaluations] for s in sides])
    rates = [c / n if n else None for c in counts]
    return NoAnswer(n, counts[0], counts[1], rates[0], rates[1])


def outranks(ids: set[str], sides: Sequence[Side]) -> Outranks:
    """`outranks` pairs of queries among `ids` that hold, modal over repeats, per side."""
    n, counts = _modal_counts([[_held(ev, ids) for ev in s.evaluations] for s in sides])
    return Outranks(n, counts[0], counts[1])


_BUSY_FIX = (
    "close other work (or run on a quieter machine) and compare again; "
    "more --repeats narrow the interval but cannot make a busy machine quiet"
)


def latency(
    ids: Sequence[str],
    runs: Sequence[RefRun],
    repeats: Sequence[Sequence[Repeat]],
    settings: CompareSettings,
) -> Latency:
    """Per side, the latency of every non-errored answer of its usable `repeats`; paired, the
    candidate/baseline ratio per round over the queries of `ids` answered with a latency on both
    sides in that round, and `latency.latency_test` over the rounds.

    Only two runs measured together (the same `pair_id`: `runner.run_pair` timed each query on
    both back to back, round by round) are paired; otherwise latency is not compared, with the
    reason and the fix.  Under `concurrency > 1` latencies include the client's queueing:
    throughput is given per side instead and latency is not compared either."""
    summaries, percentiles = [], []
    for reps in repeats:
        ns = np.concatenate([np.zeros(0, np.int64), *(rep.answers.latencies() for rep in reps)])
        summaries.append(latency_summary(ns) if ns.size else None)
        percentiles.append(_percentiles(np.asarray(ns, dtype=np.float64) / 1e6))
    concurrency = max(run.concurrency for run in runs)
    base_run, cand_run = runs
    why = _not_together(base_run, cand_run, concurrency)
    flows: list[Throughput | None] = [None, None]
    if concurrency > 1:
        flows = [_throughput(reps, concurrency) for reps in repeats]
    test, paired = None, 0
    effect: OrderEffect | None = None
    per_query: list[float] = []
    tail: tuple[TailRow, ...] = ()
    if why is None and all(repeats):
        timed = _both_timed(ids, repeats[0], repeats[1])
        rounds = _latencies(timed)
        for b_ns, c_ns, _ in rounds:
            paired = max(paired, len(b_ns))
            per_query += [y / x for x, y in zip(b_ns, c_ns, strict=True)]
        if rounds:
            estimates = [round_estimate(b, c, base_first=o) for b, c, o in rounds]
            first = sum(1 for rep in repeats[0] if not rep.latency_only) or len(rounds)
            budget = max(base_run.latency_budget or len(rounds), len(rounds), MIN_LOOK)
            test = decide(
                estimates, plan(first, budget), tolerance=settings.latency_tolerance
            )
            effect = order_effect(_orders(rounds))
            ms = [(np.asarray(b, np.float64) / 1e6, np.asarray(c, np.float64) / 1e6)
                  for b, c, _ in rounds]  # fmt: skip
            tail = tail_rows(ms, first=first, budget=budget, tolerance=settings.latency_tolerance)
    called = None
    if why is not None:
        words = why
    elif test is None:
        words = "no latency was measured on both sides"
    else:
        called, words = headline(test, tail, settings.latency_tolerance)
    return Latency(
        summaries[0],
        summaries[1],
        paired,
        test,
        words,
        not_compared=why,
        concurrency=concurrency,
        throughput_baseline=flows[0],
        throughput_candidate=flows[1],
        machine=_machine([rep for reps in repeats for rep in reps]),
        percentiles_baseline=percentiles[0],
        percentiles_candidate=percentiles[1],
        ratio_percentiles=_percentiles(np.asarray(per_query if test else [], dtype=np.float64)),
        order_effect=effect,
        order_seed=base_run.order_seed if why is None else None,
        tail=tail,
        verdict=called,
    )


_Timed = list[tuple[Repeat, Repeat, npt.NDArray[np.int64], npt.NDArray[np.int64]]]


def _both_timed(
    ids: Sequence[str], baseline: Sequence[Repeat], candidate: Sequence[Repeat]
) -> _Timed:
    """Per round (by repeat index, in order): both sides' repeats and, for the queries of `ids`
    answered with a latency on both sides in that round, the rows of their answers (the last
    of a query asked twice, as `validity.by_query` has it) on each side, aligned."""
    base_by = {rep.index: rep for rep in baseline}
    cand_by = {rep.index: rep for rep in candidate}
    out = []
    for index in sorted(set(base_by) & set(cand_by)):
        b, c = base_by[index], cand_by[index]
        rb, rc = b.answers.rows(ids), c.answers.rows(ids)
        lb = b.answers.columns.latency_ns[np.maximum(rb, 0)]
        lc = c.answers.columns.latency_ns[np.maximum(rc, 0)]
        both = (rb >= 0) & (rc >= 0) & (lb > 0) & (lc > 0)
        if both.any():
            out.append((b, c, rb[both], rc[both]))
    return out


_Paired = list[tuple[list[int], list[int], list[bool] | None]]


def _orders(rounds: _Paired) -> list[tuple[list[float], list[bool]]]:
    """Per round whose order was recorded (runs since 0.2), the paired log ratios log(c/b) of
    the queries timed on both sides, and whether the baseline went first for each."""
    return [
        ([math.log(y / x) for x, y in zip(b_ns, c_ns, strict=True)], first)
        for b_ns, c_ns, first in rounds
        if first is not None
    ]


def paired_rounds(
    ids: Sequence[str], baseline: Sequence[Repeat], candidate: Sequence[Repeat]
) -> _Paired:
    """Per round (by repeat index, in order) the latencies (ns) of the queries of `ids` answered
    with a latency on both sides in that round, baseline's and candidate's, aligned, and whether
    the baseline went first for each (None for a record without the order)."""
    return _latencies(_both_timed(ids, baseline, candidate))


def _latencies(timed: _Timed) -> _Paired:
    return [
        (
            b.answers.columns.latency_ns[rb].tolist(),
            c.answers.columns.latency_ns[rc].tolist(),
            (np.asarray(b.positions)[rb] == 0).tolist()
            if len(b.positions) == len(b.results)
            else None,
        )
        for b, c, rb, rc in timed
    ]


def _percentiles(values: npt.NDArray[np.float64]) -> tuple[float, ...]:
    """Percentiles 0, 1, ..., 100 of `values` (numpy "linear"): an ECDF to draw; () when empty."""
    if values.size == 0:
        return ()
    return tuple(float(x) for x in np.percentile(values, np.arange(101), method="linear"))


_SWEEP_FIX = " (in a sweep or matrix, which reuse stored runs: --fresh)"


def _not_together(base: RefRun, cand: RefRun, concurrency: int) -> str | None:
    stored = [side for side, run in (("baseline", base), ("candidate", cand)) if run.reused]
    if stored:
        which = " and ".join(stored)
        what = "is a stored run" if len(stored) == 1 else "are stored runs"
        return (
            f"the {which} {what} (reused: --reuse-runs)"
            " measured at another time, and numbers from different times are not a pair "
            "(a stored run serves quality, never latency); compare without --reuse-runs to "
            f"measure both sides together{_SWEEP_FIX}"
        )
    if base.pair_id is None or base.pair_id != cand.pair_id:
        return (
            "the two sides were not measured together in one invocation; compare again "
            f"without --reuse-runs to measure both sides together{_SWEEP_FIX}"
        )
    if concurrency > 1:
        return (
            f"under --concurrency {concurrency} a query's latency includes the "
            "client's own queueing, so throughput is given instead; run with --concurrency 1 "
            "for a latency verdict"
        )
    return None


def _throughput(reps: Sequence[Repeat], concurrency: int) -> Throughput | None:
    qps = [
        int(rep.answers.ok.sum()) / rep.timings_s["queries"]
        for rep in reps
        if rep.timings_s.get("queries", 0) > 0 and rep.answers.ok.any()
    ]
    return throughput(qps, concurrency) if qps else None


def _machine(reps: Sequence[Repeat]) -> Machine | None:
    seen = [rep.machine for rep in reps if rep.machine is not None]
    if not seen:
        return None
    loads = [x for m in seen for x in (m.load_before, m.load_after) if x >= 0]
    load = max(loads, default=-1.0)
    cpus = max(m.cpu_count for m in seen)
    client = float(np.median([m.client_cpu_ns for m in seen])) / 1e6
    return Machine(load, cpus, client, busy=cpus > 0 and load > cpus)


def machine_warning(machine: Machine | None) -> str | None:
    """The warning for a busy machine (pyperf warns likewise), or None."""
    if machine is None or not machine.busy:
        return None
    return (
        f"the machine was busy while measuring (1-minute load average up to "
        f"{machine.load_max:.2f} on {machine.cpu_count} CPUs): other work competed with the "
        f"services, so the latency figures may not be trusted; {_BUSY_FIX}"
    )


def repeat_means(
    side: str, reps: Sequence[Repeat], scored: Side, metrics: Sequence[str]
) -> tuple[RepeatMeans, ...]:
    """Per usable repeat of one side: each metric's mean over the analysed answerable queries
    (`scored`'s rows) and the p50 of its non-errored latencies (ms)."""
    if not scored.evaluations or scored.rows.size == 0:
        return ()
    matrices = [scored.matrix(m).mean(axis=1) for m in metrics]
    out = []
    for i, rep in enumerate(reps):
        ms = rep.answers.latencies() / 1e6
        p50 = float(np.percentile(ms, 50, method="linear")) if ms.size else None
        out.append(RepeatMeans(side, rep.index, tuple(float(m[i]) for m in matrices), p50))
    return tuple(out)


def top_scores(side: str, gold: GoldSet, run: RefRun) -> TopScores | None:
    """`harness.verdict.threshold`'s analysis of one side, for the report's score plot; None when
    the service returns no scores (some answer with results carries none), when no answer
    returned a scored result, or when the run was measured on another gold set (the run is
    invalid)."""
    if run.gold_hash != gold.hash:
        return None
    scored = []  # per usable repeat: has each answer that did not error and returned ids scores
    for rep in validity.usable(run):
        cols = rep.answers.columns
        scored.append(cols.scored[(cols.error == -1) & (cols.ids_at[1:] > cols.ids_at[:-1])])
    if not any(map(len, scored)) or not all(s.all() for s in scored):
        return None
    t = threshold.analyse(gold, run)
    c = t.cutoff
    return TopScores(
        side=side,
        answerable=tuple(sorted(s.score for s in t.side(True) if s.score is not None)),
        unanswerable=tuple(sorted(s.score for s in t.side(False) if s.score is not None)),
        empty_answerable=sum(s.score is None for s in t.side(True)),
        empty_unanswerable=sum(s.score is None for s in t.side(False)),
        cutoff=None if c is None else c.value,
        abstention_rate=None if c is None else c.abstention_rate,
        false_answer_rate=None if c is None else c.false_answer_rate,
        separable=t.separable,
        words=t.words,
    )


TAIL_RATIO = 2.0  # the candidate's p95 this many times the baseline's ...
TAIL_MS = 1.0  # ... and this much slower: said beside a verdict that is not "slower"


def tail_warning(latency: Latency) -> str | None:
    """A warning when the slowest answers got much slower while the latency verdict (a
    trimmed mean of per-query ratios, `harness.verdict.latency_rule`) did not call it: the
    trim leaves out each round's slowest fifth, so a change in the tail alone is not in it."""
    base, cand, test = latency.baseline, latency.candidate, latency.test
    if base is None or cand is None or test is None or test.verdict is Verdict.REGRESSED:
        return None
    if any(row.verdict is Verdict.REGRESSED for row in latency.tail):  # the verdict says it
        return None
    if cand.p95 < TAIL_RATIO * base.p95 or cand.p95 - base.p95 < TAIL_MS:
        return None
    return (
        f"the slowest answers got slower: p95 {base.p95:.1f} -> {cand.p95:.1f} ms "
        f"({cand.p95 / base.p95:.1f}x), p99 {base.p99:.1f} -> {cand.p99:.1f} ms, while the "
        f"latency verdict is {test.verdict.value}: it is a trimmed mean of the per-query "
        "ratios (each round's slowest fifth left out), typical latency, not the tail"
    )
