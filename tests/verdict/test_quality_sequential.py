"""The anytime-valid quality rule (harness.verdict.quality_sequential) and the compare of the
queries asked (harness.verdict.asked)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import replace
from pathlib import Path

import cli_server
import numpy as np
import pytest
from oracles import tango_reference

from harness.report.page import render
from harness.results.document import comparison_from_dict, comparison_to_dict
from harness.values.answers import ErrorKind
from harness.values.types import GoldQuery, GoldSet, QueryResult, RefRun, Repeat, Verdict
from harness.verdict import asked
from harness.verdict.asked import (
    LATENCY_QUERIES,
    compare_asked,
    headline_deltas,
    plan_for,
    sequential_design,
    stop_rule,
)
from harness.verdict.comparison import CompareSettings
from harness.verdict.distributions import binomial_cdf
from harness.verdict.quality_sequential import (
    FIRST_LOOK,
    SequentialPlan,
    decide,
    mixture_log_e,
    query_order,
)

HEADLINE = ("hit@5", "hit@10")


def _kt(b: int, c: int) -> float:
    """log of the Krichevsky-Trofimov e-value on b, c discordant pairs at p = 1/2:
    2^(b+c) * B(b + 1/2, c + 1/2) / B(1/2, 1/2), with B(1/2, 1/2) = pi."""
    n = b + c
    return (
        n * math.log(2)
        + math.lgamma(b + 0.5)
        + math.lgamma(c + 0.5)
        - math.lgamma(n + 1)
        - math.log(math.pi)
    )


@pytest.mark.parametrize(("b", "c"), [(0, 0), (18, 2), (10, 0), (150, 100), (3, 3)])
def test_mixture_is_the_discordant_pairs_martingale(b: int, c: int) -> None:
    # Ties (0) multiply every bet's wealth by 1: only b and c count, in any order.
    deltas = np.array([-1.0] * b + [0.0] * 7 + [1.0] * c)
    np.random.default_rng(0).shuffle(deltas)
    assert mixture_log_e(deltas, [len(deltas)])[0] == pytest.approx(_kt(b, c), abs=1e-9)


def test_looks_start_at_the_first_and_end_at_the_gold_set() -> None:
    plan = SequentialPlan(HEADLINE, total=95, block=10)
    assert plan.looks(95) == [20, 30, 40, 50, 60, 70, 80, 90, 95]
    assert plan.looks(15) == []
    assert SequentialPlan(HEADLINE, total=300).block_size == 10
    assert SequentialPlan(HEADLINE, total=3000).block_size == 100
    assert plan.alpha_looks + plan.alpha_fixed == pytest.approx(plan.alpha)


def test_order_is_a_seeded_permutation() -> None:
    ids = [f"q{i}" for i in range(50)]
    assert sorted(query_order(ids, 3)) == sorted(ids)
    assert query_order(ids, 3) == query_order(ids, 3)
    assert query_order(ids, 3) != query_order(ids, 4)


def test_a_clear_regression_stops_at_a_block_end() -> None:
    # 1 in 5 queries lost (b), none gained: the KT e-value passes 2 m / alpha_s = 80 early.
    deltas = np.zeros(300)
    deltas[::5] = -1.0
    result = decide({m: deltas for m in HEADLINE}, SequentialPlan(HEADLINE, total=300))
    assert result.verdict is Verdict.REGRESSED
    assert result.stopped_at < 100 and result.stopped_at % 10 == 0
    assert result.stopped_early
    assert all(m.p_adjusted < 0.025 and m.delta < 0 for m in result.metrics)


def test_identical_sides_never_stop_the_looks_as_no_change() -> None:
    # "No measurable difference" is the last test's, over every query: a stop for it could
    # hide a change inside the band that the rest of the gold set would show. Each look still
    # says where the sequence lies (inside the band here, for the report).
    result = decide({m: np.zeros(300) for m in HEADLINE}, SequentialPlan(HEADLINE, total=300))
    assert result.verdict is None and result.stopped_at == 300
    assert all(m.verdict is Verdict.NO_DIFFERENCE for m in result.metrics)
    assert all(-0.05 <= m.lower < 0 < m.upper <= 0.05 for m in result.metrics)


def test_improved_waits_while_another_metric_could_hide_a_regression() -> None:
    up = np.zeros(300)
    up[::4] = 1.0
    noisy = np.random.default_rng(1).choice([-1.0, 0.0, 1.0], size=300, p=[0.3, 0.4, 0.3])
    plan = SequentialPlan(HEADLINE, total=300)
    alone = decide({"hit@5": up, "hit@10": up}, plan)
    held = decide({"hit@5": up, "hit@10": noisy}, plan)
    assert alone.verdict is Verdict.IMPROVED
    assert held.verdict is not Verdict.IMPROVED or held.metrics[1].lower > -0.1
    assert held.verdict is None or held.stopped_at > alone.stopped_at


def _naive_call(deltas: np.ndarray, looks: list[int], alpha: float) -> bool:
    """A fixed-sample exact sign test (McNemar on the discordant pairs) repeated at every look:
    what "look at the p-value after each block" gives."""
    for n in looks:
        d = deltas[:n]
        b, c = int((d < 0).sum()), int((d > 0).sum())
        if b + c and min(1.0, 2 * binomial_cdf(min(b, c), b + c, 0.5)) < alpha:
            return True
    return False


def test_false_calls_under_continuous_monitoring_stay_below_alpha() -> None:
    # A/A: each query is discordant with probability 0.4 (a nondeterministic service, R = 1),
    # either way alike.  Looked at after every block of 10 from 20 on, 300 queries.
    rng = np.random.default_rng(20261202)
    plan = SequentialPlan(("hit@10",), total=300)
    sims, rule, naive = 300, 0, 0
    for _ in range(sims):
        deltas = rng.choice([-1.0, 0.0, 1.0], size=300, p=[0.2, 0.6, 0.2])
        result = decide({"hit@10": deltas}, plan)
        rule += result.verdict in (Verdict.IMPROVED, Verdict.REGRESSED)
        naive += _naive_call(deltas, plan.looks(300), 0.05)
    # The rule spends alpha_s = 0.025 on its looks; the naive test, at 0.05 per look, calls
    # about a quarter of these A/As (the peeking problem).
    assert rule / sims <= 0.025 + 0.02
    assert naive / sims > 0.10


# --------------------------------------------------------------------------- compare_asked


def _gold(n: int) -> GoldSet:
    queries = tuple(
        GoldQuery(id=f"q{i:03d}", text=f"query {i}", relevant={f"d{i}": 1}, slice=f"s{i % 2}")
        for i in range(n)
    )
    return GoldSet(queries, "simulated", "native", "0" * 64)


def _run(gold: GoldSet, asked: list[str], lost: set[str], sha: str) -> RefRun:
    results = tuple(
        QueryResult(
            qid,
            tuple(f"x{j}" for j in range(10))
            if qid in lost
            else (f"d{int(qid[1:])}", *(f"x{j}" for j in range(9))),
            status=200,
            latency_ns=1_000_000,
        )
        for qid in asked
    )
    return RefRun(sha, sha * 40, "c", gold.hash, None, "t", {}, (Repeat(0, results),))


def _asked_compare(lost_every: int) -> tuple[GoldSet, list[str], object]:
    gold = _gold(200)
    settings = CompareSettings(resamples=200)
    order = list(query_order([q.id for q in gold.queries], settings.seed))
    lost = set(order[::lost_every])
    look = stop_rule(gold, settings, order)
    block = plan_for(gold, settings).block_size
    asked = len(order)
    for end in range(block, len(order) + block, block):
        end = min(end, len(order))
        base = [_run(gold, order[:end], set(), "a").repeats[0].results]
        cand = [_run(gold, order[:end], lost, "b").repeats[0].results]
        if look(end, [base, cand]):
            asked = end
            break
    baseline = _run(gold, order[:asked], set(), "a")
    candidate = _run(gold, order[:asked], lost, "b")
    return gold, order[:asked], compare_asked(gold, baseline, candidate, settings, order)


def test_compare_of_the_queries_asked_says_where_it_stopped() -> None:
    gold, asked, comparison = _asked_compare(lost_every=4)
    assert len(asked) < len(gold)
    assert comparison.verdict_quality is Verdict.REGRESSED  # type: ignore[attr-defined]
    seq = comparison.sequential  # type: ignore[attr-defined]
    share = 1 - len(asked) / 200
    line = f"stopped after {len(asked)} of 200 queries ({share:.0%} of the queries not asked)"
    assert seq.said == line and seq.asked == len(asked) and seq.total == 200
    # Slices are of the queries asked, with their n.
    assert sum(s.n for s in comparison.slices) == len(asked)  # type: ignore[attr-defined]
    for fmt in ("text", "markdown"):
        assert line in render(comparison, fmt)  # type: ignore[arg-type]
    # The compare's alpha, and how the rule split it (the tables are at what the looks left).
    split = "alpha 0.05 (sequential: 0.025 on the looks, 0.025 on the tables and the last test)"
    assert split in render(comparison, "text")  # type: ignore[arg-type]
    document = json.loads(render(comparison, "json"))  # type: ignore[arg-type]
    assert document["sequential"]["said"] == line
    assert document["sequential"]["asked"] == len(asked)
    again = comparison_from_dict(comparison_to_dict(comparison), "test")  # type: ignore[arg-type]
    assert again == comparison


def test_a_near_aa_asks_every_query_and_the_last_test_says_no_change_at_the_whole_alpha() -> None:
    # One query of 200 lost (order[0]): the looks never stop for "no change"; the last test
    # over all 200 queries does, its equivalence interval at the compare's alpha (90%: Tango's,
    # as the oracle's transcription gives it), not at the share the looks left (95%).
    _, asked, comparison = _asked_compare(lost_every=10_000)
    assert len(asked) == 200
    assert comparison.verdict_quality is Verdict.NO_DIFFERENCE  # type: ignore[attr-defined]
    seq = comparison.sequential  # type: ignore[attr-defined]
    assert seq.said == (
        "asked all 200 queries: the looks did not decide; the last test over all of them did"
    )
    row = comparison.overall.row("hit@5")  # type: ignore[attr-defined]
    assert row.equivalence.confidence == pytest.approx(0.90)
    low, high = tango_reference(1, 0, 200, 0.10)
    assert (row.equivalence.low, row.equivalence.high) == pytest.approx((low, high), abs=1e-7)


def test_headline_deltas_follow_the_order_asked() -> None:
    gold = _gold(30)
    order = list(query_order([q.id for q in gold.queries], 0))
    lost = {order[0], order[5]}
    base = _run(gold, order, set(), "a")
    cand = _run(gold, order, lost, "b")
    deltas = headline_deltas(gold, [base.repeats, cand.repeats], order, CompareSettings())
    expected = np.zeros(30)
    expected[[0, 5]] = -1.0
    assert deltas["hit@5"].tolist() == expected.tolist()


def test_first_look_waits_for_its_queries() -> None:
    deltas = -np.ones(FIRST_LOOK - 1)
    result = decide({m: deltas for m in HEADLINE}, SequentialPlan(HEADLINE, total=300))
    assert result.verdict is None


def _looks_until_stopped(gold: GoldSet, lost: set[str], order: list[str]) -> int:
    """The queries the runner's look (`sequential_design`) lets a compare ask."""
    block, look = sequential_design(gold, CompareSettings(resamples=200), order)
    for end in range(block, len(order) + block, block):
        answers = [[_run(gold, order[:end], miss, s).repeats[0].results]
                   for miss, s in ((set(), "a"), (lost, "b"))]
        if look(min(end, len(order)), answers):
            return min(end, len(order))
    return len(order)


