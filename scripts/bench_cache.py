#!/usr/bin/env python
"""A cached re-compare against a cold one: the analysis of two stored runs, computed, then read
back from the comparison cache (`harness.results.cache`).

    python scripts/bench_cache.py [--queries 10000] [--repeats 5] [--runs 2]

Both runs are written as run records and loaded back, as a re-compare finds them. Cold:
`cached_compare` on an empty cache (every statistic computed, the entry stored). Warm: the same
call again (both record files hashed, the entry read and parsed; no statistics). Interleaved
`--runs` times, each cold run on a fresh cache; the median of warm / cold. Target (issue 17): a
re-compare with both runs reused at least 10x faster than cold at 10k queries.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_scale import gold_set, side

from harness.results.cache import CACHE_DIR, cached_compare
from harness.results.records import load_run, save_run
from harness.verdict.comparison import CompareSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    rng = np.random.default_rng(0)
    gold = gold_set(args.queries, 8, rng)
    settings = CompareSettings()
    cold: list[float] = []
    warm: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        results = Path(tmp)
        base = load_run(save_run(results, side(gold, args.repeats, 0.0, "a", rng)))
        cand = load_run(save_run(results, side(gold, args.repeats, 0.05, "b", rng)))
        for _ in range(args.runs):
            shutil.rmtree(results / CACHE_DIR, ignore_errors=True)
            t0 = time.perf_counter()
            first, hit = cached_compare(results, gold, base, cand, settings)
            cold.append(time.perf_counter() - t0)
            assert not hit
            t0 = time.perf_counter()
            again, hit = cached_compare(results, gold, base, cand, settings)
            warm.append(time.perf_counter() - t0)
            assert hit and again == first
    print(
        f"{args.queries:,} queries, {args.repeats} repeats a side, median of {args.runs} "
        "interleaved runs"
    )
    print(f"  cold (statistics computed)  {statistics.median(cold):8.2f} s")
    print(f"  warm (read from the cache)  {statistics.median(warm):8.2f} s")
    ratio = statistics.median(c / w for c, w in zip(cold, warm, strict=True))
    print(f"  cached re-compare: {ratio:.0f}x faster than cold (target >= 10x)")


if __name__ == "__main__":
    main()
