"""The sweep's numbers: every value compared with the reference, laid out per metric and scope,
the best of each column marked. Pure (see `harness.sweep` for every rule).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from harness.sweep.params import Param, Point, label, params_of
from harness.values.types import GoldSet, RefRun, Verdict
from harness.verdict.comparison import CompareSettings, Comparison, MetricRow
from harness.verdict.decide import compare
from harness.verdict.systems import judged_together

_BEST_DIGITS = 6


@dataclass(frozen=True)
class Cell:
    """One value's number for one metric in one scope, and how it stands against the reference.

    `value` is None when the row is invalid or the scope has no analysed query; `verdict` is
    None on the reference row; `p` is compare's p-value (Holm-adjusted across slices in a
    slice); `collapse` is compare's reason for a slice collapse.
    """

    value: float | None
    delta: float | None = None
    p: float | None = None
    verdict: Verdict | None = None
    best: bool = False
    collapse: str | None = None


@dataclass(frozen=True)
class SweepRow:
    """One swept value: its cells by scope then metric, and the headline of its comparison."""

    label: str
    point: Point
    reference: bool
    valid: bool
    reasons: tuple[str, ...]  # why the comparison is invalid
    quality: str  # "reference", or the comparison's quality verdict
    quality_reason: str  # why (empty for the reference)
    latency: str  # "reference", or the latency verdict and the paired ratio in words
    collapses: tuple[str, ...]  # "slice (metric)" for each collapsed slice row
    record_path: str | None
    cells: Mapping[str, Mapping[str, Cell]]


@dataclass(frozen=True)
class Sweep:
    """Everything a sweep report shows; `scopes` are "overall" then the slices in gold order."""

    ref: str
    sha: str
    side: str
    params: tuple[Param, ...]
    reference: str
    metrics: tuple[str, ...]
    scopes: tuple[str, ...]
    repeats: int
    gold_source: str
    gold_hash: str
    n_answerable: int
    alpha: float
    seed: int
    overridden: tuple[str, ...]  # config env pins the sweep replaced
    rows: tuple[SweepRow, ...]
    # Every value's service returned the same ranked ids for every query in every repeat: the
    # knob changed nothing the gold set can see (often: the service never reads it).
    identical_rankings: bool = False

    @property
    def valid(self) -> bool:
        return all(row.valid for row in self.rows)

    def best(self, scope: str, metric: str) -> tuple[str, ...]:
        return tuple(r.label for r in self.rows if r.cells[scope][metric].best)


def summarise(
    gold: GoldSet,
    points: Sequence[Point],
    runs: Sequence[RefRun],
    reference: int,
    metrics: Sequence[str],
    settings: CompareSettings,
    *,
    side: str = "baseline",
    overridden: Sequence[str] = (),
) -> tuple[Sweep, dict[str, Comparison]]:
    """Compare every run with the reference run and lay the numbers out per metric and scope.

    `metrics` (canonical names) are added to `settings.gate_on`, so that compare computes them
    at any k. Returns the Sweep and each comparison by its value's label (the reference has
    none).
    """
    settings = replace(settings, gate_on=tuple(dict.fromkeys([*settings.gate_on, *metrics])))
    ref_run = runs[reference]
    others = [i for i in range(len(runs)) if i != reference]
    # Every value against the reference, Holm across all of them (judged_together): a value
    # is called only when its test holds across the sweep, not by the luck of one draw.
    judged, _ = judged_together(
        [compare(gold, ref_run, runs[i], settings, comparisons=len(others)) for i in others],
        "values",
    )
    comparisons = {label(points[i]): c for i, c in zip(others, judged, strict=True)}
    answerable = {q.slice for q in gold.queries if q.answerable}
    scopes = ("overall", *(name for name in gold.slices if name in answerable))
    first_valid = next((c for c in comparisons.values() if c.valid), None)
    rows = []
    for i, point in enumerate(points):
        name = label(point)
        if i == reference:
            rows.append(_reference_row(name, point, ref_run, first_valid, scopes, metrics))
        else:
            rows.append(_value_row(name, point, runs[i], comparisons[name], scopes, metrics))
    rows = _mark_best(rows, scopes, metrics)
    sweep = Sweep(
        ref=ref_run.ref.partition(" [")[0],
        sha=ref_run.sha,
        side=side,
        params=params_of(points),
        reference=label(points[reference]),
        metrics=tuple(metrics),
        scopes=scopes,
        repeats=max(len(run.repeats) for run in runs),
        gold_source=gold.source,
        gold_hash=gold.hash,
        n_answerable=sum(q.answerable for q in gold.queries),
        alpha=settings.alpha,
        seed=settings.seed,
        overridden=tuple(overridden),
        rows=tuple(rows),
        identical_rankings=identical_rankings(runs),
    )
    return sweep, comparisons


def identical_rankings(runs: Sequence[RefRun]) -> bool:
    """Whether every run answered every query with the same ranked ids in every repeat (two or
    more complete runs; a failed build, boot or query makes it False: nothing is claimed)."""

    def answers(run: RefRun) -> dict[str, frozenset[tuple[str, ...]]]:
        seen: dict[str, set[tuple[str, ...]]] = {}
        for rep in run.repeats:
            for r in rep.results:
                seen.setdefault(r.query_id, set()).add(r.ids)
        return {qid: frozenset(ids) for qid, ids in seen.items()}

    complete = [
        run
        for run in runs
        if run.repeats
        and not run.failures
        and all(r.ok for rep in run.repeats for r in rep.results)
    ]
    if len(runs) < 2 or len(complete) < len(runs):
        return False
    first = answers(complete[0])
    return bool(first) and all(answers(run) == first for run in complete[1:])


def _scope_rows(c: Comparison, scope: str) -> Mapping[str, MetricRow]:
    found = (
        c.overall if scope == "overall" else next((s for s in c.slices if s.name == scope), None)
    )
    return {} if found is None else {r.metric: r for r in found.rows}


def _reference_row(
    name: str,
    point: Point,
    run: RefRun,
    first_valid: Comparison | None,
    scopes: Sequence[str],
    metrics: Sequence[str],
) -> SweepRow:
    cells: dict[str, dict[str, Cell]] = {}
    for scope in scopes:
        rows = _scope_rows(first_valid, scope) if first_valid else {}
        cells[scope] = {m: Cell(rows[m].baseline if m in rows else None) for m in metrics}
    reasons = () if first_valid else ("no value could be compared with it (see their reasons)",)
    return SweepRow(
        label=name,
        point=point,
        reference=True,
        valid=first_valid is not None,
        reasons=reasons,
        quality="reference",
        quality_reason="",
        latency="reference",
        collapses=(),
        record_path=run.record_path,
        cells=cells,
    )


def _value_row(
    name: str,
    point: Point,
    run: RefRun,
    c: Comparison,
    scopes: Sequence[str],
    metrics: Sequence[str],
) -> SweepRow:
    cells: dict[str, dict[str, Cell]] = {}
    for scope in scopes:
        rows = _scope_rows(c, scope) if c.valid else {}
        cells[scope] = {
            m: Cell(
                value=rows[m].candidate,
                delta=rows[m].delta,
                p=rows[m].p_adjusted if rows[m].p_adjusted is not None else rows[m].p,
                verdict=rows[m].verdict,
                collapse=rows[m].collapse,
            )
            if m in rows
            else Cell(None)
            for m in metrics
        }
    collapses = tuple(
        f"{scope.name} ({r.metric})" for scope, r in c.collapses if r.metric in metrics
    )
    return SweepRow(
        label=name,
        point=point,
        reference=False,
        valid=c.valid,
        reasons=c.invalid_reasons,
        quality=c.verdict_quality.value,
        quality_reason=c.quality_reason,
        latency=f"{c.verdict_latency.value}: {c.latency.words}",
        collapses=collapses,
        record_path=run.record_path,
        cells=cells,
    )


def _mark_best(
    rows: Sequence[SweepRow], scopes: Sequence[str], metrics: Sequence[str]
) -> list[SweepRow]:
    best: dict[tuple[str, str], float] = {}
    for scope in scopes:
        for m in metrics:
            values = [
                round(v, _BEST_DIGITS)
                for r in rows
                if r.valid and (v := r.cells[scope][m].value) is not None
            ]
            if values:
                best[scope, m] = max(values)
    out = []
    for row in rows:
        cells = {
            scope: {
                m: replace(cell, best=True)
                if row.valid
                and cell.value is not None
                and round(cell.value, _BEST_DIGITS) == best.get((scope, m))
                else cell
                for m, cell in by_metric.items()
            }
            for scope, by_metric in row.cells.items()
        }
        out.append(replace(row, cells=cells))
    return out
