"""harness watch, fast: the scan for steps and drifts (`harness.watch.changepoint`) on
hand-made series (exact steps, ramps, staircases, seeded null series for the false-alarm rate),
the series built from history points, the confirm-then-bisect loop (`harness.watch.run`) with a
fake `compare_pair` whose Comparisons are real (`harness.verdict.decide.compare` on the
simulated services of scripts/calibrate.py), the judge's `improvement` criterion, the reports and
the history page's bands, which commits a run measures, and bad input at the CLI.  The end to end
watch of a real fixture repository is another test's (tests/watch_support.py)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import calibrate

from harness.bisect.judge import Criterion, judge
from harness.bisect.run import Commit, Outcome, StepResult
from harness.bisect.walk import Mark
from harness.history.points import Point
from harness.history.table import LATENCY, Drawn, History, aggregate
from harness.values.types import RefRun, Verdict
from harness.verdict.comparison import CompareSettings, Comparison
from harness.verdict.decide import compare
from harness.watch.changepoint import Detection, Kind, Series, changes
from harness.watch.commits import choose
from harness.watch.render import render_watch
from harness.watch.run import Watch, watch
from harness.watch.series import build

FAST = Detection(sims=500)  # 500 null series per scan: p-values to 0.002, a few ms a scan


def sha(i: int) -> str:
    """Commit i's sha: its short form (the first 8) names it."""
    return f"{i + 1:08x}" + "ab" * 16


def index(commit: Commit) -> int:
    return int(commit.sha[:8], 16) - 1


def series(
    levels: Sequence[float],
    repeats: int = 3,
    *,
    name: str = "hit@10",
    noise: float = 0.0,
    seed: int = 0,
    log_scale: bool = False,
) -> Series:
    """One value per commit: `repeats` identical repeats of its level (a deterministic service),
    or with `noise`, each repeat the level plus a normal draw of that standard deviation."""
    rng = np.random.default_rng(seed)
    values = tuple(
        tuple(float(level + (rng.normal(0.0, noise) if noise else 0.0)) for _ in range(repeats))
        for level in levels
    )
    return Series(name, tuple(sha(i) for i in range(len(levels))), values, log_scale)


def ramp(n: int, start: int, end: int, before: float, after: float) -> list[float]:
    """`before` up to commit `start`, linear to `after` at commit `end`, flat after."""
    return [
        before + (after - before) * min(1.0, max(0.0, (i - start) / (end - start)))
        for i in range(n)
    ]


# --------------------------------------------------------------------------- the scan


def test_identical_repeats_without_a_change_flag_nothing() -> None:
    assert changes(series([0.7] * 30), FAST) == ()
    assert changes(series([0.7] * 2, repeats=1), FAST) == ()


@pytest.mark.parametrize("size", [0.05, 0.10, 0.30])
@pytest.mark.parametrize("sign", [-1, 1])
def test_a_step_of_the_band_or_more_is_found_where_it_is(size: float, sign: int) -> None:
    levels = [0.6] * 12 + [0.6 + sign * size] * 18  # commit 12 changed it
    (found,) = changes(series(levels), FAST)
    assert found.kind is Kind.STEP
    assert (found.start, found.end) == (11, 12)
    assert found.delta == pytest.approx(sign * size)
    assert found.before == pytest.approx(0.6) and found.after == pytest.approx(0.6 + sign * size)
    assert found.p <= FAST.false_alarm
    assert found.largest_jump == pytest.approx(sign * size)


def test_a_step_smaller_than_the_band_is_not_flagged_even_when_exact() -> None:
    exact = series([0.70] * 12 + [0.66] * 18)  # 0.04, below the band of 0.05, and no noise
    assert changes(exact, FAST) == ()
    # It is the band that leaves it out, not the test: a band below it finds it.
    (found,) = changes(exact, replace(FAST, band=0.03))
    assert (found.start, found.end) == (11, 12) and found.delta == pytest.approx(-0.04)


