"""`harness compare-runs` against ranx's `compare` on the same run files of a public collection.

    .venv/bin/python scripts/bench_compare_runs.py [--gold /work/shared/data/scifact]
        [--runs DIR] [--rounds 5] [--tree DIR]

The runs are BM25 variants over SciFact (`scripts/make_scifact_runs.py` writes them into --runs
when they are not there yet; it needs bm25s). ranx is a test/bench-only oracle
(`python -m pip install ranx`). Each tool runs as a fresh process, as a user runs it, the two
interleaved round by round; printed:

- per system and metric, the mean from harness and from ranx side by side (target: equal to 1e-9);
- per candidate and metric, harness's p (McNemar exact for hit@k, the sign-flip randomization
  test otherwise) beside ranx's Fisher randomization p and its paired t-test p.  The
  randomization tests match by design (a paired sign flip of the per-query deltas, mean delta as
  statistic; both Monte Carlo, so they agree within resampling error); for hit@k ranx's Fisher
  test on 0/1 deltas tests what McNemar's exact test does, exactly; the t-test differs by design
  (a normal approximation harness does not use);
- the wall time of each tool, median over the rounds (ranx's first round compiles its numba
  code; numba caches it, so later rounds do not).

`--tree DIR` adds "harness (tree)": the same command run by this interpreter with the harness
package under DIR first on PYTHONPATH (a worktree of another commit), in the same rounds, for a
before/after measured together (issue 42's target: at most 0.1x ranx's wall).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLD = Path("/work/shared/data/scifact")
SYSTEMS = ("bm25", "bm25-flat", "bm25-title")
# harness name -> ranx name
METRICS = {
    "hit@5": "hit_rate@5",
    "hit@10": "hit_rate@10",
    "recall@10": "recall@10",
    "p@5": "precision@5",
    "mrr@10": "mrr@10",
    "ndcg@10": "ndcg@10",
}


def _ranx_worker(gold: Path, runs: list[Path]) -> None:
    """What a ranx user runs: read qrels and runs, compare, print means and p-values as JSON."""
    import warnings

    warnings.simplefilter("ignore")
    from ranx import Qrels, Run, compare

    qrels: dict[str, dict[str, int]] = {}
    for line in (gold / "qrels.tsv").read_text().splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        qrels.setdefault(qid, {})[doc] = int(grade)
    loaded = [Run.from_file(str(p), kind="trec") for p in runs]
    for run, path in zip(loaded, runs, strict=True):
        run.name = path.stem
    out: dict[str, object] = {}
    seconds: list[float] = []
    for test in ("fisher", "student", "fisher"):  # the second fisher: compiled, warm
        start = time.perf_counter()
        report = compare(
            Qrels.from_dict(qrels), loaded, list(METRICS.values()), stat_test=test, random_seed=0
        )
        out["fisher_again" if test in out else test] = report.to_dict()
        seconds.append(time.perf_counter() - start)
    out["seconds"] = seconds
    print(json.dumps(out))


def _harness_warm(gold_path: Path, runs: list[Path]) -> float:
    """Seconds of compare_systems alone on the runs, in this process (its second call)."""
    from harness.gold import load_gold
    from harness.score.runfile import load_run
    from harness.verdict.comparison import CompareSettings
    from harness.verdict.systems import SystemRun, compare_systems

    gold = load_gold(gold_path, texts=False)
    systems = []
    for path in runs:
        run = load_run(path)
        systems.append(SystemRun(str(path), run.sha256, run.rankings, run.scores))
    settings = CompareSettings(k=(5, 10), gate_on=("ndcg@10",))
    took = []
    for _ in range(2):
        start = time.perf_counter()
        compare_systems(gold, systems, settings)
        took.append(time.perf_counter() - start)
    return took[-1]


def _timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    took = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: a candidate regressed, as it does here
        raise SystemExit(f"{cmd[0]} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return took, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gold", type=Path, default=GOLD)
    parser.add_argument("--runs", type=Path, default=ROOT / "results" / "scifact-runs")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tree", type=Path, help="also the harness package under DIR")
    parser.add_argument("--ranx-worker", nargs="+", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ranx_worker:
        _ranx_worker(args.gold, args.ranx_worker)
        return 0
    # Looked up, not imported: importing ranx costs ~2.5 s of CPU, which its worker pays anyway.
    if importlib.util.find_spec("ranx") is None:
        print("bench_compare_runs: ranx is not installed: python -m pip install ranx")
        return 2
    if not (args.gold / "qrels.tsv").exists():
        print(f"bench_compare_runs: {args.gold}/qrels.tsv not found")
        return 2
    runs = [args.runs / f"{name}.run" for name in SYSTEMS]
    if not all(p.exists() for p in runs):
        make = [sys.executable, str(ROOT / "scripts" / "make_scifact_runs.py")]
        subprocess.run([*make, "--data", str(args.gold), "--out", str(args.runs)], check=True)
    harness = [str(Path(sys.executable).parent / "harness"), "compare-runs", *map(str, runs)]
    harness += ["--gold", str(args.gold), "--format", "json", "--gate-on", "ndcg@10"]
    harness += ["--k", "5", "--k", "10"]
    ranx_cmd = [sys.executable, __file__, "--gold", str(args.gold), "--ranx-worker"]
    ranx_cmd += map(str, runs)
    tools: list[tuple[str, list[str], dict[str, str] | None]] = [
        ("ranx", ranx_cmd, None), ("harness", harness, None)]
    if args.tree is not None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            filter(None, [str(args.tree.resolve()), os.environ.get("PYTHONPATH")])))
        tools.append(("harness (tree)", [sys.executable, "-m", "harness.cli.main",
                                         *harness[1:]], env))
    times: dict[str, list[float]] = {name: [] for name, _, _ in tools}
    outputs: dict[str, str] = {}
    loads = []
    for _ in range(args.rounds):  # interleaved: both see the same machine load
        for name, cmd, env in tools:
            took, outputs[name] = _timed(cmd, env)
            times[name].append(took)
            loads.append(os.getloadavg()[0])
    ours = json.loads(outputs["harness"])
    theirs = json.loads(outputs["ranx"])
    fisher, student = theirs["fisher"], theirs["student"]
    base = SYSTEMS[0]

    print(f"runs: {', '.join(str(p) for p in runs)}; gold {args.gold}")
    print("\nmeans (harness | ranx | |difference|)")
    worst = 0.0
    for comparison in ours["comparisons"]:
        cand = Path(comparison["header"]["candidate"]["ref"]).stem
        rows = {r["metric"]: r for r in comparison["overall"]["rows"]}
        for metric, rname in METRICS.items():
            for system, value in (
                (base, rows[metric]["baseline"]),
                (cand, rows[metric]["candidate"]),
            ):
                if system == base and comparison is not ours["comparisons"][0]:
                    continue
                other = fisher[system]["scores"][rname]
                gap = abs(value - other)
                worst = max(worst, gap)
                print(f"  {system:11} {metric:10} {value:.12f} | {other:.12f} | {gap:.1e}")
    print(f"largest difference of a mean: {worst:.1e} (target <= 1e-9)")

    print("\np-values, each candidate against the baseline")
    print(
        f"  {'candidate':11} {'metric':10} {'harness':>9} {'test':15} {'ranx fisher':>11} "
        f"{'ranx t':>9} {'within resampling error':>24}"
    )
    for comparison in ours["comparisons"]:
        cand = Path(comparison["header"]["candidate"]["ref"]).stem
        rows = {r["metric"]: r for r in comparison["overall"]["rows"]}
        for metric, rname in METRICS.items():
            row = rows[metric]
            test = "McNemar exact" if row.get("hit") else "randomization"
            pf = fisher[base]["comparisons"][cand][rname]
            pt = student[base]["comparisons"][cand][rname]
            # ranx's p is a share of 1,000 permutations: its binomial standard error, 3 of them
            # (at least one permutation's worth), beside harness's own Monte Carlo floor 1e-3.
            bound = 3 * (max(pf, 1e-3) * (1 - pf) / 1000) ** 0.5 + 1e-3
            agree = "yes" if abs(row["p"] - pf) <= bound else "NO"
            cells = f"{row['p']:9.4f} {test:15} {pf:11.4f} {pt:9.4f} {agree:>24}"
            print(f"  {cand:11} {metric:10} {cells}")
    print("  (ranx fisher: 1,000 permutations, resampling error about ±0.014 at p = 0.05;")
    print("   harness: exact for hit@k, sequential Monte Carlo up to 10,000 draws otherwise;")
    print("   ranx t: paired t-test, a different test by design)")

    print(f"\nwall time, median of {args.rounds} interleaved rounds (each a fresh process)")
    for name, took in times.items():
        shown = ", ".join(f"{t:.2f}" for t in took)
        print(f"  {name:8} {statistics.median(took):6.2f} s   (rounds: {shown})")
    for name in times:
        if name != "ranx":
            ratios = [h / r for h, r in zip(times[name], times["ranx"], strict=True)]
            ratio = statistics.median(times[name]) / statistics.median(times["ranx"])
            print(f"  {name} / ranx: {ratio:.2f} (medians; per round "
                  f"{', '.join(f'{r:.2f}' for r in ratios)}; target <= 0.10)")
    if "harness (tree)" in outputs:
        same = outputs["harness (tree)"] == outputs["harness"]
        print(f"  harness and harness (tree) printed the same JSON: {same}")
    print(f"  load average during the rounds: {min(loads):.1f}-{max(loads):.1f}")
    warm_ranx = theirs["seconds"][-1]
    warm_ours = _harness_warm(args.gold, runs)
    print("the comparison alone, warm, in one process (ranx compiled; files already read):")
    print(
        f"  harness compare_systems {warm_ours:6.2f} s   ranx compare (fisher) {warm_ranx:6.2f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
