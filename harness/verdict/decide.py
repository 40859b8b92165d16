"""The compare stage: a gold set and two RefRuns in, a Comparison (numbers and verdicts) out.

Pure: no I/O, no clock; the only randomness is the seeded resampling inside `harness.verdict.stats`
(`CompareSettings.seed`, recorded in the Comparison).  Everything a report shows is computed here;
`harness.report.page` only formats it.

What is compared, and how:

- Usable repeats: a repeat whose failure is None, or whose only failure is an unconfirmed teardown
  (its answers were all collected).  Any other failed repeat (boot, ready, prepare, crashed, ...)
  or a build failure makes the comparison INVALID, as do zero repeats on a side, more errored
  answers than `max_errors` on a side (counted over every usable repeat; a gold query with no
  recorded answer counts as an error of kind "missing"), or gold hashes that differ between the
  two runs or from the gold set given.  INVALID is never "no change": both verdicts are INVALID
  and every statistic that can still be computed is shown (`Comparison.valid` is False).
- Analysed queries: the gold queries answered without error in every usable repeat of both sides
  (a query errored on one side cannot be paired).  Quality rows use the answerable ones, in gold
  order; unanswerable ones feed the no-answer rates; `outranks` pairs of analysed queries feed the
  outranks counts.  Excluded queries are listed in the header.
- hit@k (binary): per query its hit rate over each side's usable repeats; b = queries whose rate
  is higher on the baseline, c = higher on the candidate; the exact paired sign-flip test on the
  rate differences (`stats.hit_rate_test`: McNemar's exact test when both sides are
  deterministic).  Drift (queries whose outcome changes between repeats) is counted per side and
  a side less stable than the other is a finding (`Comparison.findings`); it sets no bar.
- Power (`harness.verdict.power`): every row states its minimum detectable effect at 80% power,
  at alpha / the number of tests it is corrected across (the headline's, or the slices).
- Continuous metrics (recall, p, mrr, ndcg at each k, and any other `gate_on` metric): per query
  the mean over repeats on each side, then `stats.continuous_test` (randomization p and paired
  bootstrap CI, both seeded).
- Slices: the same rows on the slice's queries; p-values Holm-corrected across the slices that
  have queries, per metric, and a slice row is only called when its adjusted p < alpha.  A slice
  row "collapses" when its metric falls to zero from non-zero, or when it is REGRESSED
  (Holm-adjusted p < alpha) while the overall row of that metric is not.
- Latency: per side `latency.latency_summary` over every non-errored answer of every usable repeat.
  Paired only when both runs were measured together (one `pair_id`: each query timed on both
  sides back to back, round by round); then per round `latency_rule.round_estimate` (the
  trimmed mean of per-query log ratios) over the analysed queries (answerable or not, with a
  latency > 0 on both sides in that round), latency-only rounds included, and
  `latency_rule.decide` over the rounds (the group-sequential rule the runner stopped on: boots
  inside the interval, valid under a look after every round).  A stored (reused) run, or runs
  from different invocations, give NOT_COMPARED with the reason and the fix (no
  --reuse-runs), also as a warning; so does --concurrency N > 1, which gives throughput per
  side instead.  A busy machine (load average above the CPU count) is a warning.
- Flips at each hit@k: analysed queries whose modal outcome differs, with the rank of the first
  relevant document (grade >= rel_level, ranks over the deduplicated list, None = not returned)
  taken as the upper median over repeats, None counting as worst: so a tie resolves to the worse
  rank, as `stats.modal` resolves it to a miss.  Sorted by impact |1/after - 1/before| (None
  counts 0), largest first, then by query id.
- For the plots (drawn by the HTML report, decided by nothing): each usable repeat's metric
  means over the analysed answerable queries and latency p50 (`Comparison.repeats`), each side's
  latency percentiles and those of the per-query paired ratios, the paired bootstrap interval of
  each hit@k delta, and, for a service that returns scores, each side's `harness.verdict.threshold`
  analysis (`Comparison.top_scores`).
- Headline: the decisive rows are hit@k at every configured cutoff and every `gate_on` metric,
  their p Holm-adjusted across each other (a row keeps its call only when its adjusted p <
  alpha).  Quality REGRESSED when one of them regressed; IMPROVED when one improved and none
  regressed; else NO_DIFFERENCE when every decisive row could have seen `min_effect` (its mde at
  most that), INCONCLUSIVE otherwise, naming what would: more queries, or more repeats.  Latency
  from the paired test over rounds (IMPROVED, REGRESSED, NO_DIFFERENCE, INCONCLUSIVE) or
  NOT_COMPARED.  INVALID for both when the run is invalid, which includes a side
  that returned nothing, or only ids that are neither judged nor in the corpus, or more ids
  unknown to the corpus than `max_unknown_ids` (`validity.id_space_problems`).
- Margins (`settings.non_inferior`, compare --non-inferior): each headline metric with one is
  judged on its per-query deltas' 1 - 2 alpha interval (`margin_intervals`, at `tost_alpha`):
  "not worse", "worse than the margin" or "could not show" (`harness.verdict.noninferiority`);
  none on an invalid run.

Where each rule lives: `validity` (usable repeats, invalid reasons), `scopes` (each side scored,
metric rows, Holm across slices, power), `details` (flips, no-answer and outranks
counts, latency), `summary` (one ref on its own); the values are in `harness.verdict.comparison`.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from harness.score.definition import Definition, definition
from harness.score.metrics import Kind, MetricSpec
from harness.values.types import GoldSet, RefRun, Verdict
from harness.verdict import details, scopes, stats, validity
from harness.verdict.comparison import (
    Boots,
    CompareSettings,
    Comparison,
    Flips,
    GoldInfo,
    Header,
    Holes,
    MetricRow,
    QueryDeltas,
    RankingChanges,
    RefInfo,
    Scope,
)
from harness.verdict.condensed import condensed_rows, twins
from harness.verdict.headline import collapsed, quality_headline
from harness.verdict.holes import judged_shares, pooled_gold, reach
from harness.verdict.noninferiority import Interval, NonInferiority, decide_margins, interval_of
from harness.verdict.overlap import ranking_changes
from harness.verdict.rankings import share_strings
from harness.verdict.resources import resources
from harness.verdict.summary import summarise_run

__all__ = ["compare", "headline_rows", "rejudge", "summarise_run"]


def decisive_metrics(settings: CompareSettings) -> list[str]:
    """The headline's rows: hit@k at every cutoff, then every gate_on metric."""
    return settings.decisive()