def test_a_latency_step_is_a_ratio_of_the_p50s() -> None:
    ms = [10.0] * 15 + [13.0] * 15  # +30% at commit 15
    levels = [math.log(x) for x in ms]
    s = series(levels, name=LATENCY, noise=0.03, seed=1, log_scale=True)
    (found,) = changes(s, replace(FAST, band=0.10))
    assert found.kind is Kind.STEP and (found.start, found.end) == (14, 15)
    assert found.ratio == pytest.approx(1.30, abs=0.03)
    assert found.delta == pytest.approx(math.log(found.after / found.before))
    assert found.before == pytest.approx(10.0, rel=0.03)  # levels in ms, not logs
    assert found.after == pytest.approx(13.0, rel=0.03)
    # A 5% step is inside the 10% band: not looked for.
    small = series([math.log(x) for x in [10.0] * 15 + [10.5] * 15], log_scale=True)
    assert changes(small, replace(FAST, band=0.10)) == ()


@pytest.mark.parametrize(
    ("every", "start", "end"),
    [
        (1, 6, 22),  # every commit measured: 16 steps of 0.0125
        (2, 3, 11),  # every second one: a staircase of 0.025 steps the scan cuts into pieces
    ],
)
def test_a_ramp_of_sub_band_steps_is_one_drift_over_its_range(
    every: int, start: int, end: int
) -> None:
    levels = ramp(30, 6, 22, 0.80, 0.60)[::every]
    found = changes(series(levels), FAST)
    assert [c.kind for c in found] == [Kind.DRIFT]
    (drift,) = found
    assert abs(drift.start - start) <= 1 and abs(drift.end - end) <= 1
    assert drift.start <= start + 1 and drift.end >= end - 1
    assert abs(drift.largest_jump) < FAST.band  # no single commit made it
    # The drift's size is the whole ramp's, from the level before to the level after it.
    assert drift.delta == pytest.approx(-0.20, abs=0.015)
    assert drift.delta == pytest.approx(drift.after - drift.before)


def test_a_latency_drift_says_its_whole_ratio() -> None:
    ms = [10.0 * 1.03 ** min(10, max(0, i - 8)) for i in range(30)]  # +3% a commit, 8 to 18
    s = series([math.log(x) for x in ms][::2], name=LATENCY, log_scale=True)
    (drift,) = changes(s, replace(FAST, band=0.10))
    assert drift.kind is Kind.DRIFT
    assert drift.ratio == pytest.approx(1.03**10, rel=0.03)
    assert drift.ratio == pytest.approx(drift.after / drift.before)


def test_a_step_next_to_a_drift_is_one_step_and_one_drift() -> None:
    step = [0.9 if i < 8 else 0.8 for i in range(30)]
    drift = ramp(30, 16, 26, 0.0, -0.10)
    found = changes(series([a + b for a, b in zip(step, drift, strict=True)]), FAST)
    assert [c.kind for c in found] == [Kind.STEP, Kind.DRIFT]
    assert (found[0].start, found[0].end) == (7, 8)
    assert found[0].delta == pytest.approx(-0.10, abs=0.01)
    assert abs(found[1].start - 16) <= 1 and abs(found[1].end - 26) <= 1
    assert found[1].delta == pytest.approx(-0.10, abs=0.01)


def test_a_level_that_leaves_for_two_commits_and_comes_back_is_not_a_change() -> None:
    # Two commits measured while the machine was busy (or a change reverted at once): set
    # aside, the series scanned again without them.
    away = [0.7] * 6 + [0.3] * 2 + [0.7] * 6
    assert changes(series(away), FAST) == ()
    # A lasting step after it is still found, at its own place and size.
    (found,) = changes(series([*away, *[0.6] * 6]), FAST)
    assert (found.start, found.end) == (13, 14) and found.delta == pytest.approx(-0.1)
    # Three commits away is a change there and one back.
    there, back = changes(series([0.7] * 6 + [0.3] * 3 + [0.7] * 6), FAST)
    assert (there.start, there.end, back.start, back.end) == (5, 6, 8, 9)


