"""Each side's repeats scored, and the metric rows of a scope (overall or one slice) from them.

Part of `harness.verdict.decide` (its docstring states every rule: per-query hit rates and the
exact paired test, per-query means and the randomization test, power, Holm across slices,
collapses); pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import ne

import numpy as np
import numpy.typing as npt

from harness.score.evaluation import (
    Evaluation,
    PooledEvaluations,
    evaluate_runs,
    pool_rows,
    returned_texts,
    stacked,
)
from harness.score.judged import dedupe
from harness.score.metrics import Kind, MetricSpec
from harness.values.types import GoldQuery, GoldSet, QueryResult, Repeat, Verdict
from harness.verdict import stats, validity
from harness.verdict.boots import BootComponent, boot_component, widen
from harness.verdict.comparison import CompareSettings, HitDetail, MetricRow, Scope
from harness.verdict.equivalence import Equivalence, equivalence
from harness.verdict.power import power, repeat_noise
from harness.verdict.rankings import ok_rankings
from harness.verdict.sequential import bootstrap_intervals, lattice_bootstrap_interval

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


# --------------------------------------------------------------------------- per-side data


@dataclass(frozen=True)
class Side:
    """One side's usable repeats, scored: rows follow `ids` (the analysed answerable queries)."""

    answers: tuple[Mapping[str, QueryResult], ...]
    evaluations: tuple[Evaluation, ...]
    rows: npt.NDArray[np.intp]  # positions of `ids` in each evaluation's query_ids
    # The judged rankings (`evaluation.PooledEvaluations`) and, per repeat and query of `ids`,
    # the row of its answer there.
    pooled: PooledEvaluations | None = None
    pool_rows: npt.NDArray[np.intp] = field(default_factory=lambda: np.zeros((0, 0), np.intp))
    queries: tuple[GoldQuery, ...] = ()  # gold order, as `pooled.owner` numbers them
    rel_level: int = 1
    ids: tuple[str, ...] = ()
    # Worked out once, asked for by several rows: ids -> the queries whose returned list is not
    # the same in every repeat; the position of each of `ids`.
    _varied: dict[tuple[str, ...], BoolArray] = field(default_factory=dict, compare=False)
    _index: dict[str, int] = field(default_factory=dict, compare=False)
    _deduped: dict[int, tuple[str, ...]] = field(default_factory=dict, compare=False)
    _pool: list[tuple[Mapping[str, FloatArray], npt.NDArray[np.intp]] | None] = field(
        default_factory=list, compare=False
    )

    def matrix(self, metric: str) -> FloatArray:
        """repeats x queries."""
        if not self._pool:  # where each repeat's rows are in the pool's columns, found once
            self._pool.append(pool_rows(self.evaluations, self.rows))
        if self._pool[0] is None:
            return stacked(self.evaluations, metric, self.rows)
        pool, at = self._pool[0]
        found: FloatArray = pool[metric][at]
        return found

    def ranks(self, query: GoldQuery, rel_level: int) -> list[int | None]:
        """The first relevant rank of `query` (one of `ids`) in each repeat (None: not
        returned)."""
        if not self._index:
            self._index.update((qid, i) for i, qid in enumerate(self.ids))
        position = np.array([self._index[query.id]], dtype=np.intp)
        return [int(r) or None for r in self.first_ranks(position, rel_level)[:, 0].tolist()]

    def first_ranks(self, positions: npt.NDArray[np.intp], rel_level: int) -> npt.NDArray[np.intp]:
        """repeats x positions: the first rank (over the deduplicated list) of a document of
        grade >= `rel_level` in each repeat's answer to ids[positions]; 0 when none is returned.
        Read from the judged top `max_k` (`JudgedRanks.relevant`); only an answer with none
        there and more ids than that is walked down."""
        rows = self.pool_rows[:, positions]
        if self.pooled is None or rows.size == 0:
            return np.zeros(rows.shape, dtype=np.intp)
        pooled = self.pooled
        distinct, where = np.unique(rows, return_inverse=True)
        if rel_level == self.rel_level:
            relevant = pooled.judged.relevant[distinct]
            found = relevant.any(axis=1)
            first = np.where(found, relevant.argmax(axis=1) + 1, 0)
            longer = np.fromiter(
                (len(pooled.rankings[r]) > pooled.max_k for r in distinct.tolist()),
                dtype=bool,
                count=len(distinct),
            )
            walk = np.flatnonzero(~found & longer)
        else:
            first = np.zeros(len(distinct), dtype=np.intp)
            walk = np.arange(len(distinct))
        for j in walk.tolist():
            row = int(distinct[j])
            query = self.queries[int(pooled.owner[row])]
            first[j] = _first_relevant(pooled.rankings[row], query, rel_level) or 0
        return np.asarray(first[where.reshape(rows.shape)], dtype=np.intp)

    def topk_drift(self, ids: Sequence[str], k: int) -> BoolArray:
        """Per query of `ids`: do its deduplicated top k differ between repeats?"""
        key = tuple(ids)
        if not self.answers:
            return np.zeros(len(ids), dtype=bool)
        if self.pooled is not None and key == self.ids:
            return self._pooled_topk_drift(k)
        if key not in self._varied:
            first, *others = ([a[qid].ids for qid in ids] for a in self.answers)
            varied = np.zeros(len(ids), dtype=bool)
            for lists in others:
                varied |= np.fromiter(map(ne, lists, first), dtype=bool, count=len(ids))
            self._varied[key] = varied
        drift = np.zeros(len(ids), dtype=bool)
        # The same list in every repeat (the common case) has the same top k.
        for i in np.flatnonzero(self._varied[key]).tolist():
            drift[i] = len({dedupe(a[ids[i]].ids)[:k] for a in self.answers}) > 1
        return drift


    def deduped(self, row: int) -> tuple[str, ...]:
        """The judged ranking `row` of `pooled`, deduplicated (once per side, whoever asks:
        top-k drift, the holes, the overlap)."""
        assert self.pooled is not None
        if row not in self._deduped:
            self._deduped[row] = dedupe(self.pooled.rankings[row])
        return self._deduped[row]

    def _pooled_topk_drift(self, k: int) -> BoolArray:
        # Equal answers share a judged row: only a query whose rows differ between repeats
        # can drift, and each distinct answer is deduplicated once.
        rows = self.pool_rows
        drift = np.zeros(rows.shape[1], dtype=bool)
        for i in np.flatnonzero((rows != rows[:1]).any(axis=0)).tolist():
            drift[i] = len({self.deduped(row)[:k] for row in set(rows[:, i].tolist())}) > 1
        return drift


