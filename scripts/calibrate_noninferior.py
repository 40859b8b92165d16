#!/usr/bin/env python
"""Calibrate `compare --non-inferior MARGIN`: how often "not worse" is said of an A/A (the claim's
power) and of a true change of exactly -MARGIN (a false claim: at most alpha), and how often
the rule answers at all, by simulation through the project's own decision code.

    python scripts/calibrate.py --only noninferior [--sims 400] [--seed 0] [--jobs 2]

Each simulation draws a gold set and both sides' answers as `scripts/calibrate.py` does, in its
determinism modes (deterministic, flaky 10%, redrawn, per-boot 0.03), and decides the margins
two ways:

- sequential (the default compare): the queries in the compare's order
  (`quality_sequential.query_order`), looked at block by block with the margins in the stop rule
  (`asked.plan_for`, `quality_sequential.decide`: the first deciding look is where the runner
  stops), then `asked.margins_at_stop`, as `asked.compare_asked` calls it: the confidence
  sequences at the stop, else the fixed-sample interval at alpha - alpha_s over every query;
- fixed (`--no-sequential`): every query, each margin on its metric's 1 - 2 alpha interval
  (`compare.margin_intervals`, `compare.noninferiority`, as `compare.compare` calls them).

The headline rows are made from the per-query values by compare's own row code
(`calibrate_headline.headline_scope`; tests/verdict/test_calibration_paths.py checks it gives what
`compare_asked` gives through the scoring).  Scenarios: A/A (the candidate is the baseline's
service, drawn again) and "-margin" (the candidate's hit probability is MARGIN lower on average
over the population of queries: redrawn p - MARGIN; deterministic and flaky, each hit query turns
into a miss and each miss into a hit at random, at rates whose net is -MARGIN, so the gold set's
own delta varies around it as a real change's does; a flaky query's 0.5 drops by MARGIN).
Rates carry Wilson 95% intervals.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate import as_run, boot_spread, draw_hits, gold_set, hit_probabilities, wilson
from calibrate_headline import headline_scope, metric_values

from harness.compare.settings import with_margins
from harness.values.types import GoldSet, QueryResult, Repeat
from harness.verdict.asked import (
    LATENCY_QUERIES,
    compare_asked,
    margins_at_stop,
    plan_for,
    stop_rule,
)
from harness.verdict.comparison import CompareSettings
from harness.verdict.decide import compare, margin_intervals, noninferiority
from harness.verdict.noninferiority import Claim, NonInferiority
from harness.verdict.quality_sequential import decide, query_order

BINARY = CompareSettings(resamples=100)  # the headline is hit@5 and hit@10: exact tests
CHURN = 0.05  # deterministic -margin: the share of misses that turn into hits


@dataclass(frozen=True)
class Row:
    worse: bool  # False: A/A; True: a true change of exactly -margin
    mode: str
    repeats: int
    sequential: bool
    margin: float = 0.05
    queries: int = 300


def worse(mode: str, p: np.ndarray, margin: float, rng: np.random.Generator) -> np.ndarray:
    """The same queries, their hit probability `margin` lower on average over the population
    (the module docstring)."""
    if mode == "redrawn" or mode.startswith("per-boot"):
        return p - margin
    flaky = 0.1 if mode == "flaky 10%" else 0.0  # hit_probabilities' shares
    hit, miss = 0.7 * (1 - flaky), 0.3 * (1 - flaky)
    to_miss = (margin * (1 - flaky) + CHURN * miss) / hit  # net: -margin on the whole population
    q = p.copy()
    u = rng.random(p.size)
    q[(p == 1.0) & (u < to_miss)] = 0.0
    q[(p == 0.0) & (u < CHURN)] = 1.0
    q[(p > 0.0) & (p < 1.0)] -= margin
    return q


def simulate(row: Row, seed: int, *, fast: bool = True) -> tuple[Claim, int]:
    """One compare: the non-inferiority claim and the queries it asked."""
    found, asked = margins(row, seed, fast=fast)
    return found.claim, asked


def margins(row: Row, seed: int, *, fast: bool = True) -> tuple[NonInferiority, int]:
    """One compare's margins and the queries it asked (`fast`: from the per-query values, as
    the module docstring says; else through the scoring, `compare.compare` or
    `asked.compare_asked` on the runs cut where the runner stops:
    tests/verdict/test_calibration_paths.py checks both agree)."""
    settings = with_margins(replace(BINARY, seed=seed), row.margin)
    rng = np.random.default_rng(seed)
    gold = gold_set(row.queries)
    p = hit_probabilities(row.mode, row.queries, rng)
    ranks = rng.integers(1, 11, row.queries)
    boot = boot_spread(row.mode)
    q = worse(row.mode, p, row.margin, rng) if row.worse else p
    base = draw_hits(p, row.repeats, rng, boot=boot)
    cand = draw_hits(q, row.repeats, rng, boot=boot)
    order = query_order([g.id for g in gold.queries], settings.seed)
    where = np.array([int(qid[1:]) for qid in order])
    ordered = [metric_values(x[:, where] == 1, ranks[where]) for x in (base, cand)]
    if not fast:
        return _through_compare(row, settings, gold, (base, cand), ranks, order)
    if not row.sequential:  # as compare._compare: each margin's interval at tost_alpha
        overall = headline_scope(*ordered, settings)
        held = [m for m, _ in settings.non_inferior]
        each = {m: ordered[1][m].mean(axis=0) - ordered[0][m].mean(axis=0) for m in held}
        intervals = margin_intervals(overall, each, settings.tost_alpha)
        found = noninferiority(overall, settings, intervals)
        assert found is not None
        return found, row.queries
    plan = plan_for(gold, settings, first=LATENCY_QUERIES)
    values = {m: (ordered[0][m], ordered[1][m]) for m in plan.metrics}
    deltas = {m: c.mean(axis=0) - b.mean(axis=0) for m, (b, c) in values.items()}
    result = decide(deltas, plan, values)
    asked = result.stopped_at if result.verdict is not None else row.queries
    cut = [{m: v[:, :asked] for m, v in side.items()} for side in ordered]
    # compare_asked's fixed-sample rows: the calls at what the looks left of alpha
    last = replace(settings, alpha=plan.alpha_fixed, equivalence_alpha=settings.tost_alpha)
    overall = headline_scope(*cut, last)
    found = margins_at_stop(
        overall, settings, result, {m: d[:asked] for m, d in deltas.items()}, plan
    )
    assert found is not None
    return found, asked


def _through_compare(
    row: Row,
    settings: CompareSettings,
    gold: GoldSet,
    drawn: tuple[np.ndarray, np.ndarray],
    ranks: np.ndarray,
    order: tuple[str, ...],
) -> tuple[NonInferiority, int]:
    runs = [as_run(gold, drawn[0], ranks), as_run(gold, drawn[1], ranks, "b")]
    if not row.sequential:
        found = compare(gold, runs[0], runs[1], settings).noninferiority
        assert found is not None
        return found, row.queries
    look = stop_rule(gold, settings, order, first=LATENCY_QUERIES)
    block = plan_for(gold, settings, first=LATENCY_QUERIES).block_size
    asked = next(  # the runner: a look after each block, until it says stop
        n
        for n in [*range(block, len(order), block), len(order)]
        if look(n, [[_cut(rep, order[:n]) for rep in run.repeats] for run in runs])
    )
    keep = order[:asked]
    cut = [replace(run, repeats=tuple(replace(rep, results=_cut(rep, keep))
                                      for rep in run.repeats)) for run in runs]  # fmt: skip
    found = compare_asked(gold, cut[0], cut[1], settings, order).noninferiority
    assert found is not None
    return found, asked


def _cut(rep: Repeat, keep: Sequence[str]) -> tuple[QueryResult, ...]:
    wanted = set(keep)
    return tuple(r for r in rep.results if r.query_id in wanted)


def rate(row: Row, sims: range, seed: int) -> tuple[Row, dict[str, int], list[int]]:
    counts: dict[str, int] = {}
    asked = []
    for s in sims:
        claim, n = simulate(row, seed * 1_000_003 + s)
        counts[claim.value] = counts.get(claim.value, 0) + 1
        asked.append(n)
    return row, counts, asked


CHUNK = 50
MODES = (("deterministic", 5), ("flaky 10%", 5), ("redrawn", 1), ("redrawn", 5),
         ("per-boot 0.03", 5))  # fmt: skip
ROWS = tuple(
    Row(bad, mode, r, seq) for seq in (True, False) for bad in (False, True) for mode, r in MODES
) + tuple(  # a tighter margin on a larger gold set
    Row(bad, mode, r, seq, 0.02, 1000)
    for seq in (True, False)
    for bad in (False, True)
    for mode, r in (("deterministic", 5), ("redrawn", 5))
)


def main(sims: int, seed: int, jobs: int) -> int:
    print(
        "compare --non-inferior MARGIN on hit@5 and hit@10: how often 'not worse' is said, and "
        "how often the rule answered (not worse, or worse than the margin)"
    )
    print(
        f"{'rule':<10} {'queries':>7} {'margin':>6} {'true change':<11} {'determinism':<14} "
        f"{'R':>2} {'sims':>5} {'not worse':>9}  {'95% CI':<15} {'answered':>8}  "
        f"{'asked (median)':>14}"
    )
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        tasks = [
            [pool.submit(rate, row, range(a, min(a + CHUNK, sims)), seed)
             for a in range(0, sims, CHUNK)]
            for row in ROWS
        ]  # fmt: skip
        for row, parts in zip(ROWS, tasks, strict=True):
            counts: dict[str, int] = {}
            asked: list[int] = []
            for part in parts:
                _, found, n = part.result()
                asked += n
                for key, value in found.items():
                    counts[key] = counts.get(key, 0) + value
            said = counts.get(Claim.NOT_WORSE.value, 0)
            answered = said + counts.get(Claim.WORSE.value, 0)
            lo, hi = wilson(said, sims)
            change = f"-{row.margin:g}" if row.worse else "0 (A/A)"
            rule = "sequential" if row.sequential else "fixed"
            print(
                f"{rule:<10} {row.queries:>7} {row.margin:>6g} {change:<11} {row.mode:<14} "
                f"{row.repeats:>2} {sims:>5} "
                f"{said / sims:>9.1%}  [{lo:.1%}, {hi:.1%}]{'':<2} {answered / sims:>8.1%}  "
                f"{np.median(asked) / row.queries:>14.0%}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    sys.exit(main(args.sims, args.seed, args.jobs))