def null_series(seed: int, tau: float, sigma: float, commits: int = 30, repeats: int = 3) -> Series:
    """No change: each commit's level 0.7 plus a between-commit draw (sd `tau`: the machine
    when it was measured), each repeat plus its own draw (sd `sigma`)."""
    rng = np.random.default_rng(seed)
    between = rng.normal(0.0, tau, commits)
    values = tuple(
        tuple(float(0.7 + between[i] + rng.normal(0.0, sigma)) for _ in range(repeats))
        for i in range(commits)
    )
    return Series("hit@10", tuple(sha(i) for i in range(commits)), values)


def flag_rate(n: int, rate: float, tau: float, sigma: float) -> tuple[int, float]:
    """(series flagged of `n` null series, the most a binomial(n, rate) reaches but for 0.1%)."""
    d = Detection(false_alarm=rate, band=0.0, sims=500)
    flagged = sum(bool(changes(null_series(s, tau, sigma), replace(d, seed=s))) for s in range(n))
    return flagged, n * rate + 3.1 * math.sqrt(n * rate * (1 - rate))


@pytest.mark.parametrize(
    ("tau", "sigma"),
    [
        (0.0, 0.02),  # repeat noise only
        (0.05, 0.02),  # the machine's drift between commits dominates
        (0.002, 0.02),  # a little of both
    ],
)
def test_the_false_alarm_rate_holds_over_null_series(tau: float, sigma: float) -> None:
    # band 0: every split is looked at, so only the test's rate stands between noise and a flag.
    flagged, most = flag_rate(200, 0.05, tau, sigma)
    assert flagged <= most, (flagged, most)


@pytest.mark.slow  # 1,000 null series through the Monte Carlo scan
def test_the_false_alarm_rate_holds_when_both_noises_are_alike() -> None:
    flagged, most = flag_rate(1000, 0.01, 0.01, 0.02)
    assert flagged <= most, (flagged, most)


def test_the_same_input_and_seed_give_the_same_changes() -> None:
    levels = [0.7] * 10 + [0.62] * 10 + ramp(20, 4, 16, 0.62, 0.5)
    s = series(levels, noise=0.01, seed=3)
    first = changes(s, replace(FAST, seed=7))
    assert first  # something to compare
    assert changes(s, replace(FAST, seed=7)) == first
    again = series(levels, noise=0.01, seed=3)
    assert changes(again, replace(FAST, seed=7)) == first


def test_a_series_of_bad_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="one tuple of repeats per commit"):
        Series("hit@10", (sha(0), sha(1)), ((0.5,),))
    with pytest.raises(ValueError, match="at least one repeat"):
        Series("hit@10", (sha(0), sha(1)), ((0.5,), ()))


def test_the_scan_and_the_series_do_no_io() -> None:
    from purity import impurities

    found = impurities("harness.watch.changepoint", "harness.watch.series")
    assert found == {"harness.watch.changepoint": [], "harness.watch.series": []}


# --------------------------------------------------------------------------- the series


def point(
    sha_: str,
    *,
    when: str = "1",
    repeats: dict[str, tuple[float, ...]] | None = None,
    p50s: tuple[float, ...] = (),
) -> Point:
    return Point(
        sha=sha_,
        ref=sha_[:8],
        when=when,
        source=f"run_{when}.json",
        gold_hash="g" * 64,
        repeats=max([len(v) for v in (repeats or {}).values()] + [len(p50s)]),
        repeat_means=repeats or {},
        latency_p50s=p50s,
    )


def test_series_pool_the_repeats_of_every_record_of_a_commit() -> None:
    order = [sha(0), sha(1), sha(2)]
    points = [
        point(sha(0), repeats={"hit@5": (0.8, 0.9)}, p50s=(10.0, 12.0)),
        point(sha(0), when="2", repeats={"hit@5": (0.7,)}, p50s=(11.0,)),
        point(sha(1), repeats={"hit@5": (0.6, 0.5)}, p50s=(20.0, 0.0)),  # a boot with no p50
        point(sha(2), p50s=(30.0,)),  # no hit@5 value: out of that series only
    ]
    by_name = {s.name: s for s in build(points, order, ["hit@5"])}
    assert list(by_name) == ["hit@5", LATENCY]
    hit = by_name["hit@5"]
    assert hit.shas == (sha(0), sha(1)) and not hit.log_scale
    assert hit.values == ((0.8, 0.9, 0.7), (0.6, 0.5))
    latency = by_name[LATENCY]
    assert latency.shas == (sha(0), sha(1), sha(2)) and latency.log_scale
    logs = [math.log(x) for x in (10.0, 12.0, 11.0)]
    assert latency.values == (tuple(logs), (math.log(20.0),), (math.log(30.0),))


