"""harness.verdict.decide: verdicts from in-memory RefRuns of a synthetic gold set (no services).

The gold set has 80 answerable queries q01..q80 (slices: news q01-q40, howto q41-q70, rare
q71-q80), each with one relevant document "<qid>-rel", and 6 unanswerable queries u1..u6 (slice
news).  A side's answers come from a function (repeat, query) -> rank of the relevant document
(None: not returned), so every expectation below is counted by hand from that function
(the builders: tests/compare_support.py).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from compare_support import (
    CAND_SHA,
    FAST,
    Rank,
    base_ms,
    buried,
    candidate,
    make_gold,
    make_run,
    ranks,
    run_pair,
)
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import mcnemar, multipletests, tango_reference
from purity import PURE_LIBRARIES, imported_modules

from harness.cli.exits import EXIT_INVALID, EXIT_OK, EXIT_REGRESSED, exit_status
from harness.config import CompareConfig
from harness.errors import ConfigError
from harness.report.page import render
from harness.values.types import (
    ErrorKind,
    GoldQuery,
    Machine,
    RefRun,
    RunFailure,
    Verdict,
)
from harness.verdict import comparison as comparison_module
from harness.verdict import decide
from harness.verdict.comparison import CompareSettings, Direction
from harness.verdict.comparison import Machine as ComparisonMachine
from harness.verdict.decide import compare
from harness.verdict.latency_rule import ALPHA
from harness.verdict.power import detectable_exact, exact_power

# --------------------------------------------------------------------------- purity


def test_compare_imports_nothing_that_does_io() -> None:
    package = Path(decide.__file__).parent  # harness/verdict/: the rules
    sources = [*sorted(package.glob("*.py")), Path(comparison_module.__file__)]  # and the values
    assert len(sources) > 2
    imported = imported_modules(*sources)
    pure = {"harness", "harness.values.types", "harness.values.answers", "harness.errors"}
    pure |= {"harness.verdict"}
    pure |= {"harness.score.metrics", "harness.score.evaluation", "harness.verdict.threshold"}
    pure |= {"harness.score.judged"}
    pure |= {"harness.score.definition", "harness.text.control_chars"}  # re only: text made safe
    # values moved below the stages, pure too
    pure |= {"harness.values.swing", "harness.values.budget"}
    pure |= {f"harness.verdict.{source.stem}" for source in sources if source.parent == package}
    runtime = imported - {"harness.config"}  # CompareConfig, imported under TYPE_CHECKING only
    assert runtime <= pure | PURE_LIBRARIES, sorted(imported)
    assert "CompareConfig" not in vars(decide)  # so not imported at run time
    assert "CompareConfig" not in vars(comparison_module)


# --------------------------------------------------------------------------- hit@k verdicts


def test_burying_12_of_80_answers_is_a_regression() -> None:
    c = run_pair(ranks(buried(*range(1, 13))))
    hit5 = c.overall.row("hit@5")
    assert hit5 is not None and hit5.hit is not None
    assert (hit5.hit.test.b, hit5.hit.test.c, hit5.hit.test.net) == (12, 0, -12)
    assert hit5.baseline == 80 / 80
    assert hit5.candidate == 68 / 80  # 0.85
    assert hit5.p == pytest.approx(2 * 0.5**12)  # all 12 discordant one way: 2 * P(X = 0)
    assert hit5.verdict is Verdict.REGRESSED
    assert hit5.hit.test.exact == "McNemar exact"  # no drift: both sides deterministic
    assert hit5.p_adjusted == pytest.approx(2 * 2 * 0.5**12)  # Holm across hit@5 and hit@10
    assert c.verdict_quality is Verdict.REGRESSED
    assert c.quality_reason == "hit@5, hit@10 regressed"
    assert c.valid
    assert exit_status([c.verdict_quality, c.verdict_latency]) == EXIT_REGRESSED


@pytest.mark.parametrize(("b", "c"), [(12, 0), (3, 0), (0, 12), (7, 2), (5, 5)])
def test_mcnemar_p_is_statsmodels_exact_mcnemar_on_the_same_b_and_c(b: int, c: int) -> None:
    # b queries buried by the candidate, c queries (buried by the baseline) fixed by it.
    base = ranks(buried(*range(41, 41 + c)))
    cand = ranks(buried(*range(1, 1 + b)))
    row = run_pair(cand, base).overall.row("hit@10")
    assert row is not None and row.hit is not None
    assert (row.hit.test.b, row.hit.test.c) == (b, c)
    # Oracle: statsmodels on the 2x2 table [[both hit, only baseline], [only candidate, neither]].
    expected = mcnemar([[80 - b - c, b], [c, 0]], exact=True).pvalue
    assert row.p == pytest.approx(expected, rel=1e-12)


def test_three_changed_queries_are_no_change_only_against_a_band_they_rule_out() -> None:
    c = run_pair(ranks(buried(1, 2, 3)))
    row = c.overall.row("hit@5")
    assert row is not None and row.hit is not None and row.power is not None
    assert (row.hit.test.b, row.hit.test.c) == (3, 0)
    assert row.verdict is Verdict.NO_DIFFERENCE  # the row's own test: p = 0.25
    assert row.p == pytest.approx(2 * 0.5**3)
    # "No measurable difference" is the equivalence interval's: Tango's 90% score interval of
    # -3/80 (oracle: tests/verdict/test_equivalence.py's transcription of the published formula),
    # inside +/-0.12 (FAST's band), not inside the default +/-0.05.
    eq = row.equivalence
    assert eq is not None and eq.confidence == pytest.approx(0.90)
    assert (eq.low, eq.high) == pytest.approx(tango_reference(3, 0, 80, 0.10), abs=1e-6)
    assert -0.12 < eq.low < -0.05 and eq.high < 0.12
    assert c.verdict_quality is Verdict.NO_DIFFERENCE
    assert c.quality_reason.startswith("no change of ±0.12 or more in hit@5, hit@10 (hit@5 -0.037")
    # The mde stays as advice: McNemar's exact power at alpha / 2 (two headline tests).
    assert exact_power(row.power.mde, 80, 3 / 80, 0.025) == pytest.approx(0.80, abs=2e-3)
    narrow = run_pair(ranks(buried(1, 2, 3)), s=replace(FAST, min_effect=0.05))
    assert narrow.verdict_quality is Verdict.INCONCLUSIVE
    assert "a change of ±0.05 is not ruled out; ruling out 0.05 needs about" in (
        narrow.quality_reason
    )


def test_a_significant_change_inside_the_band_is_a_call_never_no_change() -> None:
    # 1,000 deterministic queries, 20 won and none lost: +0.020, McNemar exact p = 2 * 0.5**20;
    # its 90% interval lies inside +/-0.05. A change the test sees is a call, however small:
    # "improved", with the band named, never "no measurable difference".
    gold = make_gold(n=1000, unanswerable=0)
    won = ranks(buried(*range(1, 21)))
    c = compare(gold, make_run(gold, won), candidate(gold, ranks()), CompareSettings())
    row = c.overall.row("hit@5")
    assert row is not None and row.equivalence is not None and row.equivalence.inside
    assert row.verdict is Verdict.IMPROVED and c.verdict_quality is Verdict.IMPROVED
    assert c.quality_reason.startswith("hit@5, hit@10 improved (hit@5 +0.020, hit@10 +0.020: "
                                       "inside the ±0.05 band), none regressed")  # fmt: skip


def test_fixing_12_answers_is_an_improvement() -> None:
    c = run_pair(ranks(), base_rank=ranks(buried(*range(30, 42))))
    row = c.overall.row("hit@5")
    assert row is not None and row.hit is not None
    assert (row.hit.test.b, row.hit.test.c) == (0, 12)
    assert row.verdict is Verdict.IMPROVED
    assert c.verdict_quality is Verdict.IMPROVED
    assert c.quality_reason == "hit@5, hit@10 improved, none regressed"


def test_a_rank_moving_past_k_changes_only_that_cutoff() -> None:
    # 8 answers move from rank 1 to rank 7: out of the top 5, still in the top 10.
    c = run_pair(ranks({f"q{i:02d}": 7 for i in range(1, 9)}))
    hit5, hit10 = c.overall.row("hit@5"), c.overall.row("hit@10")
    assert hit5 is not None and hit10 is not None
    assert hit5.verdict is Verdict.REGRESSED
    assert hit10.verdict is Verdict.NO_DIFFERENCE and hit10.p == 1.0
    mrr10 = c.overall.row("mrr@10")
    assert mrr10 is not None
    assert mrr10.delta == pytest.approx(8 * (1 / 7 - 1) / 80)
    assert c.quality_reason == "hit@5 regressed"


def test_random_misses_across_repeats_show_as_drift_never_as_a_bar() -> None:
    rng = np.random.default_rng(7)
    gold = make_gold()
    answerable = [q.id for q in gold.queries if q.answerable]
    # miss[side][repeat, query]: the service misses this query in this repeat (10% of the time).
    miss = rng.random((2, 3, len(answerable))) < 0.10
    column = {qid: j for j, qid in enumerate(answerable)}

    def flaky(side: int) -> Rank:
        return lambda r, q: None if miss[side, r, column.get(q.id, 0)] else 1

    c = compare(gold, make_run(gold, flaky(0)), candidate(gold, flaky(1)), FAST)
    row = c.overall.row("hit@5")
    assert row is not None and row.hit is not None
    # Oracle: the miss table itself; a query drifts when its repeats disagree.
    expected = [int((m.any(axis=0) & ~m.all(axis=0)).sum()) for m in miss]
    assert (row.hit.drift_baseline, row.hit.drift_candidate) == tuple(expected)
    assert min(expected) > 0
    assert row.hit.topk_drift_baseline == expected[0]  # only the relevant doc ever moves
    assert row.hit.test.exact == "exact sign-flip"
    # the per-query hit rates: the mean over repeats of each side's outcome
    assert row.baseline == pytest.approx(1 - miss[0].mean())
    assert row.verdict is Verdict.NO_DIFFERENCE
    unstable = "candidate" if expected[1] > expected[0] else "baseline"
    assert any(f.startswith(f"{unstable} unstable: ") for f in c.findings)


def test_a_candidate_that_randomly_answers_nothing_is_regressed() -> None:
    # The baseline answers every query in every repeat; the candidate answers nothing to 30% of
    # searches at random.  Its own drift must not excuse it (wave 1 called this "no change").
    rng = np.random.default_rng(11)
    gold = make_gold()
    empty = rng.random((3, len(gold))) < 0.30
    position = {q.id: i for i, q in enumerate(gold.queries)}
    c = compare(
        gold,
        make_run(gold, ranks()),
        candidate(gold, lambda r, q: None if empty[r, position[q.id]] else 1),
        FAST,
    )
    assert c.verdict_quality is Verdict.REGRESSED
    assert c.findings and c.findings[0].startswith("candidate unstable: ")


def test_a_gold_set_too_small_is_inconclusive_and_says_what_would_do() -> None:
    gold = make_gold(n=5, unanswerable=0)
    c = compare(gold, make_run(gold, ranks()), candidate(gold, ranks(buried(1, 2, 3, 4, 5))), FAST)
    row = c.overall.row("hit@5")
    assert row is not None and row.hit is not None
    assert row.hit.test.b == 5
    # p = 2 * 0.5**5 = 0.0625: not a call, and its interval is far past the band
    assert row.verdict is Verdict.INCONCLUSIVE
    assert c.verdict_quality is Verdict.INCONCLUSIVE
    assert c.power is not None and not c.power.enough
    # Every query lost: the interval is far from the band, and more queries would call it.
    assert c.quality_reason.startswith("hit@5: no change larger than 1.000 either way")
    assert "more queries would more likely call it than rule it out" in c.quality_reason
    assert exit_status(c.verdicts) == 0
    assert exit_status(c.verdicts, strict=True) == 4


# --------------------------------------------------------------------------- A/A


def test_a_against_itself_is_no_measurable_difference_on_both() -> None:
    gold = make_gold()
    run = make_run(gold, ranks({f"q{i:02d}": i % 12 or None for i in range(1, 81)}))
    # 80 identical deterministic answers rule out +/-z^2 / (n + z^2) = 0.0327 at 90% (Tango's
    # interval with no discordant query): inside the default band of 0.05. Post-hoc power (the
    # mde, 0.111) used to make this "inconclusive"; it stays as advice only.
    z2 = NormalDist().inv_cdf(0.95) ** 2
    c = compare(gold, run, run, CompareSettings())
    row = c.overall.row("hit@5")
    assert row is not None and row.equivalence is not None
    assert row.equivalence.high == pytest.approx(z2 / (80 + z2), abs=1e-6)
    assert c.power is not None and c.power.mde == pytest.approx(0.111, abs=1e-3)
    assert (c.verdict_quality, c.verdict_latency) == (Verdict.NO_DIFFERENCE,) * 2
    assert c.valid and not c.warnings
    for scope in (c.overall, *c.slices):
        for row in scope.rows:
            assert (row.delta, row.p, row.verdict) == (0.0, 1.0, Verdict.NO_DIFFERENCE), row
    assert c.latency.test is not None and c.latency.test.ratio == 1.0
    assert all(not f.flips for f in c.flips)
    assert not c.collapses


@settings(max_examples=examples(15))
@given(
    st.lists(st.one_of(st.none(), st.integers(1, 12)), min_size=80, max_size=80),
    st.integers(0, 2**16),
)
def test_a_against_itself_never_calls_a_change(table: list[int | None], seed: int) -> None:
    gold = make_gold()
    run = make_run(gold, ranks({f"q{i:02d}": r for i, r in enumerate(table, start=1)}))
    c = compare(gold, run, run, CompareSettings(seed=seed, resamples=200, min_effect=0.12))
    assert (c.verdict_quality, c.verdict_latency) == (Verdict.NO_DIFFERENCE,) * 2


@settings(max_examples=examples(15))
@given(st.sets(st.integers(1, 80), max_size=20), st.sets(st.integers(1, 80), max_size=20))
def test_swapping_the_sides_swaps_b_and_c_and_the_verdict(lost: set[int], won: set[int]) -> None:
    gold = make_gold()
    a = make_run(gold, ranks(buried(*won)))
    b = candidate(gold, ranks(buried(*lost)))
    s = CompareSettings(resamples=200)
    forward, backward = compare(gold, a, b, s), compare(gold, b, a, s)
    mirror = {Verdict.IMPROVED: Verdict.REGRESSED, Verdict.REGRESSED: Verdict.IMPROVED}
    for f, r in zip(forward.hit_rows, backward.hit_rows, strict=True):
        assert f.hit is not None and r.hit is not None
        assert (f.hit.test.b, f.hit.test.c) == (r.hit.test.c, r.hit.test.b)
        assert f.p == r.p
        assert r.verdict is mirror.get(f.verdict, f.verdict)


# --------------------------------------------------------------------------- latency


def test_a_candidate_1_5x_slower_is_a_latency_regression() -> None:
    def slow(rep: int, q: GoldQuery) -> float:
        return 1.5 * base_ms(rep, q) * (1 + 0.01 * ((rep + int(q.id[1:])) % 3))

    c = run_pair(ranks(), ms=slow)
    assert c.verdict_latency is Verdict.REGRESSED
    assert c.verdict_quality is Verdict.NO_DIFFERENCE
    test = c.latency.test
    assert test is not None and 1.5 <= test.ratio <= 1.5 * 1.02
    assert c.latency.words.startswith(f"{test.ratio:.2f}x slower ({100 * (1 - ALPHA):g}% CI ")
    assert c.latency.n_paired == 86  # unanswerable queries are timed too
    base, cand = c.latency.baseline, c.latency.candidate
    assert base is not None and cand is not None
    assert base.n == cand.n == 3 * 86  # every answer of every repeat
    # Oracle for the summary: numpy over the same per-answer latencies.
    gold = make_gold()
    expected = np.array([base_ms(r, q) for r in range(3) for q in gold.queries])
    assert base.p50 == pytest.approx(float(np.percentile(expected, 50)))
    assert base.max == pytest.approx(float(expected.max()))


def test_a_faster_candidate_is_a_latency_improvement() -> None:
    c = run_pair(ranks(), ms=lambda r, q: base_ms(r, q) / 2)
    assert c.verdict_latency is Verdict.IMPROVED
    assert c.latency.words.startswith("2.00x faster")


def test_errored_answers_are_left_out_of_latency() -> None:
    errors = {(0, "q05"): ErrorKind.TIMEOUT}
    c = run_pair(ranks(), errors=errors, s=replace(FAST, max_errors=1))
    assert c.latency.candidate is not None and c.latency.candidate.n == 3 * 86 - 1
    assert c.latency.n_paired == 85


def test_a_reused_baseline_gives_quality_but_latency_not_compared() -> None:
    gold = make_gold()
    base = make_run(gold, ranks(), pair_id=None, reused=True)
    c = compare(gold, base, candidate(gold, ranks(buried(*range(1, 13))), pair_id=None), FAST)
    assert c.verdict_quality is Verdict.REGRESSED  # a stored run serves quality
    assert c.verdict_latency is Verdict.NOT_COMPARED and c.latency.test is None
    # The reason names the choice that skipped latency (--reuse-runs) and how to undo it.
    assert c.latency_reason.startswith("the baseline is a stored run (reused: --reuse-runs)")
    assert "compare without --reuse-runs" in c.latency_reason
    assert any(w.startswith("latency not compared") and "--reuse-runs" in w for w in c.warnings)
    assert exit_status(c.verdicts) == EXIT_REGRESSED  # from quality; not compared fails nothing


def test_runs_from_different_invocations_are_not_a_pair() -> None:
    gold = make_gold()
    base = make_run(gold, ranks(), pair_id="monday")
    c = compare(gold, base, candidate(gold, ranks(), pair_id="tuesday", ms=lambda r, q: 9.0), FAST)
    assert c.verdict_latency is Verdict.NOT_COMPARED
    assert "not measured together" in c.latency_reason
    assert exit_status(c.verdicts) == EXIT_OK


def test_a_burst_that_slows_one_round_on_both_sides_changes_no_verdict() -> None:
    # Round 2 runs 9x slower on both sides (the 1.05 / 1.14 / 9.83 ms A/A): time-paired,
    # its ratio is still 1, so the burst cannot become a confident ratio.
    def burst(rep: int, q: GoldQuery) -> float:
        return base_ms(rep, q) * (9.0 if rep == 2 else 1.0)

    gold = make_gold()
    c = compare(gold, make_run(gold, ranks(), ms=burst), candidate(gold, ranks(), ms=burst), FAST)
    assert c.verdict_latency is Verdict.NO_DIFFERENCE
    assert c.latency.test is not None and c.latency.test.rounds == (1.0, 1.0, 1.0)


def test_a_slow_boot_on_one_side_only_is_inconclusive_not_a_verdict() -> None:
    c = run_pair(ranks(), ms=lambda r, q: base_ms(r, q) * (3.0 if r == 1 else 1.0))
    assert c.verdict_latency is Verdict.INCONCLUSIVE
    test = c.latency.test
    assert test is not None and test.rounds == pytest.approx((1.0, 3.0, 1.0))
    assert "would likely decide" in c.latency_reason
    assert exit_status(c.verdicts) == EXIT_OK


def test_under_concurrency_throughput_is_given_and_latency_not_compared() -> None:
    gold = make_gold()

    def at_four(run: RefRun, seconds: float) -> RefRun:
        reps = tuple(
            replace(rep, timings_s={"queries": seconds * (1 + 0.1 * rep.index)})
            for rep in run.repeats
        )
        return replace(run, repeats=reps, concurrency=4)

    base = at_four(make_run(gold, ranks()), 0.086)  # 86 answers in 0.086 s: 1,000 queries/s
    cand = at_four(candidate(gold, ranks()), 0.172)
    c = compare(gold, base, cand, FAST)
    assert c.verdict_latency is Verdict.NOT_COMPARED
    assert "under --concurrency 4" in c.latency_reason and "queueing" in c.latency_reason
    flow_b, flow_c = c.latency.throughput_baseline, c.latency.throughput_candidate
    assert flow_b is not None and flow_c is not None
    # rounds at 1000, 1000/1.1, 1000/1.2 queries/s; the candidate half of each
    expected = np.mean([1000 / 1.0, 1000 / 1.1, 1000 / 1.2])
    assert flow_b.qps == pytest.approx(expected)
    assert flow_c.qps == pytest.approx(expected / 2)
    assert flow_b.ci_low < flow_b.qps < flow_b.ci_high and flow_b.concurrency == 4


def test_a_busy_machine_is_a_warning_saying_what_to_do() -> None:
    gold = make_gold()

    def loaded(run: RefRun, load: float) -> RefRun:
        reps = tuple(replace(rep, machine=Machine(load, load, 2, 50_000)) for rep in run.repeats)
        return replace(run, repeats=reps)

    base, cand = make_run(gold, ranks()), candidate(gold, ranks())
    quiet = compare(gold, loaded(base, 0.5), loaded(cand, 1.5), FAST)
    assert quiet.latency.machine == ComparisonMachine(1.5, 2, 0.05, busy=False)
    assert not quiet.warnings
    busy = compare(gold, loaded(base, 3.2), loaded(cand, 1.0), FAST)
    assert busy.latency.machine is not None and busy.latency.machine.busy
    (warning,) = busy.warnings
    assert "load average up to 3.20 on 2 CPUs" in warning
    assert "close other work" in warning


# --------------------------------------------------------------------------- invalid runs


def test_an_errored_query_makes_the_run_invalid_with_kinds_counts_and_ids() -> None:
    errors = {
        (0, "q05"): ErrorKind.TIMEOUT,
        (2, "q05"): ErrorKind.TIMEOUT,
        (1, "q09"): ErrorKind.HTTP_STATUS,
    }
    c = run_pair(ranks(buried(*range(1, 13))), errors=errors)
    assert (c.verdict_quality, c.verdict_latency) == (Verdict.INVALID, Verdict.INVALID)
    assert exit_status([c.verdict_quality, c.verdict_latency]) == EXIT_INVALID
    assert c.invalid_reasons == (
        f"candidate feat/x ({CAND_SHA[:8]}): 3 errored answers (http_status 1, timeout 2; "
        "e.g. q05, q09) exceed max_errors = 0; see the service log, or raise compare.max_errors; "
        "timeout: raise query.timeout if the service is only slow, else see its log",
    )
    # Still shown, for diagnosis: the 12 buried minus the errored q05 and q09.
    row = c.overall.row("hit@5")
    assert row is not None and row.hit is not None
    assert (row.n, row.hit.test.b) == (78, 10)
    assert c.header.excluded == ("q05", "q09")


def test_errors_within_max_errors_are_a_warning_and_leave_the_query_out() -> None:
    c = run_pair(ranks(), errors={(1, "q07"): ErrorKind.NOT_JSON}, s=replace(FAST, max_errors=1))
    assert c.valid
    assert c.warnings == (
        f"candidate feat/x ({CAND_SHA[:8]}): 1 errored answer (not_json 1; e.g. q07), "
        "within max_errors; those queries are left out",
    )
    assert c.overall.n == 79
    assert c.verdict_quality is Verdict.NO_DIFFERENCE


def test_a_build_failure_is_invalid() -> None:
    failure = RunFailure("build", "make exited with status 2")
    c = run_pair(ranks(), build_failure=failure)
    assert c.verdict_quality is Verdict.INVALID and c.verdict_latency is Verdict.INVALID
    assert f"candidate feat/x ({CAND_SHA[:8]}): build failed: make exited with status 2" in (
        c.invalid_reasons
    )
    assert c.overall.rows == ()  # nothing to pair with
    assert c.latency.baseline is not None and c.latency.candidate is None


def test_a_failed_repeat_is_invalid_but_the_others_are_still_shown() -> None:
    failures = {1: RunFailure("ready", "/health never answered 2xx within 60 s")}
    c = run_pair(ranks(buried(*range(1, 13))), failures=failures)
    assert c.verdict_quality is Verdict.INVALID
    assert c.invalid_reasons == (
        f"candidate feat/x ({CAND_SHA[:8]}): repeat 2 failed at ready: "
        "/health never answered 2xx within 60 s",
    )
    assert c.header.candidate.usable_repeats == 2
    row = c.overall.row("hit@5")
    assert row is not None and row.verdict is Verdict.REGRESSED  # computed, shown, not believed


def test_an_unconfirmed_teardown_is_a_warning_not_invalid() -> None:
    c = run_pair(ranks(), unconfirmed=frozenset({2}))
    assert c.valid
    assert c.warnings == (
        f"candidate feat/x ({CAND_SHA[:8]}): repeat 3: teardown was not confirmed; "
        "a process may be left over",
    )


def test_different_gold_hashes_are_invalid() -> None:
    c = run_pair(ranks(), gold_hash="f" * 64)
    assert c.verdict_quality is Verdict.INVALID
    assert any("different gold sets" in r for r in c.invalid_reasons)
    assert any("not the gold set given" in r for r in c.invalid_reasons)


def test_zero_repeats_are_invalid() -> None:
    c = run_pair(ranks(), repeats=0)
    assert c.verdict_quality is Verdict.INVALID
    assert (
        f"candidate feat/x ({CAND_SHA[:8]}): no repeats were run; run it with --repeats 1 or more"
        in (c.invalid_reasons)
    )


# --------------------------------------------------------------------------- slices


def test_a_slice_that_collapses_to_zero_is_flagged_while_overall_is_unchanged() -> None:
    # The candidate loses every answer of slice rare (q71-q80) and wins back 10 news answers
    # the baseline missed: overall b = c = 10, net 0.
    c = run_pair(ranks(buried(*range(71, 81))), base_rank=ranks(buried(*range(1, 11))))
    hit5 = c.overall.row("hit@5")
    assert hit5 is not None and hit5.hit is not None
    assert (hit5.hit.test.b, hit5.hit.test.c, hit5.verdict) == (10, 10, Verdict.NO_DIFFERENCE)
    rare = next(s for s in c.slices if s.name == "rare")
    row = rare.row("hit@5")
    assert row is not None
    assert (rare.n, row.baseline, row.candidate, row.collapse) == (10, 1.0, 0.0, "fell to zero")
    assert ("rare", "hit@5") in [(s.name, r.metric) for s, r in c.collapses]
    # 20 discordant queries, 10 each way: the 90% interval, about +/-0.09, is inside FAST's
    # +/-0.12, and the gold set's judgements are complete (`make_gold`: pooled False); the
    # collapse is said beside it.
    assert c.verdict_quality is Verdict.NO_DIFFERENCE
    assert c.quality_reason.startswith("no change of ±0.12 or more in hit@5")
    assert c.quality_reason.endswith("; but slice collapse: rare (hit@5 and 9 more)")
    news = next(s for s in c.slices if s.name == "news")
    assert not any(r.collapse for r in news.rows)


def test_a_slice_regression_hidden_by_the_overall_row_is_a_collapse() -> None:
    # howto loses 10 of its 30 answers, news wins back the 10 the baseline missed: overall net 0.
    # howto alone: b = 10, p = 2/1024; Holm over the 3 slices' 2 headline tests (hit@5, hit@10:
    # 6 tests, four of them at 2/1024) at most 6 * 2/1024 = 0.0117 < 0.05.
    c = run_pair(ranks(buried(*range(41, 51))), base_rank=ranks(buried(*range(1, 11))))
    overall = c.overall.row("hit@5")
    howto = next(s for s in c.slices if s.name == "howto").row("hit@5")
    assert overall is not None and howto is not None
    assert overall.verdict is Verdict.NO_DIFFERENCE
    assert (howto.baseline, howto.candidate) == (1.0, 20 / 30)
    assert howto.p_adjusted is not None and howto.p_adjusted <= 6 * 2 / 1024
    assert howto.verdict is Verdict.REGRESSED
    assert howto.collapse == "regressed while the overall row did not"
    news = next(s for s in c.slices if s.name == "news").row("hit@5")
    assert news is not None and news.verdict is Verdict.IMPROVED and news.collapse is None


def test_slice_p_values_are_holm_adjusted_as_statsmodels_does() -> None:
    c = run_pair(ranks(buried(*range(41, 53), 71, 72)), base_rank=ranks(buried(1, 2)))
    # The headline's tests (hit@5, hit@10): one family across every slice and both tests, so a
    # slice is never less strict than the overall row.
    family = [(s.name, m) for s in c.slices for m in ("hit@5", "hit@10")]
    rows = [next(x for x in c.slices if x.name == name).row(m) for name, m in family]
    raw = [r.p for r in rows if r is not None]
    expected = multipletests(raw, method="holm")[1]  # oracle: statsmodels
    assert [r.p_adjusted for r in rows if r is not None] == pytest.approx(list(expected))
    assert all(r is not None and r.deciding for r in rows)
    # Any other metric: across the slices alone, and not deciding.
    others = [s.row("mrr@10") for s in c.slices]
    raw = [r.p for r in others if r is not None]
    expected = multipletests(raw, method="holm")[1]
    assert [r.p_adjusted for r in others if r is not None] == pytest.approx(list(expected))
    assert not any(r is not None and r.deciding for r in others)
    assert [s.name for s in c.slices] == ["howto", "news", "rare"]
    assert [s.n for s in c.slices] == [30, 40, 10]


def test_a_slice_call_needs_the_holm_adjusted_p() -> None:
    # rare alone: all 10 lost, raw McNemar p = 2/1024 = 0.00195 < 0.05 at hit@5 and hit@10, Holm
    # over the 3 slices' 2 headline tests keeps it (6 * 0.00195 = 0.0117 < 0.05).  howto: 6
    # lost, p = 2/64 = 0.031 raw at both, but its Holm-adjusted p is 4 * 0.031 = 0.125 >= 0.05
    # (third smallest of six): no call, with a note.
    c = run_pair(ranks(buried(*range(71, 81), *range(41, 47))))
    howto = next(s for s in c.slices if s.name == "howto").row("hit@5")
    rare = next(s for s in c.slices if s.name == "rare").row("hit@5")
    assert howto is not None and rare is not None
    assert howto.p == pytest.approx(2 / 64) and howto.p_adjusted == pytest.approx(4 * 2 / 64)
    assert howto.verdict is Verdict.NO_DIFFERENCE
    assert howto.note == (
        "not significant after Holm across 3 slices and the 2 headline tests (6 tests)"
    )
    assert rare.p_adjusted == pytest.approx(6 * 2 / 1024)
    assert rare.verdict is Verdict.REGRESSED


def test_one_slice_of_every_query_is_the_overall_scope_never_a_collapse() -> None:
    # 6 lost at hit@5 and hit@10: McNemar p = 2/64 = 0.031 for each, Holm across the two
    # headline tests 0.0625: no call overall.  A slice holding every query used to be adjusted
    # across the slices alone (one: 0.031 < 0.05) and so "regressed while the overall row did
    # not" on the very same queries.  Now its rows are the overall rows.
    gold = make_gold()
    gold = replace(gold, queries=tuple(replace(q, slice="all") for q in gold.queries))
    c = compare(gold, make_run(gold, ranks()), candidate(gold, ranks(buried(*range(1, 7)))), FAST)
    overall = c.overall.row("hit@5")
    assert overall is not None and overall.p == pytest.approx(2 / 64)
    assert overall.p_adjusted == pytest.approx(2 * 2 / 64)
    assert overall.verdict is not Verdict.REGRESSED
    (only,) = c.slices
    assert only.name == "all" and only.n == c.overall.n and only.rows == c.overall.rows
    assert not c.collapses and "slice collapse" not in c.quality_reason


def test_rows_that_do_not_decide_the_headline_say_so() -> None:
    # The relevant document moves from rank 5 to rank 1 on 30 queries: hit@5 and hit@10 are
    # unchanged (the headline: no change), mrr@5 and mrr@10 improve; those rows are information,
    # labelled "(not deciding)" in every table, `deciding` false in JSON.
    moved = {f"q{i:02d}": 1 for i in range(1, 31)}
    c = run_pair(ranks(moved, default=1), base_rank=ranks({q: 5 for q in moved}, default=1))
    assert c.verdict_quality is Verdict.NO_DIFFERENCE
    deciding = {r.metric for r in c.overall.rows if r.deciding}
    assert deciding == {"hit@5", "hit@10"}
    mrr = c.overall.row("mrr@10")
    assert mrr is not None and mrr.verdict is Verdict.IMPROVED and not mrr.deciding
    text = render(c, "text")
    line = next(x for x in text.splitlines() if x.lstrip().startswith("mrr@10"))
    assert line.rstrip().endswith("improved (not deciding)")
    assert "(not deciding): the row's own test, not corrected across the others" in text
    hit = next(x for x in text.splitlines() if x.lstrip().startswith("hit@5 "))
    assert "not deciding" not in hit
    assert "improved (not deciding)" in render(c, "markdown")
    rows = json.loads(render(c, "json"))["overall"]["rows"]
    assert {r["metric"]: r["deciding"] for r in rows}["mrr@10"] is False
    assert {r["metric"]: r["deciding"] for r in rows}["hit@10"] is True


def test_power_per_slice_is_stated_at_alpha_over_the_slices() -> None:
    c = run_pair(ranks())
    assert c.power is not None
    assert (c.power.metric, c.power.n) == ("hit@5", 80)
    assert c.power.mde == pytest.approx(detectable_exact(80, 0.0, 0.05 / 2))
    # Holm over the 3 slices' 2 headline tests: a slice's mde is stated at alpha / 6.
    by_name = {s.name: s.row("hit@5").power.mde for s in c.slices}  # type: ignore[union-attr]
    assert by_name["howto"] == pytest.approx(detectable_exact(30, 0.0, 0.05 / 6))
    assert by_name["news"] == pytest.approx(detectable_exact(40, 0.0, 0.05 / 6))
    # 10 queries: 8 of them all one way to be called (2 * 0.5**8 < 0.05 / 6), 84% must move.
    assert by_name["rare"] == pytest.approx(detectable_exact(10, 0.0, 0.05 / 6))
    assert 2 * 0.5**8 < 0.05 / 6 <= 2 * 0.5**7 and by_name["rare"] > 0.8


# --------------------------------------------------------------------------- flips


def test_the_flip_list_is_sorted_by_impact_then_id() -> None:
    base = ranks({"q10": 3, "q20": None, "q30": 2, "q31": None, "q40": 4})
    cand = ranks({"q10": 12, "q20": 2, "q30": None, "q31": 1, "q40": None, "q50": None})
    c = run_pair(cand, base)
    flips5 = next(f for f in c.flips if f.metric == "hit@5")
    got = [(f.query_id, f.rank_before, f.rank_after, f.direction) for f in flips5.flips]
    assert got == [
        ("q31", None, 1, Direction.NEWLY_HIT),  # impact 1
        ("q50", 1, None, Direction.NEWLY_MISSED),  # impact 1, after q31 by id
        ("q20", None, 2, Direction.NEWLY_HIT),  # 1/2
        ("q30", 2, None, Direction.NEWLY_MISSED),  # 1/2
        ("q10", 3, 12, Direction.NEWLY_MISSED),  # 1/3 - 1/12 = 1/4 (up to rounding)
        ("q40", 4, None, Direction.NEWLY_MISSED),  # 1/4, after q10 by id
    ]
    assert [f.impact for f in flips5.flips] == pytest.approx([1, 1, 1 / 2, 1 / 2, 1 / 4, 1 / 4])
    assert flips5.flips[0].text == "how do I configure widget 31"
    assert flips5.flips[0].slice == "news"
    flips10 = next(f for f in c.flips if f.metric == "hit@10")
    assert flips10.flips == flips5.flips  # every rank here is <= 4, 12 or None


def test_flip_ranks_are_the_upper_median_over_repeats() -> None:
    # q01 hits at ranks 1, 1, then misses: modal hit, median rank 1; q02 misses twice: modal
    # miss, its middle rank None.
    flaky = {0: {"q02": 2}, 1: {"q02": None}, 2: {"q01": None, "q02": None}}

    def cand(rep: int, q: GoldQuery) -> int | None:
        return flaky[rep].get(q.id, 1)

    c = run_pair(cand)
    flips = next(f for f in c.flips if f.metric == "hit@5").flips
    assert [(f.query_id, f.rank_before, f.rank_after) for f in flips] == [("q02", 1, None)]


# --------------------------------------------------------------------------- the rest


def test_no_answer_and_outranks_counts() -> None:
    # u1-u4 return nothing, u5 and u6 return junk (see `ranking`); pairs on q10, q20, ..., q80.
    c = run_pair(ranks(), stale_first=frozenset({"q10", "q20", "u5"}))
    assert (c.no_answer.n, c.no_answer.baseline, c.no_answer.candidate) == (6, 2, 2)
    assert c.no_answer.baseline_rate == pytest.approx(2 / 6)
    assert (c.outranks.n, c.outranks.baseline, c.outranks.candidate) == (8, 8, 6)


def test_gate_on_a_continuous_metric_decides_the_headline() -> None:
    # Every answer moves from rank 1 to rank 2: hit@5 unchanged, mrr@10 halves.
    s = replace(FAST, gate_on=("mrr@10",))
    c = run_pair(ranks(default=2), s=s)
    assert c.overall.row("hit@5") is not None
    assert c.verdict_quality is Verdict.REGRESSED
    assert c.quality_reason == "mrr@10 regressed"
    assert run_pair(ranks(default=2)).verdict_quality is Verdict.NO_DIFFERENCE


def test_a_gate_on_an_unknown_metric_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="gate_on") as info:
        CompareSettings(gate_on=("NDCG@10",))
    assert "did you mean ndcg@10?" in str(info.value)


@pytest.mark.parametrize("k", [(), (0, 5), (5, 5)])
def test_settings_refuse_bad_cutoffs(k: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="distinct cutoffs >= 1"):
        CompareSettings(k=k)


def test_settings_from_config_and_the_metric_order() -> None:
    s = CompareSettings.from_config(
        CompareConfig(k=(10, 3), alpha=0.01, seed=5), gate_on=["ap@100"], query_differences=["x"]
    )
    assert (s.k, s.alpha, s.seed, s.query_differences) == ((10, 3), 0.01, 5, ("x",))
    assert [str(m) for m in s.specs] == [
        "hit@3",
        "hit@10",
        "recall@3",
        "recall@10",
        "p@3",
        "p@10",
        "mrr@3",
        "mrr@10",
        "ndcg@3",
        "ndcg@10",
        "ap@100",
    ]


def test_the_header_says_what_was_compared() -> None:
    gold = make_gold()
    base = replace(make_run(gold, ranks()), reused=True, record_path="runs/a.json")
    s = replace(FAST, query_differences=("query.params.boost",))
    h = compare(gold, base, candidate(gold, ranks()), s).header
    assert (h.baseline.ref, h.baseline.short_sha, h.baseline.reused) == ("main", "11111111", True)
    assert (h.candidate.sha, h.candidate.repeats, h.candidate.reused) == (CAND_SHA, 3, False)
    assert (h.gold.n, h.gold.n_answerable, h.gold.n_unanswerable) == (86, 80, 6)
    assert h.query_differences == ("query.params.boost",)


def test_compare_is_deterministic() -> None:
    gold = make_gold()
    base, cand = make_run(gold, ranks()), candidate(gold, ranks(default=2))
    assert compare(gold, base, cand, FAST) == compare(gold, base, cand, FAST)


def test_errored_answers_name_their_http_statuses_and_fit_the_advice() -> None:
    gold = make_gold()
    every = {(r, q.id): ErrorKind.HTTP_STATUS for r in range(3) for q in gold.queries}
    some = {(0, "q05"): ErrorKind.HTTP_STATUS, (1, "q06"): ErrorKind.TIMEOUT}
    everything = "every query failed, so the request or the answer's shape is wrong"
    for errors, advice in ((every, everything), (some, "raise compare.max_errors")):
        run = candidate(gold, ranks(), errors=errors)
        run = replace(
            run,
            repeats=tuple(
                replace(
                    rep,
                    results=tuple(
                        replace(r, status=500 if r.error is ErrorKind.HTTP_STATUS else r.status)
                        for r in rep.results
                    ),
                )
                for rep in run.repeats
            ),
        )
        c = compare(gold, make_run(gold, ranks()), run, FAST)
        (reason,) = [r for r in c.invalid_reasons if "errored answer" in r]
        assert "HTTP 500: " in reason and advice in reason, reason
        assert 'query.rewrite = "fts5_or"' in reason  # a 500 points at the query text
        assert ("raise compare.max_errors" in reason) == (errors is some)


def test_a_slower_tail_is_said_beside_a_verdict_that_does_not_call_it() -> None:
    # One query in ten answers 200 ms slower: the trimmed mean leaves those out and says "no
    # measurable difference", as designed; the report now also says the tail got slower.
    from compare_support import base_ms, candidate, make_gold, make_run, ranks

    def tail(rep: int, q: GoldQuery) -> float:
        return base_ms(rep, q) + (200.0 if int(q.id[1:]) % 10 == 0 else 0.0)

    gold = make_gold()
    c = compare(gold, make_run(gold, ranks()), candidate(gold, ranks(), ms=tail), FAST)
    assert c.verdict_latency is not Verdict.REGRESSED
    (warning,) = [w for w in c.warnings if w.startswith("the slowest answers got slower")]
    assert "while the latency verdict is" in warning and "trimmed mean" in warning
    same = compare(gold, make_run(gold, ranks()), candidate(gold, ranks()), FAST)
    assert not any(w.startswith("the slowest answers") for w in same.warnings)


def test_six_identical_queries_say_what_they_rule_out_and_what_would_rule_out_the_band() -> None:
    # Six identical queries: the 90% interval is +/- z^2 / (6 + z^2) = 0.311, wider than FAST's
    # band of 0.12; 20 identical queries would rule it out (z^2 / (20 + z^2) = 0.119).
    from compare_support import candidate, make_gold, make_run, ranks

    gold = make_gold(n=6, unanswerable=0)
    c = compare(gold, make_run(gold, ranks()), candidate(gold, ranks()), FAST)
    assert c.verdict_quality is Verdict.INCONCLUSIVE
    assert c.quality_reason.startswith("hit@5: no change larger than 0.311 either way")
    assert "ruling out 0.12 needs about 20 queries (14 more" in c.quality_reason
