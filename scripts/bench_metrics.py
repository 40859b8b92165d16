#!/usr/bin/env python
"""`harness metrics` against pytrec_eval, ir_measures and ranx on the same realistic files, each
run as a user runs it (a fresh process, from the files on disk to the printed means),
interleaved round by round.

    python scripts/bench_metrics.py [--sizes 20000x100,100000x100,10000x1000] [--runs 3]
        [--data DIR] [--before SRC] [--tools harness,pytrec_eval,ir_measures,ranx] [--seed 0]

Data: `scripts/realistic_data.py` (graded qrels 1-3 and judged non-relevant documents, `depth`
distinct ids a query from a 10M-id space, relevant documents at realistic ranks and some missed,
scores with a few ties), written once into `--data` (default a temporary folder) as
`QUERIESxDEPTH-seedS/qrels.txt` and `run.trec`, and reused when there.

Measures: the five trec_eval computes natively, P_10, recall_100, map, ndcg_cut_10,
recip_rank, under each tool's own names. Each tool at its strongest:

- harness: `harness metrics --gold qrels.txt --run run.trec --metrics P_10,...` (`--format json`);
  `--before SRC` adds "harness (before)": the same command with the harness source tree SRC
  first on PYTHONPATH (e.g. a worktree of main), run by this interpreter;
- pytrec_eval: its own `parse_qrel` and `parse_run`, `RelevanceEvaluator` with the five native
  measures, `compute_aggregated_measure`; nothing re-sorted or cut in Python;
- ir_measures: `read_trec_qrels`, `read_trec_run`, `calc_aggregate` (its default provider,
  pytrec_eval, for these measures);
- ranx: `Qrels.from_file`, `Run.from_file` and `evaluate` (numba: one untimed warm-up run
  per tool fills its cache before the rounds).

Printed per size: for each tool the median and range over the rounds of wall seconds, CPU
seconds (user + system of the child, `wait4`) and peak RSS (the child's ru_maxrss), and the
largest gap of its means from harness's; then harness / pytrec_eval, the median of the per-round
ratios (targets of issue 28: wall <= 0.5x, peak RSS <= 1x). The load average is printed before
and after each size: the machine may be shared, and interleaving exposes every tool to it alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realistic_data

ROOT = Path(__file__).resolve().parent.parent

HARNESS = ["P_10", "recall_100", "map", "ndcg_cut_10", "recip_rank"]
PYTREC = """
import sys
import pytrec_eval
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
measures = sys.argv[3].split(",")
per_query = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)
for m in measures:
    print(m, pytrec_eval.compute_aggregated_measure(m, [row[m] for row in per_query.values()]))
"""
IR_MEASURES = """
import sys
import ir_measures
from ir_measures import AP, P, R, RR, nDCG
names = {P@10: "P_10", R@100: "recall_100", AP: "map", nDCG@10: "ndcg_cut_10", RR: "recip_rank"}
qrels = ir_measures.read_trec_qrels(sys.argv[1])
run = ir_measures.read_trec_run(sys.argv[2])
for measure, value in ir_measures.calc_aggregate(list(names), qrels, run).items():
    print(names[measure], value)
"""
RANX = """
import sys
import warnings
warnings.simplefilter("ignore")
from ranx import Qrels, Run, evaluate
names = {"precision@10": "P_10", "recall@100": "recall_100", "map": "map", "ndcg@10":
         "ndcg_cut_10", "mrr": "recip_rank"}
qrels = Qrels.from_file(sys.argv[1], kind="trec")
run = Run.from_file(sys.argv[2], kind="trec")
for metric, value in evaluate(qrels, run, list(names)).items():
    print(names[metric], value)
"""


def commands(tool: str, qrels: Path, run: Path) -> list[str]:
    # -S: no site hooks, so the source tree first on PYTHONPATH is the harness imported (an
    # editable install's import hook would otherwise win); the same for every tool.
    if tool.startswith("harness"):
        return [sys.executable, "-S", "-m", "harness.cli.main", "metrics", "--gold", str(qrels),
                "--run", str(run), "--metrics", ",".join(HARNESS), "--format", "json"]
    script = {"pytrec_eval": PYTREC, "ir_measures": IR_MEASURES, "ranx": RANX}[tool]
    return [sys.executable, "-S", "-c", script, str(qrels), str(run), ",".join(HARNESS)]


def environment(tool: str, before: Path | None) -> dict[str, str]:
    """PYTHONPATH: the harness source tree of this tool (this checkout, or --before), then the
    interpreter's site-packages."""
    paths = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    if tool == "harness (before)" and before is not None:
        paths.insert(0, str(before))
    elif tool.startswith("harness"):
        paths.insert(0, str(ROOT))
    # A cache of its own: no state file of another harness run on this machine makes the
    # harness load its recovery (a user's machine without a killed run has none).
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
            "HARNESS_CACHE_DIR": str(Path(tempfile.gettempdir()) / "bench-metrics-cache")}


# Started by this script, the launcher starts the tool and reports its wall time, CPU time and
# ru_maxrss: a peak RSS the tool's own, not this script's (a forked child's high-water mark
# starts at its parent's size, and exec keeps it).
LAUNCHER = """
import json, os, sys, time
t0 = time.perf_counter()
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - t0
with open(sys.argv[1], "w") as out:
    json.dump([os.waitstatus_to_exitcode(status), wall, usage.ru_utime + usage.ru_stime,
               usage.ru_maxrss], out)
"""