def test_series_follow_the_given_order_not_the_points() -> None:
    order = [sha(0), sha(1), sha(2)]
    points = [point(sha(i), repeats={"hit@5": (0.1 * i,)}) for i in (2, 0, 1)]
    (hit,) = build(points, order, ["hit@5"])
    assert hit.shas == tuple(order) and hit.values == ((0.0,), (0.1,), (0.2,))


def test_fewer_than_two_commits_make_no_series() -> None:
    order = [sha(0), sha(1)]
    assert build([point(sha(0), repeats={"hit@5": (0.5,)}, p50s=(9.0,))], order, ["hit@5"]) == []
    points = [
        point(sha(0), repeats={"hit@5": (0.5,)}, p50s=(9.0,)),
        point(sha(1), p50s=(9.5,)),
        point(sha(5), repeats={"hit@5": (0.5,)}),  # not on the path: not part of any series
    ]
    assert [s.name for s in build(points, order, ["hit@5"])] == [LATENCY]


# --------------------------------------------------------------------------- confirm and bisect


QUERIES = 100
SETTINGS = CompareSettings(resamples=100, k=(10,))  # hit@10 decides: exact, nothing resampled


@dataclass
class Branch:
    """A simulated branch: per commit the true hit probabilities of its 100 queries
    (deterministic: each query always or never answered) and its latency cost; a fake
    `compare_pair` that compares two commits by `harness.verdict.decide.compare` on fresh runs
    and records each pair it was asked."""

    p: list[np.ndarray]
    ranks: np.ndarray
    cost: list[float] = field(default_factory=list)
    compared: list[tuple[int, int]] = field(default_factory=list)

    @property
    def path(self) -> tuple[Commit, ...]:
        return tuple(Commit(sha(i), f"commit {i}") for i in range(len(self.p)))

    def level(self, i: int) -> float:
        return float(np.mean(self.p[i]))  # hit@10: every relevant answer is in the top 10

    def series(self, measured: Sequence[int], name: str = "hit@10") -> Series:
        values = tuple((self.level(i),) * 3 for i in measured)
        return Series(name, tuple(sha(i) for i in measured), values)

    def latency_series(self, measured: Sequence[int]) -> Series:
        values = tuple((math.log(5.0 * self.cost[i]),) * 3 for i in measured)
        return Series(LATENCY, tuple(sha(i) for i in measured), values, log_scale=True)

    def pair(self, before: Commit, after: Commit) -> StepResult:
        a, b = index(before), index(after)
        self.compared.append((a, b))
        rng = np.random.default_rng([a, b])
        gold = calibrate.gold_set(QUERIES)
        base = calibrate.run(gold, self.p[a], self.ranks, 3, rng)
        cand = calibrate.run(gold, self.p[b], self.ranks, 3, rng, sha="b")
        c = compare(gold, base, cand, SETTINGS)
        if self.cost:  # the latency verdict as compare would give it for the true ratio
            ratio = self.cost[b] / self.cost[a]
            verdict = Verdict.NO_DIFFERENCE
            if abs(math.log(ratio)) > math.log(1.1):
                verdict = Verdict.REGRESSED if ratio > 1 else Verdict.IMPROVED
            c = replace(c, verdict_latency=verdict, latency_reason=f"p50 x{ratio:.2f}")
        return StepResult(c, (base, cand))


