#!/usr/bin/env python
"""Calibrate the quality verdict: its false-positive rate and power, by simulation through the
project's own decision code (`harness.verdict.decide.compare`: GoldSet and RefRuns in, the
headline verdict out).

    python scripts/calibrate.py [--sims 200] [--seed 0] [--jobs 2]
                                [--only aa|power|broken|boots|slices|mde|equivalence|holes
                                        |sequential|tail|noninferior]
                                [--mode redrawn] [--queries 300]
                                [--gate-on mrr@10 [--resamples 10000]]

Each simulated query has a relevant document at a fixed rank in 1..10 and a hit probability per
repeat, in one of three determinism modes:

- deterministic: every query hits (p = 1) or misses (p = 0), 70% hit, the same in every repeat;
- redrawn: every repeat is redrawn: each query hits with its own p in [0.2, 0.8];
- flaky 10%: deterministic, but a random 10% of queries hit with p = 0.5 in each repeat;
- per-boot 0.01, per-boot 0.03 (`--only boots`): redrawn, and every boot (repeat) shifts every
  query's hit probability by a shared normal draw of that standard deviation (an index built at
  random when the service starts): boots are a level of the test (`harness.verdict.boots`).

Scenarios: A/A (both sides the same service: any "improved" or "regressed" is a false positive),
+10 pp hit@10 (the candidate's hit probability is 0.10 higher on average: deterministic and flaky
modes turn 10% of the queries from a miss into a hit, redrawn adds 0.10 to every p; the rate of
"improved" is the power), and a broken candidate that answers nothing for 30% of searches at
random (the rate of "regressed").  Rates are printed with Wilson 95% intervals; every A/A row
also counts the compares that flagged a slice collapse and those with a row that does not decide
the headline labelled improved or regressed (now marked "not deciding"); `--only slices` runs A/As
on gold sets of one and of four slices.  `--only mde` checks the printed minimum detectable
effect: a change of the stated mde, moving a random number of queries, should be called at
least 75% of the time (80% power).  `--only equivalence` measures "no measurable difference",
an equivalence claim with its own error (`harness.verdict.equivalence`): how often a true change
of exactly the band (+5 pp, the default `min_effect`) is called so (at most alpha), and how often
A/As are, in every mode, and identical deterministic rankings at 38 to 100 queries (the band is
ruled out from 52 on).  `--only holes` (`scripts/calibrate_holes.py`): pooled gold sets
built from the baseline's top 10, and the bound of "no measurable difference" by their holes.
`--only sequential` prints the rows of `compare
--sequential`, the default, instead (`scripts/calibrate_sequential.py`); `--only tail` the latency
verdict's tail rows (`scripts/calibrate_tail.py`); `--only noninferior` the margins of `compare
--non-inferior` (`scripts/calibrate_noninferior.py`).

By default the verdict is the headline's: hit@5 and hit@10 by exact McNemar tests, nothing
resampled (so `resamples` is cut to 100 for speed).  `--gate-on METRIC` (repeatable, as
`compare --gate-on`) lets a continuous metric decide too, through its paired randomization test
with the product's default 10,000 resamples (`--resamples`), sequential stopping and grouped
draws (`harness.verdict.sequential`) and Holm across every deciding test: the calibration of
the resampled tests themselves.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from harness.values.types import GoldQuery, GoldSet, QueryResult, RefRun, Repeat, Verdict
from harness.verdict.comparison import CompareSettings
from harness.verdict.decide import compare

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibrate_headline import headline, metric_values

MODES = ("deterministic", "redrawn", "flaky 10%")
BOOT_MODES = ("per-boot 0.01", "per-boot 0.03")  # redrawn, and every boot shifts every query
SETTINGS = CompareSettings(resamples=100)  # the headline is hit@5 and hit@10: exact, unsampled


@dataclass(frozen=True)
class Scenario:
    name: str  # "A/A" | "+10 pp hit@10" | "30% empty"
    queries: int
    repeats: int
    mode: str
    wanted: Verdict  # the verdict whose rate is reported
    slices: int = 1  # the gold set's slices, of equal size


@lru_cache(maxsize=16)
def gold_set(n: int, slices: int = 1) -> GoldSet:
    queries = tuple(
        GoldQuery(
            id=f"q{i}", text=f"query {i}", relevant={f"d{i}": 1}, slice=f"s{i * slices // n}"
        )
        for i in range(n)
    )
    return GoldSet(queries, "simulated", "native", hashlib.sha256(str(n).encode()).hexdigest())


def boot_spread(mode: str) -> float:
    """The standard deviation of a boot's shift of every query's hit probability."""
    return float(mode.rpartition(" ")[2]) if mode.startswith("per-boot") else 0.0


def hit_probabilities(mode: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if mode == "deterministic":
        return (rng.random(n) < 0.7).astype(float)
    if mode == "redrawn" or mode.startswith("per-boot"):
        return rng.uniform(0.2, 0.8, n)
    p = (rng.random(n) < 0.7).astype(float)
    p[rng.random(n) < 0.10] = 0.5
    return p


def improved(
    mode: str, p: np.ndarray, rng: np.random.Generator, effect: float = 0.10
) -> np.ndarray:
    """The same queries with a hit probability `effect` higher on average."""
    if mode == "redrawn" or mode.startswith("per-boot"):
        return p + effect
    q = p.copy()
    misses = np.flatnonzero(p == 0)
    q[rng.choice(misses, size=min(len(misses), round(effect * len(p))), replace=False)] = 1.0
    return q


def effect_of(name: str) -> float:
    """The hit-rate change a scenario's name gives ("+10 pp hit@10": 0.10; "A/A": 0)."""
    return float(name[1:].split(" ")[0]) / 100 if name.startswith("+") else 0.0


