#!/usr/bin/env python
"""Calibrate `harness gate` (compare's paired test on the baseline file's per-query values) and
`harness bisect` (a compare per step, skips, git bisect's rule), by simulation through the
project's own decision code: `harness.gate.measure` + `harness.gate.rule.check` for the gate,
`harness.bisect.run.bisect` over `harness.verdict.decide.compare` for bisect.

    python scripts/calibrate_gate_bisect.py [--sims 200] [--seed 0] [--only gate|bisect]

The services are those of scripts/calibrate.py (100 queries, 3 repeats; deterministic,
redrawn, or flaky 10%).  Every rate is printed with its Wilson 95% interval.

gate, the metric hit@10, for each determinism mode and scenario:
  A/A            the same service recorded and gated again: "fail" is a false positive
  2 queries      two hits turned into misses (the issue's case): compare says no difference
  -10 pp         a 10-point drop of the hit probability: "fail" is the power
  both rules: the paired test (now) and the noise rule (before, still used by --strict and old
  baseline files); the answer rate is the share of runs that got pass or fail (always all).

bisect, 16 commits after the good end, on hit@10 (--metric hit@10):
  -20 pp at a random commit    found the right commit (power), a wrong one (error), ambiguous
                               or not found (no answer), and the compares it took
  no regression anywhere       any "found" is a false positive
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibrate import MODES, gold_set, hit_probabilities, run, wilson

from harness.bisect.judge import Criterion
from harness.bisect.run import Commit, Outcome, StepResult, bisect
from harness.gate.measure import measure
from harness.gate.rule import Outcome as GateOutcome
from harness.gate.rule import Statistics, check
from harness.verdict.comparison import CompareSettings
from harness.verdict.decide import compare

QUERIES, REPEATS, COMMITS = 100, 3, 16
SETTINGS = CompareSettings(resamples=100, k=(10,))  # hit@10 decides: exact, nothing resampled


def worse(mode: str, p: np.ndarray, points: float, rng: np.random.Generator) -> np.ndarray:
    """The same queries with a hit probability `points` lower on average."""
    if mode == "redrawn":
        return np.clip(p - points, 0.0, 1.0)
    q = p.copy()
    hits = np.flatnonzero(p == 1.0)
    q[rng.choice(hits, size=min(len(hits), round(points * len(p))), replace=False)] = 0.0
    return q


def flip_two(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    q = p.copy()
    q[rng.choice(np.flatnonzero(p > 0), size=2, replace=False)] = 0.0
    return q


def gate_once(mode: str, scenario: str, seed: int) -> tuple[bool, bool]:
    """(failed under the paired test, failed under the noise rule)."""
    rng = np.random.default_rng(seed)
    gold = gold_set(QUERIES)
    p = hit_probabilities(mode, QUERIES, rng)
    ranks = rng.integers(1, 11, QUERIES)
    q = {"A/A": p, "2 queries": None, "-10 pp": None}[scenario]
    if scenario == "2 queries":
        q = flip_two(p, rng)
    elif scenario == "-10 pp":
        q = worse(mode, p, 0.10, rng)
    assert q is not None
    recorded = measure(gold, run(gold, p, ranks, REPEATS, rng), ["hit@10"]).baseline
    assert recorded is not None
    now = measure(gold, run(gold, q, ranks, REPEATS, rng, sha="b"), ["hit@10"])
    tested = check(recorded, now, statistics=Statistics(alpha=0.05, seed=seed))
    noise = check(recorded, now)
    return tested.outcome is GateOutcome.FAIL, noise.outcome is GateOutcome.FAIL


def bisect_once(mode: str, regress: bool, seed: int) -> tuple[str, int]:
    """('right' | 'wrong' | 'ambiguous' | 'not found' | 'invalid', compares)."""
    rng = np.random.default_rng(seed)
    gold = gold_set(QUERIES)
    p = hit_probabilities(mode, QUERIES, rng)
    ranks = rng.integers(1, 11, QUERIES)
    bad_p = worse(mode, p, 0.20, rng)
    culprit = int(rng.integers(0, COMMITS)) if regress else COMMITS
    path = [Commit(f"{i + 1:040x}", f"commit {i + 1}") for i in range(COMMITS)]
    position = {c.sha: i for i, c in enumerate(path)}

    def step(commit: Commit) -> StepResult:
        q = bad_p if position[commit.sha] >= culprit else p
        base = run(gold, p, ranks, REPEATS, rng)
        cand = run(gold, q, ranks, REPEATS, rng, sha="b")
        return StepResult(compare(gold, base, cand, SETTINGS), (base, cand))

    result = bisect(Commit("0" * 40, "good"), path[-1], path, Criterion("hit@10"), step)
    if result.outcome is Outcome.FOUND:
        found = position[result.culprits[0].sha]
        return ("right" if found == culprit else "wrong"), len(result.steps)
    return str(result.outcome), len(result.steps)


def line(label: str, k: int, n: int, extra: str = "") -> str:
    lo, hi = wilson(k, n)
    return f"  {label:<42} {k / n:>6.1%}  [{lo:.1%}, {hi:.1%}]  {extra}".rstrip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=200, help="simulations per scenario")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=("gate", "bisect"))
    args = parser.parse_args(argv)
    n = args.sims
    if args.only in (None, "gate"):
        print(f"gate on hit@10, {QUERIES} queries, {REPEATS} repeats, alpha 0.05, {n} sims each")
        for mode in MODES:
            for scenario in ("A/A", "2 queries", "-10 pp"):
                outcomes = [gate_once(mode, scenario, args.seed * 1_000_003 + s) for s in range(n)]
                what = "false positive" if scenario == "A/A" else "fail"
                print(f"{mode} / {scenario}:")
                print(line(f"{what} rate, paired test (now)", sum(t for t, _ in outcomes), n))
                print(line(f"{what} rate, noise rule (before)", sum(o for _, o in outcomes), n))
                print(line("answer rate (pass or fail)", n, n), flush=True)
    if args.only in (None, "bisect"):
        print(f"bisect on hit@10, {COMMITS} commits, {QUERIES} queries, {REPEATS} repeats")
        for mode in MODES:
            for regress in (True, False):
                runs = [bisect_once(mode, regress, args.seed * 1_000_003 + s) for s in range(n)]
                counts = {k: sum(1 for o, _ in runs if o == k) for k in {o for o, _ in runs}}
                steps = [s for _, s in runs]
                name = "-20 pp at a random commit" if regress else "no regression anywhere"
                print(
                    f"{mode} / {name}: compares mean {np.mean(steps):.1f}, max {max(steps)} "
                    f"(ceil(log2 {COMMITS}) = {math.ceil(math.log2(COMMITS))})"
                )
                if regress:
                    print(line("found the right commit (power)", counts.get("right", 0), n))
                    print(line("found a wrong commit (error)", counts.get("wrong", 0), n))
                    answered = counts.get("right", 0) + counts.get("wrong", 0)
                    print(line("answer rate (found one)", answered, n, str(counts)))
                else:
                    found = counts.get("right", 0) + counts.get("wrong", 0)
                    print(line("found a commit (false positive)", found, n, str(counts)))
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
