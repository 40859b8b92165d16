#!/usr/bin/env python
"""The compare analysis at scale on realistic data, this tree against another, side by side.

    python scripts/bench_scale.py [--before CHECKOUT | --tree DIR] [--queries 50000]
                                  [--rss-queries 100000] [--runs 3] [--data DIR]

Issue 28's rows: the analysis of a compare of 50k queries (target: at most 10 s wall) and the
peak memory of one of 100k queries (target: at most 1 GiB; issue 42's, printed: 800 MiB). The
data is `scripts/realistic_data.py`'s (graded qrels 1-3 and judged non-relevant documents, 20
distinct ids an answer, 3% of answers changing between repeats, 10 slices), 3 repeats a side,
with its latencies, both sides measured together (one pair_id).

Each side writes its own run records with its own `save_run` (so `--before` a checkout from
before issue 28 writes JSON records, this tree columnar ones), from the same generated answers,
beside a gold.jsonl. Then each measurement is a fresh process: the gold set loaded from the file
(`harness.gold.load_gold`), both records loaded (`harness.results.records.load_run`) and
compared (`harness.verdict.decide.compare`, default settings: 10,000 resamples). The row's
figure is the wall (and CPU) of loading the records and comparing them; the peak RSS is the
process's (ru_maxrss), gold set included. The sides alternate run by run (before, after,
before, ...) so the machine's load falls on both alike; medians and ranges are printed, with the
load average before and after.

The "whole process" rows (issue 42: 50k in at most 10 s, 100k in at most 800 MiB) are the
process's own wall, start to exit, gold set included; the gold cache (`harness.gold.memo`) lives
in a fresh HARNESS_CACHE_DIR of the benchmark, so each side's first run parses the gold set (the
"miss" figure) and the later ones read it back.

`--before CHECKOUT`: a checkout of harness with its own venv (CHECKOUT/.venv/bin/python), e.g.
`git worktree add /tmp/before <commit>` and `pip install -e /tmp/before` in a venv there.
`--tree DIR`: the harness package under DIR (e.g. `git worktree add /tmp/old HEAD~1`) run by
this interpreter, DIR first on PYTHONPATH (scripts/fresh.py's pattern), as "before".
`--data DIR` keeps the generated data between invocations (it is large: ~2 GB at 100k
for a JSON side).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPEATS = 3

# Run in a child by either side's interpreter: only what every harness version has.
WRITE = """
import json, sys
from dataclasses import replace
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import realistic_data as rd
from harness.gold.load import load_gold
from harness.results.records import save_run
try:
    from harness.values.types import QueryResult, RefRun, Repeat
except ImportError:  # a tree (--tree OLD) from before the values moved into harness/values/
    from harness.types import QueryResult, RefRun, Repeat