def branch(
    commits: int = 20, *, at: int | None = None, hits: int = 0, drift: tuple[int, int] | None = None
) -> Branch:
    """`hits` answers lost (negative: gained) from commit `at` on; with `drift`, one answer lost
    at each commit of (first, last]."""
    rng = np.random.default_rng(0)
    p0 = (rng.random(QUERIES) < 0.7).astype(float)
    answered, missed = np.flatnonzero(p0 == 1), np.flatnonzero(p0 == 0)
    ps = []
    for i in range(commits):
        p = p0.copy()
        if at is not None and i >= at:
            if hits > 0:
                p[answered[:hits]] = 0.0
            else:
                p[missed[:-hits]] = 1.0
        lost = 0 if drift is None else min(max(i, drift[0]), drift[1]) - drift[0]
        if lost:
            p[answered[-lost:]] = 0.0
        ps.append(p)
    return Branch(ps, rng.integers(1, 11, QUERIES))


def watched(b: Branch, measured: Sequence[int], names: Sequence[str] = ("hit@10",)) -> Watch:
    found = [b.series(measured, name) for name in names]
    if b.cost:
        found.append(b.latency_series(measured))
    detections = {s.name: replace(FAST, band=0.10 if s.log_scale else 0.05) for s in found}
    return watch(b.path, found, detections, b.pair, latency_name=LATENCY)


EVERY_FOURTH = [0, 4, 8, 12, 16, 19]


def test_a_step_between_adjacent_measured_commits_is_its_own_culprit() -> None:
    b = branch(at=12, hits=20)
    w = watched(b, range(20))
    (f,) = w.findings
    assert f.change.kind is Kind.STEP and f.confirmed and f.regression
    assert (f.before, f.after, f.commits) == (b.path[11], b.path[12], 1)
    assert f.culprit == b.path[12] and f.bisection is None
    assert f.judgement.verdict is Verdict.REGRESSED
    assert b.compared == [(11, 12)]  # the confirming compare only
    assert w.regressions == (f,) and w.confirmed == (f,)


@pytest.fixture(scope="module")
def bisected() -> tuple[Branch, Watch]:
    """-20 answers at commit 10, every fourth commit measured: flagged over (8, 12]."""
    b = branch(at=10, hits=20)
    return b, watched(b, EVERY_FOURTH)


def test_a_step_over_unmeasured_commits_is_bisected_inside_its_range(
    bisected: tuple[Branch, Watch],
) -> None:
    b, w = bisected
    (f,) = w.findings
    assert (f.before, f.after, f.commits) == (b.path[8], b.path[12], 4)
    assert f.confirmed and f.bisection is not None
    assert f.bisection.outcome is Outcome.FOUND and f.culprit == b.path[10]
    assert f.bisection.criterion == Criterion(metric="hit@10")
    # Every compare lies inside the flagged range: the good end against a commit of (8, 12].
    assert b.compared[0] == (8, 12)
    assert all(a == 8 and 9 <= c <= 12 for a, c in b.compared), b.compared
    assert len(b.compared) == len(set(b.compared))  # the confirming compare reused, not redone
    assert len(b.compared) <= 1 + math.ceil(math.log2(4))


def test_a_range_flagged_by_several_series_is_compared_once() -> None:
    b = branch(at=12, hits=20)
    # recall@10 is hit@10 for one relevant answer a query: both series flag (11, 12].
    w = watched(b, range(20), names=("hit@10", "recall@10"))
    assert [f.change.series for f in w.findings] == ["hit@10", "recall@10"]
    assert all(f.confirmed and f.culprit == b.path[12] for f in w.findings)
    assert b.compared == [(11, 12)]


def test_a_flag_the_fresh_compare_does_not_call_is_not_a_change() -> None:
    b = branch()  # nothing changed: the levels moved only in the history (a busy machine)
    levels = [0.7] * 12 + [0.6] * 8
    s = Series("hit@10", tuple(sha(i) for i in range(20)), tuple((x,) * 3 for x in levels))
    w = watch(b.path, [s], {"hit@10": FAST}, b.pair, latency_name=LATENCY)
    (f,) = w.findings
    assert f.change.kind is Kind.STEP and f.regression
    assert f.judgement.verdict is Verdict.NO_DIFFERENCE
    assert not f.confirmed and f.culprit is None and f.bisection is None
    assert w.confirmed == () and w.regressions == ()
    assert (11, 12) in b.compared
    assert "no confirmed change" in render_watch(w, "text")


