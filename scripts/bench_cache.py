#!/usr/bin/env python
"""A cached re-compare against a cold one, whole process, this tree against another.

    python scripts/bench_cache.py [--before CHECKOUT | --tree DIR] [--queries 10000] [--runs 3]
                                  [--data DIR]

Issue 28's row: a re-compare of two stored runs of 10k queries read back from the comparison
cache (`harness.results.cache`) at least 10x faster than computing it, for the whole process.
The data is `scripts/realistic_data.py`'s, written by each side's own `save_run`
(`bench_scale.write_data`: 3 repeats a side, 10 slices, 20 ids an answer).

Each measurement is a fresh interpreter doing what `harness compare --reuse-runs` does once
both runs are found: load the gold set from its file, load both run records, `cached_compare`
(cold: on an empty cache, every statistic computed and the entry stored; cached: the entry
read back), render the text report and save the comparison directory (comparison.json,
report.md, report.html, both records). Timed from outside, start to exit (os.wait4: wall, and
CPU user + system). Cold and cached alternate with the sides (before cold, before cached, after
cold, after cached, ...); the ratio is cold / cached of each pair, its median printed.

Issue 42's row: the cached re-compare at 10k in at most 0.8 s, whole process. The benchmark has
its own HARNESS_CACHE_DIR; "cold" empties the gold cache there too (`harness.gold.memo`), so a
cold run parses the gold set and a cached one reads it back. `--tree DIR` runs the harness
package under DIR (a worktree of another commit) by this interpreter, DIR first on PYTHONPATH,
as "before" (`bench_scale.side_env`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_scale
from bench_scale import describe, side_env, side_pythons, spread, write_data

RECOMPARE = """
import sys
from pathlib import Path
folder = Path(sys.argv[1])
from harness.gold.load import load_gold
from harness.report.page import render
import inspect
from harness.results.cache import cached_compare
try:
    from harness.report.saved import save_comparison
except ImportError:  # a tree (--tree OLD) from before results stopped rendering
    from harness.results.comparisons import save_comparison
from harness.results.records import load_run
try:
    from harness.verdict.decide import compare
except ImportError:  # a tree (--tree OLD) from before the module was named for what it does
    from harness.verdict.compare import compare
from harness.verdict.comparison import CompareSettings
gold = load_gold(folder / "gold.jsonl")
base, cand = (load_run(p) for p in sorted((folder / "runs").glob("*.json")))
settings = CompareSettings()
if "compute" in inspect.signature(cached_compare).parameters:  # handed the verdict's compare
    comparison, hit = cached_compare(
        folder, gold, base, cand, settings, lambda: compare(gold, base, cand, settings)
    )
else:
    comparison, hit = cached_compare(folder, gold, base, cand, settings)
render(comparison, "text")
save_comparison(folder / "saved", comparison, (base, cand))
sys.exit(0 if hit == (sys.argv[2] == "cached") else 3)
"""


def timed(python: str, folder: Path, kind: str, label: str = "") -> tuple[float, float]:
    """Wall and CPU (user + system) of one re-compare process; `kind` "cold" empties the
    comparison cache and the gold cache first."""
    if kind == "cold":
        shutil.rmtree(folder / "cache", ignore_errors=True)
        shutil.rmtree(Path(os.environ["HARNESS_CACHE_DIR"]) / "gold", ignore_errors=True)
    t0 = time.perf_counter()
    child = subprocess.Popen([python, "-c", RECOMPARE, str(folder), kind], cwd=folder,
                             env=side_env(label))
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{python}: the {kind} re-compare failed (status {status})")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--before", type=Path, help="a checkout with its own .venv")
    parser.add_argument("--tree", type=Path, help="a checkout run by this interpreter")
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--data", type=Path, help="keep the generated data here")
    args = parser.parse_args()
    pythons = side_pythons(args.before, args.tree)
    if args.tree is not None:
        bench_scale.TREES["before"] = args.tree.resolve()
    for label, python in pythons.items():
        print(describe(label, python))
    found: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        root = args.data or Path(tmp)
        os.environ["HARNESS_CACHE_DIR"] = str(Path(tmp) / "harness-cache")
        folders = {
            label: write_data(python, args.queries, root / f"{label}-{args.queries}", label)
            for label, python in pythons.items()
        }
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the start")
        loads = []
        for _ in range(args.runs):
            for label, python in pythons.items():
                for kind in ("cold", "cached"):
                    found.setdefault((label, kind), []).append(
                        timed(python, folders[label], kind, label)
                    )
                    loads.append(os.getloadavg()[0])
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    print(
        f"\na re-compare of two stored runs of {args.queries:,} queries, whole process (start "
        f"to exit); median [range] of {args.runs} interleaved runs"
    )
    labels = list(pythons)
    print(f"  {'':<30}" + "".join(f"{label:>26}" for label in labels) + f"{'target':>12}")
    for kind in ("cold", "cached"):
        for what, i, unit in (("wall", 0, " s"), ("CPU", 1, " s")):
            cells = "".join(
                f"{spread([t[i] for t in found[(label, kind)]], '.2f') + unit:>26}"
                for label in labels
            )
            print(f"  {kind + ' ' + what:<30}{cells}")
    for what, i in (("wall", 0), ("CPU", 1)):
        ratios = [
            [c[i] / w[i] for c, w in zip(found[(label, "cold")], found[(label, "cached")],
                                         strict=True)]
            for label in labels
        ]  # fmt: skip
        cells = "".join(f"{spread(r, '.1f') + 'x':>26}" for r in ratios)
        print(f"  {'cold / cached, ' + what:<30}{cells}{'>= 10x':>12}")
    for label in labels:
        walls = [t[0] for t in found[(label, "cached")]]
        print(f"  {label}: cached re-compares at most 0.8 s (issue 42): "
              f"{sum(w <= 0.8 for w in walls)} of {len(walls)} "
              f"({', '.join(f'{w:.2f}' for w in walls)} s)")
    print(f"  load average during the runs: {min(loads):.1f}-{max(loads):.1f}")


if __name__ == "__main__":
    main()
