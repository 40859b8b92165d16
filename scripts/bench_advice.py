#!/usr/bin/env python
"""The time each piece of advice a compare prints takes per call: today's computation beside the
one before it, on the same inputs, in one run.

    python scripts/bench_advice.py [--quick]

Advice is what a report says would settle an inconclusive call: the latency budget ("a budget
of about 16 rounds would likely decide": `latency_rule.budget_for`, for the mean's rule and each
tail row's), the queries a quality test would need (`power.power`'s queries_needed,
`equivalence.equivalence`'s, exact for hit@k), and the rounds of the one-in-flight latency rule
(`latency.latency_test`).  Target (issue 42): each computed in at most 50 ms a call.

`budget_for` reads the last look's boundary of each budget it tries from a table shipped with
the package (`harness.verdict.latency_bounds`); before, it built a whole `plan` (every look's
boundary, by numerical integration) for each: `latency_rule.budget_for_by_plans`, run here as
the "before" column with `plan`'s cache emptied before each call, as a fresh compare has it.
Both columns must give the same advice (the script stops otherwise).  The other advice did not
change and has one column.  Each figure is CPU time (time.process_time) per call, over a grid
of realistic inputs (first = compare.repeats 3, 5, 10; the mean's and a tail row's level;
tolerance 5-20%; ratios inside and beyond the band; spreads between rounds of 2-30%), median
and max, with each function's caches emptied before every call; the table's first call, which
decodes it, is printed apart (and is inside the max).  Exits 1 when an "after" max is above
50 ms.  `--quick` runs a few inputs (first 60, where the plans are short) for a smoke test.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from harness.verdict import equivalence, latency, latency_bounds, latency_rule, power
from harness.verdict.latency_tail import TAIL_ALPHA

TARGET_MS = 50.0


def cpu_ms(call: Callable[[], Any], clear: Sequence[Callable[[], None]] = ()) -> tuple[float, Any]:
    for empty in clear:
        empty()
    start = time.process_time()
    value = call()
    return (time.process_time() - start) * 1e3, value


def budget_inputs(quick: bool) -> list[dict[str, Any]]:
    """first, tolerance, spread, the ratio as a share of the band's edge (inside: 0.33, beyond:
    1.5) and the level (the mean's, a tail row's)."""
    grid: list[tuple[Any, ...]] = [(60,), (0.10,), (0.1,), (0.33, 1.5), (latency_rule.ALPHA,)]
    if not quick:
        alphas = (latency_rule.ALPHA, TAIL_ALPHA)
        grid = [(3, 5, 10), (0.05, 0.10), (0.05, 0.3), (0.33, 1.5), alphas]
    return [
        {
            "log_ratio": share * math.log1p(tolerance),
            "spread": spread,
            "first": first,
            "tolerance": tolerance,
            "alpha": alpha,
        }
        for first, tolerance, spread, share, alpha in itertools.product(*grid)
    ]


def bench_budget(quick: bool) -> tuple[list[float], list[float], float, int]:
    """(before ms per call, after ms per call, the after path's first call ms, inputs whose
    advice differs)."""
    before, after, differ = [], [], 0
    latency_bounds._values.cache_clear()
    first_call = math.nan
    for i, kw in enumerate(budget_inputs(quick)):
        new_ms, new = cpu_ms(
            lambda kw=kw: latency_rule.budget_for(**kw),
            (latency_rule.computed_boundary.cache_clear,),
        )
        if i == 0:
            first_call = new_ms
        old_ms, old = cpu_ms(
            lambda kw=kw: latency_rule.budget_for_by_plans(**kw), (latency_rule.plan.cache_clear,)
        )
        before.append(old_ms)
        after.append(new_ms)
        differ += old != new
    return before, after, first_call, differ


def binary(n: int, b: int, c: int) -> Any:
    d = np.zeros(n)
    d[:b], d[b : b + c] = -1.0, 1.0
    return d


def bench_unchanged(quick: bool) -> dict[str, list[float]]:
    """ms per call of the advice that did not change: power's, equivalence's, latency_test's."""
    sizes = (200,) if quick else (50, 200, 500, 2000, 20000)
    shares = ((0.05, 0.05),) if quick else ((0.0, 0.0), (0.02, 0.05), (0.05, 0.05), (0.1, 0.2))
    caches = (power.detectable_exact.cache_clear, power._exact_needed.cache_clear)
    out: dict[str, list[float]] = {"power.power": [], "equivalence": [], "latency_test": []}
    rng = np.random.default_rng(0)

    def powered(metric: str, d: Any, effect: float, noise: float = 0.0) -> float:
        call = lambda: power.power(metric, d, alpha=0.05, effect=effect, noise=noise, repeats=3)  # noqa: E731
        return cpu_ms(call, caches)[0]

    def equivalent(d: Any, band: float) -> float:
        return cpu_ms(lambda: equivalence.equivalence(d, alpha=0.05, band=band))[0]

    for n, (sb, sc) in itertools.product(sizes, shares):
        d = binary(n, int(sb * n), int(sc * n))
        for effect in (0.02, 0.05):
            out["power.power"].append(powered("hit@10", d, effect))
            out["equivalence"].append(equivalent(d, effect))
        graded = np.clip(d * rng.uniform(0.1, 1.0, n), -1, 1)
        out["power.power"].append(powered("ndcg@10", graded, 0.02, 0.1 * float(graded @ graded)))
        out["equivalence"].append(equivalent(graded, 0.02))
    for rounds in (3, 5) if quick else (3, 5, 10):
        for spread in (0.02, 0.3) if quick else (0.0, 0.02, 0.1, 0.3, 2.0):
            logs = rng.normal(0.05, spread, rounds) if spread else np.full(rounds, 0.05)
            ratios = np.exp(logs)
            call = lambda: latency.latency_test(ratios, tolerance=0.1)  # noqa: B023, E731
            out["latency_test"].append(cpu_ms(call)[0])
    return out


def line(name: str, before: Sequence[float] | None, after: Sequence[float]) -> str:
    def cell(v: Sequence[float] | None) -> str:
        if not v:
            return f"{'(unchanged)':>24}"
        return f"{statistics.median(v):10.2f} {max(v):12.2f} ms"

    ok = "met" if max(after) <= TARGET_MS else "MISSED"
    return f"  {name:<30} {cell(before)} {cell(after)}   <= {TARGET_MS:g} ms: {ok}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a few inputs: a smoke test")
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    before, after, first_call, differ = bench_budget(args.quick)
    others = bench_unchanged(args.quick)
    print(f"  {'advice (CPU per call)':<30} {'before: median':>14} {'max':>9}    "
          f"{'after: median':>14} {'max':>9}")  # fmt: skip
    print(line(f"budget_for ({len(after)} inputs)", before, after))
    for name, times in others.items():
        print(line(f"{name} ({len(times)} inputs)", None, times))
    speedup = statistics.median(before) / statistics.median(after)
    print(f"budget_for's first call (decodes a table): {first_call:.2f} ms; median {speedup:,.0f}x")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    if differ:
        print(f"budget_for: {differ} input(s) advised differently from the plans: a bug")
        return 2
    worst = max([*after, *(v for times in others.values() for v in times)])
    return 0 if worst <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
