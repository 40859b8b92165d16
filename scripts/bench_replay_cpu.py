#!/usr/bin/env python
"""The harness's own CPU in the replay of `compare --demo`: per HTTP query, user and system.

    python scripts/bench_replay_cpu.py [--demos 3] [--phases] [--quick] [--tree OLD_CHECKOUT ...]

Each demo compare runs in a fresh interpreter that runs the CLI in-process and reads
getrusage(RUSAGE_SELF) around what `harness.compare.measure` calls to measure both sides: the
default sequential compare's `harness.driver.blocks.run_sequential_pair` (the fixed design's
`harness.driver.runner.run_pair`: checkouts, builds, the boots and teardowns, warm-up and
measured queries, the run records), and counts the HTTP exchanges it made
(`Connection.exchange` calls: both sides, warm-up included). Printed per compare: that
measurement's harness CPU (user, system), the exchanges, the CPU per exchange, and the whole
process's CPU against its wall time (issue 17: at most 25%).

`--phases` breaks each demo's whole-process CPU down by what spent it: the interpreter and the
imports before the compare, the demo's repository, the config and gold set, the measurement and
within it the boots and teardowns and the quality looks, the analysis, the save. Each phase is the
process's CPU (getrusage, every thread) over the windows of its calls: a thread running beside a
call (the other side booting at the same time) counts in that window too, so the boots' figure
is an upper bound (`bench_boot_cpu.py` times a boot and teardown alone).

`--quick` runs each demo compare in two rounds (a smoke run: not the demo's figures).

`--tree DIR` also measures the harness package under DIR (a checkout of another commit, e.g.
`git worktree add /tmp/old main`: DIR/harness is imported instead of the installed one), each
demo interleaved with the installed harness's, so that the machine's load hits both alike: the
before/after of a change, measured in one run. Each tree's .pyc files are brought up to date
first (`compileall`), as an install leaves them. The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path
from typing import Any

from fresh import QUICK_HELP, compile_tree, quick_options, run_fresh

INNER = """
import importlib, json, resource, sys, time
t0 = time.perf_counter()
import harness.replay.client as client, harness.replay.wire as wire
exchanges = [0]
exchange = wire.Connection.exchange
def counted(self, raw, query):
    exchanges[0] += 1
    return exchange(self, raw, query)
wire.Connection.exchange = counted
spent = {"user": 0.0, "sys": 0.0, "measured": []}
def wrap(owner, name, add):
    # owner.name replaced by a wrapper handing add() its user and system CPU seconds
    inner = getattr(owner, name)
    def timed(*args, **kwargs):
        before = resource.getrusage(resource.RUSAGE_SELF)
        try:
            return inner(*args, **kwargs)
        finally:
            after = resource.getrusage(resource.RUSAGE_SELF)
            add(after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime)
    setattr(owner, name, timed)
def timing(module, name):
    def add(user, system):
        spent["user"] += user
        spent["sys"] += system
        spent["measured"].append(name)
    wrap(module, name, add)
# Whichever way the compare measures (harness.compare.measure imports these when it runs):
# block by block (the default, compare.sequential) or whole rounds (the fixed design); a tree
# from before the sequential design has no blocks module, and one from before harness.driver
# has them in harness.replay.
try:
    import harness.driver.runner as runner
    driver = "harness.driver"
except ImportError:
    import harness.replay.runner as runner
    driver = "harness.replay"
timing(runner, "run_pair")
try:
    blocks = importlib.import_module(driver + ".blocks")
except ImportError:
    pass
else:
    timing(blocks, "run_sequential_pair")
# Where the rest of the whole process's CPU goes (--phases): each a wrapper like the one above,
# wherever the tree defines it (the boots and the looks are inside the measurement).
phases = {}
def phase(module_name, owner, name, key):
    try:
        obj = importlib.import_module(module_name)
        obj = getattr(obj, owner) if owner else obj
        getattr(obj, name)
    except (ImportError, AttributeError):
        return
    wrap(obj, name, lambda user, sys_: phases.update({key: phases.get(key, 0.0) + user + sys_}))
phase("harness.demo", None, "materialise", "the demo's corpus and git repository")
phase("harness.cli.plan", None, "load_plan", "config and gold set read and checked")
phase("harness.boot.service", "ServiceContext", "__enter__",
      "  of which the boots and teardowns (sandbox, spawn, ready, end)")
phase("harness.boot.service", "ServiceContext", "__exit__",
      "  of which the boots and teardowns (sandbox, spawn, ready, end)")
