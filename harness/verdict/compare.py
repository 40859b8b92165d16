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
- hit@k (binary): per side the modal outcome over repeats (`stats.modal`: a tie is a miss); b =
  queries only the baseline hits, c = only the candidate; McNemar exact p; noise floor =
  `stats.noise_floor(alpha, drift_b, drift_c)` and the verdict from `stats.binary_verdict`.
  When the floor exceeds the number of queries the gold set is too small and says so.
- Continuous metrics (recall, p, mrr, ndcg at each k, and any other `gate_on` metric): per query
  the mean over repeats on each side, then `stats.continuous_test` (randomization p and paired
  bootstrap CI, both seeded).
- Slices: the same rows on the slice's queries; p-values Holm-corrected across the slices that
  have queries, per metric, and a slice row is only called when its adjusted p < alpha.  A slice
  row "collapses" when its metric falls to zero from non-zero, or when it is REGRESSED (outside
  its noise band, Holm-adjusted p < alpha) while the overall row of that metric is not.
- Latency: per side `latency.latency_summary` over every non-errored answer of every usable repeat.
  Paired only when both runs were measured together (one `pair_id`: each query timed on both
  sides back to back, round by round); then per round `latency.round_ratio` over the analysed
  queries (answerable or not, with a latency > 0 on both sides in that round) and
  `latency.latency_test` over the rounds (Student's t on the log ratios: boots inside the
  interval).  A stored (reused) run, or runs from different invocations, give NOT_COMPARED with
  the reason and the fix (--fresh), also as a warning; so does --concurrency N > 1, which gives
  throughput per side instead.  A busy machine (load average above the CPU count) is a warning.
- Flips at each hit@k: analysed queries whose modal outcome differs, with the rank of the first
  relevant document (grade >= rel_level, ranks over the deduplicated list, None = not returned)
  taken as the upper median over repeats, None counting as worst: so a tie resolves to the worse
  rank, as `stats.modal` resolves it to a miss.  Sorted by impact |1/after - 1/before| (None
  counts 0), largest first, then by query id.
- Headline: quality REGRESSED when hit@k at any configured cutoff, or any `gate_on` metric,
  regressed; IMPROVED when at least one of them improved and none regressed; else
  NO_DIFFERENCE.  Latency from the paired test over rounds (IMPROVED, REGRESSED, NO_DIFFERENCE,
  INCONCLUSIVE) or NOT_COMPARED.  INVALID for both when the run is invalid.

Where each rule lives: `validity` (usable repeats, invalid reasons), `scopes` (each side scored,
metric rows, Holm across slices, detectability), `details` (flips, no-answer and outranks
counts, latency), `summary` (one ref on its own); the values are in `harness.verdict.comparison`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.score.metrics import Kind, parse_metric
from harness.types import GoldSet, RefRun, Verdict
from harness.verdict import details, scopes, validity
from harness.verdict.comparison import (
    CompareSettings,
    Comparison,
    Flips,
    GoldInfo,
    Header,
    RefInfo,
    Scope,
)
from harness.verdict.summary import summarise_run

__all__ = ["compare", "summarise_run"]


def _headline(
    overall: Scope, settings: CompareSettings, collapses: Sequence[str]
) -> tuple[Verdict, str]:
    decisive = [f"hit@{k}" for k in settings.k]
    decisive += [g for g in map(str, map(parse_metric, settings.gate_on)) if g not in decisive]
    rows = [r for r in map(overall.row, decisive) if r is not None]
    regressed = [r.metric for r in rows if r.verdict is Verdict.REGRESSED]
    improved = [r.metric for r in rows if r.verdict is Verdict.IMPROVED]
    if regressed:
        verdict, reason = Verdict.REGRESSED, f"{', '.join(regressed)} regressed"
    elif improved:
        verdict, reason = Verdict.IMPROVED, f"{', '.join(improved)} improved, none regressed"
    else:
        verdict = Verdict.NO_DIFFERENCE
        small = next((r for r in rows if r.hit and r.hit.too_small), None)
        if small is not None and small.note:
            reason = small.note
        else:
            reason = f"no change in {', '.join(decisive)} outside the noise"
    if collapses:
        reason += f"; but slice collapse: {', '.join(collapses)}"
    return verdict, reason