def test_an_improvement_is_confirmed_and_bisected_as_one() -> None:
    b = branch(at=10, hits=-20)
    w = watched(b, EVERY_FOURTH)
    (f,) = w.findings
    assert f.change.delta > 0 and not f.regression
    assert f.confirmed and f.judgement.verdict is Verdict.IMPROVED
    assert f.bisection is not None
    assert f.bisection.criterion == Criterion(metric="hit@10", improvement=True)
    assert f.bisection.outcome is Outcome.FOUND and f.culprit == b.path[10]
    assert w.confirmed == (f,) and w.regressions == ()
    assert "no regression; 1 confirmed improvement" in render_watch(w, "text")


def test_a_drift_is_confirmed_by_its_ends_and_has_no_culprit() -> None:
    b = branch(drift=(5, 15))  # one answer lost at each commit 6..15: 1 pp each, 10 in all
    w = watched(b, range(20))
    (f,) = w.findings
    assert f.change.kind is Kind.DRIFT
    start, end = index(f.before), index(f.after)
    assert abs(start - 5) <= 1 and abs(end - 15) <= 1
    assert f.commits == end - start
    assert f.confirmed and f.regression and f.judgement.verdict is Verdict.REGRESSED
    assert f.culprit is None and f.bisection is None
    # Confirmed by the compare of its ends; any compare after it (looking for one commit that
    # did it all) stays inside the range.
    assert b.compared[0] == (start, end)
    assert all(start <= a < c <= end for a, c in b.compared), b.compared
    assert "drift over" in render_watch(w, "text")


def test_a_drift_that_one_commit_made_is_reported_as_that_step() -> None:
    b = branch(at=10, hits=20)  # the truth: one step at commit 10
    s = series(ramp(20, 6, 14, 0.63, 0.43))  # the history saw a ramp (a busy machine)
    w = watch(b.path, [s], {"hit@10": FAST}, b.pair, latency_name=LATENCY)
    (f,) = w.findings
    assert f.change.kind is Kind.STEP and (index(f.before), index(f.after)) == (9, 10)
    assert f.confirmed and f.culprit == b.path[10] and f.commits == 1
    assert b.compared[0] == (6, 14)  # the drift's ends called it first
    assert (9, 10) in b.compared  # then the culprit against its own parent
    assert all(6 <= a < c <= 14 for a, c in b.compared), b.compared


def history_of_two_steps() -> Series:
    """The history saw two steps of 0.06 (after commits 8 and 12): a slow drift cut in two."""
    levels = [0.70] * 9 + [0.64] * 4 + [0.58] * 7
    return Series("hit@10", tuple(sha(i) for i in range(20)), tuple((x,) * 3 for x in levels))


def test_neighbouring_steps_no_compare_called_are_tried_as_one_drift() -> None:
    b = branch(drift=(4, 16))  # the truth: one answer lost at each commit 5..16
    w = watch(b.path, [history_of_two_steps()], {"hit@10": FAST}, b.pair, latency_name=LATENCY)
    (f,) = w.findings
    start, end = index(f.before), index(f.after)
    assert f.change.kind is Kind.DRIFT and start <= 8 and end >= 13  # over both steps
    assert f.confirmed and f.regression and f.culprit is None and f.bisection is None
    # Each step's own compare (one answer lost) called nothing; the drift's ends did.
    assert b.compared[:3] == [(8, 9), (12, 13), (start, end)]
    assert all(start <= a < c <= end for a, c in b.compared[3:]), b.compared


def test_steps_whose_drift_is_not_called_either_stay_unconfirmed_steps() -> None:
    b = branch()  # nothing changed at all
    w = watch(b.path, [history_of_two_steps()], {"hit@10": FAST}, b.pair, latency_name=LATENCY)
    assert [(f.change.kind, index(f.before), index(f.after)) for f in w.findings] == [
        (Kind.STEP, 8, 9),
        (Kind.STEP, 12, 13),
    ]
    assert w.confirmed == ()