def _first_relevant(ids: Sequence[str], query: GoldQuery, rel_level: int) -> int | None:
    grade = query.relevant.get
    for rank, doc in enumerate(dict.fromkeys(ids), start=1):  # deduplicated, as `dedupe`
        if grade(doc, 0) >= rel_level:
            return rank
    return None


def score_side(
    gold: GoldSet, repeats: Sequence[Repeat], ids: Sequence[str], settings: CompareSettings
) -> Side:
    """Evaluate each usable repeat of one side on the gold set (errored answers left out)."""
    return score_sides(gold, [repeats], ids, settings)[0]


def score_sides(
    gold: GoldSet,
    sides: Sequence[Sequence[Repeat]],
    ids: Sequence[str],
    settings: CompareSettings,
    extra: Sequence[MetricSpec] = (),
) -> list[Side]:
    """`score_side` of each side's usable repeats, all judged together: an answer repeated in
    another repeat, or on the other side, is judged and scored once
    (`evaluation.evaluate_runs`); `extra` metrics are scored beside `settings.specs` (the
    condensed lists of a pooled gold set: `harness.verdict.condensed`)."""
    answers = [tuple(map(validity.by_query, repeats)) for repeats in sides]
    every = [a for side in answers for a in side]
    pooled = evaluate_runs(
        gold,
        ok_rankings([rep.answers for repeats in sides for rep in repeats]),
        tuple(dict.fromkeys((*settings.specs, *extra))),
        settings.rel_level,
        texts=[returned_texts(a) for a in every] if settings.context else None,
    )
    position_in_gold = {q.id: i for i, q in enumerate(gold.queries)}
    in_gold = np.array([position_in_gold[qid] for qid in ids], dtype=np.intp)
    out, start = [], 0
    for side in answers:
        stop = start + len(side)
        evaluations = pooled.evaluations[start:stop]
        position = {qid: i for i, qid in enumerate(evaluations[0].query_ids)} if side else {}
        rows = (
            np.array([position[qid] for qid in ids], dtype=np.intp)
            if position
            else np.zeros(0, int)
        )
        pool_rows = np.array(
            [pooled.rows[r][in_gold] for r in range(start, stop)], dtype=np.intp
        ).reshape(len(side), len(ids))
        out.append(
            Side(
                side,
                evaluations,
                rows,
                pooled if side else None,
                pool_rows,
                gold.queries,
                settings.rel_level,
                tuple(ids),
            )
        )
        start = stop
    return out


