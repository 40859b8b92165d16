"""The quality headline of a simulated compare, straight from each side's per-query values.

    values = metric_values(hits, ranks)                 # repeats x queries, per metric
    verdict, reason, power = headline(base, cand, settings)

`scripts/calibrate.py` and `scripts/calibrate_sequential.py` simulate thousands of compares.
Through `harness.verdict.decide.compare` each one first scores its simulated rankings (the score
stage: judge each answer, compute every metric at every cutoff) and then decides.  Here the
simulated answers become their per-query values directly (one relevant document of grade 1 at
a known rank: hit@k is whether it is returned at rank <= k, mrr@k 1/rank, ndcg@k
1/log2(rank + 1), recall@k hit@k, p@k hit@k / k), and the headline is decided by compare's own
code: each headline row as `harness.verdict.scopes` makes it (`_hit_row`, `_continuous_row`:
the exact test, the boots, the randomization test and bootstrap, the power), Holm across them
(`compare._family`) and the headline rule (`headline.quality_headline`).  The rows that do
not decide the headline are not computed: they cannot change it.
tests/verdict/test_calibration_paths.py checks,
on simulated compares of every mode, that this gives `compare`'s verdict and mde.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from harness.score.metrics import Kind
from harness.values.types import Verdict
from harness.verdict import decide, scopes, stats
from harness.verdict.boots import boot_component
from harness.verdict.comparison import CompareSettings, Scope
from harness.verdict.headline import quality_headline
from harness.verdict.power import Power

FloatArray = np.ndarray


@dataclass(frozen=True)
class Values(scopes.Side):
    """A side whose per-query values are given, not scored (`scopes.Side.matrix`)."""

    values: Mapping[str, FloatArray] = field(default_factory=dict)

    def matrix(self, metric: str) -> FloatArray:
        return self.values[metric]


def side(values: Mapping[str, FloatArray]) -> Values:
    return Values((), (), np.zeros(0, dtype=np.intp), values=values)


def metric_values(hits: np.ndarray, ranks: np.ndarray, ks: tuple[int, ...] = (5, 10)) -> dict[
    str, FloatArray
]:
    """Each metric's repeats x queries values when query i's one relevant document is returned
    at rank ranks[i] in the repeats where hits[r, i], else not at all."""
    out: dict[str, FloatArray] = {}
    for k in ks:
        hit = (hits & (ranks <= k)[None, :]).astype(np.float64)
        out[f"hit@{k}"] = hit
        out[f"recall@{k}"] = hit
        out[f"p@{k}"] = hit / k
        out[f"mrr@{k}"] = hit / ranks[None, :]
        out[f"ndcg@{k}"] = hit / np.log2(ranks[None, :] + 1.0)
    return out


def headline(
    base: Mapping[str, FloatArray], cand: Mapping[str, FloatArray], settings: CompareSettings
) -> tuple[Verdict, str, Power | None]:
    """The quality headline `compare` gives two valid runs with these per-query values."""
    return quality_headline(headline_scope(base, cand, settings), settings, ())


def headline_scope(
    base: Mapping[str, FloatArray], cand: Mapping[str, FloatArray], settings: CompareSettings
) -> Scope:
    """The overall scope's headline rows `compare` makes of these per-query values, Holm-adjusted
    across each other (`compare._family`): what the headline and the margins read."""
    decisive = decide.decisive_metrics(settings)
    kinds = {str(s): s.kind for s in settings.specs}
    n = next(iter(base.values())).shape[1]
    sel = np.ones(n, dtype=bool)
    family = len(decisive)
    power_alpha = settings.alpha / family
    b, c = side(base), side(cand)
    continuous = [m for m in decisive if kinds[m] is not Kind.BINARY]
    boots = {m: boot_component(b.matrix(m), c.matrix(m)) for m in continuous}
    tests = dict(
        zip(
            continuous,
            stats.continuous_tests(
                [(b.matrix(m).mean(axis=0), c.matrix(m).mean(axis=0)) for m in continuous],
                alpha=settings.alpha,
                seed=settings.seed,
                resamples=settings.resamples,
                family=family,
                boots=[boots[m] for m in continuous],
            ),
            strict=True,
        )
    )
    still = (np.zeros(n, dtype=bool), np.zeros(n, dtype=bool))
    rows = [
        scopes._hit_row(m, b, c, sel, still, settings, power_alpha)
        if kinds[m] is Kind.BINARY
        else scopes._continuous_row(m, b, c, sel, settings, power_alpha, tests[m], boots[m])
        for m in decisive
    ]
    return decide._family(Scope("overall", n, tuple(rows)), settings)
