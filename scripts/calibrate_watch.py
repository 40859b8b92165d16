#!/usr/bin/env python
"""Calibrate `harness watch` by simulation through the project's own code: histories of 40
commits measured as run records, scored by `harness.history.points.from_run`, scanned by
`harness.watch.changepoint`, each flag confirmed by a fresh compare and bisected by
`harness.watch.run.watch` (which calls `harness.bisect.run.bisect`).

    python scripts/calibrate_watch.py [--histories 100] [--seed 0] [--only null|changes]

Each commit's measurement is a run record of 100 gold queries in 3 repeats (boots): quality
drawn as in scripts/calibrate.py (deterministic, answers redrawn every repeat, or flaky 10%),
latency per query per boot (5 ms typical, log-normal spread across queries, per-request noise,
a heavy-tailed boot shift) times the commit's true cost, and on a "busy machine" times the
machine's load when that commit was measured: a slow random walk of the machine's speed (1% a
commit), and load episodes (a commit in seven is measured 5-30% slower: the CI runner was
busy).  A "steady machine" has only the boot and request noise: the scan's own model.  The
series are hit@10, ndcg@10 and latency p50; the false-alarm rate is 0.01 a series, the bands
0.05 and 10%.

A fresh compare is simulated as `harness compare` would give it: quality by
`harness.verdict.decide.compare` on both commits' true hit probabilities, drawn afresh; latency
by scripts/latency_simulation.py (the loaded noise level, the real sequential latency rule) at
the true ratio of the two commits' costs (no load: the compare measures both together).

Rows, each a count, its rate and Wilson 95% interval:

  null (no change anywhere)   histories where watch reported a confirmed change (target: none
                              in at least 95 of 100), and where the scan flagged one at all
                              (before confirmation), per series; steady and busy machine
  changes                     hit@10 -15 pp at commit 12, latency +30% at commit 25, a drift of
                              +4% a commit over commits 30-37 (+37% in all, no step of 10%):
                              the quality step's culprit right, the latency step's culprit right,
                              the drift reported as a drift whose range overlaps 30-37, and a
                              confirmed change over a range where nothing changed, or naming a
                              culprit that changed nothing (a false report); busy machine; every
                              commit measured, and every second commit (the steps then bisected
                              inside)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import latency_simulation
from calibrate import MODES, as_run, draw_hits, gold_set, hit_probabilities, wilson
from calibrate_gate_bisect import worse

from harness.bisect.run import Commit, StepResult
from harness.history.points import Point, from_run
from harness.history.table import LATENCY
from harness.score.metrics import parse_metrics
from harness.values.types import GoldSet, RefRun
from harness.verdict.comparison import CompareSettings
from harness.verdict.decide import compare
from harness.watch.changepoint import Detection, Kind, changes
from harness.watch.run import Watch, watch
from harness.watch.series import build

COMMITS, QUERIES, REPEATS = 40, 100, 3
SETTINGS = CompareSettings(resamples=100, k=(10,))
SPECS = parse_metrics("hit@10,ndcg@10")
METRICS = [str(s) for s in SPECS]
FALSE_ALARM = 0.01
QUALITY_AT, LATENCY_AT, DRIFT = 12, 25, (30, 37)
LATENCY_CHANGES = {LATENCY_AT, *range(DRIFT[0], DRIFT[1] + 1)}  # the commits that made it slower
NOISE = latency_simulation.LOADED


@dataclass
class History:
    """One simulated branch: per commit its true hit probabilities and cost factor."""

    gold: GoldSet
    ranks: np.ndarray
    p: list[np.ndarray]
    cost: list[float]
    base_ms: np.ndarray
    path: tuple[Commit, ...] = field(default_factory=tuple)


def history(mode: str, changed: bool, rng: np.random.Generator) -> History:
    gold = gold_set(QUERIES)
    p0 = hit_probabilities(mode, QUERIES, rng)
    worse_p = worse(mode, p0, 0.15, rng)
    ps, costs, cost = [], [], 1.0
    for i in range(COMMITS):
        if changed and i == LATENCY_AT:
            cost *= 1.30
        if changed and DRIFT[0] <= i <= DRIFT[1]:
            cost *= 1.04
        ps.append(worse_p if changed and i >= QUALITY_AT else p0)
        costs.append(cost)
    path = tuple(Commit(f"{i + 1:040x}", f"commit {i}") for i in range(COMMITS))
    base = 5.0 * np.exp(0.5 * rng.standard_normal(QUERIES))
    return History(gold, rng.integers(1, 11, QUERIES), ps, costs, base, path)


def measured(h: History, i: int, load: float, rng: np.random.Generator) -> RefRun:
    """Commit i's run record: quality drawn, latency per query and boot (see the module)."""
    run = as_run(h.gold, draw_hits(h.p[i], REPEATS, rng), h.ranks, sha=h.path[i].sha[-1])
    run = replace(run, sha=h.path[i].sha)
    repeats = []
    for rep in run.repeats:
        shift = 0.03 * rng.standard_t(3)
        ms = h.base_ms * h.cost[i] * load * math.exp(shift)
        ms = ms * np.exp(0.15 * rng.standard_normal(QUERIES))
        results = tuple(
            replace(r, latency_ns=int(x * 1e6)) for r, x in zip(rep.results, ms, strict=True)
        )
        repeats.append(replace(rep, results=results))
    return replace(run, repeats=tuple(repeats))