_MISSED = tuple(f"x{j}" for j in range(10))  # ten irrelevant ids


def draw_hits(
    p: np.ndarray, repeats: int, rng: np.random.Generator, empty: float = 0.0, boot: float = 0.0
) -> np.ndarray:
    """repeats x queries: whether each repeat returns the query's relevant document; `empty`:
    the share of answers that are empty (no document at all); `boot`: each boot (repeat) shifts
    every query's hit probability by a shared normal draw of this standard deviation."""
    rows = []
    for _ in range(repeats):
        shift = rng.normal(0.0, boot) if boot else 0.0
        hits = rng.random(len(p)) < np.clip(p + shift, 0.0, 1.0)
        blank = rng.random(len(p)) < empty
        rows.append(np.where(blank, -1, hits.astype(np.int8)))
    return np.array(rows, dtype=np.int8)  # 1 hit, 0 miss, -1 empty


def as_run(gold: GoldSet, drawn: np.ndarray, ranks: np.ndarray, sha: str = "a") -> RefRun:
    """The RefRun of `draw_hits`' answers: ten irrelevant ids, the relevant one at its rank when
    hit, nothing when empty."""
    reps = []
    for r, row in enumerate(drawn):
        results = []
        for i, q in enumerate(gold.queries):
            ids: tuple[str, ...] = ()
            if row[i] >= 0:
                ids = _MISSED
                if row[i] == 1:
                    ids = (*ids[: ranks[i] - 1], f"d{i}", *ids[ranks[i] :])
            results.append(QueryResult(q.id, ids, status=200, latency_ns=1_000_000 + i))
        reps.append(Repeat(r, tuple(results)))
    return RefRun(sha, sha * 40, "c", gold.hash, None, "sim", {}, tuple(reps))


def run(
    gold: GoldSet,
    p: np.ndarray,
    ranks: np.ndarray,
    repeats: int,
    rng: np.random.Generator,
    empty: float = 0.0,
    sha: str = "a",
    boot: float = 0.0,
) -> RefRun:
    """`repeats` boots of one side (`draw_hits`, `as_run`)."""
    return as_run(gold, draw_hits(p, repeats, rng, empty, boot), ranks, sha)


