#!/usr/bin/env python
"""Calibrate the latency verdict with its tail rows (harness.verdict.latency_tail): false calls
under A/A, power at tail-only slowdowns, and how often it answers, by simulation through the
project's own decision code.

    python scripts/calibrate_tail.py [--sims 1000] [--seed 0] [--jobs 2] [--queries 300 1000]
                                     [--first 3] [--budget 10]

Each simulated gold set has `queries` queries with a typical latency drawn once (lognormal around
1 ms, sd 0.5 on the log scale: 2 ms lookups beside 0.4 ms ones).  Every round boots both sides
afresh: each side's boot shifts all its answers by a shared factor (sd 0.03 on the log scale),
and every answer has its own noise (sd 0.2) and, 2% of the time, a burst (a GC pause or a load
spike: 2 to 10 times slower), drawn for each side independently.  The orders within a pair
alternate, as the runner balances them.  Rounds run as the runner runs them: looks from round
`first` on, stopping when the mean's rule (`latency_rule.look`) decides or at the `budget`; then
the compare's verdict as `harness.verdict.details.latency` builds it: `latency_rule.decide`,
`latency_tail.tail_rows` and `latency_tail.headline`.

Scenarios: A/A (any "slower" or "faster" of the latency verdict is a false call), "+25% slowest
5%" (the queries whose typical latency is in the slowest 5% take 1.25 times as long on the
candidate, nothing else changes: a tail-only change the trimmed mean does not see) and
"2x slowest 5%" (the same, twice as long).  Printed per row: the rate asked for with a Wilson 95%
interval, how often the verdict answered (anything but inconclusive), how often the mean alone
called it, and how often p95 and p99 could tell at all.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from harness.values.types import Verdict
from harness.verdict.latency_rule import decide, look, plan, round_estimate
from harness.verdict.latency_tail import headline, tail_rows

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibrate import wilson

SCENARIOS = {"A/A": 1.0, "+25% slowest 5%": 1.25, "2x slowest 5%": 2.0}
BOOT_SD, NOISE_SD, QUERY_SD = 0.03, 0.2, 0.5
BURST_SHARE = 0.02
TOLERANCE = 0.10
CALLS = (Verdict.REGRESSED, Verdict.IMPROVED)


def one(seed: int, queries: int, slow: float, first: int, budget: int) -> dict[str, object]:
    """One simulated compare: the latency verdict, the mean's, and the tail rows'."""
    rng = np.random.default_rng(seed)
    typical = np.exp(rng.normal(0.0, QUERY_SD, queries))  # ms
    tail = typical >= np.quantile(typical, 0.95)
    factor = np.where(tail, slow, 1.0)
    design = plan(first, budget)
    rounds, estimates = [], []
    for k in range(1, budget + 1):
        sides = []
        for scale in (np.ones(queries), factor):
            boot = rng.normal(0.0, BOOT_SD)
            noise = rng.normal(0.0, NOISE_SD, queries)
            burst = np.where(rng.random(queries) < BURST_SHARE, rng.uniform(2, 10, queries), 1.0)
            sides.append(typical * scale * np.exp(boot + noise) * burst)
        order = (np.arange(queries) + k) % 2 == 0
        rounds.append((sides[0], sides[1]))
        estimates.append(round_estimate(sides[0], sides[1], base_first=order))
        if k >= design.looks[0] and look(estimates, design, tolerance=TOLERANCE).verdict:
            break
    test = decide(estimates, design, tolerance=TOLERANCE)
    rows = tail_rows(rounds, first=first, budget=budget, tolerance=TOLERANCE)
    verdict, _ = headline(test, rows)
    return {
        "verdict": verdict,
        "mean": test.verdict,
        "rows": {r.name: (r.verdict, r.ratio is not None) for r in rows},
        "rounds": len(rounds),
    }


def chunk(
    seeds: range, queries: int, slow: float, first: int, budget: int
) -> list[dict[str, object]]:
    return [one(s, queries, slow, first, budget) for s in seeds]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=1000, help="simulations per row")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--queries", type=int, nargs="+", default=[300, 1000])
    parser.add_argument("--first", type=int, default=3, help="the first look (compare.repeats)")
    parser.add_argument("--budget", type=int, default=10, help="the latency budget, rounds")
    args = parser.parse_args(argv)
    print(
        f"tolerance ±{TOLERANCE:.0%}; looks from round {args.first}, budget {args.budget}; "
        f"{args.sims} simulations a row",
        flush=True,
    )
    print(
        f"{'scenario':<17} {'queries':>7}  {'rate':>6}  95% CI            answered  mean alone  "
        "p95 tells  p99 tells  rounds  verdicts"
    )
    step = max(1, args.sims // (4 * args.jobs))
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        todo = [(name, slow, n) for n in args.queries for name, slow in SCENARIOS.items()]
        futures = [
            [
                pool.submit(
                    chunk,
                    range(args.seed + a, args.seed + min(a + step, args.sims)),
                    n,
                    slow,
                    args.first,
                    args.budget,
                )
                for a in range(0, args.sims, step)
            ]
            for _, slow, n in todo
        ]
        for (name, _, n), parts in zip(todo, futures, strict=True):
            sims = [r for part in parts for r in part.result()]
            verdicts = Counter(s["verdict"] for s in sims)
            if name == "A/A":
                hits, what = sum(verdicts[v] for v in CALLS), "called (false)"
                alone = sum(s["mean"] in CALLS for s in sims)
            else:
                hits, what = verdicts[Verdict.REGRESSED], "regressed"
                alone = sum(s["mean"] is Verdict.REGRESSED for s in sims)
            total = len(sims)
            lo, hi = wilson(hits, total)
            answered = total - verdicts[Verdict.INCONCLUSIVE]
            a_lo, a_hi = wilson(answered, total)
            tells = [
                sum(bool(s["rows"][p][1]) for s in sims) / total  # type: ignore[index]
                for p in ("p95", "p99")
            ]
            mean_rounds = float(np.mean([s["rounds"] for s in sims]))
            spread = ", ".join(f"{v.value} {c}" for v, c in sorted(verdicts.items()))
            for p in ("p50", "p95", "p99"):
                row = Counter(s["rows"][p][0].value for s in sims)  # type: ignore[index]
                spread += f"; {p}: " + ", ".join(f"{v} {c}" for v, c in sorted(row.items()))
            print(
                f"{name:<17} {n:>7}  {hits / total:>6.1%}  [{lo:5.1%}, {hi:5.1%}]  "
                f"{answered / total:>6.1%} [{a_lo:.0%}-{a_hi:.0%}]  {alone / total:>6.1%}  "
                f"{tells[0]:>9.0%}  {tells[1]:>9.0%}  {mean_rounds:>6.1f}  {what}; {spread}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
