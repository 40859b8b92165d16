"""The matrix's numbers: every configuration compared with the reference by the variants'
engine (`harness.variants.summary`), Holm across the rows, and the constraints. Pure
(`harness.matrix` states every rule).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from harness.matrix.values import Constraint, Matrix
from harness.values.types import OVERALL, GoldSet, RefRun, Verdict
from harness.variants.summary import Row, Table, compare_variants
from harness.verdict import stats
from harness.verdict.comparison import CompareSettings, Comparison

_DIGITS = 6


@dataclass(frozen=True)
class ConstraintResult:
    constraint: Constraint
    value: float | None
    reference_value: float | None
    passed: bool
    words: str  # what was found, in plain words


@dataclass(frozen=True)
class MatrixResult:
    """Everything a matrix report shows: the table of configurations (one row per entry of
    `matrix`, in order; overall, each cell's `p_holm` is adjusted across the rows) and each
    constraint checked."""

    table: Table
    matrix: Matrix
    constraints: tuple[ConstraintResult, ...]

    @property
    def valid(self) -> bool:
        return self.table.valid

    @property
    def failed(self) -> tuple[ConstraintResult, ...]:
        return tuple(c for c in self.constraints if not c.passed)


def _holm(rows: Sequence[Row], metrics: Sequence[str], alpha: float) -> list[Row]:
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
    names = [e.name for e in matrix.entries]
    # Holm across the configurations decides each one's verdict too (judged_together, in the
    # engine), as it does the table of paired tests: the verdicts table called 13 of 39 equal
    # ones regressed.
    table, comparisons = compare_variants(
        gold,
        names,
        runs,
        names.index(matrix.reference),
        metrics,
        settings,
        side=side,
        family="configurations",
        unmatched="no configuration could be compared with it",
    )
    rows = _holm(table.rows, metrics, settings.alpha)
    by_name = {r.name: r for r in rows}
    checked = tuple(_check(c, by_name, matrix.reference) for c in matrix.constraints)
    return MatrixResult(replace(table, rows=tuple(rows)), matrix, checked), comparisons
