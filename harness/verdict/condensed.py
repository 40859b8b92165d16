"""Calls on the judged documents alone: a pooled gold set's condensed lists.  Pure.

    extra = twins(settings)                              # what to score beside settings.specs
    rows = condensed_rows(base, cand, ids, settings)     # those rows, Holm across the headline's
    doubt = unheld(called, rows, how)                    # why a call does not hold, or None

A pooled gold set (some grade 0: `holes.pooled_gold`) judged what some system returned, and
every document nobody judged counts as not relevant.  A call there may be made by the holes
alone: a candidate that puts unjudged documents above the relevant one it used to rank in its
top k "loses" the query whether those documents are relevant or junk.  The condensed list
(Sakai, SIGIR 2007; trec_eval -J) is the ranking with every unjudged document removed, the
judged ones keeping their order: on it that query is not lost, while a candidate that dropped
its relevant document still loses it.

The rule: on a pooled gold set, a call (improved or regressed) stands only where one of the
rows that make it holds on the condensed lists too: its twin (hit@10's is hit'@10, a gate's
the gate's prime, `harness.score.metrics.HOLE_METRICS`), tested as the row is, its p
Holm-adjusted across the headline's twins, makes the same call.  Otherwise the verdict is
"inconclusive: judgments incomplete", naming both results: the truth depends on documents
nobody judged, and `harness judge pairs` lists them.  A row with no twin (the context metrics)
is not checked.  The condensed rows are shown whatever the verdict, with nDCG'@k at the largest
cutoff and bpref beside them, and decide nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from harness.score.metrics import REGISTRY, Kind, MetricSpec, parse_metric
from harness.values.types import Verdict
from harness.verdict import stats
from harness.verdict.comparison import CompareSettings, MetricRow
from harness.verdict.scopes import Side, score_scope


def primed(metric: str) -> str | None:
    """The condensed-list twin of `metric` as printed ("hit@10" -> "hit'@10"); None: none."""
    spec = parse_metric(metric)
    name = f"{spec.name}'"
    return str(MetricSpec(name, spec.k)) if name in REGISTRY else None


def twins(settings: CompareSettings) -> tuple[MetricSpec, ...]:
    """The headline's twins, then nDCG' at the largest cutoff and bpref."""
    names = [primed(m) for m in settings.decisive()]
    names += [f"ndcg'@{max(settings.k)}", "bpref"]
    return tuple(dict.fromkeys(parse_metric(n) for n in names if n is not None))


def condensed_rows(
    base: Side, cand: Side, ids: Sequence[str], settings: CompareSettings
) -> tuple[MetricRow, ...]:
    """Every twin's row over the analysed queries (`base` and `cand` scored with `twins` as
    `score_sides`' extra), the headline's twins Holm-adjusted across each other; deciding
    nothing by themselves (`unheld` reads them)."""
    specs = twins(settings)
    depths = {s.depth for s in specs if s.kind is Kind.BINARY}
    topk = {d: (base.topk_drift(ids, d), cand.topk_drift(ids, d)) for d in depths}
    heads = [t for t in map(primed, settings.decisive()) if t is not None]
    everything = np.ones(len(ids), dtype=bool)
    scope = score_scope("judged only", base, cand, everything, topk, settings, len(heads), specs)
    adjusted = dict(zip(heads, stats.holm([_p(scope.row(h)) for h in heads]), strict=True))
    rows = []
    for row in scope.rows:
        adj = adjusted.get(row.metric)
        if adj is not None:
            row = replace(row, p_adjusted=adj, deciding=True)  # a call must hold here too
            if row.verdict in (Verdict.IMPROVED, Verdict.REGRESSED) and adj >= settings.alpha:
                note = f"not significant after Holm across the {len(heads)} headline twins"
                row = replace(row, verdict=Verdict.NO_DIFFERENCE, note=note)
        rows.append(replace(row, equivalence=None, power=None))
    return tuple(rows)


def _p(row: MetricRow | None) -> float:
    return 1.0 if row is None else row.p


def unheld(called: Sequence[MetricRow], rows: Sequence[MetricRow], how: str) -> str | None:
    """Why the call `how` ("regressed", "improved") made by `called` does not hold on the
    judged documents alone; None when one of them holds there (or none has a twin)."""
    by_name = {r.metric: r for r in rows}
    checked = [(r, by_name[t]) for r in called if (t := primed(r.metric)) in by_name]
    if not checked or any(t.verdict is r.verdict for r, t in checked):
        return None
    said = "; ".join(
        f"{r.metric} {r.delta:+.3f} (p = {stats.format_p(r.p_adjusted or r.p)}) against "
        f"{t.metric} {t.delta:+.3f} (p = {stats.format_p(t.p_adjusted or t.p)})"
        for r, t in checked
    )
    return (
        f"judgments incomplete: {', '.join(r.metric for r, _ in checked)} {how}, but not on the "
        f"judged documents alone ({said}; the primed metric reads the condensed list, every "
        "unjudged document removed): the call rests on documents nobody judged; judge them "
        "(`harness judge pairs` on the saved comparison lists them, most decisive first) and "
        "compare again"
    )
