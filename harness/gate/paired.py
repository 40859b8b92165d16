"""The gate's rows decided as `harness compare` decides them: the same paired tests on the same
per-query values, the same Holm families.  Pure.

    found = tested_rows(recorded, now, metrics, slice_of, alpha=0.05, seed=0, max_drop=None)

A baseline file holds each analysed query's value per gated metric (its mean over the usable
repeats: what compare's tests read); the run gated now has the same.  For every scope (overall,
each slice of the baseline) and gated metric, on the queries analysed on both sides:

- a binary metric (hit@k) takes `stats.hit_rate_test` (McNemar exact for a deterministic
  service, the exact sign-flip on hit rates over repeats otherwise), a continuous one
  `stats.continuous_tests` (sign-flip randomization p and a bootstrap CI that must exclude 0);
- p is Holm-adjusted as compare adjusts it: across the gated metrics overall (compare's
  headline family), across the slices for each metric (compare's slice family);
- "regressed" (fails) when the adjusted p < alpha and the test calls it REGRESSED; "improved"
  likewise; otherwise "ok": no measurable difference, which never fails on its own;
- whatever the test says, a row fails when it "fell to zero" from above zero (compare's slice
  collapse), when its slice "vanished", or, with an explicit `max_drop` (--max-drop), when it
  dropped by more than that ("dropped");
- with margins (--non-inferior, `harness.verdict.noninferiority`) an overall row of a metric
  with a margin is decided by the one-sided interval of its paired delta instead of the test
  of a difference: "not worse" (passes) when the 1 - 2 alpha interval's lower bound lies above
  -margin, "worse than margin" (fails) when its upper bound lies below it, else "not shown
  within margin" (fails: never a pass).  The interval is compare's: Tango's score interval for
  0/1 values, the t interval of the mean delta otherwise; no Holm (an intersection-union test).
  The slices keep the rules above, as compare's margins are on its headline alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from harness.gate.measure import Baseline, rounded
from harness.gate.rows import NOT_SHOWN, GateRow
from harness.score.metrics import Kind, parse_metric
from harness.values.types import OVERALL, Verdict
from harness.verdict import stats
from harness.verdict.noninferiority import Claim, interval_of, judge


def _pairs(
    before: Baseline, after: Baseline, metric: str, scope: str, slice_of: Mapping[str, str]
) -> tuple[list[float], list[float]]:
    then, now = before.per_query[metric], after.per_query[metric]
    ids = [qid for qid in then if qid in now and (scope == OVERALL or slice_of.get(qid) == scope)]
    return [then[q] for q in ids], [now[q] for q in ids]


def _outcomes(rates: Sequence[float], repeats: int) -> npt.NDArray[np.bool_]:
    """Hit rates over `repeats` repeats as a repeats x queries 0/1 matrix with those rates (the
    test reads only each query's rate)."""
    hits = np.rint(np.asarray(rates, dtype=float) * repeats).astype(int)
    matrix: npt.NDArray[np.bool_] = np.arange(repeats)[:, None] < hits[None, :]
    return matrix


def _test(
    metric: str,
    pair: tuple[list[float], list[float]],
    repeats: tuple[int, int],
    alpha: float,
    seed: int,
    family: int = 1,
) -> tuple[float, Verdict, str]:
    base, cand = pair
    if not base:
        return 1.0, Verdict.NO_DIFFERENCE, "no query analysed on both sides"
    if parse_metric(metric).kind is Kind.BINARY:
        hit = stats.hit_rate_test(
            _outcomes(base, repeats[0]), _outcomes(cand, repeats[1]), alpha=alpha
        )
        return hit.p, hit.verdict, f"{hit.exact} b={hit.b} c={hit.c}"
    # Resampled until p is settled against alpha / family too: Holm multiplies it by up to the
    # family's size, and a p stopped just under alpha (0.004 for 10,000 draws) would not stay
    # under it (a regression of entity mrr@10 1.000 -> 0.439 passed a gate of 21 slices).
    (cont,) = stats.continuous_tests([(base, cand)], alpha=alpha, seed=seed, family=family)
    return cont.p, cont.verdict, "randomization test, bootstrap CI"


def tested_rows(
    before: Baseline,
    after: Baseline,
    metrics: Sequence[str],
    slice_of: Mapping[str, str],
    *,
    alpha: float,
    seed: int,
    max_drop: float | None = None,
    margins: Mapping[str, float] | None = None,
) -> list[GateRow]:
    """Every row of the baseline's scopes, decided by compare's tests (see the module)."""
    repeats = (max(before.repeats, 1), max(after.repeats, 1))
    cells: dict[tuple[str, str], tuple[float, Verdict, str]] = {}
    # Holm's families below: the overall row's metrics, and each metric across the slices.
    slices = sum(1 for s in before.scopes if s != OVERALL)
    for scope in before.scopes:
        now = after.scope(scope)
        if now is None or now.n == 0:
            continue
        family = len(metrics) if scope == OVERALL else slices
        for m in metrics:
            cells[scope, m] = _test(
                m, _pairs(before, after, m, scope, slice_of), repeats, alpha, seed, family
            )
    adjusted: dict[tuple[str, str], float] = {}
    families = [[(OVERALL, m) for m in metrics]] + [
        [(s, m) for s in before.scopes if s != OVERALL] for m in metrics
    ]
    for members in families:
        present = [key for key in members if key in cells]
        for key, p in zip(present, stats.holm([cells[k][0] for k in present]), strict=True):
            adjusted[key] = p
    out = []
    for scope in before.scopes:
        then = before.scope(scope)
        assert then is not None  # scopes lists only what it has
        now = after.scope(scope)
        for m in metrics:
            b = rounded(then.values[m])
            if now is None or now.n == 0:
                out.append(GateRow(scope, m, b, None, max_drop, "vanished"))
                continue
            a = rounded(now.values[m])
            p, verdict, test = cells[scope, m]
            p_adj = adjusted[scope, m]
            called = p_adj < alpha
            if b > 0 and a == 0:
                status = "fell to zero"
            elif max_drop is not None and rounded(b - a) > max_drop:
                status = "dropped"
            elif scope == OVERALL and margins and m in margins:
                out.append(_margin_row(b, a, margins[m], _pairs(before, after, m, scope, slice_of),
                                       alpha, GateRow(scope, m, b, a, max_drop, "")))  # fmt: skip
                continue
            elif called and verdict is Verdict.REGRESSED:
                status = "regressed"
            elif called and verdict is Verdict.IMPROVED:
                status = "improved"
            else:
                status = "ok"
            out.append(GateRow(scope, m, b, a, max_drop, status, p=p_adj, test=test))
    return out


_STATUS = {
    Claim.NOT_WORSE: "not worse",
    Claim.WORSE: "worse than margin",
    Claim.NOT_SHOWN: NOT_SHOWN,
}


def _margin_row(
    b: float,
    a: float,
    margin: float,
    pair: tuple[list[float], list[float]],
    alpha: float,
    row: GateRow,
) -> GateRow:
    """An overall row with a margin: its claim from the one-sided interval (the module's)."""
    base, cand = pair
    if not base:
        return replace(row, status=NOT_SHOWN, margin=margin, test="no query on both sides")
    iv = interval_of(np.asarray(cand) - np.asarray(base), alpha)
    claim = judge(iv.low, iv.high, margin)
    test = f"{iv.confidence:.0%} CI [{iv.low:+.4f}, {iv.high:+.4f}], {iv.method}"
    return replace(row, status=_STATUS[claim], margin=margin, low=iv.low, high=iv.high, test=test)


def gate_margins(
    margins: float | Mapping[str, float] | None, metrics: Sequence[str]
) -> tuple[dict[str, float], list[str]]:
    """The gated metrics' margins (one number: every gated metric's; a table: those it names,
    matched by metric, Success@5 for hit@5), and the names of a table's metrics not gated."""
    if margins is None:
        return {}, []
    if not isinstance(margins, Mapping):
        return {m: float(margins) for m in metrics}, []
    named = {parse_metric(name): (name, float(v)) for name, v in margins.items()}
    gated = {parse_metric(m): m for m in metrics}
    chosen = {gated[spec]: v for spec, (_, v) in named.items() if spec in gated}
    return chosen, [name for spec, (name, _) in named.items() if spec not in gated]
