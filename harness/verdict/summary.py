"""One ref on its own: what `harness run` reports of a RefRun (errors, latency, metrics, drift).

Part of `harness.verdict.decide`: the same usable repeats and the same rule for errored answers
(left out, never scored as a miss) as a comparison; pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from harness.score.evaluation import evaluate, returned_texts
from harness.score.metrics import Kind
from harness.values.types import GoldSet, RefRun
from harness.verdict import latency, stats, validity
from harness.verdict.comparison import CompareSettings, RunSummary


def summarise_run(gold: GoldSet, run: RefRun, settings: CompareSettings) -> RunSummary:
    """Errors by kind, latency over the usable repeats, metric means (over those repeats) overall
    and per slice with answerable queries, and hit@k drift (see RunSummary); no scopes and no
    drift when no answerable query was answered in every usable repeat."""
    usable = validity.usable(run)
    errors = Counter(
        r.error.value for rep in run.repeats for r in rep.results if r.error is not None
    )
    ok_ns = [r.latency_ns for rep in usable for r in rep.results if r.ok and r.latency_ns > 0]
    # Only queries answered in every usable repeat are scored: an errored answer is no ranking,
    # and scoring it 0 (as an absent query is in trec_eval -c) would call an outage a miss.
    answers = [validity.by_query(rep) for rep in usable]
    scored = replace(
        gold,
        queries=tuple(q for q in gold.queries if all(q.id in a and a[q.id].ok for a in answers)),
    )
    evaluations = [
        evaluate(
            scored,
            {qid: r.ids for qid, r in a.items()},
            settings.specs,
            settings.rel_level,
            texts=returned_texts(a) if settings.context else None,
        )
        for a in answers
    ]
    scopes: list[tuple[str, int, Mapping[str, float]]] = []
    drift: dict[str, int] = {}
    # No answerable query answered in every usable repeat (every answer errored, say): nothing
    # was scored, so there is no mean to show, rather than a crash or a row of zeros.
    if evaluations and evaluations[0].n:
        names = [str(s) for s in settings.specs]
        first = evaluations[0]

        def mean(values: Sequence[Mapping[str, float]]) -> dict[str, float]:
            return {m: float(np.mean([v[m] for v in values])) for m in names}

        scopes.append(("all", first.n, mean([ev.aggregate for ev in evaluations])))
        for name, score in first.slices.items():
            if score.n == 0:  # only unanswerable queries: the no-answer rate scores them
                continue
            scopes.append((name, score.n, mean([ev.slices[name].values for ev in evaluations])))
        for spec in settings.specs:
            if spec.kind is Kind.BINARY:
                outcomes = [[bool(x) for x in ev.columns[str(spec)] > 0] for ev in evaluations]
                drift[str(spec)] = stats.drift(outcomes)
    return RunSummary(
        run=run,
        usable=len(usable),
        errors=dict(sorted(errors.items())),
        latency=latency.latency_summary(ok_ns) if ok_ns else None,
        scopes=tuple(scopes),
        drift=drift,
        error_kinds=validity.error_kinds(gold, run, "run"),
        prepare=validity.prepare_steps(run, "run"),
    )