n, folder, repeats = int(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
shape = rd.Shape(queries=n, depth=20)
folder.mkdir(parents=True, exist_ok=True)
gold_file = folder / "gold.jsonl"
if not gold_file.exists():
    with gold_file.open("w") as f:
        f.write(json.dumps({"format": "harness-gold", "version": 1}) + "\\n")
        for q in rd.gold(shape).queries:
            line = {"id": q.id, "query": q.text, "relevant": dict(q.relevant), "slice": q.slice}
            f.write(json.dumps(line, sort_keys=True) + "\\n")
gold = load_gold(gold_file)
qids = rd.query_ids(shape)
sides = {"baseline": [], "candidate": []}
for a in rd.repeats(shape, repeats):
    results = tuple(
        QueryResult(q, ids, None, 200, latency_ns=ns)
        for q, ids, ns in zip(qids, a.ids(), a.latency_ns.tolist())
    )
    sides[a.side].append(Repeat(a.index, results, teardown_confirmed=True))
for side, sha in (("baseline", "a" * 40), ("candidate", "b" * 40)):
    run = RefRun(side, sha, "c" * 64, gold.hash, None, "bench", {}, tuple(sides[side]),
                 pair_id="bench")
    save_run(folder, run)
"""

ANALYSE = """
import json, resource, sys, time
from pathlib import Path
folder = Path(sys.argv[1])
from harness.gold.load import load_gold
from harness.results.records import load_run
try:
    from harness.verdict.decide import compare
except ImportError:  # a tree (--tree OLD) from before the module was named for what it does
    from harness.verdict.compare import compare
from harness.verdict.comparison import CompareSettings
t = time.perf_counter()
gold = load_gold(folder / "gold.jsonl")
gold_s = time.perf_counter() - t
records = sorted((folder / "runs").glob("*.json"))
t, c = time.perf_counter(), time.process_time()
base, cand = (load_run(p) for p in records)
comparison = compare(gold, base, cand, CompareSettings())
wall, cpu = time.perf_counter() - t, time.process_time() - c
print(json.dumps({"wall": wall, "cpu": cpu, "gold_s": gold_s,
                  "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "verdict": comparison.verdict_quality.value, "valid": comparison.valid}))
"""


def side_pythons(before: Path | None, tree: Path | None = None) -> dict[str, str]:
    """The interpreter of each side: "before" (a checkout's venv, or this one for a `tree`:
    `side_env`) and "after" (this one)."""
    sides = {"after": sys.executable}
    if tree is not None:
        return {"before": sys.executable, **sides}
    if before is not None:
        python = before / ".venv" / "bin" / "python"
        if not python.exists():
            raise SystemExit(f"--before {before}: no venv at {python}; make one there")
        sides = {"before": str(python), **sides}
    return sides


TREES: dict[str, Path] = {}  # side label -> the tree run first on PYTHONPATH (`--tree`)


def side_env(label: str) -> dict[str, str]:
    """The environment of a side's child: a `--tree` side has its tree first on PYTHONPATH."""
    env = dict(os.environ)
    if label in TREES:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TREES[label]),
                                                          env.get("PYTHONPATH")]))
    return env


def describe(label: str, python: str) -> str:
    code = (
        "import harness, subprocess, pathlib; p = pathlib.Path(harness.__file__).parent.parent;"
        "r = subprocess.run(['git', '-C', str(p), 'log', '-1', '--format=%h %s'],"
        " capture_output=True, text=True).stdout.strip();"
        "print(f'{p} ({r[:60]})')"
    )
    found = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=True,
        cwd=tempfile.gettempdir(), env=side_env(label),
    )
    return f"{label}: {found.stdout.strip()}"


def write_data(python: str, queries: int, folder: Path, label: str = "") -> Path:
    """The gold set and both sides' records of `queries` queries, written by `python`'s harness
    (`label`'s tree, when it has one) into folder (once: reused when there)."""
    if not list((folder / "runs").glob("*.json")):
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(  # run in `folder`: never a harness package of the current directory
            [python, "-c", WRITE, str(HERE), str(queries), str(folder), str(REPEATS)],
            check=True,
            cwd=folder,
            env=side_env(label),
        )
    return folder


def analyse(python: str, folder: Path, label: str = "") -> dict[str, Any]:
    start = time.perf_counter()
    done = subprocess.run(
        [python, "-c", ANALYSE, str(folder)], capture_output=True, text=True, check=False,
        cwd=folder, env=side_env(label),
    )
    process = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{python}: the analysis failed:\n{done.stderr[-3000:]}")
    found: dict[str, Any] = json.loads(done.stdout)
    found["process"] = process
    found["load"] = os.getloadavg()[0]
    return found


