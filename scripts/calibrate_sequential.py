#!/usr/bin/env python
"""Calibrate `compare --sequential`: false calls under continuous monitoring, power, and the share
of the gold set asked, by simulation through the project's own decision code.

    python scripts/calibrate.py --only sequential [--sims 2000] [--seed 0] [--jobs 2]

Each simulation draws a gold set and both sides' answers as `scripts/calibrate.py` does (its
determinism modes: deterministic, redrawn at R = 1, 3, 5), orders the queries as the compare does
(`quality_sequential.query_order` from the seed), asks them block by block as the runner does
(`asked.stop_rule`: after each block, stop when the rule decided; else the next block, up to the
whole gold set: `decide` over the whole order finds the same block end) and takes the
headline verdict `asked.compare_asked` gives: the rule's when it decided (taken as is, the runs
being valid), else that of both runs cut to the queries asked, the fixed-sample verdict at the
alpha the looks left.  Per-boot rows (`scripts/calibrate.py`'s "per-boot 0.01" and "per-boot
0.03": every boot shifts every query's hit probability by a shared draw) check that the boots,
which each look estimates from the per-boot means of the queries asked so far, are inside the
rule.  Rows: A/A (any improved or regressed is a false call), +10 pp and +20 pp
hit@10 (the rate of "improved" is the power), and the share of the gold set asked (median and
largest; never more than the fixed design's 100%).  "continuous" lets mrr@10 and ndcg@10 decide
too (`--gate-on`), their fixed-sample fallback through resampled tests (2,000 resamples).
Rates carry Wilson 95% intervals.
"""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate import as_run, boot_spread, draw_hits, gold_set, hit_probabilities, wilson
from calibrate_headline import headline, metric_values

from harness.values.types import RefRun, Verdict
from harness.verdict.asked import LATENCY_QUERIES, compare_asked, headline_values, plan_for
from harness.verdict.comparison import CompareSettings
from harness.verdict.quality_sequential import decide, default_block, query_order

BINARY = CompareSettings(resamples=100)  # the headline is hit@5 and hit@10: exact tests
CONTINUOUS = CompareSettings(resamples=2000, gate_on=("mrr@10", "ndcg@10"))


@dataclass(frozen=True)
class Row:
    effect: float  # hit-rate change of the candidate: 0 (A/A), 0.10, 0.20
    repeats: int
    mode: str  # "deterministic" | "redrawn" (calibrate.py's modes)
    continuous: bool = False
    queries: int = 300

    @property
    def label(self) -> str:
        kind = "continuous" if self.continuous else self.mode
        return f"{'A/A' if self.effect == 0 else f'+{self.effect * 100:.0f} pp'}", kind


def changed(mode: str, p: np.ndarray, effect: float, rng: np.random.Generator) -> np.ndarray:
    """The same queries with a hit probability `effect` higher on average."""
    if effect == 0:
        return p
    if mode == "redrawn" or mode.startswith("per-boot"):
        return np.minimum(p + effect, 1.0)
    q = p.copy()
    misses = np.flatnonzero(p == 0)
    q[rng.choice(misses, size=min(len(misses), round(effect * len(p))), replace=False)] = 1.0
    return q


def _cut(run_: RefRun, asked: set[str]) -> RefRun:
    reps = tuple(
        replace(rep, results=tuple(r for r in rep.results if r.query_id in asked))
        for rep in run_.repeats
    )
    return replace(run_, repeats=reps)


def simulate(row: Row, seed: int, *, fast: bool = True) -> tuple[Verdict, int]:
    """One compare: its headline verdict and the queries it asked (`fast`: each side's values
    straight from the simulated answers, the fixed-sample fallback by
    `calibrate_headline.headline`; else through the scoring, `headline_values` and
    `compare_asked`, as the CLI does: tests/verdict/test_calibration_paths.py checks both agree)."""
    return _simulate(row, seed, fast=fast)[:2]


def whole(row: Row, seed: int) -> Verdict:
    """The fixed-sample verdict of the same simulated compare over the whole gold set at the
    whole alpha: what the rest of the queries would have shown (the "hidden" count)."""
    return _simulate(row, seed, fast=True, whole=True)[2]