def _delta_metric(settings: CompareSettings) -> str:
    """The metric of the per-query delta plot: the headline's first continuous metric, else
    nDCG at its largest cutoff, else the first continuous metric compared, else the headline
    hit@k (see `QueryDeltas`)."""
    kinds = {str(spec): spec.kind for spec in settings.specs}
    decisive = decisive_metrics(settings)
    continuous = [m for m in decisive if kinds.get(m) is Kind.CONTINUOUS]
    compared = [str(s) for s in settings.specs if s.kind is Kind.CONTINUOUS]
    # nDCG at the largest cutoff first: the figure IR papers lead with (BEIR's nDCG@10).
    continuous += sorted((m for m in compared if m.startswith("ndcg@")), key=_depth, reverse=True)
    continuous += compared
    return (continuous or decisive)[0]


def _depth(metric: str) -> int:
    depth = metric.rpartition("@")[2]
    return int(depth) if depth.isdigit() else 0


def _family(overall: Scope, settings: CompareSettings) -> Scope:
    """The overall scope with the headline's tests Holm-adjusted across each other: a decisive
    row keeps its call only when its adjusted p < alpha, and one that is not a call reads "no
    measurable difference" only when its equivalence interval lies inside the band, else
    "inconclusive"."""
    decisive = [row for row in map(overall.row, decisive_metrics(settings)) if row is not None]
    adjusted = {
        row.metric: adj
        for row, adj in zip(decisive, stats.holm([r.p for r in decisive]), strict=True)
    }
    rows = []
    for row in overall.rows:
        if row.metric in adjusted:
            adj = adjusted[row.metric]
            row = replace(row, p_adjusted=adj, deciding=True)
            if row.verdict in (Verdict.IMPROVED, Verdict.REGRESSED) and adj >= settings.alpha:
                note = f"not significant after Holm across the {len(decisive)} headline tests"
                row = replace(row, verdict=Verdict.NO_DIFFERENCE, note=note)
            eq = row.equivalence
            if row.verdict is Verdict.NO_DIFFERENCE and eq is not None and not eq.inside:
                # Not a call, and not shown to be no change either: the headline's vocabulary.
                reaches = f"its {eq.confidence:.0%} interval reaches past ±{eq.band:g}"
                note = f"{row.note}; {reaches}" if row.note else f"not a call, and {reaches}"
                row = replace(row, verdict=Verdict.INCONCLUSIVE, note=note)
        rows.append(row)
    return replace(overall, rows=tuple(rows))


