"""Each side's repeats scored, and the metric rows of a scope (overall or one slice) from them.

Part of `harness.verdict.compare` (its docstring states every rule: modal hit@k outcomes and
McNemar, per-query means and the randomization test, Holm across slices, collapses, detectability);
pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from harness.score.evaluation import Evaluation, evaluate
from harness.score.metrics import Kind, dedupe
from harness.types import GoldQuery, GoldSet, QueryResult, Repeat, Verdict
from harness.verdict import stats, validity
from harness.verdict.comparison import (
    CompareSettings,
    Detectability,
    HitDetail,
    MetricRow,
    Scope,
    SliceDetectability,
)

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


# --------------------------------------------------------------------------- per-side data


@dataclass(frozen=True)
class Side:
    """One side's usable repeats, scored: rows follow `ids` (the analysed answerable queries)."""

    answers: tuple[dict[str, QueryResult], ...]
    evaluations: tuple[Evaluation, ...]
    rows: npt.NDArray[np.intp]  # positions of `ids` in each evaluation's query_ids

    def matrix(self, metric: str) -> FloatArray:
        """repeats x queries."""
        return np.stack([ev.columns[metric][self.rows] for ev in self.evaluations])

    def ranks(self, query: GoldQuery, rel_level: int) -> list[int | None]:
        return [_first_relevant(a[query.id].ids, query, rel_level) for a in self.answers]

    def topk_drift(self, ids: Sequence[str], k: int) -> BoolArray:
        return np.array(
            [len({dedupe(a[qid].ids)[:k] for a in self.answers}) > 1 for qid in ids], dtype=bool
        )


def _first_relevant(ids: Sequence[str], query: GoldQuery, rel_level: int) -> int | None:
    for rank, doc in enumerate(dedupe(ids), start=1):
        if query.relevant.get(doc, 0) >= rel_level:
            return rank
    return None


def score_side(
    gold: GoldSet, repeats: Sequence[Repeat], ids: Sequence[str], settings: CompareSettings
) -> Side:
    """Evaluate each usable repeat of one side on the gold set (errored answers left out)."""
    answers = tuple(map(validity.by_query, repeats))
    evaluations = tuple(
        evaluate(
            gold,
            {qid: r.ids for qid, r in a.items() if r.ok},
            settings.specs,
            settings.rel_level,
        )
        for a in answers
    )
    position = {qid: i for i, qid in enumerate(evaluations[0].query_ids)} if evaluations else {}
    rows = np.array([position[qid] for qid in ids], dtype=np.intp) if position else np.zeros(0, int)
    return Side(answers, evaluations, rows)


# --------------------------------------------------------------------------- rows


def _hit_row(
    metric: str,
    base: Side,
    cand: Side,
    sel: BoolArray,
    topk: tuple[BoolArray, BoolArray],
    settings: CompareSettings,
) -> MetricRow:
    outcomes = [side.matrix(metric)[:, sel] > 0.5 for side in (base, cand)]
    b_hit, c_hit = (stats.modal(list(o)) for o in outcomes)
    drifts = [stats.drift(list(o)) for o in outcomes]
    n = int(sel.sum())
    floor = stats.noise_floor(settings.alpha, drifts[0], drifts[1])
    test = stats.binary_verdict(
        int((b_hit & ~c_hit).sum()), int((c_hit & ~b_hit).sum()), alpha=settings.alpha, floor=floor
    )
    min_swing = stats.detectable_swing(n, settings.alpha)
    too_small = min_swing is None or floor > n
    note = None
    if too_small:
        note = (
            f"gold set too small to call a change in {metric} ({n} queries; "
            f"the smallest callable swing is {floor})"
        )
    elif abs(test.net) < floor:
        note = test.reason
    return MetricRow(
        metric=metric,
        n=n,
        baseline=float(b_hit.mean()),
        candidate=float(c_hit.mean()),
        delta=test.net / n,
        p=test.p,
        verdict=test.verdict,
        reason=test.reason,
        note=note,
        hit=HitDetail(
            test=test,
            min_swing=min_swing,
            drift_baseline=drifts[0],
            drift_candidate=drifts[1],
            topk_drift_baseline=int(topk[0][sel].sum()),
            topk_drift_candidate=int(topk[1][sel].sum()),
            too_small=too_small,
        ),
    )