def points(h: History, every: int, rng: np.random.Generator, busy: bool) -> list[Point]:
    out, speed = [], 0.0
    for i in range(COMMITS):
        load = 1.0
        if busy:
            speed += 0.01 * rng.standard_normal()  # the machine's slow wander
            episode = rng.random() < 1 / 7
            load = math.exp(speed) * (math.exp(rng.uniform(0.05, 0.3)) if episode else 1)
        if i % every and i != COMMITS - 1:
            continue
        point = from_run(h.gold, measured(h, i, load, rng), SPECS, when=f"{i:04d}")
        assert point is not None
        out.append(point)
    return out


def compare_pair(h: History, rng: np.random.Generator):  # type: ignore[no-untyped-def]
    index = {c.sha: i for i, c in enumerate(h.path)}

    def pair(before: Commit, after: Commit) -> StepResult:
        a, b = index[before.sha], index[after.sha]
        base = as_run(h.gold, draw_hits(h.p[a], REPEATS, rng), h.ranks, "a")
        cand = as_run(h.gold, draw_hits(h.p[b], REPEATS, rng), h.ranks, "b")
        c = compare(h.gold, base, cand, SETTINGS)
        seen = latency_simulation.simulate(
            NOISE, effect=h.cost[b] / h.cost[a] - 1, seed=int(rng.integers(2**31))
        )
        c = replace(c, verdict_latency=seen.verdict, latency_reason=str(seen.verdict))
        return StepResult(c, (base, cand))

    return pair


def one(
    mode: str, changed: bool, every: int, seed: int, busy: bool = True
) -> tuple[Watch, list[str], History]:
    """(the watch, the series the scan flagged, the history)."""
    rng = np.random.default_rng(seed)
    h = history(mode, changed, rng)
    series = build(points(h, every, rng, busy), [c.sha for c in h.path], METRICS)
    detections = {
        s.name: Detection(FALSE_ALARM, 0.10 if s.name == LATENCY else 0.05, seed=seed)
        for s in series
    }
    flagged = [s.name for s in series if changes(s, detections[s.name])]
    w = watch(h.path, series, detections, compare_pair(h, rng), latency_name=LATENCY)
    return w, flagged, h


def line(label: str, k: int, n: int, target: str = "") -> None:
    lo, hi = wilson(k, n)
    print(f"  {label:<52} {k:>4}/{n:<4} {k / n:6.1%}  [{lo:.1%}, {hi:.1%}]  {target}", flush=True)


def null_rows(histories: int, seed: int) -> bool:
    met = True
    for mode, busy in ((m, b) for b in (False, True) for m in MODES):
        started = time.monotonic()
        reported = flagged_any = 0
        flagged_series: dict[str, int] = dict.fromkeys([*METRICS, LATENCY], 0)
        for s in range(histories):
            w, flagged, _ = one(mode, False, 1, seed + s, busy)
            reported += bool(w.confirmed)
            flagged_any += bool(w.findings)
            for name in flagged:
                flagged_series[name] += 1
        machine = "busy machine" if busy else "steady machine"
        print(f"no change, {mode}, {machine} ({time.monotonic() - started:.0f} s):")
        line("histories with a confirmed change reported", reported, histories, "target <= 5")
        line("histories with a flag before confirmation", flagged_any, histories)
        for name, k in flagged_series.items():
            line(f"{name} series flagged (stated rate {FALSE_ALARM})", k, histories)
        met &= reported <= 0.05 * histories
    return met


def change_rows(histories: int, seed: int) -> None:
    for every in (1, 2):
        for mode in MODES:
            started = time.monotonic()
            quality = latency = drift = false = 0
            for s in range(histories):
                w, _, h = one(mode, True, every, seed + 10_000 + s)
                index = {c.sha: i for i, c in enumerate(h.path)}
                got_q = got_l = got_d = other = False
                for f in w.confirmed:
                    culprit = index[f.culprit.sha] if f.culprit is not None else None
                    start, end = index[f.before.sha], index[f.after.sha]
                    changed = {QUALITY_AT} if not f.latency else LATENCY_CHANGES
                    if not f.latency and f.change.kind is Kind.STEP and culprit == QUALITY_AT:
                        got_q = True
                    elif f.latency and f.change.kind is Kind.STEP and culprit == LATENCY_AT:
                        got_l = True
                    elif f.latency and f.change.kind is Kind.DRIFT and (
                        start < DRIFT[1] and end >= DRIFT[0]
                    ):
                        got_d = True
                    # a finding is false when nothing changed in its range, or its culprit
                    # did not change it
                    if not any(start < i <= end for i in changed) or (
                        culprit is not None and culprit not in changed
                    ):
                        other = True
                false += other
                quality += got_q
                latency += got_l
                drift += got_d
            what = "every commit" if every == 1 else "every second commit"
            print(
                f"changes, {mode}, busy machine, {what} measured "
                f"({time.monotonic() - started:.0f} s):"
            )
            line("hit@10 -15 pp: the step's culprit right", quality, histories, "target >= 90%")
            line("latency +30%: the step's culprit right", latency, histories, "target >= 90%")
            line("drift +4%/commit: a drift over its range", drift, histories, "target >= 80%")
            line("histories with a false report (nothing changed there)", false, histories)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=("null", "changes"))
    args = parser.parse_args(argv)
    print(
        f"harness watch, simulated: {COMMITS} commits, {QUERIES} queries, {REPEATS} repeats; "
        f"series {', '.join(METRICS)}, {LATENCY}; {args.histories} histories a row"
    )
    met = True
    if args.only in (None, "null"):
        met = null_rows(args.histories, args.seed)
    if args.only in (None, "changes"):
        change_rows(args.histories, args.seed)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