def headline_rows(comparison: Comparison) -> tuple[MetricRow, ...]:
    """The overall rows that decide the quality verdict: hit@k at every k, every gate_on metric."""
    rows = map(comparison.overall.row, decisive_metrics(comparison.settings))
    return tuple(row for row in rows if row is not None)


def rejudge(comparison: Comparison, adjusted: Mapping[str, float], family: str) -> Comparison:
    """`comparison` with its headline rows' p adjusted across a larger family (`adjusted`, by
    metric: Holm over several systems' headline tests, `harness.verdict.systems`): a call whose
    adjusted p is not below alpha becomes no measurable difference, noted as "not significant
    after Holm across `family`", and the headline is decided again.  Holm's adjusted p only
    grows with its family, so a larger one takes calls away and never adds one."""
    if not comparison.valid:
        return comparison
    alpha = comparison.settings.alpha
    rows = []
    for row in comparison.overall.rows:
        if row.metric in adjusted:
            adj = max(adjusted[row.metric], row.p_adjusted or 0.0)
            row = replace(row, p_adjusted=adj)
            if row.verdict in (Verdict.IMPROVED, Verdict.REGRESSED) and adj >= alpha:
                note = f"not significant after Holm across {family}"
                row = replace(row, verdict=Verdict.NO_DIFFERENCE, note=note)
        rows.append(row)
    overall = replace(comparison.overall, rows=tuple(rows))
    collapses = collapsed(comparison.slices)
    quality, reason, power = quality_headline(
        overall, comparison.settings, collapses, comparison.holes
    )
    return replace(
        comparison, overall=overall, verdict_quality=quality, quality_reason=reason, power=power
    )


def _boots(overall: Scope, settings: CompareSettings, repeats: tuple[int, int]) -> Boots | None:
    """The variation between boots in the headline row where it weighs most, in words."""
    found = [(r, r.boots) for r in map(overall.row, decisive_metrics(settings)) if r and r.boots]
    if not found:
        return None
    row, b = max(found, key=lambda pair: (pair[1].present, pair[1].share))
    sd = math.sqrt(b.between)
    if b.df == 0:
        words = (
            "one boot per side: a shift shared by every query of a boot cannot be told from a "
            "change here (a service that builds its index at random when it starts needs "
            "--repeats 3 or more for it to be inside the test)"
        )
    elif not b.estimable:
        seen = (
            f"; and they differ more than their queries explain (p = "
            f"{stats.format_p(b.p_present)}), which the test does not include"
            if b.present and b.p_present is not None
            else ""
        )
        words = (
            f"too few boots to put their variation inside the test ({b.df} degrees of "
            f"freedom; --repeats 3 or more a side does){seen}"
        )
    elif b.present:
        words = (
            f"boots differ more than their queries explain: a boot's {row.metric} moves by "
            f"about {sd:.3f} (sd) on its own, {b.share:.0%} of the variance of the delta; the "
            f"test and interval include it (t on {b.df_effective} df, the interval "
            f"{b.widening:.2f}x as wide as the queries alone make it)"
        )
    elif b.added > 0:
        words = (
            f"within chance (their means spread as their queries explain, p = "
            f"{stats.format_p(b.p_present or 1.0)}); inside the test all the same: "
            f"{b.share:.0%} of the variance of the {row.metric} delta"
        )
    else:
        words = "none beyond what their queries explain"
    return Boots(
        repeats=repeats,
        estimable=b.estimable,
        present=b.present,
        metric=row.metric,
        between_sd=sd,
        share=b.share,
        widening=b.widening,
        df=b.df,
        words=words,
    )