def _continuous_row(
    metric: str, base: Side, cand: Side, sel: BoolArray, settings: CompareSettings
) -> MetricRow:
    b, c = (side.matrix(metric)[:, sel].mean(axis=0) for side in (base, cand))
    test = stats.continuous_test(
        b, c, alpha=settings.alpha, seed=settings.seed, resamples=settings.resamples
    )
    undecided = test.p < settings.alpha and test.verdict is Verdict.NO_DIFFERENCE
    level = f"{100 * (1 - settings.alpha):g}% CI"
    return MetricRow(
        metric=metric,
        n=int(sel.sum()),
        baseline=test.mean_baseline,
        candidate=test.mean_candidate,
        delta=test.delta,
        p=test.p,
        verdict=test.verdict,
        reason=test.reason,
        note=f"p < {settings.alpha:g} but the {level} includes 0" if undecided else None,
        ci_low=test.ci_low,
        ci_high=test.ci_high,
    )


def score_scope(
    name: str,
    base: Side,
    cand: Side,
    sel: BoolArray,
    topk: Mapping[int, tuple[BoolArray, BoolArray]],
    settings: CompareSettings,
) -> Scope:
    """Every compared metric on the queries `sel` picks out of `ids`: a McNemar row for a
    binary metric, a randomization-test row for the rest (no Holm here: see holm_slices)."""
    rows = [
        _hit_row(str(s), base, cand, sel, topk[s.k], settings)
        if s.kind is Kind.BINARY
        else _continuous_row(str(s), base, cand, sel, settings)
        for s in settings.specs
    ]
    return Scope(name, int(sel.sum()), tuple(rows))


def holm_slices(slices: list[Scope], overall: Scope, alpha: float) -> list[Scope]:
    """Adjust each metric's p across the slices, take back the calls Holm no longer supports,
    and flag collapses."""
    adjusted = {
        row.metric: stats.holm([s.rows[i].p for s in slices])
        for i, row in enumerate(slices[0].rows if slices else ())
    }
    out = []
    for j, scope in enumerate(slices):
        rows = []
        for row in scope.rows:
            adj = adjusted[row.metric][j]
            row = replace(row, p_adjusted=adj)
            if row.verdict in (Verdict.IMPROVED, Verdict.REGRESSED) and adj >= alpha:
                note = f"not significant after Holm across {len(slices)} slices"
                row = replace(row, verdict=Verdict.NO_DIFFERENCE, note=note)
            whole = overall.row(row.metric)
            if row.baseline > 0 and row.candidate == 0:
                row = replace(row, collapse="fell to zero")
            elif row.verdict is Verdict.REGRESSED and whole and whole.verdict != Verdict.REGRESSED:
                row = replace(row, collapse="regressed while the overall row did not")
            rows.append(row)
        out.append(replace(scope, rows=tuple(rows)))
    return out


# --------------------------------------------------------------------------- detectability


def detectability(
    overall: Scope,
    slices: Sequence[Scope],
    metric: str,
    base: Side,
    cand: Side,
    selections: Mapping[str, BoolArray],
    alpha: float,
) -> Detectability | None:
    """The noise floor of `metric` (a hit@k) overall, and per slice at alpha / the number of
    slices with queries; None when the overall scope has no such row."""
    row = overall.row(metric)
    if row is None or row.hit is None:
        return None
    per_slice = []
    m = max(1, sum(1 for s in slices if s.n))
    for name, sel in selections.items():
        drifts = [stats.drift(list(s.matrix(metric)[:, sel] > 0.5)) for s in (base, cand)]
        swing = stats.noise_floor(alpha / m, drifts[0], drifts[1])
        n = int(sel.sum())
        per_slice.append(SliceDetectability(name, n, swing, swing <= n))
    return Detectability(metric, row.n, row.hit.test.floor, row.hit.too_small, tuple(per_slice))