phase("harness.verdict.asked", "LooksScored", "values", "  of which the quality looks")
phase("harness.compare.analysis", None, "analyse", "the analysis (the verdicts)")
phase("harness.report.saved", None, "save_comparison", "the comparison saved")
imports = resource.getrusage(resource.RUSAGE_SELF)
phases["interpreter and imports before the compare"] = imports.ru_utime + imports.ru_stime
from harness.cli.main import main
status = main(["compare", "--demo", "--quiet", "--results", sys.argv[2], *sys.argv[3:]])
wall = time.perf_counter() - t0
me = resource.getrusage(resource.RUSAGE_SELF)
with open(sys.argv[1], "w") as out:
    json.dump({"status": status, "wall": wall, "self": me.ru_utime + me.ru_stime,
               "exchanges": exchanges[0], "package": client.__file__, "phases": phases,
               **spent}, out)
"""


PHASES = [  # as INNER names them, in the order a compare reaches them
    "interpreter and imports before the compare",
    "the demo's corpus and git repository",
    "config and gold set read and checked",
    "  of which the boots and teardowns (sandbox, spawn, ready, end)",
    "  of which the quality looks",
    "the analysis (the verdicts)",
    "the comparison saved",
]


def one(tree: str | None, options: list[str]) -> dict[str, float]:
    return run_fresh(INNER, options, tree=tree, what="the demo compare")


def print_phases(found: dict[str, Any]) -> None:
    """The whole process's CPU by what spent it, each with its share of the wall (a phase the
    tree does not have is left out)."""
    wall, phases = found["wall"], found["phases"]
    measure = found["user"] + found["sys"]
    inside = sum(v for k, v in phases.items() if k.startswith("  "))
    outside = sum(v for k, v in phases.items() if not k.startswith("  "))
    rows = [(k, phases[k]) for k in PHASES[:3] if k in phases]
    rows.append(("the measurement (checkouts, builds, boots, replay, looks, records)", measure))
    rows += [(k, phases[k]) for k in PHASES[3:5] if k in phases]
    rows.append(("  of which the rest (the replay loop, checkouts, records)", measure - inside))
    rows += [(k, phases[k]) for k in PHASES[5:] if k in phases]
    rows.append(("anything else (the page, the stored runs, ...)",
                 found["self"] - outside - measure))
    for name, cpu in rows:
        print(f"      {name:<70} {cpu:6.2f} s = {cpu / wall:4.0%} of the wall")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--demos", type=int, default=3)
    parser.add_argument(
        "--phases",
        action="store_true",
        help="also break each demo's whole-process CPU down by what spent it, as a share of "
        "its wall (issue 42: the whole at most 15%% at load <= 2)",
    )
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP)
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        help="also measure the harness package of this checkout (DIR/harness), interleaved",
    )
    args = parser.parse_args()
    trees: dict[str, str | None] = {"installed": None}
    trees |= {f"tree {i}": str(Path(t).resolve()) for i, t in enumerate(args.tree, 1)}
    for tree in trees.values():  # .pyc up to date, as an install leaves them
        compile_tree(tree)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    options = quick_options(args.quick)
    print(
        f"  {'harness':<10} {'measure user s':>15} {'sys s':>6} {'exchanges':>9}"
        f" {'us/exchange user':>16} {'sys':>5} {'own CPU / wall':>15}"
    )
    per: dict[str, list[float]] = {label: [] for label in trees}
    for _ in range(args.demos):
        for label, tree in trees.items():
            found = one(tree, options)
            if not found["measured"]:  # the compare measured some other way: say so, not 0
                raise SystemExit(
                    f"{label}: the demo compare (exit {found['status']}) called neither "
                    "run_sequential_pair nor run_pair: see harness.compare.measure"
                )
            n = max(int(found["exchanges"]), 1)
            user, system = found["user"], found["sys"]
            per[label].append((user + system) / n * 1e6)
            print(
                f"  {label:<10} {user:15.3f} {system:6.3f} {n:9d} {user / n * 1e6:16.0f}"
                f" {system / n * 1e6:5.0f} {found['self']:7.2f}/{found['wall']:.2f} s"
                f" = {found['self'] / found['wall']:.0%}"
            )
            if args.phases:
                print_phases(found)
    for label, tree in trees.items():
        where = tree or "the installed harness"
        print(
            f"{label}: median {statistics.median(per[label]):.0f} us of measuring CPU per "
            f"exchange ({where})"
        )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
