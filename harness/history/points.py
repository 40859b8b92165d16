"""One measurement of one commit, as `harness history` aggregates it.  Pure.

From a run record (`from_run`): its usable repeats (`harness.verdict.validity.usable`) scored
against the gold set; per metric, each answerable query's mean over those repeats (a query that
errored in any usable repeat is left out, as `harness run` leaves it out); per usable repeat (a
boot), the p50 of its non-errored latencies in ms.

From a saved comparison (`from_comparison`, when no gold set is at hand): each side's overall
mean of every compared metric, and each usable repeat's latency p50 when the comparison recorded
it (`Comparison.repeats`); no per-query values, so no interval for the metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.score.evaluation import evaluate
from harness.score.metrics import MetricSpec
from harness.values.types import GoldSet, RefRun
from harness.verdict import validity
from harness.verdict.comparison import Comparison


@dataclass(frozen=True)
class Point:
    """What one record (or one side of one comparison) says about commit `sha`.

    `when` orders points measured on one commit, and commits git does not know (its source's
    name starts with its UTC stamp); `per_query` maps metric -> query id -> mean over repeats;
    `means` maps metric -> mean (comparisons only); `latency_p50s` one value per boot (ms);
    `repeat_means` maps metric -> each usable repeat's mean over the queries (run records only:
    the repeat-to-repeat spread `harness watch` weighs each commit by)."""

    sha: str
    ref: str
    when: str
    source: str
    gold_hash: str
    repeats: int
    per_query: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    means: Mapping[str, float] = field(default_factory=dict)
    latency_p50s: tuple[float, ...] = ()
    repeat_means: Mapping[str, tuple[float, ...]] = field(default_factory=dict)


def from_run(gold: GoldSet, run: RefRun, specs: Sequence[MetricSpec], when: str) -> Point | None:
    """The record scored (see the module docstring); None when it has no usable repeat."""
    reps = validity.usable(run)
    if not reps:
        return None
    answers = [validity.by_query(rep) for rep in reps]
    ok = [
        q.id
        for q in gold.queries
        if q.answerable and all(q.id in a and a[q.id].ok for a in answers)
    ]
    evaluations = [
        evaluate(gold, {qid: r.ids for qid, r in a.items() if r.ok}, specs) for a in answers
    ]
    per_query: dict[str, dict[str, float]] = {}
    repeat_means: dict[str, tuple[float, ...]] = {}
    for spec in specs:
        name = str(spec)
        rows = []
        for ev in evaluations:
            position = {qid: i for i, qid in enumerate(ev.query_ids)}
            rows.append([ev.columns[name][position[qid]] for qid in ok])
        means = np.mean(np.asarray(rows, dtype=np.float64), axis=0) if ok else []
        per_query[name] = {qid: float(v) for qid, v in zip(ok, means, strict=True)}
        if ok:
            repeat_means[name] = tuple(float(np.mean(row)) for row in rows)
    p50s = []
    for rep in reps:
        ms = [r.latency_ns / 1e6 for r in rep.results if r.ok and r.latency_ns > 0]
        if ms:
            p50s.append(float(np.percentile(ms, 50, method="linear")))
    return Point(
        sha=run.sha,
        ref=run.ref,
        when=when,
        source=run.record_path or run.ref,
        gold_hash=run.gold_hash,
        repeats=len(reps),
        per_query=per_query,
        latency_p50s=tuple(p50s),
        repeat_means=repeat_means,
    )


def from_comparison(c: Comparison, when: str, source: str) -> list[Point]:
    """Both sides of a saved comparison (none of an invalid one: its numbers diagnose only)."""
    if not c.valid:
        return []
    out = []
    sides = ((c.header.baseline, "baseline"), (c.header.candidate, "candidate"))
    for i, (info, side) in enumerate(sides):
        means: Mapping[str, float] = {
            r.metric: r.baseline if side == "baseline" else r.candidate for r in c.overall.rows
        }
        p50s = tuple(
            r.latency_p50 for r in c.repeats if r.side == side and r.latency_p50 is not None
        )
        summary = c.latency.baseline if side == "baseline" else c.latency.candidate
        if not p50s and summary is not None:
            p50s = (summary.p50,)
        out.append(
            Point(
                sha=info.sha,
                ref=info.ref,
                when=f"{when}/{i}",  # the baseline first
                source=source,
                gold_hash=c.header.gold.hash,
                repeats=info.usable_repeats,
                means=means,
                latency_p50s=p50s,
            )
        )
    return out