# --------------------------------------------------------------------------- rows


def _equivalence(
    metric: str, deltas: npt.NDArray[np.float64], settings: CompareSettings, boots: BootComponent
) -> Equivalence | None:
    """A deciding row's interval against the band (`harness.verdict.equivalence`); None for
    the rows that decide nothing."""
    if metric not in settings.decisive():
        return None
    return equivalence(deltas, alpha=settings.tost_alpha, band=settings.min_effect, boots=boots)


def _hit_row(
    metric: str,
    base: Side,
    cand: Side,
    sel: BoolArray,
    topk: tuple[BoolArray, BoolArray],
    settings: CompareSettings,
    power_alpha: float,
) -> MetricRow:
    outcomes = [side.matrix(metric)[:, sel] > 0.5 for side in (base, cand)]
    boots = boot_component(outcomes[0], outcomes[1])
    test = stats.hit_rate_test(outcomes[0], outcomes[1], alpha=settings.alpha, boots=boots)
    rates = [o.mean(axis=0) for o in outcomes]
    n = int(sel.sum())
    # The interval drawn beside the row (decides nothing): the bootstrap's exact percentiles
    # on the lattice the rate differences lie on, drawn (every resample) only past its size.
    scaled, lcm = stats.scaled_rate_differences(outcomes[0], outcomes[1])
    interval = lattice_bootstrap_interval(scaled, lcm, confidence=0.95)
    if interval is None:
        (interval,) = bootstrap_intervals(
            (rates[1] - rates[0])[None, :],
            seed=settings.seed,
            resamples=settings.resamples,
            confidence=0.95,
            sequential=False,
        )
    ci_low, ci_high = widen(test.net / n, *interval, boots, 0.95)
    return MetricRow(
        metric=metric,
        n=n,
        baseline=float(rates[0].mean()),
        candidate=float(rates[1].mean()),
        delta=test.net / n,
        p=test.p,
        verdict=test.verdict,
        reason=test.reason,
        hit=HitDetail(
            test=test,
            drift_baseline=stats.drift(outcomes[0]),
            drift_candidate=stats.drift(outcomes[1]),
            topk_drift_baseline=int(topk[0][sel].sum()),
            topk_drift_candidate=int(topk[1][sel].sum()),
            ci_low=ci_low,
            ci_high=ci_high,
        ),
        boots=boots,
        equivalence=_equivalence(metric, rates[1] - rates[0], settings, boots),
        power=power(
            metric,
            rates[1] - rates[0],
            alpha=power_alpha,
            effect=settings.min_effect,
            noise=repeat_noise(outcomes[0]) + repeat_noise(outcomes[1]),
            repeats=min(o.shape[0] for o in outcomes),
            boots=boots,
        ),
    )


def _continuous_row(
    metric: str,
    base: Side,
    cand: Side,
    sel: BoolArray,
    settings: CompareSettings,
    power_alpha: float,
    test: stats.ContinuousTest,
    boots: BootComponent,
) -> MetricRow:
    alpha = settings.alpha
    matrices = [side.matrix(metric)[:, sel] for side in (base, cand)]
    b, c = (m.mean(axis=0) for m in matrices)
    undecided = test.p < alpha and test.verdict is Verdict.NO_DIFFERENCE
    level = f"{100 * (1 - alpha):g}% CI"
    return MetricRow(
        metric=metric,
        n=int(sel.sum()),
        baseline=test.mean_baseline,
        candidate=test.mean_candidate,
        delta=test.delta,
        p=test.p,
        verdict=test.verdict,
        reason=test.reason,
        note=f"p < {alpha:g} but the {level} includes 0" if undecided else None,
        ci_low=test.ci_low,
        ci_high=test.ci_high,
        boots=boots,
        equivalence=_equivalence(metric, c - b, settings, boots),
        power=power(
            metric,
            c - b,
            alpha=power_alpha,
            effect=settings.min_effect,
            noise=sum(repeat_noise(m) for m in matrices),
            repeats=min(m.shape[0] for m in matrices),
            boots=boots,
        ),
    )


