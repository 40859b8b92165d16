"""The latency budget advice from the shipped table (harness.verdict.latency_bounds) against the
computation it replaced (latency_rule.budget_for_by_plans: a whole plan for every budget tried),
and the table against the script that generates it.

Where the expected values come from: `budget_for_by_plans` is the code `budget_for` ran before
the table (issue 42), kept verbatim; `plan()` is the design the compare decides with.  The
table must give their numbers exactly (the same floats), so the advice is the same integer on
every input, edges included: a ratio on the band's edge (None), one ulp either side of it,
spreads of 0, inf and nan, firsts past the budget, budgets at MOST_ROUNDS and just past it.
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
import time
from functools import lru_cache
from pathlib import Path

import pytest

from harness.verdict import latency_bounds as lb
from harness.verdict import latency_rule
from harness.verdict.latency_rule import (
    ALPHA,
    EQUIVALENCE,
    GAMMA,
    MIN_LOOK,
    MOST_ROUNDS,
    budget_for,
    budget_for_by_plans,
    computed_boundary,
    last_boundary,
    plan,
)
from harness.verdict.latency_tail import TAIL_ALPHA

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "latency_bounds.py"


def _bits(x: float) -> str:
    return float(x).hex()


def test_the_table_is_laid_out_for_the_rule_it_serves() -> None:
    assert (lb.FIRST_MIN, lb.BUDGET_MAX, lb.GAMMA) == (MIN_LOOK, MOST_ROUNDS, GAMMA)
    assert set(lb.LEVELS) == {ALPHA, TAIL_ALPHA, 2 * EQUIVALENCE}
    cells = [(f, b) for f in range(MIN_LOOK, MOST_ROUNDS + 1) for b in range(f, MOST_ROUNDS + 1)]
    assert sorted(lb.index(f, b) for f, b in cells) == list(range(lb.SIZE))
    assert [lb.index(f, b) for f, b in cells] == list(range(lb.SIZE))  # in that order


def test_what_the_table_does_not_hold_is_none() -> None:
    assert lb.lookup(3, 15, 0.05, GAMMA) is None  # another level
    assert lb.lookup(3, 15, ALPHA, -1.0) is None  # another spending shape
    assert lb.lookup(1, 15, ALPHA, GAMMA) is None  # first not clamped
    assert lb.lookup(16, 15, ALPHA, GAMMA) is None
    assert lb.lookup(3, MOST_ROUNDS + 1, ALPHA, GAMMA) is None
    assert lb.lookup(3, 15, ALPHA, GAMMA) is not None


# (first, budget): the default budget, both ends of the triangle, and budgets at MOST_ROUNDS
CELLS = [(2, 2), (2, 3), (3, 3), (3, 4), (3, 15), (5, 15), (10, 12), (95, 100), (100, 100)]


@pytest.mark.parametrize(("first", "budget"), CELLS)
def test_the_table_gives_plans_own_numbers(first: int, budget: int) -> None:
    design, tail = plan(first, budget), plan(first, budget, TAIL_ALPHA)
    assert _bits(last_boundary(first, budget, ALPHA)) == _bits(design.t[-1])
    assert _bits(last_boundary(first, budget, TAIL_ALPHA)) == _bits(tail.t[-1])
    assert _bits(last_boundary(first, budget, 2 * EQUIVALENCE)) == _bits(design.t_equiv[-1])
    for level in lb.LEVELS:  # and the table was read, not computed
        assert lb.lookup(first, budget, level, GAMMA) == last_boundary(first, budget, level)


def test_the_longest_plan_too() -> None:
    design = plan(3, MOST_ROUNDS)  # 98 looks: about a second
    assert _bits(last_boundary(3, MOST_ROUNDS, ALPHA)) == _bits(design.t[-1])
    assert _bits(last_boundary(3, MOST_ROUNDS, 2 * EQUIVALENCE)) == _bits(design.t_equiv[-1])


def test_a_level_the_table_does_not_hold_is_computed_the_same_way() -> None:
    design = plan(4, 9, 0.05, -2.0)
    assert last_boundary(4, 9, 0.05, -2.0) == design.t[-1]
    assert computed_boundary(4, 9, 2 * EQUIVALENCE) == plan(4, 9).t_equiv[-1]


def _grid(firsts: tuple[int, ...]) -> list[dict[str, float | int]]:
    """Inputs of budget_for: ratios inside and beyond the band, on its edge and an ulp either
    side, spreads from 0 to inf, powers, levels (a non-table one included)."""
    out: list[dict[str, float | int]] = []
    for first, tolerance in itertools.product(firsts, (0.0, 0.05, 0.10, 0.5)):
        edge = math.log1p(tolerance)
        ratios = {0.0, edge / 3, edge * 0.9, edge * 1.5, 3 * edge + 0.05, -edge * 2, -edge / 2}
        ratios |= {edge, -edge, math.nextafter(edge, 0), math.nextafter(edge, 1)}
        spreads = (0.0, 1e-6, 0.01, 0.04, 0.1, 0.3, 1.0, math.inf, math.nan)
        for log_ratio, spread in itertools.product(sorted(ratios), spreads):
            out.append(dict(first=first, tolerance=tolerance, log_ratio=log_ratio, spread=spread))
    # powers and levels on a sample (each level its own plans)
    more = []
    for i, kw in enumerate(out):
        power = (0.5, 0.8, 0.95)[i % 3]
        alpha = (ALPHA, TAIL_ALPHA, 0.05)[i % 3 if kw["first"] >= 90 else i % 2]
        more.append({**kw, "power": power, "alpha": alpha})
    return more


def _same_advice(inputs: list[dict[str, float | int]]) -> None:
    differ = []
    for kw in inputs:
        old = budget_for_by_plans(kw["log_ratio"], kw["spread"], **_rest(kw))
        new = budget_for(kw["log_ratio"], kw["spread"], **_rest(kw))
        if old != new:
            differ.append((kw, old, new))
    assert differ == []


def _rest(kw: dict[str, float | int]) -> dict[str, float | int]:
    return {k: v for k, v in kw.items() if k not in ("log_ratio", "spread")}


def test_budget_for_gives_the_plans_advice_near_most_rounds() -> None:
    # first >= 90: every plan tried is short, and the answers are 90..100, None or first itself
    inputs = _grid((90, 97, MOST_ROUNDS, 150))
    assert len(inputs) > 1000
    answers = {budget_for(kw["log_ratio"], kw["spread"], **_rest(kw)) for kw in inputs}
    assert None in answers and MOST_ROUNDS in answers and 150 in answers
    _same_advice(inputs)


def test_budget_for_gives_the_plans_advice_where_it_turns_to_none() -> None:
    # Spreads around the one at which budget MOST_ROUNDS just decides: answers near 100, None.
    edge = math.log1p(0.10)
    inputs = []
    for first, alpha in ((60, ALPHA), (80, TAIL_ALPHA)):  # short plans: a fast test
        t = last_boundary(first, MOST_ROUNDS, alpha)
        extra = 0.8416212335729143  # NormalDist().inv_cdf(0.8)
        at = 2 * edge * math.sqrt(MOST_ROUNDS) / (t + extra)  # (t + extra) * se == 2 edge - ...
        for scale in (0.97, 0.99, 0.999, 1.0, 1.001, 1.01):
            inputs.append(dict(first=first, alpha=alpha, log_ratio=2 * edge, spread=at * scale))
    answers = {budget_for(kw["log_ratio"], kw["spread"], **_rest(kw)) for kw in inputs}
    assert None in answers and any(a is not None and a > 90 for a in answers)
    _same_advice(inputs)


@pytest.mark.slow
def test_budget_for_gives_the_plans_advice_over_a_wide_grid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The default repeats (first 3): the plans of every budget tried, up to a second each; the
    # reference keeps every plan it built (plan's own cache holds 256).
    monkeypatch.setattr(latency_rule, "plan", lru_cache(maxsize=None)(plan.__wrapped__))
    _same_advice(_grid((3,))[::4])  # every fourth point: still every ratio and every spread


def test_budget_for_reads_the_table_in_well_under_50_ms() -> None:
    budget_for(0.3, 0.1, first=3)  # decodes the table once
    budget_for(0.01, 0.1, first=3)
    computed_boundary.cache_clear()
    worst = 0.0
    for first, log_ratio, spread, alpha in itertools.product(
        (2, 3, 5, 10), (0.01, 0.05, 0.3), (0.02, 0.1, 0.3), (ALPHA, TAIL_ALPHA)
    ):
        start = time.process_time()
        budget_for(log_ratio, spread, first=first, alpha=alpha)
        worst = max(worst, time.process_time() - start)
    assert computed_boundary.cache_info().misses == 0  # nothing computed
    assert worst < 0.05


def test_decide_advises_what_the_plans_advise() -> None:
    rounds = [latency_rule.RoundEstimate(v, 0.002, 200) for v in (0.02, 0.15, -0.1, 0.08)]
    design = plan(3, 4)
    test = latency_rule.decide(rounds, design)
    assert test.verdict.value == "inconclusive"
    seen = latency_rule.look(rounds, design)
    expected = budget_for_by_plans(seen.log_ratio, seen.spread, first=3)
    assert expected is not None and test.rounds_needed == expected
    assert f"--latency-budget {expected}" in test.reason


def _regenerate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--check", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=1800,
    )


def test_regenerating_the_table_gives_the_same_bytes() -> None:
    # The rows of firsts 96-100 recomputed by the script, and every file's text what the
    # script's render() writes of the values it holds (the whole table: --check without
    # --firsts, about 25 CPU-minutes, is the slow test below's and a release's).
    done = _regenerate("--firsts", "96-100", "--jobs", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("of 15 values the same") == 3, done.stdout


@pytest.mark.slow
def test_regenerating_more_of_the_table_gives_the_same_bytes() -> None:
    done = _regenerate("--firsts", "88-100", "--jobs", "2")  # 13 rows: 1 + 2 + ... + 13 values
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("of 91 values the same") == 3, done.stdout
