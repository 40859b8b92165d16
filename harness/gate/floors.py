"""Absolute floors beside the baseline gate: `[gate.floors]` in harness.toml, checked on one run.
Pure; off unless set.

    problems = floor_problems(table)          # harness.config.floors: [(field suffix, message)]
    floors = floors_from(overall, by_slice)   # Floor per scope and metric, in file order
    floors = config_floors(config, gold)      # the config's, each slice checked against the gold
    rows = check_floors(floors, gold, run, max_errors=0) -> tuple[FloorRow, ...]

The table: `"mrr@10" = 0.78` (overall), and per slice `[gate.floors.slice.NAME]` with the same
keys. A key is a metric name (`harness.score.metrics.parse_metric`) or a rate of
`harness.score.metrics.LOWER_IS_BETTER` (`no_answer_fp`: unanswerable queries returning anything
/ unanswerable queries); the value is in [0, 1]. For a higher-is-better metric the value is a
floor ("at least"), for a lower-is-better one a ceiling ("at most").

Values are the gate's (`harness.gate.measure`): per scope, the mean over usable repeats of the
repeat's mean over the scope's analysed answerable queries (n = those queries); `no_answer_fp` is
the mean over usable repeats of the share of the scope's analysed unanswerable queries that
returned any id (n = those queries). Both are rounded to 6 decimals before the comparison. A
floor that cannot be measured (an invalid run, a scope with no such query) fails: a floor is
never met by default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.config import HarnessConfig
from harness.errors import ConfigError
from harness.gate.measure import measure, rounded
from harness.score.metrics import NO_ANSWER_FP, lower_is_better
from harness.values.types import OVERALL, FloorRow, GoldSet, RefRun
from harness.verdict import validity


@dataclass(frozen=True)
class Floor:
    scope: str  # "overall" or a slice name
    metric: str
    limit: float

    @property
    def bound(self) -> str:
        return "at most" if lower_is_better(self.metric) else "at least"


def floors_from(
    overall: Mapping[str, float], by_slice: Mapping[str, Mapping[str, float]]
) -> tuple[Floor, ...]:
    """The floors in file order: overall first, then each slice's."""
    out = [Floor(OVERALL, m, v) for m, v in overall.items()]
    out += [Floor(s, m, v) for s, table in by_slice.items() for m, v in table.items()]
    return tuple(out)


def unknown_slices(floors: Sequence[Floor], gold: GoldSet) -> list[str]:
    """The slices floors are set on that the gold set does not have."""
    return sorted({f.scope for f in floors if f.scope != OVERALL and f.scope not in gold.slices})


def config_floors(config: HarnessConfig, gold: GoldSet) -> tuple[Floor, ...]:
    """The config's [gate.floors]; ConfigError, before anything runs, for a slice the gold set
    does not have."""
    floors = floors_from(config.gate.floors, config.gate.slice_floors)
    unknown = unknown_slices(floors, gold)
    if unknown:
        raise ConfigError(
            f"{config.path}: gate.floors.slice.{unknown[0]}: the gold set has no slice "
            f"{unknown[0]!r}",
            hint=f"known slices: {', '.join(gold.slices)}",
        )
    return floors


def _no_answer(gold: GoldSet, run: RefRun) -> dict[str, tuple[int, float | None]]:
    """Per scope: (n analysed unanswerable queries, mean over usable repeats of the share that
    returned anything)."""
    usable = [validity.by_query(rep) for rep in validity.usable(run)]
    if not usable:
        return {}
    analysed = [
        q
        for q in gold.queries
        if not q.answerable and all(q.id in a and a[q.id].ok for a in usable)
    ]
    scopes: dict[str, list[str]] = {OVERALL: [q.id for q in analysed]}
    for q in analysed:
        scopes.setdefault(q.slice, []).append(q.id)
    out: dict[str, tuple[int, float | None]] = {}
    for scope, ids in scopes.items():
        if not ids:
            out[scope] = (0, None)
            continue
        shares = [sum(bool(a[i].ids) for i in ids) / len(ids) for a in usable]
        out[scope] = (len(ids), sum(shares) / len(shares))
    return out


def check_floors(
    floors: Sequence[Floor], gold: GoldSet, run: RefRun, *, max_errors: int = 0
) -> tuple[FloorRow, ...]:
    """Every floor on `run` (the rules are in the module docstring); () when none is set."""
    if not floors:
        return ()
    metrics = list(dict.fromkeys(f.metric for f in floors if f.metric != NO_ANSWER_FP))
    measured = measure(gold, run, metrics, max_errors=max_errors).baseline if metrics else None
    no_answer = _no_answer(gold, run) if any(f.metric == NO_ANSWER_FP for f in floors) else {}
    rows = []
    for f in floors:
        value: float | None = None
        n = 0
        if f.metric == NO_ANSWER_FP:
            n, value = no_answer.get(f.scope, (0, None))
        elif measured is not None and (scope := measured.scope(f.scope)) is not None:
            n, value = scope.n, scope.values[f.metric]
        if value is not None:
            value = rounded(value)
        at_most = f.bound == "at most"
        passed = value is not None and (value <= f.limit if at_most else value >= f.limit)
        rows.append(FloorRow(f.scope, f.metric, f.bound, f.limit, value, n, passed))
    return tuple(rows)
