"""The resource verdict (`harness.verdict.resources`): the latency rule on per-round peak-RSS and
time-to-ready ratios, each side's medians, and how the Resources section shows them in every
format. Hand-worked values are written as arithmetic; the rule's oracle is
`harness.verdict.latency.latency_test`, which it mirrors."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

import pytest
from compare_support import CAND_SHA, make_gold, make_run, ranks
from hypothesis import given
from hypothesis import strategies as st

from harness.report.page import render
from harness.report.resources import size
from harness.results.document import comparison_from_dict, comparison_to_dict
from harness.values.types import RefRun, RunFailure, Usage, Verdict
from harness.verdict.comparison import CompareSettings
from harness.verdict.decide import compare
from harness.verdict.latency import latency_test
from harness.verdict.resources import (
    MEMORY_TOLERANCE,
    READY_TOLERANCE,
    ratio_test,
    resources,
    side_costs,
)

MIB = 1 << 20
T_975_2 = 4.302652729911275  # Student's t, 0.975 quantile, 2 degrees of freedom (tables)


def _costing(run: RefRun, rss_mb: list[float], ready: list[float], cpu_s: float = 0.5) -> RefRun:
    """`run` with each repeat's boot cost: its peak RSS (MiB) and time to ready (s)."""
    costs = [
        Usage(ready_s=t, peak_rss_bytes=round(m * MIB), cpu_s=cpu_s, queries=100, samples=10)
        for m, t in zip(rss_mb, ready, strict=True)
    ]
    reps = tuple(replace(rep, usage=u) for rep, u in zip(run.repeats, costs, strict=True))
    return replace(run, repeats=reps, build_seconds=2.5, build_bytes=3 * MIB)


def _pair(cand_rss: list[float], cand_ready: list[float]) -> tuple[RefRun, RefRun]:
    gold = make_gold()
    base = _costing(make_run(gold, ranks()), [200, 210, 190], [1.0, 1.1, 0.9])
    cand = _costing(make_run(gold, ranks(), ref="cand", sha=CAND_SHA), cand_rss, cand_ready)
    return base, cand


# --------------------------------------------------------------------------- the rule


def test_a_steady_doubling_is_regressed_with_the_hand_worked_interval() -> None:
    ratios = [1.9, 2.1, 2.0]
    logs = [math.log(r) for r in ratios]
    mean = sum(logs) / 3
    half = T_975_2 * statistics.stdev(logs) / math.sqrt(3)
    t = ratio_test(ratios, tolerance=MEMORY_TOLERANCE, up="more memory", down="less memory")
    assert t.verdict is Verdict.REGRESSED
    assert t.ratio == pytest.approx(math.exp(mean))
    assert (t.ci_low, t.ci_high) == pytest.approx((math.exp(mean - half), math.exp(mean + half)))
    assert t.reason.startswith("2.00x more memory (95% CI ")


def test_the_same_cost_is_no_difference_and_a_halving_is_improved() -> None:
    same = ratio_test([1.0, 1.02, 0.98], tolerance=0.10)
    assert same.verdict is Verdict.NO_DIFFERENCE and "inside ±10%" in same.reason
    half = ratio_test([0.5, 0.5, 0.5], tolerance=0.10, up="slower", down="faster")
    assert half.verdict is Verdict.IMPROVED and half.reason.startswith("2.00x faster")


def test_one_boot_or_a_wide_interval_is_inconclusive() -> None:
    one = ratio_test([3.0], tolerance=0.10)
    assert one.verdict is Verdict.INCONCLUSIVE and "--repeats 3" in one.reason
    noisy = ratio_test([1.6, 0.8, 1.4], tolerance=0.10)
    assert noisy.verdict is Verdict.INCONCLUSIVE and "the interval" in noisy.reason


@given(
    st.lists(st.floats(0.25, 4.0), min_size=1, max_size=8),
    st.sampled_from([0.0, 0.05, 0.10, 0.20, 0.5]),
)
def test_the_rule_is_the_latency_rule(ratios: list[float], tolerance: float) -> None:
    ours = ratio_test(ratios, tolerance=tolerance)
    theirs = latency_test(ratios, tolerance=tolerance)
    assert ours.verdict is theirs.verdict
    assert ours.ratio == pytest.approx(theirs.ratio, rel=1e-9)
    assert ours.ci_low == pytest.approx(theirs.ci_low, rel=1e-9)
    assert ours.ci_high == pytest.approx(theirs.ci_high, rel=1e-9)