def spread(values: Sequence[float], fmt: str) -> str:
    """median [min-max] of values."""
    median = statistics.median(values)
    return f"{format(median, fmt)} [{format(min(values), fmt)}-{format(max(values), fmt)}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--before", type=Path, help="a checkout with its own .venv")
    parser.add_argument("--tree", type=Path, help="a checkout run by this interpreter")
    parser.add_argument("--queries", type=int, default=50_000)
    parser.add_argument("--rss-queries", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--data", type=Path, help="keep the generated data here")
    args = parser.parse_args()
    pythons = side_pythons(args.before, args.tree)
    if args.tree is not None:
        TREES["before"] = args.tree.resolve()
    for label, python in pythons.items():
        print(describe(label, python))
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        root = args.data or Path(tmp)
        os.environ["HARNESS_CACHE_DIR"] = str(Path(tmp) / "harness-cache")  # the gold cache
        folders = {
            (label, n): write_data(python, n, root / f"{label}-{n}", label)
            for label, python in pythons.items()
            for n in (args.queries, args.rss_queries)
        }
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the start")
        found: dict[tuple[str, int], list[dict[str, Any]]] = {key: [] for key in folders}
        for _ in range(args.runs):  # interleaved: before, after, before, after, ...
            for n in (args.queries, args.rss_queries):
                for label, python in pythons.items():
                    found[(label, n)].append(analyse(python, folders[(label, n)], label))
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    print_table(found, list(pythons), args.queries, args.rss_queries, args.runs)


def print_table(
    found: dict[tuple[str, int], list[dict[str, Any]]],
    labels: list[str],
    queries: int,
    rss_queries: int,
    runs: int,
) -> None:
    print(
        f"\nthe compare analysis (records loaded + compare(), a fresh process each), realistic "
        f"data, {REPEATS} repeats a side, 10 slices, 20 ids an answer; median [range] of "
        f"{runs} interleaved runs"
    )
    header = f"  {'measurement':<34}" + "".join(f"{label:>28}" for label in labels)
    print(header + f"{'target':>12}")

    def row(name: str, n: int, key: str, fmt: str, unit: str, target: str) -> None:
        cells = "".join(
            f"{spread([r[key] for r in found[(label, n)]], fmt) + unit:>28}" for label in labels
        )
        print(f"  {name:<34}{cells}{target:>12}")

    row(f"analysis wall at {queries // 1000}k queries", queries, "wall", ".1f", " s", "<= 10 s")
    row("  its CPU", queries, "cpu", ".1f", " s", "")
    row(f"peak RSS at {rss_queries // 1000}k queries", rss_queries, "rss_mib", ",.0f", " MiB",
        "<= 800")  # fmt: skip
    row(f"  (analysis wall at {rss_queries // 1000}k)", rss_queries, "wall", ".1f", " s", "")
    row(f"  (gold load at {queries // 1000}k, untimed)", queries, "gold_s", ".1f", " s", "")
    row(f"whole process at {queries // 1000}k", queries, "process", ".1f", " s", "<= 10 s")
    row(f"  at {rss_queries // 1000}k", rss_queries, "process", ".1f", " s", "")
    for label in labels:
        for n in (queries, rss_queries):
            rows = found[(label, n)]
            print(f"  {label} {n // 1000}k, each run (whole process s / gold s / peak MiB): "
                  + ", ".join(f"{r['process']:.1f}/{r['gold_s']:.2f}/{r['rss_mib']:,.0f}"
                              for r in rows)
                  + f"; at most 10 s: {sum(r['process'] <= 10 for r in rows)} of {len(rows)}"
                  + f"; at most 800 MiB: {sum(r['rss_mib'] <= 800 for r in rows)} of {len(rows)}")
    loads = [r["load"] for rows in found.values() for r in rows]
    print(f"  load average during the runs: {min(loads):.1f}-{max(loads):.1f}")
    verdicts = {(k, r["verdict"], r["valid"]) for k, rows in found.items() for r in rows}
    print("  verdicts: " + ", ".join(f"{k[0]} {k[1] // 1000}k {v}" for k, v, _ in sorted(verdicts)))


if __name__ == "__main__":
    main()