def _findings(overall: Scope, settings: CompareSettings) -> tuple[str, ...]:
    """Instability of either side, in words: a finding shown with the verdicts, never a bar."""
    row = overall.row(f"hit@{settings.k[0]}")
    if row is None or row.hit is None:
        return ()
    drifts = {"candidate": row.hit.drift_candidate, "baseline": row.hit.drift_baseline}
    (worse, more), (other, fewer) = sorted(drifts.items(), key=lambda side: -side[1])
    if more == fewer:
        return ()
    return (
        f"{worse} unstable: {more} queries change {row.metric} between repeats, {other} {fewer}",
    )


def compare(
    gold: GoldSet,
    baseline: RefRun,
    candidate: RefRun,
    settings: CompareSettings,
    corpus_ids: frozenset[str] | None = None,
    *,
    comparisons: int = 1,
) -> Comparison:
    """Compare two refs' runs over one gold set (see the module docstring for every rule);
    `corpus_ids`, when the gold set names its corpus, are the ids a returned id must be one of.
    `comparisons`: how many comparisons' headline tests will be Holm-adjusted together
    (compare-runs' candidates, `rejudge`), so that a resampled p is settled against alpha over
    all of them, not only over this comparison's headline."""
    # The analysis makes many short-lived tuples and no reference cycle: the cyclic collector
    # would only walk the gold set and the runs again and again (a third of the time at 50k).
    paused = gc.isenabled()
    gc.disable()
    try:
        return _compare(gold, baseline, candidate, settings, corpus_ids, comparisons)
    finally:
        if paused:
            gc.enable()


