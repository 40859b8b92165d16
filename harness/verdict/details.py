"""The parts of a Comparison beside the metric rows: flips, unanswerable queries, outranks
pairs and latency.

Part of `harness.verdict.compare` (its docstring states every rule: flip ranks as the upper median
over repeats, impact order, modal counts, paired latency); pure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.score.evaluation import Evaluation
from harness.types import GoldSet, Repeat
from harness.verdict import stats, validity
from harness.verdict.comparison import (
    CompareSettings,
    Direction,
    Flip,
    Flips,
    Latency,
    NoAnswer,
    Outranks,
)
from harness.verdict.latency import (
    latency_summary,
    paired_latency_ratio,
    per_query_latency_ms,
    ratio_words,
)
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
    b_hit = stats.modal(list(base.matrix(metric) > 0.5))
    c_hit = stats.modal(list(cand.matrix(metric) > 0.5))
    found = []
    for i in map(int, np.flatnonzero(b_hit != c_hit)):
        query = gold.by_id[ids[i]]
        before, after = (_upper_median(s.ranks(query, settings.rel_level)) for s in (base, cand))
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


def _upper_median(ranks: Sequence[int | None]) -> int | None:
    ordered = sorted(ranks, key=lambda r: float("inf") if r is None else r)
    return ordered[len(ordered) // 2]


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


def latency(
    ids: Sequence[str], repeats: Sequence[Sequence[Repeat]], settings: CompareSettings
) -> Latency:
    """Per side, the latency of every non-errored answer of its usable `repeats`; paired, the
    candidate/baseline ratio over the queries of `ids` timed in every repeat of both sides."""
    summaries = []
    for reps in repeats:
        ns = [r.latency_ns for rep in reps for r in rep.results if r.ok and r.latency_ns > 0]
        summaries.append(latency_summary(ns) if ns else None)
    answers = [[validity.by_query(rep) for rep in reps] for reps in repeats]
    paired = [qid for qid in ids if all(a[qid].latency_ns > 0 for side in answers for a in side)]
    test = None
    words = "no latency was measured on both sides"
    if paired and all(answers):
        ms = [
            per_query_latency_ms([[a[qid].latency_ns for qid in paired] for a in side])
            for side in answers
        ]
        test = paired_latency_ratio(
            ms[0],
            ms[1],
            seed=settings.seed,
            tolerance=settings.latency_tolerance,
            resamples=settings.resamples,
        )
        words = f"{ratio_words(test.ratio)} (95% CI {test.ci_low:.2f}-{test.ci_high:.2f})"
    return Latency(summaries[0], summaries[1], len(paired), test, words)
