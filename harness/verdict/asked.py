"""The compare of a gold set asked block by block (`compare --sequential`): which queries were
asked, the headline deltas in the order asked, and the Comparison with the sequential rule's
verdict (`harness.verdict.quality_sequential`).

    block, look = sequential_design(gold, settings, order)  # the runner's: stop after a block?
    comparison = compare_asked(gold, baseline, candidate, settings, order)
    margins = margins_at_stop(overall, settings, result, deltas, plan)  # --non-inferior

The runner asks the queries of `order` (`quality_sequential.query_order`, from the compare's
seed) in blocks, each block R times per side, and stops when `look` says the rule decided.  The
Comparison is then made over the queries asked (slices included, each with its n): the headline
verdict is the rule's when it decided, else (the gold set used up) the fixed-sample verdict of
`harness.verdict.decide` at alpha - alpha_s, the error rate the looks did not spend; margins
(compare --non-inferior) are read where it stopped (`margins_at_stop`).  An invalid run stays
invalid.  Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from harness.values.types import GoldSet, QueryResult, RefRun, Repeat, Verdict
from harness.verdict import scopes, validity
from harness.verdict.comparison import CompareSettings, Comparison, Scope
from harness.verdict.decide import (
    compare,
    comparison_definition,
    decisive_metrics,
    margin_intervals,
    noninferiority,
)
from harness.verdict.noninferiority import SEQUENCE, Interval, NonInferiority
from harness.verdict.quality_sequential import (
    Sequential,
    SequentialPlan,
    SequentialResult,
    decide,
)
from harness.verdict.stats import format_p

LATENCY_QUERIES = 20
"""The fewest queries a latency round is estimated from.  The latency rounds past R replay the
queries quality asked (`harness.driver.blocks`), and each round's estimate is a trimmed mean of
their per-query log ratios with its within-round variance (`harness.verdict.latency_rule`: 20%
off each end, so 20 queries keep 12), so quality never stops before this many, whatever its own
rule's first look."""

Look = Callable[[int, Sequence[Sequence[Sequence[QueryResult]]]], bool]


def sequential_design(
    gold: GoldSet, settings: CompareSettings, order: Sequence[str]
) -> tuple[int, Look]:
    """What the runner asks by (`harness.driver.blocks.run_blocks`): the block size and the
    look after each block, the first look waiting for `LATENCY_QUERIES` (as `compare_asked`'s,
    so the analysis stops where the runner did)."""
    plan = plan_for(gold, settings, first=LATENCY_QUERIES)
    return plan.block_size, stop_rule(gold, settings, order, first=LATENCY_QUERIES)


def plan_for(
    gold: GoldSet, settings: CompareSettings, *, first: int | None = None
) -> SequentialPlan:
    """The rule's design for this gold set and these settings (`first`: the queries before the
    first look, when something else needs that many, e.g. the latency rounds)."""
    plan = SequentialPlan(
        metrics=tuple(decisive_metrics(settings)),
        total=sum(1 for q in gold.queries if q.answerable) or len(gold),
        alpha=settings.alpha,
        min_effect=settings.min_effect,
        margins=settings.non_inferior,
    )
    return plan if first is None else replace(plan, first=max(plan.first, first))


def asked_gold(gold: GoldSet, asked: Sequence[str]) -> GoldSet:
    """The gold set cut to the queries asked (gold order, the same hash: the same gold set)."""
    keep = set(asked)
    return replace(gold, queries=tuple(q for q in gold.queries if q.id in keep))


def headline_deltas(
    gold: GoldSet,
    sides: Sequence[Sequence[Repeat]],
    order: Sequence[str],
    settings: CompareSettings,
) -> dict[str, np.ndarray]:
    """Per headline metric, candidate - baseline per answerable query (each side's mean over its
    repeats), in the order asked; queries errored in any repeat of either side left out."""
    values = headline_values(gold, sides, order, settings)
    return {m: c.mean(axis=0) - b.mean(axis=0) for m, (b, c) in values.items()}