def _simulate(
    row: Row, seed: int, *, fast: bool = True, whole: bool = False
) -> tuple[Verdict, int, Verdict]:
    settings = replace(CONTINUOUS if row.continuous else BINARY, seed=seed)
    rng = np.random.default_rng(seed)
    gold = gold_set(row.queries)
    p = hit_probabilities(row.mode, row.queries, rng)
    ranks = rng.integers(1, 11, row.queries)
    boot = boot_spread(row.mode)
    base = draw_hits(p, row.repeats, rng, boot=boot)
    cand = draw_hits(changed(row.mode, p, row.effect, rng), row.repeats, rng, boot=boot)
    order = query_order([q.id for q in gold.queries], settings.seed)
    plan = plan_for(gold, settings, first=LATENCY_QUERIES)
    # The runner's look after each block (`asked.sequential_design`) is `decide` over the values
    # so far, and `decide` stops at the first deciding block end: one pass over the whole order
    # finds it.
    if fast:
        where = np.array([int(qid[1:]) for qid in order])
        ordered = [metric_values(x[:, where] == 1, ranks[where]) for x in (base, cand)]
        metrics = plan.metrics
        values = {m: (ordered[0][m], ordered[1][m]) for m in metrics}
    else:
        runs = [as_run(gold, base, ranks), as_run(gold, cand, ranks, "b")]
        values = headline_values(gold, [runs[0].repeats, runs[1].repeats], order, settings)
    if whole and fast:  # every query, the whole alpha, no look
        verdict = headline(ordered[0], ordered[1], settings)[0]
        return verdict, len(order), verdict
    deltas = {m: c.mean(axis=0) - b.mean(axis=0) for m, (b, c) in values.items()}
    result = decide(deltas, plan, values)
    asked = result.stopped_at if result.verdict is not None else len(order)
    if result.verdict is not None:  # what compare_asked gives a valid run the rule decided
        return result.verdict, asked, result.verdict
    if fast:  # undecided: the whole gold set asked; calls at alpha - alpha_s, equivalence at alpha
        fixed = replace(settings, alpha=plan.alpha_fixed, equivalence_alpha=settings.alpha)
        verdict = headline(ordered[0], ordered[1], fixed)[0]
        return verdict, asked, verdict
    keep = set(order[:asked])
    comparison = compare_asked(gold, _cut(runs[0], keep), _cut(runs[1], keep), settings, order)
    return comparison.verdict_quality, asked, comparison.verdict_quality


def rate(row: Row, sims: range, seed: int) -> tuple[Row, dict[str, int], list[int]]:
    """The verdicts of simulations `sims` of one row, counted, and "hidden": the compares that
    said "no measurable difference" where the whole gold set's test, at the whole alpha, calls
    the change (what a stop for "no change" would hide)."""
    counts: dict[str, int] = {}
    asked = []
    for s in sims:
        verdict, n = simulate(row, seed * 1_000_003 + s)
        counts[verdict.value] = counts.get(verdict.value, 0) + 1
        if verdict is Verdict.NO_DIFFERENCE and row.effect > 0:
            called = whole(row, seed * 1_000_003 + s) in (Verdict.IMPROVED, Verdict.REGRESSED)
            counts["hidden"] = counts.get("hidden", 0) + called
        asked.append(n)
    return row, counts, asked


CHUNK = 50  # simulations per task: a row's tasks spread over the workers, rows end in order


ROWS = (
    *(Row(0.0, r, "redrawn") for r in (1, 3, 5)),
    Row(0.0, 1, "redrawn", continuous=True),
    *(Row(0.0, r, "flaky 10%") for r in (1, 5)),
    *(Row(0.0, r, "deterministic") for r in (1, 5)),
    *(Row(0.0, r, mode) for mode in ("per-boot 0.01", "per-boot 0.03") for r in (3, 5)),
    Row(0.10, 1, "deterministic"),
    *(Row(0.10, r, "redrawn") for r in (1, 3, 5)),
    Row(0.10, 1, "redrawn", continuous=True),
    *(Row(0.10, r, "per-boot 0.03") for r in (3, 5)),
    Row(0.20, 1, "deterministic"),
    *(Row(0.20, r, "redrawn") for r in (1, 3, 5)),
    # A true change of exactly the band (0.05): "no measurable difference" at most alpha.
    Row(0.05, 1, "deterministic"),
    Row(0.05, 5, "flaky 10%"),
    *(Row(0.05, r, "redrawn") for r in (1, 5)),
    Row(0.05, 5, "per-boot 0.03"),
    # Inside the band (0.03): a stop for "no change" could hide it from the rest of the gold set.
    Row(0.03, 1, "deterministic"),
    Row(0.03, 5, "redrawn"),
)


def oracle_asked(row: Row, sims: int, seed: int, *, two_sided: bool = False) -> float:
    """The median share of the gold set a test told the effect in advance would ask: Wald's
    sequential probability ratio test on hit@10's discordant pairs, the candidate winning each
    with the probability the simulation gives it (known here, unknown to the rule), stopping at
    the rule's looks at the rule's threshold (Holm over the m headline metrics at alpha_s:
    a likelihood ratio of m / alpha_s). What the rule pays for not knowing the effect is the
    gap between this and its own median. A redrawn row: each query's p uniform in [0.2, 0.8].
    `two_sided`: told the effect's size but not its direction, the test bets half its wealth on
    each (the average of the two likelihood ratios), as any test of "no change" must."""
    if row.mode != "redrawn" or row.repeats != 1:
        raise ValueError("the oracle is worked out for redrawn rows at R = 1")
    rng = np.random.default_rng(seed)
    plan = plan_for(gold_set(row.queries), BINARY, first=LATENCY_QUERIES)
    threshold = np.log(len(plan.metrics) / plan.alpha_looks)
    grid = np.linspace(0.2, 0.8, 100_001)  # hit_probabilities' redrawn p, as an integral
    up = changed(row.mode, grid, row.effect, rng)
    win, lose = float(np.mean(up * (1 - grid))), float(np.mean(grid * (1 - up)))
    q = win / (win + lose)
    looks = np.array(plan.looks(row.queries))
    asked = []
    for _ in range(sims):
        p = hit_probabilities(row.mode, row.queries, rng)
        base, cand = (draw_hits(x, 1, rng)[0] for x in (p, changed(row.mode, p, row.effect, rng)))
        wins, losses = (np.cumsum(x)[looks - 1] for x in (cand > base, cand < base))
        log_lr = wins * np.log(2 * q) + losses * np.log(2 * (1 - q))
        if two_sided:  # the mirror bet: the same ratio with wins and losses swapped
            mirror = wins * np.log(2 * (1 - q)) + losses * np.log(2 * q)
            log_lr = np.logaddexp(log_lr, mirror) - np.log(2)
        crossed = log_lr >= threshold
        asked.append(looks[crossed.argmax()] if crossed.any() else row.queries)
    return float(np.median(asked)) / row.queries