def score_scope(
    name: str,
    base: Side,
    cand: Side,
    sel: BoolArray,
    topk: Mapping[int, tuple[BoolArray, BoolArray]],
    settings: CompareSettings,
    family: int = 1,
    specs: Sequence[MetricSpec] | None = None,
) -> Scope:
    """Every compared metric on the queries `sel` picks out of `ids`: an exact paired hit-rate
    row for a binary metric, a randomization-test row for the rest (no Holm here: see
    holm_slices and the headline).  Power is stated at alpha / `family`, the number of tests
    the scope's calls are corrected across.  `specs`: these metrics instead of `settings.specs`
    (scored by `score_sides`, as its `extra`)."""
    power_alpha = settings.alpha / family
    specs = settings.specs if specs is None else specs
    continuous = [str(s) for s in specs if s.kind is not Kind.BINARY]
    matrices = {m: [side.matrix(m)[:, sel] for side in (base, cand)] for m in continuous}
    boots = {m: boot_component(*matrices[m]) for m in continuous}
    # Every continuous metric of the scope in one call: one set of resamples serves them all.
    tests = dict(
        zip(
            continuous,
            stats.continuous_tests(
                [tuple(x.mean(axis=0) for x in matrices[m]) for m in continuous],
                alpha=settings.alpha,
                seed=settings.seed,
                resamples=settings.resamples,
                family=family,
                boots=[boots[m] for m in continuous],
            ),
            strict=True,
        )
    )
    rows = [
        _hit_row(str(s), base, cand, sel, topk[s.depth], settings, power_alpha)
        if s.kind is Kind.BINARY
        else _continuous_row(
            str(s), base, cand, sel, settings, power_alpha, tests[str(s)], boots[str(s)]
        )
        for s in specs
    ]
    return Scope(name, int(sel.sum()), tuple(rows))


def holm_slices(
    slices: list[Scope], overall: Scope, alpha: float, deciding: Sequence[str] = ()
) -> list[Scope]:
    """Adjust each slice row's p, take back the calls Holm no longer supports, and flag
    collapses.

    The headline's metrics (`deciding`) are Holm-adjusted across every slice and every one of
    them at once: a slice is never less strict than the overall row, which is adjusted across
    the headline's tests, so a slice cannot "regress while the overall row did not" by a looser
    bar alone.  The other metrics are adjusted across the slices, per metric, and are
    information (`MetricRow.deciding` False): their regression is not a collapse.  A single
    slice holding every query is the overall scope: its rows are the overall rows, never a
    separate call."""
    if len(slices) == 1 and slices[0].n == overall.n:
        return [replace(slices[0], rows=tuple(_fell(row) for row in overall.rows))]
    family = [(j, i) for j, scope in enumerate(slices) for i, row in enumerate(scope.rows)
              if row.metric in deciding]
    adjusted = dict(zip(family, stats.holm([slices[j].rows[i].p for j, i in family]), strict=True))
    for i, row in enumerate(slices[0].rows if slices else ()):
        if row.metric not in deciding:
            each = stats.holm([s.rows[i].p for s in slices])
            adjusted.update(((j, i), adj) for j, adj in enumerate(each))
    size = len(family)
    out = []
    for j, scope in enumerate(slices):
        rows = []
        for i, row in enumerate(scope.rows):
            decides = row.metric in deciding
            adj = adjusted[j, i]
            row = replace(row, p_adjusted=adj, deciding=decides)
            if row.verdict in (Verdict.IMPROVED, Verdict.REGRESSED) and adj >= alpha:
                across = (
                    f"{len(slices)} slices and the {len(deciding)} headline tests ({size} tests)"
                    if decides
                    else f"{len(slices)} slices"
                )
                note = f"not significant after Holm across {across}"
                row = replace(row, verdict=Verdict.NO_DIFFERENCE, note=note)
            whole = overall.row(row.metric)
            row = _fell(row)
            if (
                row.collapse is None
                and decides
                and row.verdict is Verdict.REGRESSED
                and whole
                and whole.verdict != Verdict.REGRESSED
            ):
                row = replace(row, collapse="regressed while the overall row did not")
            rows.append(row)
        out.append(replace(scope, rows=tuple(rows)))
    return out


def _fell(row: MetricRow) -> MetricRow:
    """The row flagged when its metric fell to zero from above zero."""
    if row.baseline > 0 and row.candidate == 0:
        return replace(row, collapse="fell to zero")
    return row