def _compare(
    gold: GoldSet,
    baseline: RefRun,
    candidate: RefRun,
    settings: CompareSettings,
    corpus_ids: frozenset[str] | None,
    comparisons: int = 1,
) -> Comparison:
    runs = (baseline, candidate)
    # The two records' ids held once (the same documents, returned by both sides).
    share_strings([rep.answers for run in runs for rep in validity.usable(run)])
    invalid, warnings = validity.check(gold, runs, settings, corpus_ids)
    usable = [validity.usable(run) for run in runs]
    every = [rep.answers for reps in usable for rep in reps]
    # The gold queries answered without error in every usable repeat of both sides.
    answered = set.intersection(*(a.answered() for a in every)) if every else None
    analysed = [q.id for q in gold.queries if answered is None or q.id in answered]
    in_both = set(analysed)
    excluded = tuple(q.id for q in gold.queries if q.id not in in_both)
    flags = [q.answerable for q in gold.queries]
    answerable = {q.id: a for q, a in zip(gold.queries, flags, strict=True)}
    ids = [qid for qid in analysed if answerable[qid]]
    if ids and not all(usable):
        ids = []
    if not ids and not invalid:
        invalid.append("no answerable query was answered on both sides: nothing to compare")
    pooled = pooled_gold(gold)  # and then scored on its condensed lists too
    sides = scopes.score_sides(gold, usable, ids, settings, twins(settings) if pooled else ())
    base, cand = sides
    in_analysis = in_both if all(usable) else set()

    slices: list[Scope] = []
    selections: dict[str, scopes.BoolArray] = {}
    flips: list[Flips] = []
    deltas: QueryDeltas | None = None
    found: Holes | None = None
    changed: RankingChanges | None = None
    overall = Scope("overall", 0, ())
    if ids:
        topk = {
            k: (base.topk_drift(ids, k), cand.topk_drift(ids, k))
            for k in {s.depth for s in settings.specs if s.kind is Kind.BINARY}
        }
        everything = np.ones(len(ids), dtype=bool)
        family = len(decisive_metrics(settings)) * max(comparisons, 1)
        overall = scopes.score_scope("overall", base, cand, everything, topk, settings, family)
        overall = _family(overall, settings)
        slice_of = np.array([gold.by_id[qid].slice for qid in ids])
        selections = {name: slice_of == name for name in gold.slices}
        in_slices = sum(1 for sel in selections.values() if sel.any())
        slices = scopes.holm_slices(
            [
                # One slice of every query is the overall scope (holm_slices): not scored twice.
                Scope(name, len(ids), ())
                if in_slices == 1
                else scopes.score_scope(name, base, cand, sel, topk, settings, in_slices * family)
                for name, sel in selections.items()
                if sel.any()
            ],
            overall,
            settings.alpha,
            decisive_metrics(settings),
        )
        flips = [
            details.flips(str(s), s.depth, ids, gold, base, cand, settings)
            for s in settings.specs
            if s.kind is Kind.BINARY
        ]
        headline_hit = str(MetricSpec("hit", settings.k[0]))
        at_k = next((f for f in flips if f.metric == headline_hit), None)
        deltas = details.query_deltas(_delta_metric(settings), ids, gold, base, cand, at_k)
        flipped = np.isin(ids, [f.query_id for f in at_k.flips]) if at_k else None
        masks = {"overall": everything, **{n: m for n, m in selections.items() if m.any()}}
        found = judged_shares(
            ids, gold, base, cand, max(settings.k), masks, flipped, headline_hit, pooled
        )
        warnings += [found.warning] if found.warning else []
        if pooled:  # how far its holes could move each headline hit@k
            hit_k = [reach(ids, gold, base, cand, k, settings.rel_level) for k in settings.k]
            found = replace(found, reach=tuple(hit_k),
                            condensed=condensed_rows(base, cand, ids, settings))  # fmt: skip
        changed = ranking_changes(ids, gold, base, cand, max(settings.k), masks)

    collapses = collapsed(slices)
    timed = [validity.usable(run, latency=True) for run in runs]  # latency-only rounds too
    latency = details.latency(analysed if in_analysis else [], runs, timed, settings)
    if latency.test is None and latency.not_compared is None and not invalid:
        invalid.append("no query latency was recorded on both sides; the runner must record it")
    if latency.not_compared is not None:
        warnings.append(f"latency not compared: {latency.not_compared}")
    busy = details.machine_warning(latency.machine)
    if busy is not None:
        warnings.append(busy)
    tail = details.tail_warning(latency)
    if tail is not None:
        warnings.append(tail)
    quality, quality_reason, power = quality_headline(overall, settings, collapses, found)
    if latency.not_compared is not None:
        speed = Verdict.NOT_COMPARED
    else:
        speed = latency.verdict or (latency.test.verdict if latency.test else Verdict.INVALID)
    speed_reason = latency.words
    if speed is Verdict.NO_DIFFERENCE and latency.verdict is None:  # else the words say it
        speed_reason += f", inside the tolerance band of ±{settings.latency_tolerance:.0%}"
    if invalid:
        quality = speed = Verdict.INVALID
        quality_reason = speed_reason = "the run is invalid (see the reasons above)"

    header = Header(
        baseline=_ref_info("baseline", baseline, len(usable[0])),
        candidate=_ref_info("candidate", candidate, len(usable[1])),
        gold=GoldInfo(
            source=gold.source,
            hash=gold.hash,
            n=len(gold),
            n_answerable=sum(flags),
            n_unanswerable=sum(not a for a in flags),
        ),
        query_differences=tuple(settings.query_differences),
        excluded=excluded,
        definition=comparison_definition(gold, baseline, candidate, settings),
    )
    metrics = [r.metric for r in overall.rows]
    per_repeat = [
        m
        for name, reps, scored in zip(("baseline", "candidate"), usable, sides, strict=True)
        for m in details.repeat_means(name, reps, scored, metrics)
    ]
    scored_tops = [
        details.top_scores(name, gold, run)
        for name, run in zip(("baseline", "candidate"), runs, strict=True)
    ]
    boots = _boots(overall, settings, (len(usable[0]), len(usable[1]))) if ids else None
    margins = None
    if settings.non_inferior and not invalid:  # compare --non-inferior, at tost_alpha
        held = [m for m, _ in settings.non_inferior]
        each = {m: cand.matrix(m).mean(axis=0) - base.matrix(m).mean(axis=0) for m in held}
        margins = noninferiority(
            overall, settings, margin_intervals(overall, each, settings.tost_alpha)
        )
    findings = _findings(overall, settings) if not invalid else ()
    if boots is not None and boots.present and not invalid:
        findings = (*findings, boots.words)
    return Comparison(
        header=header,
        settings=settings,
        invalid_reasons=tuple(invalid),
        warnings=tuple(warnings),
        verdict_quality=quality,
        quality_reason=quality_reason,
        verdict_latency=speed,
        latency_reason=speed_reason,
        overall=overall,
        slices=tuple(slices),
        power=power,
        no_answer=details.no_answer(in_analysis, sides),
        outranks=details.outranks(in_analysis, sides),
        latency=latency,
        flips=tuple(flips),
        findings=findings,
        holes=found,
        changes=changed,
        boots=boots,
        errors=tuple(
            summary
            for side, run in zip(("baseline", "candidate"), runs, strict=True)
            for summary in validity.error_kinds(gold, run, side)
        ),
        prepare=tuple(
            step
            for side, run in zip(("baseline", "candidate"), runs, strict=True)
            for step in validity.prepare_steps(run, side)
        ),
        repeats=tuple(per_repeat) if ids else (),
        top_scores=tuple(t for t in scored_tops if t is not None),
        query_deltas=deltas,
        resources=resources(baseline, candidate, invalid=bool(invalid)),
        noninferiority=margins,
    )