def headline_values(
    gold: GoldSet,
    sides: Sequence[Sequence[Repeat]],
    order: Sequence[str],
    settings: CompareSettings,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per headline metric, each side's repeats x queries values over the answerable queries
    answered in every repeat of both sides, in the order asked (`headline_deltas`' queries)."""
    asked = set(order)
    answers = [validity.by_query(rep) for reps in sides for rep in reps]
    ok = [
        qid
        for qid in order
        if qid in asked
        and gold.by_id[qid].answerable
        and all(qid in a and a[qid].error is None for a in answers)
    ]
    metrics = decisive_metrics(settings)
    if not ok or not all(sides):
        return {m: (np.zeros((1, 0)), np.zeros((1, 0))) for m in metrics}
    base, cand = scopes.score_sides(gold, sides, ok, settings)
    return {m: (base.matrix(m), cand.matrix(m)) for m in metrics}


def stop_rule(
    gold: GoldSet, settings: CompareSettings, order: Sequence[str], *, first: int | None = None
) -> Look:
    """The runner's look after a block: given the number of queries of `order` asked and each
    side's answers per round so far, whether the rule has decided."""
    plan = plan_for(gold, settings, first=first)
    scored = LooksScored(gold, settings, order)

    def look(asked: int, answers: Sequence[Sequence[Sequence[QueryResult]]]) -> bool:
        if asked >= len(order):
            return True
        values = scored.values(asked, answers)
        deltas = {m: c.mean(axis=0) - b.mean(axis=0) for m, (b, c) in values.items()}
        # Decided at any look so far: the first deciding look is the one reported.
        return decide(deltas, plan, values).verdict is not None

    return look


class LooksScored:
    """`headline_values` of the queries asked so far, look after look, each answer scored once:
    a look scores only the answers that came since the last one (a query's values are its own
    answers' alone) and appends them to the columns it holds. Exactly `headline_values(gold,
    sides, order[:asked], settings)`: when the answers are not the last look's with more
    appended, only for queries newly asked (another side or round, an answer replaced), it
    scores them all again."""

    def __init__(self, gold: GoldSet, settings: CompareSettings, order: Sequence[str]) -> None:
        self.gold, self.settings, self.order = gold, settings, order
        self._reset()

    def _reset(self) -> None:
        self.asked = 0
        self.seen: list[list[list[QueryResult]]] = []
        self.columns: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}

    def values(
        self, asked: int, answers: Sequence[Sequence[Sequence[QueryResult]]]
    ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        new = self._new_answers(asked, answers)
        if new is None:  # not the last look's answers with more: all of them afresh
            self._reset()
            new = [[list(r) for r in rounds] for rounds in answers]
        sides = [[Repeat(i, tuple(r)) for i, r in enumerate(rounds)] for rounds in new]
        piece = headline_values(self.gold, sides, self.order[self.asked : asked], self.settings)
        for metric, (base, cand) in piece.items():
            held = self.columns.setdefault(metric, ([], []))
            if base.shape[1]:
                held[0].append(base)
                held[1].append(cand)
        self.asked = asked
        self.seen = [[list(r) for r in rounds] for rounds in answers]
        return {
            m: (np.hstack(b), np.hstack(c)) if b else (np.zeros((1, 0)), np.zeros((1, 0)))
            for m, (b, c) in self.columns.items()
        }

    def _new_answers(
        self, asked: int, answers: Sequence[Sequence[Sequence[QueryResult]]]
    ) -> list[list[list[QueryResult]]] | None:
        """Each round's answers since the last look, or None when the answers are not the last
        look's (the same objects) with answers to newly asked queries appended."""
        if not self.seen or asked < self.asked:
            return None
        if [len(rounds) for rounds in answers] != [len(rounds) for rounds in self.seen]:
            return None
        fresh = set(self.order[self.asked : asked])
        new = []
        for rounds, seen_rounds in zip(answers, self.seen, strict=True):
            side = []
            for results, seen in zip(rounds, seen_rounds, strict=True):
                if len(results) < len(seen) or any(
                    a is not b for a, b in zip(results, seen, strict=False)
                ):
                    return None
                tail = list(results[len(seen) :])
                if any(r.query_id not in fresh for r in tail):
                    return None
                side.append(tail)
            new.append(side)
        return new


def asked_ids(order: Sequence[str], runs: Sequence[RefRun]) -> list[str]:
    """The queries of `order` the runs asked: those answered (or errored) in every quality
    repeat of both sides."""
    seen: set[str] | None = None
    for run in runs:
        for rep in run.repeats:
            if rep.latency_only or rep.failure is not None:
                continue
            ids = {r.query_id for r in rep.results}
            seen = ids if seen is None else seen & ids
    return [qid for qid in order if seen is None or qid in seen]


def _furthest(runs: Sequence[RefRun]) -> int:
    """How many queries the furthest quality repeat of the runs got to (0: none was asked;
    a repeat that crashed holds the answers before it did)."""
    return max(
        (len(rep.results) for run in runs for rep in run.repeats if not rep.latency_only),
        default=0,
    )


def margins_at_stop(
    overall: Scope,
    settings: CompareSettings,
    result: SequentialResult,
    deltas: Mapping[str, np.ndarray],
    plan: SequentialPlan,
) -> NonInferiority | None:
    """compare --non-inferior, sequential (`harness.verdict.noninferiority`): stopped at a look,
    each margin reads its metric's confidence sequence there (valid at any stopping time); the
    gold set used up, the fixed-sample interval of `deltas` at alpha - alpha_s, what the looks
    left (never the whole alpha: a stop could have claimed with the sequence's share).
    `overall`: the fixed-sample rows of the queries asked (their boots, their calls)."""
    if result.verdict is not None:
        looks = {m.metric: m for m in result.metrics}
        intervals = {
            m.metric: Interval(m.delta, m.lower, m.upper, result.level, SEQUENCE)
            for m in looks.values()
        }
        rows = tuple(
            replace(row, verdict=looks[row.metric].verdict) if row.metric in looks else row
            for row in overall.rows
        )
        return noninferiority(replace(overall, rows=rows), settings, intervals)
    return noninferiority(overall, settings, margin_intervals(overall, deltas, plan.alpha_fixed))


def compare_asked(
    gold: GoldSet,
    baseline: RefRun,
    candidate: RefRun,
    settings: CompareSettings,
    order: Sequence[str],
    corpus_ids: frozenset[str] | None = None,
    *,
    first: int | None = None,
) -> Comparison:
    """The Comparison of a sequential compare (see the module docstring; `first`: the queries
    before the first look, `LATENCY_QUERIES` by default, as the runner's `sequential_design`)."""
    plan = plan_for(gold, settings, first=LATENCY_QUERIES if first is None else first)
    asked = asked_ids(order, (baseline, candidate))
    cut = asked_gold(gold, asked)
    # The calls at what the looks left of alpha; "no measurable difference", never looked at
    # before (the rule stops for calls only), at the whole of it.
    last = replace(settings, alpha=plan.alpha_fixed, equivalence_alpha=settings.tost_alpha)
    fixed = compare(cut, baseline, candidate, last, corpus_ids)
    # Defined by the compare's settings (its alpha, not the share left to the last test): the
    # same measurement as a compare of the whole gold set, which `report --against` may diff.
    header = replace(
        fixed.header, definition=comparison_definition(gold, baseline, candidate, settings)
    )
    fixed = replace(fixed, header=header)
    usable = [validity.usable(run) for run in (baseline, candidate)]
    values = headline_values(cut, usable, asked, settings)
    deltas = {m: c.mean(axis=0) - b.mean(axis=0) for m, (b, c) in values.items()}
    result = decide(deltas, plan, values)
    n_gold = len(gold)
    share = 1 - len(asked) / n_gold if n_gold else 0.0
    said = f"stopped after {len(asked)} of {n_gold} queries ({share:.0%} of the queries not asked)"
    if not fixed.valid:  # neither rule gave a verdict: say how far the asking got, no more
        said = (
            f"the run is invalid after {_furthest((baseline, candidate))} of {n_gold} queries "
            "asked: no verdict"
        )
    elif result.verdict is None and fixed.verdict_quality is Verdict.INCONCLUSIVE:
        said = f"asked all {len(asked)} queries: neither the looks nor the last test decided"
    elif result.verdict is None:
        said = (
            f"asked all {len(asked)} queries: the looks did not decide; the last test over all "
            "of them did"
        )
    sequential = Sequential(len(asked), n_gold, result, said, plan.alpha)
    margins = (
        margins_at_stop(fixed.overall, settings, result, deltas, plan) if fixed.valid else None
    )
    out = replace(fixed, sequential=sequential, noninferiority=margins)
    if not fixed.valid or result.verdict is None:
        return out
    bounds = "; ".join(
        f"{m.metric} {m.delta:+.3f} in [{m.lower:+.3f}, {m.upper:+.3f}]" for m in result.metrics
    )
    # The call is the betting test's (its p below alpha_s); the sequences, at Bonferroni's level,
    # give the size, and may reach 0 when the test has decided: both are shown, the p first.
    tested = ", ".join(f"{m.metric} {format_p(m.p_adjusted)}" for m in result.metrics)
    reason = (
        f"{result.reason} (anytime-valid p, Holm: {tested}; {result.level:.1%} confidence "
        f"sequences: {bounds})"
    )
    unasked = n_gold - len(asked)
    warnings = out.warnings
    if unasked > 0:  # stopped early: what was never asked was never checked either
        warnings = (
            *warnings,
            f"{unasked} queries were not asked (the rule decided first): an error or a hang "
            "of the service on one of them is not seen; --no-sequential asks every query",
        )
    return replace(out, verdict_quality=result.verdict, quality_reason=reason, warnings=warnings)