@pytest.mark.parametrize("latency_queries", [LATENCY_QUERIES, 40, 70])
def test_quality_never_stops_before_the_latency_rounds_queries(
    latency_queries: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every other query lost (b = 10 of the first 20, e-value 180 > 80): the rule decides at
    # its first look, which waits for the queries a latency round needs
    # (asked.LATENCY_QUERIES); the analysis stops at the same look.
    monkeypatch.setattr(asked, "LATENCY_QUERIES", latency_queries)
    gold = _gold(200)
    order = list(query_order([q.id for q in gold.queries], 0))
    lost = set(order[::2])
    stopped = _looks_until_stopped(gold, lost, order)
    assert stopped == max(latency_queries, FIRST_LOOK)
    baseline = _run(gold, order[:stopped], set(), "a")
    candidate = _run(gold, order[:stopped], lost, "b")
    settings = CompareSettings(resamples=200)
    c = compare_asked(gold, baseline, candidate, settings, order, first=asked.LATENCY_QUERIES)
    assert c.sequential is not None and c.sequential.result.stopped_at == stopped
    assert c.verdict_quality is Verdict.REGRESSED


# --------------------------------------------------------------------------- compare's choice


def _plan(sequential: bool | None, concurrency: int = 1, ray: str | None = None) -> object:
    from types import SimpleNamespace

    from harness.driver.plan import Asked

    compare = SimpleNamespace(sequential=sequential)
    asked = Asked.of(_gold(40))
    return SimpleNamespace(
        config=SimpleNamespace(compare=compare), concurrency=concurrency, ray=ray, asked=asked
    )


def test_compare_asks_in_the_seeded_order_or_says_why_not() -> None:
    from harness.compare.measure import sequential_order

    settings = CompareSettings(seed=7)
    ids = [q.id for q in _gold(40).queries]
    assert sequential_order(_plan(False), settings, reuse=False) == (None, None)  # type: ignore[arg-type]
    order, why_not = sequential_order(_plan(True), settings, reuse=False)  # type: ignore[arg-type]
    assert (order, why_not) == (query_order(ids, 7), None)
    for plan, why in (
        (_plan(True, concurrency=4), "--concurrency N > 1"),
        (_plan(True, ray="auto"), "--ray"),
    ):
        order, why_not = sequential_order(plan, settings, reuse=False)  # type: ignore[arg-type]
        assert order is None and why_not is not None and why_not.startswith(why)
    order, why_not = sequential_order(_plan(True), settings, reuse=True)  # type: ignore[arg-type]
    assert order is None and why_not is not None and why_not.startswith("--reuse-runs")


def test_compare_says_why_not_sequential_before_it_measures(tmp_path: Path) -> None:
    # The CLI's warning, from a real `compare` that stops at its unknown ref (nothing boots).
    from harness.demo import materialise

    repo = materialise(tmp_path / "demo")
    argv = ["compare", "--baseline", "no-such-ref", "--candidate", "main", "--sequential"]
    done = cli_server.run(
        "-m harness.cli.main",
        [*argv, "--concurrency", "4", "-q", "--results", str(tmp_path / "results")],
        cwd=repo, env=os.environ, timeout=600,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[0] == (
        "harness: warning: not sequential: --concurrency N > 1 sends the queries as a burst; "
        "the whole gold set is asked (--no-sequential says so quietly)"
    )
    assert "harness: error: --baseline no-such-ref: " in done.stderr  # the option that named it
    assert "unknown ref 'no-such-ref'" in done.stderr


def test_sequential_is_the_default_and_quiet_where_it_cannot_be() -> None:
    # compare.sequential unset (None): sequential wherever it can be; where --concurrency,
    # --ray or --reuse-runs ask the whole gold set, no reason is given (nobody asked for it).
    from harness.config import CompareConfig

    assert CompareConfig().sequential is None
    from harness.compare.measure import sequential_order
    settings = CompareSettings(seed=7)
    ids = [q.id for q in _gold(40).queries]
    got = sequential_order(_plan(None), settings, reuse=False)  # type: ignore[arg-type]
    assert got == (query_order(ids, 7), None)
    for plan in (_plan(None, concurrency=4), _plan(None, ray="auto")):
        assert sequential_order(plan, settings, reuse=False) == (None, None)  # type: ignore[arg-type]
    assert sequential_order(_plan(None), settings, reuse=True) == (None, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("min_effect", [0.05, 0.03])
def test_a_sequence_ending_on_the_bands_edge_is_inside_it(min_effect: float) -> None:
    # The sequence is the open interval between its first rejected grid points: ends of exactly
    # +/- min_effect are inside the band. Compared strictly, they were not (for 0.05 and 0.03 the
    # grid arithmetic gives the edge exactly). The look says so; the rule never stops for it.
    plan = SequentialPlan(metrics=("hit@5",), total=2000, min_effect=min_effect)
    result = decide({"hit@5": np.zeros(2000)}, plan)
    assert result.verdict is None
    (look,) = result.metrics
    assert look.verdict is Verdict.NO_DIFFERENCE
    assert look.lower >= -min_effect - 1e-9 and look.upper <= min_effect + 1e-9


def test_a_sequential_compare_has_the_definition_of_a_whole_gold_set_compare() -> None:
    # The same gold set, runs and settings: one asked block by block (its last test at the
    # alpha the looks left), one of every query. `report --against` refused to diff them, "the
    # configuration differs": the definition carried the last test's alpha, 0.025, not 0.05.
    from harness.verdict.decide import compare
    from harness.verdict.same_definition import same_definition

    gold, _, comparison = _asked_compare(lost_every=4)
    order = [q.id for q in gold.queries]
    whole = compare(
        gold, _run(gold, order, set(), "a"), _run(gold, order, set(), "b"),
        CompareSettings(resamples=200),
    )
    assert "the same evaluation definition" in same_definition(comparison, "a", whole, "b")


def test_an_invalid_run_says_how_far_its_asking_got() -> None:
    # A candidate that crashed after 35 answers: not "asked all 200" (its failed repeat counted
    # for nothing), but how far the furthest repeat got.
    from dataclasses import replace as changed

    from harness.values.types import RunFailure

    gold = _gold(200)
    settings = CompareSettings(resamples=200)
    order = list(query_order([q.id for q in gold.queries], settings.seed))
    baseline = _run(gold, order[:40], set(), "a")
    crashed = _run(gold, order[:35], set(), "b")
    repeat = changed(crashed.repeats[0], failure=RunFailure("crashed", "the service exited"))
    crashed = changed(crashed, repeats=(repeat,))
    comparison = compare_asked(gold, baseline, crashed, settings, order)
    assert not comparison.valid
    assert comparison.sequential.said == (
        "the run is invalid after 40 of 200 queries asked: no verdict"
    )


def test_a_compare_that_stopped_early_warns_that_the_rest_went_unchecked() -> None:
    # A service that hangs on a query the rule never asked is not seen: said, not hidden.
    gold, asked, comparison = _asked_compare(lost_every=4)
    unasked = len(gold) - len(asked)
    assert unasked > 0
    warning = f"{unasked} queries were not asked (the rule decided first): an error or a hang"
    assert any(w.startswith(warning) for w in comparison.warnings)  # type: ignore[attr-defined]
    assert warning in render(comparison, "text")  # type: ignore[arg-type]


def _graded_gold(n: int, seed: int) -> GoldSet:
    rng = np.random.default_rng(seed)
    queries = tuple(
        GoldQuery(
            id=f"q{i:03d}",
            text=f"query {i}",
            relevant={f"d{j}": int(rng.integers(0, 4)) for j in rng.choice(30, 4, replace=False)},
            slice=f"s{i % 3}",
        )
        if i % 7
        else GoldQuery(id=f"q{i:03d}", text=f"query {i}", relevant={}, slice="none")
        for i in range(n)
    )
    return GoldSet(queries, "simulated", "native", "0" * 64)


def _answer(qid: str, rng: np.random.Generator) -> QueryResult:
    if rng.random() < 0.05:  # errored in this round
        return QueryResult(qid, (), status=500, latency_ns=1_000_000, error=ErrorKind.HTTP_STATUS)
    ids = tuple(f"d{j}" for j in rng.choice(30, 10, replace=False))
    return QueryResult(qid, ids, status=200, latency_ns=1_000_000)


@pytest.mark.parametrize("seed", range(4))
def test_the_looks_score_each_answer_once_and_say_what_scoring_all_says(seed: int) -> None:
    """LooksScored: a look scores only the answers since the last one, and its values are
    headline_values' over every query asked, look after look: answers appended (some errored,
    a side's round stopped short), and answers that are not the last look's (new objects, an
    answer replaced), which it scores afresh."""
    rng = np.random.default_rng(seed)
    gold = _graded_gold(120, seed)
    settings = CompareSettings(resamples=200, gate_on=("mrr@10", "ndcg@10"))
    order = list(query_order([q.id for q in gold.queries], seed))
    answers: list[list[list[QueryResult]]] = [[[], [], []], [[], [], []]]
    scored = asked.LooksScored(gold, settings, order)
    scoring: list[int] = []
    before = 0
    real = asked.headline_values

    def counted(gold, sides, order, settings):  # type: ignore[no-untyped-def]
        scoring.append(sum(len(rep.results) for reps in sides for rep in reps))
        return real(gold, sides, order, settings)

    for end in range(10, len(order) + 1, 10):
        for side in answers:
            for index, results in enumerate(side):
                if seed == 1 and index == 2 and end > 60:
                    continue  # this round stopped at 60 queries
                results.extend(_answer(qid, rng) for qid in order[end - 10 : end])
        if end == 80:  # every answer a new object: scored afresh
            answers = [[[replace(r) for r in results] for results in side] for side in answers]
        if end == 100:  # one earlier answer replaced
            answers[1][0][3] = _answer(answers[1][0][3].query_id, rng)
        asked.headline_values = counted
        try:
            got = scored.values(end, answers)
        finally:
            asked.headline_values = real
        sides = [[Repeat(i, tuple(r)) for i, r in enumerate(rounds)] for rounds in answers]
        want = real(gold, sides, order[:end], settings)
        assert got.keys() == want.keys()
        for metric in want:
            for a, b in zip(got[metric], want[metric], strict=True):
                assert a.shape == b.shape and np.array_equal(a, b), (metric, end)
        on_hand = sum(len(r) for side in answers for r in side)
        # Scored: every answer at the first look and after a change, else those since the last.
        assert scoring[-1] == (on_hand if end in (10, 80, 100) else on_hand - before)
        before = on_hand