def noninferiority(
    overall: Scope, settings: CompareSettings, intervals: Mapping[str, Interval]
) -> NonInferiority | None:
    """compare --non-inferior (`harness.verdict.noninferiority`): each margin judged on its
    headline metric's interval of `intervals` (`margin_intervals`, or a sequential compare's
    confidence sequences); None without margins."""
    if not settings.non_inferior:
        return None
    headline = decisive_metrics(settings)
    called = {m: r.verdict is Verdict.REGRESSED for m in headline if (r := overall.row(m))}
    alpha = (1 - min((iv.confidence for iv in intervals.values()), default=0.9)) / 2
    return decide_margins(dict(settings.non_inferior), intervals, alpha, headline, called)


def margin_intervals(
    overall: Scope, deltas: Mapping[str, npt.NDArray[np.float64]], alpha: float
) -> dict[str, Interval]:
    """Each metric's 1 - 2 alpha interval of its per-query `deltas` (`noninferiority.interval_of`,
    with its row's boots)."""
    return {
        m: interval_of(d, alpha, row.boots)
        for m, d in deltas.items()
        if d.size and (row := overall.row(m)) is not None
    }


def comparison_definition(
    gold: GoldSet, baseline: RefRun, candidate: RefRun, settings: CompareSettings
) -> Definition:
    """What defines a comparison (`harness.score.definition`): the gold set, the corpus, both
    sides' query settings, the cutoffs, every metric compared, both sides' configuration and
    the settings that decide the verdict."""
    s = settings
    return definition(
        gold=gold.hash,
        corpus=gold.corpus.sha256 if gold.corpus else baseline.corpus_hash,
        query={"baseline": baseline.query_config, "candidate": candidate.query_config},
        k=s.k,
        metrics=[str(spec) for spec in s.specs],
        rel_level=s.rel_level,
        config={
            "baseline": baseline.config_hash,
            "candidate": candidate.config_hash,
            "compare": {
                "alpha": s.alpha,
                "min_effect": s.min_effect,
                "latency_tolerance": s.latency_tolerance,
                "max_errors": s.max_errors,
                "max_unknown_ids": s.max_unknown_ids,
                "seed": s.seed,
                "resamples": s.resamples,
                "gate_on": sorted(s.gate_on),
            },
        },
    )


def _ref_info(side: str, run: RefRun, usable: int) -> RefInfo:
    return RefInfo(
        side=side,
        ref=run.ref,
        sha=run.sha,
        short_sha=run.sha[:8],
        repeats=len(run.repeats),
        usable_repeats=usable,
        reused=run.reused,
        config_hash=run.config_hash,
        record_path=run.record_path,
        sandbox=sandbox_of(run),
    )


def sandbox_of(run: RefRun) -> str | None:
    """The isolation mode of every boot of `run` ("mixed" when they differ; None: unrecorded)."""
    modes = {rep.sandbox for rep in run.repeats if rep.sandbox is not None}
    return None if not modes else modes.pop() if len(modes) == 1 else "mixed"