def simulate(
    scenario: Scenario, seed: int, settings: CompareSettings = SETTINGS, *, fast: bool = False
) -> tuple[Verdict, bool, bool]:
    """One compare: its headline verdict, whether it flagged a slice collapse, and whether a
    row that does not decide the headline carries an improved or regressed label (`fast`: the
    headline alone, from the per-query values, `calibrate_headline.headline`; no slices or
    other rows, so both flags False)."""
    rng = np.random.default_rng(seed)
    gold = gold_set(scenario.queries, scenario.slices)
    p = hit_probabilities(scenario.mode, scenario.queries, rng)
    ranks = rng.integers(1, 11, scenario.queries)
    q, empty = p, 0.0
    if scenario.name.startswith("+"):
        q = improved(scenario.mode, p, rng, effect_of(scenario.name))
    elif scenario.name.startswith("30%"):
        empty = 0.30
    boot = boot_spread(scenario.mode)
    base = draw_hits(p, scenario.repeats, rng, boot=boot)
    cand = draw_hits(q, scenario.repeats, rng, empty=empty, boot=boot)
    if fast:
        verdict, _, _ = headline(
            metric_values(base == 1, ranks), metric_values(cand == 1, ranks), settings
        )
        return verdict, False, False
    c = compare(gold, as_run(gold, base, ranks), as_run(gold, cand, ranks, "b"), settings)
    called = (Verdict.IMPROVED, Verdict.REGRESSED)
    labelled = any(not r.deciding and r.verdict in called for r in c.overall.rows)
    return c.verdict_quality, bool(c.collapses), labelled


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    phat = k / n
    centre = (phat + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def scenarios(only: str | None) -> Iterator[Scenario]:
    if only in (None, "aa"):
        for n in (38, 100, 300, 1000):
            for r in (1, 3, 5):
                for mode in MODES:
                    yield Scenario("A/A", n, r, mode, Verdict.IMPROVED)  # counted: either call
    if only in (None, "power"):
        for r in (1, 3, 5, 10):
            for mode in MODES:
                yield Scenario("+10 pp hit@10", 300, r, mode, Verdict.IMPROVED)
    if only in (None, "broken"):
        for mode in MODES:
            yield Scenario("30% empty", 300, 3, mode, Verdict.REGRESSED)
    if only in (None, "boots"):
        for mode in BOOT_MODES:
            for r in (3, 5):
                yield Scenario("A/A", 300, r, mode, Verdict.IMPROVED)
        for mode in BOOT_MODES:
            for r in (3, 5):
                yield Scenario("+10 pp hit@10", 300, r, mode, Verdict.IMPROVED)
    if only in (None, "equivalence"):
        # "No measurable difference" is a claim with its own error: a true change of exactly
        # the band (0.05) must be called so at most alpha of the time; A/As should be called so
        # (at the default repeats, 5), identical rankings wherever an interval can rule it out.
        for mode in MODES:
            for r in (1, 3, 5):
                yield Scenario("+5 pp (the band)", 300, r, mode, Verdict.NO_DIFFERENCE)
        for mode in (*MODES, *BOOT_MODES):
            for r in (1, 3, 5):
                yield Scenario("A/A", 300, r, mode, Verdict.NO_DIFFERENCE)
        for n in (38, 52, 80, 100):
            yield Scenario("A/A", n, 5, "deterministic", Verdict.NO_DIFFERENCE)
    if only in (None, "slices"):
        for slices in (1, 4):
            for mode in ("deterministic", "redrawn"):
                yield Scenario("A/A", 300, 1 if mode == "deterministic" else 3, mode,
                               Verdict.IMPROVED, slices)


CHUNK = 100  # simulations per task: a row's tasks spread over the workers, rows end in order


def rate(
    scenario: Scenario,
    sims: range,
    seed: int,
    settings: CompareSettings = SETTINGS,
    fast: bool = False,
) -> tuple[Scenario, dict[str, int]]:
    """The verdicts of simulations `sims` of one scenario, counted (and "collapse": the
    compares that flagged a slice collapse; "labelled": those with a non-deciding overall row
    labelled improved or regressed)."""
    counts: dict[str, int] = {}
    for s in sims:
        verdict, collapsed, labelled = simulate(
            scenario, seed * 1_000_003 + s, settings, fast=fast
        )
        counts[verdict.value] = counts.get(verdict.value, 0) + 1
        counts["collapse"] = counts.get("collapse", 0) + collapsed
        counts["labelled"] = counts.get("labelled", 0) + labelled
    return scenario, counts


def stated_mde(queries: int, churn: float, seed: int) -> tuple[float, bool]:
    """One check of the printed mde: an A/A of `queries` deterministic queries (70% hit), a
    `churn` share of them discordant by chance (half each way), compared for the mde the report
    states; then the candidate moves each of its misses to a hit with the probability that
    raises its hit rate by that mde on average (a random number of queries, as a real change
    moves), and is compared again (the headline alone, `calibrate_headline.headline`).  The
    stated mde and whether the change was called improved."""
    rng = np.random.default_rng(seed)
    p = (rng.random(queries) < 0.7).astype(float)
    ranks = rng.integers(1, 11, queries)
    q = p.copy()
    each = round(churn * queries / 2)
    q[rng.choice(np.flatnonzero(p == 1), each, replace=False)] = 0.0
    q[rng.choice(np.flatnonzero(p == 0), each, replace=False)] = 1.0
    base = metric_values(draw_hits(p, 1, rng) == 1, ranks)
    _, _, power = headline(base, metric_values(draw_hits(q, 1, rng) == 1, ranks), SETTINGS)
    assert power is not None
    misses = np.flatnonzero(q == 0)
    moved = misses[rng.random(misses.size) < min(1.0, power.mde * queries / misses.size)]
    q[moved] = 1.0
    verdict, _, _ = headline(base, metric_values(draw_hits(q, 1, rng) == 1, ranks), SETTINGS)
    return power.mde, verdict is Verdict.IMPROVED


def mde_rows(sims: int, seed: int, jobs: int) -> int:
    """`--only mde`: how often a change of the stated mde (80% power) is called."""
    print("the stated mde (80% power) against the share of changes of that size called")
    print(f"{'queries':>7} {'churn':>6} {'sims':>5} {'mde (median)':>12} {'called':>7}  95% CI")
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for queries, churn in ((100, 0.0), (100, 0.05), (300, 0.10)):
            results = list(
                pool.map(
                    stated_mde,
                    [queries] * sims,
                    [churn] * sims,
                    [seed * 1_000_003 + s for s in range(sims)],
                    chunksize=CHUNK,
                )
            )
            called = sum(ok for _, ok in results)
            lo, hi = wilson(called, sims)
            median = float(np.median([m for m, _ in results]))
            print(
                f"{queries:>7} {churn:>6.0%} {sims:>5} {median:>12.3f} {called / sims:>7.1%}  "
                f"[{lo:.1%}, {hi:.1%}]",
                flush=True,
            )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=200, help="simulations per scenario")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--only",
        choices=(
            "aa", "power", "broken", "boots", "slices", "mde", "equivalence", "holes",
            "sequential", "tail", "noninferior",
        ),
    )
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument(
        "--fast",
        action="store_true",
        help="decide the headline from the per-query values (calibrate_headline.py): the same "
        "verdicts as compare, several times faster; no slice or other rows",
    )
    parser.add_argument("--mode", choices=MODES + BOOT_MODES, help="only this determinism mode")
    parser.add_argument("--queries", type=int, help="only scenarios with this many queries")
    parser.add_argument(
        "--gate-on",
        action="append",
        default=[],
        metavar="METRIC",
        help="also let METRIC decide (e.g. mrr@10), through its resampled test",
    )
    parser.add_argument(
        "--resamples",
        type=int,
        help="resamples of the randomization and bootstrap tests (default: 10,000 with "
        "--gate-on, else 100: the headline's tests are exact)",
    )
    args = parser.parse_args(argv)
    if args.only == "sequential":
        from calibrate_sequential import main as sequential

        return sequential(args.sims, args.seed, args.jobs)
    if args.only == "noninferior":  # compare --non-inferior (scripts/calibrate_noninferior.py)
        from calibrate_noninferior import main as noninferior

        return noninferior(args.sims, args.seed, args.jobs)
    if args.only == "tail":  # the latency verdict's tail rows (scripts/calibrate_tail.py)
        from calibrate_tail import main as tail

        return tail(["--sims", str(args.sims), "--seed", str(args.seed), "--jobs", str(args.jobs)])
    if args.only == "mde":
        return mde_rows(args.sims, args.seed, args.jobs)
    if args.only == "holes":
        from calibrate_holes import main as holes

        return holes(args.sims, args.seed, args.jobs)
    resamples = args.resamples or (10_000 if args.gate_on else SETTINGS.resamples)
    settings = CompareSettings(resamples=resamples, gate_on=tuple(args.gate_on))
    todo = [
        s
        for s in scenarios(args.only)
        if (args.mode is None or s.mode == args.mode)
        and (args.queries is None or s.queries == args.queries)
    ]
    deciding = ", ".join(["hit@5", "hit@10", *args.gate_on])
    print(f"deciding: {deciding} (Holm); {resamples:,} resamples", flush=True)
    print(
        f"{'scenario':<16} {'queries':>7} {'effect':>8} {'repeats':>7} {'determinism':<13} "
        f"{'sims':>5} {'rate':>6}  95% CI          verdicts"
    )
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        tasks = [
            [
                pool.submit(
                    rate, s, range(a, min(a + CHUNK, args.sims)), args.seed, settings, args.fast
                )
                for a in range(0, args.sims, CHUNK)
            ]
            for s in todo
        ]
        for s, parts in zip(todo, tasks, strict=True):
            counts: dict[str, int] = {}
            for part in parts:
                for key, value in part.result()[1].items():
                    counts[key] = counts.get(key, 0) + value
            collapsed, labelled = counts.pop("collapse", 0), counts.pop("labelled", 0)
            if s.name == "A/A" and s.wanted is not Verdict.NO_DIFFERENCE:
                hits = counts.get("improved", 0) + counts.get("regressed", 0)
            else:
                hits = counts.get(s.wanted.value, 0)
            lo, hi = wilson(hits, args.sims)
            what = {"A/A": "called", "+10 pp hit@10": "improved", "30% empty": "regressed"}
            what = {**what, "+5 pp (the band)": "no measurable difference"}
            if s.wanted is Verdict.NO_DIFFERENCE:
                what["A/A"] = "no measurable difference"
            effect = {"A/A": "0", "+10 pp hit@10": "+10 pp", "30% empty": "30% empty",
                      "+5 pp (the band)": "+5 pp"}[s.name]  # fmt: skip
            spread = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            extra = ""
            if s.name == "A/A":
                extra = (
                    f"; slice collapse {collapsed} ({s.slices} slice{'s' * (s.slices > 1)}), "
                    f"non-deciding row labelled {labelled} (marked: not deciding)"
                )
            print(
                f"{s.name:<16} {s.queries:>7} {effect:>8} {s.repeats:>7} {s.mode:<13} "
                f"{args.sims:>5} {hits / args.sims:>6.1%}  [{lo:.1%}, {hi:.1%}]  "
                f"{what[s.name]}; {spread}{extra}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