def measured(argv: list[str], env: dict[str, str]) -> tuple[float, float, float, str] | None:
    """(wall s, CPU s, peak RSS MiB, stdout) of one process run to completion; None when it
    failed (said on stderr, counted in the table)."""
    with tempfile.TemporaryDirectory(prefix="bench-metrics-run-") as tmp:
        report, out = Path(tmp) / "usage.json", Path(tmp) / "stdout"
        with out.open("wb") as stdout:
            # cwd: not this checkout, which `python -m` would put first on the path
            subprocess.run([sys.executable, "-S", "-c", LAUNCHER, str(report), *argv],
                           stdout=stdout, env=env, check=True, cwd=tmp)
        status, wall, cpu, peak = json.loads(report.read_text())
        if status != 0:
            print(f"  {argv[:4]} exited with status {status}", file=sys.stderr)
            return None
        return wall, cpu, peak / 1024, out.read_text()


def means(tool: str, text: str) -> dict[str, float]:
    if tool.startswith("harness"):
        return {k: float(v) for k, v in json.loads(text)["aggregate"].items()}
    return {name: float(value) for name, value in (line.split() for line in text.splitlines())}


def data_for(folder: Path, queries: int, depth: int, seed: int) -> tuple[Path, Path]:
    here = folder / f"{queries}x{depth}-seed{seed}"
    qrels, run = here / "qrels.txt", here / "run.trec"
    if not (qrels.is_file() and run.is_file()):
        realistic_data.write(realistic_data.Shape(queries, depth, seed), here)
    return qrels, run


def spread(values: list[float], fmt: str) -> str:
    return (f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})")


def bench_size(args: argparse.Namespace, tools: list[str], folder: Path, size: str) -> None:
    queries, depth = (int(x) for x in size.split("x"))
    qrels, run = data_for(folder, queries, depth, args.seed)
    mib = run.stat().st_size / 2**20
    print(f"\n{queries:,} queries x {depth}, seed {args.seed}: run {mib:,.0f} MiB, qrels "
          f"{qrels.stat().st_size / 2**20:,.1f} MiB; {args.runs} interleaved rounds; load "
          f"average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    rows: dict[str, list[tuple[float, float, float] | None]] = {t: [] for t in tools}
    found: dict[str, dict[str, float]] = {}
    for r in range(args.runs):
        for tool in tools[r % len(tools) :] + tools[: r % len(tools)]:
            got = measured(commands(tool, qrels, run), environment(tool, args.before))
            rows[tool].append(None if got is None else got[:3])
            if got is not None:
                found[tool] = means(tool, got[3])
    print(f"  load average after: {os.getloadavg()[0]:.1f}")
    print(f"  {'tool':<17} {'wall s':>18} {'CPU s':>18} {'peak MiB':>20}  max |mean - harness|")
    for tool in tools:
        done = [row for row in rows[tool] if row is not None]
        failed = len(rows[tool]) - len(done)
        if not done:
            print(f"  {tool:<17} failed in every round")
            continue
        walls, cpus, peaks = (list(col) for col in zip(*done, strict=True))
        gap = max((abs(found[tool][m] - found[tools[0]][m]) for m in HARNESS
                   if tools[0] in found), default=float("nan"))
        print(f"  {tool:<17} {spread(walls, '.2f'):>18} {spread(cpus, '.2f'):>18} "
              f"{spread(peaks, ',.0f'):>20}  {gap:.1e}"
              + (f"  ({failed} of {len(rows[tool])} runs failed)" if failed else ""))
    if "pytrec_eval" in tools:
        for tool in (t for t in tools if t.startswith("harness")):
            pairs = [(a, b) for a, b in zip(rows[tool], rows["pytrec_eval"], strict=True)
                     if a is not None and b is not None]
            if not pairs:
                continue
            ratio = {name: statistics.median(a[i] / b[i] for a, b in pairs)
                     for i, name in enumerate(("wall", "CPU", "peak"))}
            print(f"  {tool} / pytrec_eval: wall {ratio['wall']:.2f}x (CPU {ratio['CPU']:.2f}x), "
                  f"peak RSS {ratio['peak']:.2f}x (targets <= 0.5x, <= 1x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--sizes", default="20000x100,100000x100,10000x1000")
    parser.add_argument("--runs", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, help="folder of generated files, reused")
    parser.add_argument("--before", type=Path, help="source tree of the previous harness")
    parser.add_argument("--tools", default="harness,pytrec_eval,ir_measures,ranx")
    args = parser.parse_args()
    tools = args.tools.split(",")
    if args.before is not None:
        tools.insert(1, "harness (before)")
    with tempfile.TemporaryDirectory(prefix="bench-metrics-") as tmp:
        folder = args.data or Path(tmp)
        warm, warm_run = data_for(folder, 50, 10, args.seed)
        for tool in tools:  # numba's cache, the bytecode, the page cache: not what is timed
            if measured(commands(tool, warm, warm_run), environment(tool, args.before)) is None:
                raise SystemExit(f"{tool} fails on the warm-up files {warm}")
        for size in args.sizes.split(","):
            bench_size(args, tools, folder, size)


if __name__ == "__main__":
    main()
