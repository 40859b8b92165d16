"""The matrix's numbers: every configuration compared with the reference by compare's paired
tests, Holm across the rows, and the constraints. Pure (`harness.matrix` states every rule).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from harness.matrix.values import Constraint, Matrix
from harness.values.types import OVERALL, GoldSet, RefRun, Verdict
from harness.verdict import stats
from harness.verdict.comparison import CompareSettings, Comparison, MetricRow
from harness.verdict.decide import compare
from harness.verdict.systems import judged_together

_DIGITS = 6


@dataclass(frozen=True)
class Cell:
    """One configuration's number for one metric in one scope, against the reference.

    `ci_low`/`ci_high` bound the paired difference (continuous metrics: compare's paired
    bootstrap; None for hit@k, whose test is McNemar's); `p` is compare's raw p; `p_holm` is
    Holm-adjusted across the rows of the matrix (overall only); `verdict` is None on the
    reference row."""

    value: float | None
    n: int = 0
    delta: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p: float | None = None
    p_holm: float | None = None
    verdict: Verdict | None = None
    note: str | None = None


@dataclass(frozen=True)
class Row:
    name: str
    reference: bool
    valid: bool
    reasons: tuple[str, ...]
    quality: str  # "reference", or the comparison's quality verdict
    latency: str
    env: Mapping[str, str]
    overrides: tuple[str, ...]  # "service.start", "query.params" ... the entry overrides
    description: str
    record_path: str | None
    cells: Mapping[str, Mapping[str, Cell]]  # scope -> metric -> Cell


@dataclass(frozen=True)
class ConstraintResult:
    constraint: Constraint
    value: float | None
    reference_value: float | None
    passed: bool
    words: str  # what was found, in plain words


@dataclass(frozen=True)
class MatrixResult:
    ref: str
    sha: str
    side: str
    source: str
    reference: str
    metrics: tuple[str, ...]
    scopes: tuple[str, ...]
    repeats: int
    gold_source: str
    gold_hash: str
    n_answerable: int
    alpha: float
    seed: int
    rows: tuple[Row, ...]
    constraints: tuple[ConstraintResult, ...]

    @property
    def valid(self) -> bool:
        return all(r.valid for r in self.rows)

    @property
    def failed(self) -> tuple[ConstraintResult, ...]:
        return tuple(c for c in self.constraints if not c.passed)


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
        verdict=row.verdict,
        note=row.note,
    )


def _holm(rows: list[Row], metrics: Sequence[str], alpha: float) -> list[Row]:
    """Adjust each overall metric's p across the non-reference rows that have one; take back an
    improved/regressed call Holm no longer supports."""
    out = list(rows)
    for m in metrics:
        tested = [i for i, r in enumerate(out) if r.cells[OVERALL][m].p is not None]
        if not tested:
            continue
        adjusted = stats.holm([out[i].cells[OVERALL][m].p or 0.0 for i in tested])
        for i, adj in zip(tested, adjusted, strict=True):
            cell = replace(out[i].cells[OVERALL][m], p_holm=adj)
            if cell.verdict in (Verdict.IMPROVED, Verdict.REGRESSED) and adj >= alpha:
                note = f"not significant after Holm across {len(tested)} configurations"
                cell = replace(cell, verdict=Verdict.NO_DIFFERENCE, note=note)
            cells = {**out[i].cells, OVERALL: {**out[i].cells[OVERALL], m: cell}}
            out[i] = replace(out[i], cells=cells)
    return out


def _check(c: Constraint, rows: Mapping[str, Row], reference: str) -> ConstraintResult:
    row, ref_row = rows[c.config], rows[reference]
    cell = row.cells.get(c.scope, {}).get(c.metric)
    ref_cell = ref_row.cells.get(c.scope, {}).get(c.metric)
    value = None if cell is None else cell.value
    ref_value = None if ref_cell is None else ref_cell.value
    if not row.valid or value is None:
        why = "its run is invalid" if not row.valid else f"no analysed query in {c.scope}"
        return ConstraintResult(c, None, ref_value, False, f"could not be checked: {why} (a fail)")
    v = round(value, _DIGITS)
    if c.bound == "max_drop":
        drop = round(-(cell.delta or 0.0), _DIGITS) if cell is not None else 0.0
        passed = drop <= c.value
        side = f"{drop:.3f} below" if drop >= 0 else f"{-drop:.3f} above"
        words = f"{value:.3f}, {side} the reference ({ref_value or 0:.3f})"
        return ConstraintResult(c, value, ref_value, passed, words)
    passed = v >= c.value if c.bound == "min" else v <= c.value
    return ConstraintResult(c, value, ref_value, passed, f"{value:.3f}")


def summarise(
    gold: GoldSet,
    matrix: Matrix,
    runs: Sequence[RefRun],
    metrics: Sequence[str],
    settings: CompareSettings,
    *,
    side: str = "baseline",
) -> tuple[MatrixResult, dict[str, Comparison]]:
    """Compare every configuration's run (in matrix order) with the reference's, then Holm and
    the constraints. `metrics` are canonical names; they are added to `settings.gate_on` so
    that compare computes them at any k. Returns the result and each comparison by name."""
    settings = replace(settings, gate_on=tuple(dict.fromkeys([*settings.gate_on, *metrics])))
    names = [e.name for e in matrix.entries]
    ref_index = names.index(matrix.reference)
    ref_run = runs[ref_index]
    others = [i for i in range(len(names)) if i != ref_index]
    # Holm across the configurations decides each one's verdict too (judged_together), as it
    # does the table of paired tests: the verdicts table called 13 of 39 equal ones regressed.
    judged, _ = judged_together(
        [compare(gold, ref_run, runs[i], settings, comparisons=len(others)) for i in others],
        "configurations",
    )
    comparisons = {names[i]: c for i, c in zip(others, judged, strict=True)}
    answerable = {q.slice for q in gold.queries if q.answerable}
    scopes = (OVERALL, *(s for s in gold.slices if s in answerable))
    first_valid = next((c for c in comparisons.values() if c.valid), None)
    rows: list[Row] = []
    for i, entry in enumerate(matrix.entries):
        overrides = tuple(f"service.{k}" for k in entry.service) + tuple(
            f"query.{k}" for k in entry.query
        )
        if i == ref_index:
            cells = {
                scope: {
                    m: Cell(r.baseline, r.n) if (r := by.get(m)) else Cell(None) for m in metrics
                }
                for scope in scopes
                for by in [_scope_rows(first_valid, scope) if first_valid else {}]
            }
            reasons = () if first_valid else ("no configuration could be compared with it",)
            rows.append(
                Row(
                    name=entry.name,
                    reference=True,
                    valid=first_valid is not None,
                    reasons=reasons,
                    quality="reference",
                    latency="reference",
                    env=entry.env,
                    overrides=overrides,
                    description=entry.description,
                    record_path=runs[i].record_path,
                    cells=cells,
                )
            )
            continue
        c = comparisons[entry.name]
        cells = {
            scope: {m: _cell(r) if (r := by.get(m)) else Cell(None) for m in metrics}
            for scope in scopes
            for by in [_scope_rows(c, scope) if c.valid else {}]
        }
        rows.append(
            Row(
                name=entry.name,
                reference=False,
                valid=c.valid,
                reasons=c.invalid_reasons,
                quality=c.verdict_quality.value,
                latency=f"{c.verdict_latency.value}: {c.latency.words}",
                env=entry.env,
                overrides=overrides,
                description=entry.description,
                record_path=runs[i].record_path,
                cells=cells,
            )
        )
    rows = _holm(rows, metrics, settings.alpha)
    by_name = {r.name: r for r in rows}
    checked = tuple(_check(c, by_name, matrix.reference) for c in matrix.constraints)
    result = MatrixResult(
        ref=ref_run.ref.partition(" [")[0],
        sha=ref_run.sha,
        side=side,
        source=matrix.source,
        reference=matrix.reference,
        metrics=tuple(metrics),
        scopes=scopes,
        repeats=max(len(run.repeats) for run in runs),
        gold_source=gold.source,
        gold_hash=gold.hash,
        n_answerable=sum(q.answerable for q in gold.queries),
        alpha=settings.alpha,
        seed=settings.seed,
        rows=tuple(rows),
        constraints=checked,
    )
    return result, comparisons