def compare(
    gold: GoldSet, baseline: RefRun, candidate: RefRun, settings: CompareSettings
) -> Comparison:
    """Compare two refs' runs over one gold set (see the module docstring for every rule)."""
    runs = (baseline, candidate)
    invalid, warnings = validity.check(gold, runs, settings)
    usable = [validity.usable(run) for run in runs]
    answers = [[validity.by_query(rep) for rep in reps] for reps in usable]
    analysed = [
        q.id
        for q in gold.queries
        if all(q.id in a and a[q.id].ok for side in answers for a in side)
    ]
    excluded = tuple(q.id for q in gold.queries if q.id not in set(analysed))
    ids = [qid for qid in analysed if gold.by_id[qid].answerable]
    if ids and not all(usable):
        ids = []
    if not ids and not invalid:
        invalid.append("no answerable query was answered on both sides: nothing to compare")
    sides = [scopes.score_side(gold, reps, ids, settings) for reps in usable]
    base, cand = sides
    in_analysis = set(analysed) if all(usable) else set()

    slices: list[Scope] = []
    selections: dict[str, scopes.BoolArray] = {}
    flips: list[Flips] = []
    detect = None
    overall = Scope("overall", 0, ())
    if ids:
        topk = {
            k: (base.topk_drift(ids, k), cand.topk_drift(ids, k))
            for k in {s.k for s in settings.specs if s.kind is Kind.BINARY}
        }
        everything = np.ones(len(ids), dtype=bool)
        overall = scopes.score_scope("overall", base, cand, everything, topk, settings)
        slice_of = np.array([gold.by_id[qid].slice for qid in ids])
        selections = {name: slice_of == name for name in gold.slices}
        slices = scopes.holm_slices(
            [
                scopes.score_scope(name, base, cand, sel, topk, settings)
                for name, sel in selections.items()
                if sel.any()
            ],
            overall,
            settings.alpha,
        )
        flips = [
            details.flips(str(s), s.k, ids, gold, base, cand, settings)
            for s in settings.specs
            if s.kind is Kind.BINARY
        ]
        detect = scopes.detectability(
            overall, slices, f"hit@{settings.k[0]}", base, cand, selections, settings.alpha
        )

    collapses = []
    for scope in slices:
        fell = [r.metric for r in scope.rows if r.collapse]
        if fell:
            more = f" and {len(fell) - 1} more" if len(fell) > 1 else ""
            collapses.append(f"{scope.name} ({fell[0]}{more})")
    latency = details.latency(analysed if in_analysis else [], runs, usable, settings)
    if latency.test is None and latency.not_compared is None and not invalid:
        invalid.append("no query latency was recorded on both sides; the runner must record it")
    if latency.not_compared is not None:
        warnings.append(f"latency not compared: {latency.not_compared}")
    busy = details.machine_warning(latency.machine)
    if busy is not None:
        warnings.append(busy)
    quality, quality_reason = _headline(overall, settings, collapses)
    if latency.not_compared is not None:
        speed = Verdict.NOT_COMPARED
    else:
        speed = latency.test.verdict if latency.test else Verdict.INVALID
    speed_reason = latency.words
    if speed is Verdict.NO_DIFFERENCE:
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
            n_answerable=sum(q.answerable for q in gold.queries),
            n_unanswerable=sum(not q.answerable for q in gold.queries),
        ),
        query_differences=tuple(settings.query_differences),
        excluded=excluded,
    )
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
        detectability=detect,
        no_answer=details.no_answer(in_analysis, sides),
        outranks=details.outranks(in_analysis, sides),
        latency=latency,
        flips=tuple(flips),
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
    )
