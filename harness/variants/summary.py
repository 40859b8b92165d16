"""The variants' numbers: every variant compared with the reference, laid out per variant,
scope and metric. Pure (see `harness.variants` for every rule).

    table, comparisons = compare_variants(gold, names, runs, reference, metrics, settings,
                                          side=..., family="values", unmatched="...")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from harness.values.types import OVERALL, GoldSet, RefRun, Verdict
from harness.verdict.comparison import CompareSettings, Comparison, MetricRow
from harness.verdict.decide import compare
from harness.verdict.systems import judged_together


@dataclass(frozen=True)
class Cell:
    """One variant's number for one metric in one scope, and how it stands against the
    reference (compare's row for that metric and scope).

    `value` is the variant's mean (on the reference row, the baseline side's), None when the
    row is invalid or the scope has no analysed query. `ci_low`/`ci_high` bound the paired
    difference (continuous metrics: compare's paired bootstrap; None for hit@k, whose test is
    McNemar's); `p` is compare's raw p and `p_adjusted` its Holm-adjusted one (across slices in
    a slice, across the family's headline tests overall); `verdict` is None on the reference
    row; `collapse` is compare's reason for a slice collapse. What a front end adds: `best`
    (the highest in its column, by the sweep) and `p_holm` (the overall p adjusted across the
    rows, by the matrix).
    """

    value: float | None
    n: int = 0
    delta: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p: float | None = None
    p_adjusted: float | None = None
    verdict: Verdict | None = None
    note: str | None = None
    collapse: str | None = None
    best: bool = False
    p_holm: float | None = None


@dataclass(frozen=True)
class Row:
    """One variant: its cells by scope then metric, and the headline of its comparison."""

    name: str
    reference: bool
    valid: bool
    reasons: tuple[str, ...]  # why the comparison is invalid
    quality: str  # "reference", or the comparison's quality verdict
    quality_reason: str  # why (empty for the reference)
    latency: str  # "reference", or the latency verdict and the paired ratio in words
    collapses: tuple[str, ...]  # "slice (metric)" for each collapsed slice row
    record_path: str | None
    cells: Mapping[str, Mapping[str, Cell]]  # scope -> metric -> Cell


@dataclass(frozen=True)
class Table:
    """Every variant against the reference, and what makes the rows comparable; `scopes` are
    "overall" then the slices in gold order."""

    ref: str
    sha: str
    side: str
    reference: str  # the reference variant's name
    metrics: tuple[str, ...]
    scopes: tuple[str, ...]
    repeats: int
    gold_source: str
    gold_hash: str
    n_answerable: int
    alpha: float
    seed: int
    rows: tuple[Row, ...]

    @property
    def valid(self) -> bool:
        return all(row.valid for row in self.rows)


def compare_variants(
    gold: GoldSet,
    names: Sequence[str],
    runs: Sequence[RefRun],
    reference: int,
    metrics: Sequence[str],
    settings: CompareSettings,
    *,
    side: str,
    family: str,
    unmatched: str,
) -> tuple[Table, dict[str, Comparison]]:
    """Compare every run (named `names`, in order) with `runs[reference]` and lay the numbers
    out per metric and scope.

    `metrics` (canonical names) are added to `settings.gate_on`, so that compare computes them
    at any k. `family` names the variants in the Holm note ("values"); `unmatched` is why the
    reference row is invalid when no variant could be compared with it. Returns the Table and
    each comparison by its variant's name (the reference has none).
    """
    settings = replace(settings, gate_on=tuple(dict.fromkeys([*settings.gate_on, *metrics])))
    ref_run = runs[reference]
    others = [i for i in range(len(runs)) if i != reference]
    # Every variant against the reference, Holm across all of them (judged_together): a variant
    # is called only when its test holds across the family, not by the luck of one draw.
    judged, _ = judged_together(
        [compare(gold, ref_run, runs[i], settings, comparisons=len(others)) for i in others],
        family,
    )
    comparisons = {names[i]: c for i, c in zip(others, judged, strict=True)}
    answerable = {q.slice for q in gold.queries if q.answerable}
    scopes = (OVERALL, *(name for name in gold.slices if name in answerable))
    first_valid = next((c for c in comparisons.values() if c.valid), None)
    rows = [
        _reference_row(name, run, first_valid, scopes, metrics, unmatched)
        if i == reference
        else _variant_row(name, run, comparisons[name], scopes, metrics)
        for i, (name, run) in enumerate(zip(names, runs, strict=True))
    ]
    table = Table(
        ref=ref_run.ref.partition(" [")[0],
        sha=ref_run.sha,
        side=side,
        reference=names[reference],
        metrics=tuple(metrics),
        scopes=scopes,
        repeats=max(len(run.repeats) for run in runs),
        gold_source=gold.source,
        gold_hash=gold.hash,
        n_answerable=sum(q.answerable for q in gold.queries),
        alpha=settings.alpha,
        seed=settings.seed,
        rows=tuple(rows),
    )
    return table, comparisons


def _scope_rows(c: Comparison, scope: str) -> Mapping[str, MetricRow]:
    found = c.overall if scope == OVERALL else next((s for s in c.slices if s.name == scope), None)
    return {} if found is None else {r.metric: r for r in found.rows}


def _cell(row: MetricRow) -> Cell:
    return Cell(
        value=row.candidate,
        n=row.n,
        delta=row.delta,
        ci_low=row.ci_low,
        ci_high=row.ci_high,
        p=row.p,
        p_adjusted=row.p_adjusted,
        verdict=row.verdict,
        note=row.note,
        collapse=row.collapse,
    )


def _reference_row(
    name: str,
    run: RefRun,
    first_valid: Comparison | None,
    scopes: Sequence[str],
    metrics: Sequence[str],
    unmatched: str,
) -> Row:
    cells: dict[str, dict[str, Cell]] = {}
    for scope in scopes:
        by_metric = _scope_rows(first_valid, scope) if first_valid else {}
        cells[scope] = {
            m: Cell(r.baseline, r.n) if (r := by_metric.get(m)) else Cell(None) for m in metrics
        }
    return Row(
        name=name,
        reference=True,
        valid=first_valid is not None,
        reasons=() if first_valid else (unmatched,),
        quality="reference",
        quality_reason="",
        latency="reference",
        collapses=(),
        record_path=run.record_path,
        cells=cells,
    )


def _variant_row(
    name: str, run: RefRun, c: Comparison, scopes: Sequence[str], metrics: Sequence[str]
) -> Row:
    cells: dict[str, dict[str, Cell]] = {}
    for scope in scopes:
        by_metric = _scope_rows(c, scope) if c.valid else {}
        cells[scope] = {m: _cell(r) if (r := by_metric.get(m)) else Cell(None) for m in metrics}
    collapses = tuple(
        f"{scope.name} ({r.metric})" for scope, r in c.collapses if r.metric in metrics
    )
    return Row(
        name=name,
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
