#!/usr/bin/env python
"""The CPU of the sequential quality rule's looks in one compare: this tree against another,
side by side, in fresh interpreters.

    python scripts/bench_looks.py [--queries 300,3000] [--runs 3] [--tree OLD_CHECKOUT]

A sequential compare looks after every block (`harness.verdict.asked.stop_rule`, as the driver
calls it: the queries asked so far and each side's answers per round). Here a gold set of graded
judgments (of 50 documents, 3 relevant a query at grades 1-3 and 3 judged non-relevant, grade 0;
4 slices) is asked block by block, 2 sides x 5 rounds of 10 distinct random ids an answer, drawn
afresh each round (drift between repeats; alike on both sides: an A/A, so the rule looks to the
end, at most 29 looks), and each look's CPU (time.thread_time) is summed. Before
`LooksScored` every look scored every answer so far again (29 looks re-scored the gold set about
15 times over); now each answer is scored once. `--tree DIR` also measures DIR/harness (e.g.
`git worktree add /tmp/old <commit>`), interleaved run by run so the machine's load falls on
both alike; medians and ranges are printed, with the load average. Issue 42: the harness's own
CPU in a demo compare, where the looks were the largest part outside the replay loop.
"""

from __future__ import annotations

import argparse
import os
import statistics

from fresh import compile_tree, run_fresh

CODE = r"""
import json, sys, time
import numpy as np
try:
    from harness.values.types import GoldQuery, GoldSet, QueryResult
except ImportError:  # a tree (--tree OLD) from before the values moved into harness/values/
    from harness.types import GoldQuery, GoldSet, QueryResult
from harness.verdict.asked import plan_for, stop_rule
from harness.verdict.comparison import CompareSettings
from harness.verdict.quality_sequential import query_order
out, n = sys.argv[1], int(sys.argv[3])
rng = np.random.default_rng(0)
gold = GoldSet(tuple(
    GoldQuery(id=f"q{i:05d}", text=f"query {i}", slice=f"s{i % 4}",
              relevant={f"d{j}": int(g) for j, g in zip(rng.choice(50, 6, replace=False),
                                                        [*rng.integers(1, 4, 3), 0, 0, 0])})
    for i in range(n)), "simulated", "native", "0" * 64)
settings = CompareSettings(resamples=200)
order = list(query_order([q.id for q in gold.queries], 0))
block = plan_for(gold, settings).block_size
look = stop_rule(gold, settings, order)
answers = [[[] for _ in range(5)] for _ in range(2)]
spent, looks = 0.0, 0
for end in range(block, n, block):
    for side in answers:
        for results in side:
            results.extend(
                QueryResult(q, tuple(f"d{j}" for j in rng.choice(50, 10, replace=False)),
                            status=200, latency_ns=1_000_000)
                for q in order[end - block:end])
    started = time.thread_time()
    looks += 1
    stop = look(end, answers)
    spent += time.thread_time() - started
    if stop:
        break
json.dump({"cpu": spent, "looks": looks, "block": block}, open(out, "w"))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", default="300,3000", help="gold set sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tree", help="also measure DIR/harness (a checkout of another commit)")
    args = parser.parse_args()
    trees: list[str | None] = [None] if args.tree is None else [None, args.tree]
    for tree in trees:
        compile_tree(tree)
    print(f"bench_looks: the sequential rule's looks, CPU per compare, 2 sides x 5 rounds, "
          f"{args.runs} run(s) each, trees interleaved; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for n in (int(x) for x in args.queries.split(",")):
        got: dict[str | None, list[float]] = {t: [] for t in trees}
        shape = {}
        for _ in range(args.runs):
            for tree in trees:
                found = run_fresh(CODE, [str(n)], tree=tree, what="the looks")
                got[tree].append(found["cpu"])
                shape = found
        for tree in trees:
            cpu = got[tree]
            name = "this" if tree is None else tree
            print(f"  {n:>6} queries, blocks of {shape['block']}, {shape['looks']} looks: "
                  f"{name}: {statistics.median(cpu):.2f} s ({min(cpu):.2f}-{max(cpu):.2f})")
        if args.tree is not None:
            ratio = statistics.median(got[None]) / statistics.median(got[args.tree])
            print(f"  {n:>6} queries: this / {args.tree} = {ratio:.2f}x")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