@pytest.mark.parametrize("bad", [[], [0.0], [-1.0], [math.inf], [math.nan]])
def test_ratios_that_are_not_ratios_are_refused(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        ratio_test(bad, tolerance=0.1)


# --------------------------------------------------------------------------- per run


def test_each_side_shows_its_medians_and_its_build() -> None:
    base, _ = _pair([1, 1, 1], [1, 1, 1])
    side = side_costs("baseline", base)
    assert (side.boots, side.ready_s, side.peak_rss_bytes) == (3, 1.0, 200 * MIB)
    assert side.cpu_ms_per_query == 1000 * 0.5 / 100
    assert (side.build_seconds, side.build_bytes) == (2.5, 3 * MIB)


def test_double_memory_and_time_to_ready_regress_each_on_its_own_row() -> None:
    base, cand = _pair([400, 420, 380], [2.0, 2.2, 1.8])
    res = resources(base, cand)
    assert res is not None
    rows = {r.name: r for r in res.rows}
    assert rows["peak RSS"].verdict is Verdict.REGRESSED
    assert rows["peak RSS"].ratio == pytest.approx(2.0)
    assert rows["peak RSS"].tolerance == MEMORY_TOLERANCE
    assert rows["time to ready"].verdict is Verdict.REGRESSED
    assert rows["time to ready"].tolerance == READY_TOLERANCE
    assert rows["time to ready"].rounds == pytest.approx((2.0, 2.0, 2.0))
    assert [r.name for r in res.regressed] == ["peak RSS", "time to ready"]


def test_an_unchanged_candidate_regresses_nothing() -> None:
    base, cand = _pair([200, 210, 190], [1.0, 1.1, 0.9])
    res = resources(base, cand)
    assert res is not None and not res.regressed
    assert {r.verdict for r in res.rows} == {Verdict.NO_DIFFERENCE}


def test_only_boots_measured_together_are_paired() -> None:
    base, cand = _pair([400, 420, 380], [2.0, 2.2, 1.8])
    for other in (replace(cand, pair_id="another"), replace(cand, reused=True)):
        res = resources(base, other)
        assert res is not None
        assert {r.verdict for r in res.rows} == {Verdict.NOT_COMPARED}
    res = resources(base, cand, invalid=True)
    assert res is not None and {r.verdict for r in res.rows} == {Verdict.INVALID}


def test_a_failed_boot_is_left_out_and_runs_without_costs_give_none() -> None:
    base, cand = _pair([400, 420, 380], [2.0, 2.2, 1.8])
    failed = replace(cand.repeats[2], failure=RunFailure("replay", "stopped"))
    cand = replace(cand, repeats=(*cand.repeats[:2], failed))
    res = resources(base, cand)
    assert res is not None and res.candidate.boots == 2
    assert len(res.rows[0].rounds) == 2
    gold = make_gold()
    plain = make_run(gold, ranks()), make_run(gold, ranks(), ref="cand", sha=CAND_SHA)
    assert resources(*plain) is None


# --------------------------------------------------------------------------- the report


def test_every_format_shows_the_resources_and_json_reads_back() -> None:
    base, cand = _pair([400, 420, 380], [1.0, 1.1, 0.9])
    c = compare(make_gold(), base, cand, CompareSettings())
    assert c.resources is not None
    text = render(c, "text")
    assert "Resources (what each ref costs to build and run)" in text
    assert "peak RSS: regressed" in text and "time to ready: no measurable difference" in text
    assert "200.0 MiB" in text and "400.0 MiB" in text and "3.0 MiB" in text
    assert "Resources" in render(c, "markdown") and "Resources" in render(c, "html")
    back = comparison_from_dict(comparison_to_dict(c), "<memory>")
    assert back.resources == c.resources


def test_sizes_read_in_binary_units() -> None:
    assert [size(n) for n in (None, 512, 1536, 3 * MIB, 5 << 30)] == [
        "-",
        "512 B",
        "1.5 KiB",
        "3.0 MiB",
        "5.0 GiB",
    ]