def test_latency_up_is_a_regression_and_down_an_improvement() -> None:
    b = branch()
    b.cost = [1.0] * 8 + [1.3] * 6 + [1.0] * 6  # +30% at commit 8, back at 14
    w = watched(b, range(20))
    latency = [f for f in w.findings if f.latency]
    assert [(f.before, f.after) for f in latency] == [
        (b.path[7], b.path[8]),
        (b.path[13], b.path[14]),
    ]
    up, down = latency
    assert up.regression and up.confirmed and up.culprit == b.path[8]
    assert up.change.ratio == pytest.approx(1.3)
    assert not down.regression and down.confirmed and down.judgement.verdict is Verdict.IMPROVED
    assert w.regressions == (up,)
    text = render_watch(w, "text")
    assert "least step looked for: hit@10 ±0.05, latency p50 ms ±10%" in text
    assert "5.00 ms -> 6.50 ms (1.30x)" in text


# --------------------------------------------------------------------------- the judge


@pytest.fixture(scope="module")
def three_comparisons() -> dict[str, tuple[Comparison, tuple[RefRun, RefRun]]]:
    rng = np.random.default_rng(5)
    gold = calibrate.gold_set(QUERIES)
    p = calibrate.hit_probabilities("deterministic", QUERIES, rng)
    ranks = rng.integers(1, 11, QUERIES)
    better = p.copy()
    better[np.flatnonzero(p == 0)[:20]] = 1.0
    worse = p.copy()
    worse[np.flatnonzero(p == 1)[:20]] = 0.0
    out = {}
    for name, q in (("improved", better), ("same", p), ("regressed", worse)):
        base = calibrate.run(gold, p, ranks, 3, rng)
        cand = calibrate.run(gold, q, ranks, 3, rng, sha="b")
        out[name] = (compare(gold, base, cand, SETTINGS), (base, cand))
    return out


def test_seeking_an_improvement_marks_improved_bad_and_regressed_skip(
    three_comparisons: dict[str, tuple[Comparison, tuple[RefRun, RefRun]]],
) -> None:
    seeking = Criterion(metric="hit@10", improvement=True)
    plain = Criterion(metric="hit@10")
    wanted = {
        "improved": (Verdict.IMPROVED, Mark.BAD, Mark.GOOD),
        "same": (Verdict.NO_DIFFERENCE, Mark.GOOD, Mark.GOOD),
        "regressed": (Verdict.REGRESSED, Mark.SKIP, Mark.BAD),
    }
    for name, (verdict, mark, plain_mark) in wanted.items():
        comparison, runs = three_comparisons[name]
        got = judge(comparison, runs, seeking)
        assert (got.verdict, got.mark) == (verdict, mark), name
        assert judge(comparison, runs, plain).mark is plain_mark, name


def test_a_criterion_names_the_improvement_it_seeks() -> None:
    assert str(Criterion(metric="hit@5", improvement=True)) == "hit@5 (improvement)"
    assert str(Criterion(latency=True, improvement=True)) == "latency (improvement)"
    assert str(Criterion(metric="hit@5")) == "hit@5"


# --------------------------------------------------------------------------- reports


def test_the_json_report_carries_every_finding_with_its_culprit(
    bisected: tuple[Branch, Watch],
) -> None:
    b, w = bisected
    culprit = b.path[10]
    document = json.loads(render_watch(w, "json", measured_now=[b.path[19]]))
    assert document["schema_version"] == 1
    assert document["regressions"] == 1
    assert document["measured"] == [sha(i) for i in EVERY_FOURTH]
    assert document["measured_now"] == [sha(19)]
    (finding,) = document["findings"]
    assert finding["series"] == "hit@10" and finding["kind"] == "step"
    assert finding["confirmed"] is True and finding["regression"] is True
    assert finding["before"]["sha"] == sha(8) and finding["after"]["sha"] == sha(12)
    assert finding["culprit"] == {"sha": culprit.sha, "subject": culprit.subject}
    assert finding["bisection"]["outcome"] == "found"
    assert finding["delta"] == pytest.approx(-0.20)


