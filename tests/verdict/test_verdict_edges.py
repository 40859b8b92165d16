"""harness.verdict edges the mutation run (scripts/mutate.py) found unpinned, each one able to
change what `compare` or `run` reports: the settings taken from the config, k = 1 being a valid
cutoff, and what summarise_run scores (the relevance level, a single repeat, slices after one with
only unanswerable queries, hit drift between repeats, latencies that were not measured)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from compare_support import make_gold, make_run

from harness.config.values import CompareConfig
from harness.values.types import GoldQuery, GoldSet, RefRun
from harness.verdict.comparison import CompareSettings
from harness.verdict.decide import summarise_run


def test_settings_from_config_carry_every_field() -> None:
    config = CompareConfig(
        repeats=5, k=(3, 7), alpha=0.01, latency_tolerance=0.2, max_errors=4, seed=9
    )
    s = CompareSettings.from_config(
        config, gate_on=("mrr@7",), query_differences=("x",), rel_level=2
    )
    assert (s.k, s.alpha, s.latency_tolerance, s.max_errors, s.seed) == ((3, 7), 0.01, 0.2, 4, 9)
    assert (s.rel_level, s.gate_on, s.query_differences) == (2, ("mrr@7",), ("x",))
    assert CompareSettings.from_config(config).rel_level == 1


def test_k_of_1_is_a_cutoff_and_0_is_not() -> None:
    assert CompareSettings(k=(1,)).k == (1,)
    assert CompareSettings(k=(1, 2)).k == (1, 2)
    with pytest.raises(ValueError):
        CompareSettings(k=(0,))


def _graded() -> GoldSet:
    """Slices (shown in sorted order): "a-graded" (4 queries judged 1 and 2), "b-none" (only an
    unanswerable query), "c-late" (1 query); a scope list must go on past "b-none"."""
    graded = tuple(
        GoldQuery(f"q{i}", f"text {i}", slice="a-graded", relevant={f"q{i}-rel": 1, f"q{i}-top": 2})
        for i in range(1, 5)
    )
    rest = (
        GoldQuery("u1", "no answer", slice="b-none"),
        GoldQuery("z1", "last", slice="c-late", relevant={"z1-rel": 1}),
    )
    return GoldSet((*graded, *rest), source="<memory>", format="native", hash="g")


def _run(gold: GoldSet, repeats: int, hit_in: dict[str, set[int]] | None = None) -> RefRun:
    """Each answerable query's "-rel" document first, except in the repeats `hit_in` leaves out."""

    def rank(rep: int, q: GoldQuery) -> int | None:
        return 1 if hit_in is None or rep in hit_in.get(q.id, {rep}) else None

    return make_run(gold, rank, repeats=repeats)


def test_summarise_run_scores_at_the_settings_relevance_level() -> None:
    gold = _graded()
    run = _run(gold, 1)  # "-rel" (grade 1) first, "-top" (grade 2) never returned
    at_1 = dict(summarise_run(gold, run, CompareSettings(k=(5,))).scopes[0][2])
    at_2 = dict(summarise_run(gold, run, CompareSettings(k=(5,), rel_level=2)).scopes[0][2])
    assert at_1["hit@5"] == 1.0
    # At level 2 only "-top" counts: the 4 graded queries miss, z1 has nothing relevant.
    assert at_2["hit@5"] == 0.0


def test_a_single_repeat_is_scored_and_every_answerable_slice_shown() -> None:
    gold = _graded()
    summary = summarise_run(gold, _run(gold, 1), CompareSettings(k=(5,)))
    assert [(name, n) for name, n, _ in summary.scopes] == [
        ("all", 5),
        ("a-graded", 4),
        ("c-late", 1),
    ]
    assert summary.drift == {"hit@5": 0}


def test_hit_drift_counts_queries_that_differ_between_repeats() -> None:
    gold = make_gold()
    run = make_run(
        gold, lambda rep, q: None if (rep == 1 and q.id in ("q03", "q07")) else 1, repeats=3
    )
    summary = summarise_run(gold, run, CompareSettings(k=(5,)))
    assert summary.drift == {"hit@5": 2}
    assert dict(summary.scopes[0][2])["hit@5"] == pytest.approx(1 - 2 / 80 / 3)


def test_latency_is_over_measured_answers_only() -> None:
    gold = make_gold()
    run = make_run(gold, lambda rep, q: 1, repeats=1, ms=lambda rep, q: 0.0)
    assert summarise_run(gold, run, CompareSettings()).latency is None  # nothing was timed
    one_ns = replace(
        run,
        repeats=tuple(
            replace(rep, results=tuple(replace(r, latency_ns=1) for r in rep.results))
            for rep in run.repeats
        ),
    )
    latency = summarise_run(gold, one_ns, CompareSettings()).latency
    assert latency is not None and latency.n == len(gold.queries)