def best_fixed_power(row: Row, alpha: float = 0.05) -> float:
    """The power of McNemar's exact two-sided test on hit@10 alone at `alpha` over the whole
    gold set: no looks, no second metric, no alpha left for anything else; exact, summing over
    the number of discordant pairs. A redrawn row at R = 1 (as `oracle_asked`)."""
    from scipy.stats import binom

    if row.mode != "redrawn" or row.repeats != 1:
        raise ValueError("the bound is worked out for redrawn rows at R = 1")
    grid = np.linspace(0.2, 0.8, 100_001)
    up = changed(row.mode, grid, row.effect, np.random.default_rng(0))
    win, lose = float(np.mean(up * (1 - grid))), float(np.mean(grid * (1 - up)))
    power = 0.0
    for d in range(1, row.queries + 1):
        c = np.arange(d + 1)
        p_two = np.minimum(1.0, 2 * np.minimum(binom.cdf(c, d, 0.5), binom.sf(c - 1, d, 0.5)))
        reject = p_two <= alpha
        power += binom.pmf(d, row.queries, win + lose) * float(
            binom.pmf(c[reject], d, win / (win + lose)).sum()
        )
    return power


def main(sims: int, seed: int, jobs: int) -> int:
    print(
        f"sequential quality rule, {ROWS[0].queries} queries, blocks of "
        f"{default_block(ROWS[0].queries)}, alpha 0.05 (half on the looks), band "
        f"±{BINARY.min_effect:g}; 'rate': improved or regressed for an A/A, improved for +10 and "
        "+20 pp, 'no measurable difference' at and inside the band (+5, +3 pp)"
    )
    print(
        f"{'scenario':<8} {'repeats':>7} {'determinism':<14} {'sims':>5} {'rate':>7}  "
        f"{'95% CI':<15} {'no change':>9}  {'95% CI':<15} {'asked (median)':>14} "
        f"{'asked (max)':>11}  verdicts"
    )
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        tasks = [
            [
                pool.submit(rate, row, range(a, min(a + CHUNK, sims)), seed)
                for a in range(0, sims, CHUNK)
            ]
            for row in ROWS
        ]
        for row, parts in zip(ROWS, tasks, strict=True):
            counts: dict[str, int] = {}
            asked: list[int] = []
            for part in parts:
                _, some, more = part.result()
                for key, value in some.items():
                    counts[key] = counts.get(key, 0) + value
                asked += more
            name, kind = row.label
            hidden = counts.pop("hidden", 0)
            same = "no measurable difference"
            wanted = {0.0: ("improved", "regressed"), 0.05: (same,), 0.03: (same,)}.get(
                row.effect, ("improved",)
            )
            hits = sum(counts.get(w, 0) for w in wanted)
            lo, hi = wilson(hits, sims)
            equal = counts.get(same, 0)
            elo, ehi = wilson(equal, sims)
            spread = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            if row.effect > 0:
                spread += f"; hidden {hidden} (no change said, the whole gold set calls it)"
            median = float(np.median(asked)) / row.queries
            most = max(asked) / row.queries
            print(
                f"{name:<8} {row.repeats:>7} {kind:<14} {sims:>5} {hits / sims:>7.1%}  "
                f"{f'[{lo:.1%}, {hi:.1%}]':<15} {equal / sims:>9.1%}  "
                f"{f'[{elo:.1%}, {ehi:.1%}]':<15} {median:>14.0%} {most:>11.0%}  {spread}",
                flush=True,
            )
    oracle = Row(0.20, 1, "redrawn")
    print(
        f"a test told the effect in advance (Wald's SPRT on hit@10's discordant pairs, the "
        f"rule's looks and threshold), +20 pp redrawn at R = 1: a median of "
        f"{oracle_asked(oracle, sims, seed):.0%} of the gold set asked; told its size but not "
        f"its direction: {oracle_asked(oracle, sims, seed, two_sided=True):.0%}"
    )
    print(
        f"McNemar's exact test on hit@10 alone, the whole gold set, alpha 0.05 (no looks, no "
        f"second metric), +10 pp redrawn at R = 1: power "
        f"{best_fixed_power(Row(0.10, 1, 'redrawn')):.1%}"
    )
    return 0
