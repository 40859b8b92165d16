"""The sweep's numbers: every value compared with the reference by the variants' engine
(`harness.variants.summary`), the best of each column marked. Pure (see `harness.sweep` for
every rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from harness.sweep.params import Param, Point, label, params_of
from harness.values.types import GoldSet, RefRun
from harness.variants.summary import Row, Table, compare_variants
from harness.verdict.comparison import CompareSettings, Comparison

_BEST_DIGITS = 6


@dataclass(frozen=True)
class Sweep:
    """Everything a sweep report shows: the table of values (one row per point, in order) and
    what was swept."""

    table: Table
    params: tuple[Param, ...]
    points: tuple[Point, ...]  # the rows' points, in the same order
    overridden: tuple[str, ...]  # config env pins the sweep replaced
    # Every value's service returned the same ranked ids for every query in every repeat: the
    # knob changed nothing the gold set can see (often: the service never reads it).
    identical_rankings: bool = False

    @property
    def valid(self) -> bool:
        return self.table.valid

    def best(self, scope: str, metric: str) -> tuple[str, ...]:
        return tuple(r.name for r in self.table.rows if r.cells[scope][metric].best)


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
    table, comparisons = compare_variants(
        gold,
        [label(point) for point in points],
        runs,
        reference,
        metrics,
        settings,
        side=side,
        family="values",
        unmatched="no value could be compared with it (see their reasons)",
    )
    rows = _mark_best(table.rows, table.scopes, metrics)
    sweep = Sweep(
        table=replace(table, rows=tuple(rows)),
        params=params_of(points),
        points=tuple(points),
        overridden=tuple(overridden),
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


def _mark_best(rows: Sequence[Row], scopes: Sequence[str], metrics: Sequence[str]) -> list[Row]:
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