def test_text_and_markdown_name_the_confirmed_regression_and_its_culprit(
    bisected: tuple[Branch, Watch],
) -> None:
    b, w = bisected
    culprit = b.path[10]
    for fmt in ("text", "markdown"):
        out = render_watch(w, fmt, failed=[b.path[3]])
        assert "1 confirmed regression" in out, fmt
        assert culprit.short in out and culprit.subject in out, fmt
        assert f"{b.path[8].short}..{b.path[12].short}" in out, fmt
        assert "bisect inside the range: found" in out, fmt
        assert "could not be measured" in out and b.path[3].short in out, fmt
    assert render_watch(w, "markdown").startswith("## harness watch")


def test_an_unknown_format_is_refused(bisected: tuple[Branch, Watch]) -> None:
    with pytest.raises(ValueError, match="unknown format 'html'"):
        render_watch(bisected[1], "html")


def history_with_changes() -> History:
    points = [
        Point(
            sha=sha(i),
            ref=f"c{i}",
            when=f"{i:04d}",
            source=f"run_{i}.json",
            gold_hash="g" * 64,
            repeats=2,
            per_query={"hit@5": {"q1": 1.0, "q2": 1.0 if i < 3 else 0.0}},
            latency_p50s=(10.0, 11.0),
        )
        for i in range(6)
    ]
    h = aggregate(points, ["hit@5"], [sha(i) for i in range(6)])
    drawn = (
        Drawn("hit@5", sha(2), sha(3), "step -0.500: regression, deadbeef", True, True),
        Drawn("no such series", sha(0), sha(1), "never drawn", True, True),
    )
    return replace(h, changes=drawn)


def test_the_history_page_draws_each_change_as_a_band_on_its_panel() -> None:
    from harness.history.render import figure, render_history

    h = history_with_changes()
    page = render_history(h, "html")
    assert "step -0.500: regression, deadbeef" in page
    assert "never drawn" not in page  # a series with no panel draws nothing
    fig = figure(h)
    (band,) = fig.layout.shapes
    assert (band.x0, band.x1) == (2, 3)  # the rows of its two commits
    assert band.fillcolor == "#c62828"  # a confirmed regression is red
    assert (band.xref, band.yref) == ("x", "y domain")  # the whole height of the first panel
    (label,) = [a for a in fig.layout.annotations if a.text.startswith("step")]
    assert label.text == "step -0.500: regression, deadbeef"


# --------------------------------------------------------------------------- what to measure


PATH = tuple(Commit(sha(i), f"commit {i}") for i in range(10))


def test_choose_takes_the_newest_unmeasured_within_the_budget() -> None:
    measured = {sha(9), sha(7)}
    assert [c.sha for c in choose(PATH, measured, 3)] == [sha(8), sha(6), sha(5)]
    assert choose(PATH, {c.sha for c in PATH}, 3) == []
    assert len(choose(PATH, set(), 50)) == 10  # fewer waiting than the budget: all of them


def test_spread_takes_evenly_spaced_commits_from_the_newest() -> None:
    assert [c.sha for c in choose(PATH, set(), 4, spread=True)] == [sha(9), sha(6), sha(3), sha(0)]
    assert [c.sha for c in choose(PATH, set(), 1, spread=True)] == [sha(9)]
    # Spread over the unmeasured ones only, never one already measured.
    measured = {sha(9), sha(8), sha(4)}
    picked = choose(PATH, measured, 3, spread=True)
    assert [c.sha for c in picked] == [sha(7), sha(3), sha(0)]
    assert len(picked) == len(set(picked))


# --------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--budget", "0"], "--budget"),
        (["--budget", "ten"], "--budget"),
        (["--depth", "-1"], "--depth"),
        (["--false-alarm", "2"], "--false-alarm"),
        (["--false-alarm", "0"], "--false-alarm"),
    ],
)
def test_bad_options_are_exit_2_naming_the_option(
    argv: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(["watch", *argv])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: " in err and "Traceback" not in err


def test_watch_help_lists_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(["watch", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert all(o in out for o in ("--budget", "--spread", "--false-alarm", "--ref"))
