"""`compare --repeats N` below compare.repeats says once on stderr what it costs (issue 43, item
4): quality is scored on N rounds a side, and latency is not capped at N: the latency rule
(harness.verdict.latency_rule) looks first at round N, where its interval is wide, and may run up
to its budget; `--latency-budget N` ends it there."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from e2e_support import build_sandbox

from harness.compare.measure import fewer_repeats
from harness.verdict.latency_rule import ALPHA, plan


def _plan(repeats: int = 5, budget: str = "15", concurrency: int = 1) -> Any:
    compare = SimpleNamespace(repeats=repeats, latency_budget=budget)
    return SimpleNamespace(config=SimpleNamespace(compare=compare), concurrency=concurrency,
                           ray=None)  # fmt: skip


def test_below_the_default_it_says_the_rules_first_looks_and_how_to_stop_there() -> None:
    said = fewer_repeats(_plan(), 2)
    assert said is not None
    assert said.startswith("--repeats 2 is below compare.repeats (5): quality is scored on 2 ")
    design = plan(2, 15)  # the rule's own boundaries, this budget's
    first, second = design.boundary(2), design.boundary(3)
    assert first > 1000 and 40 < second < 50  # at round 2 nothing short of a miracle is called
    assert (
        f"looks first at round 2 and may run up to 15 rounds (--latency-budget), each booting "
        f"both services again; its early looks spend little of its error rate (its interval: "
        f"±{first:.0f} rounds' standard errors at round 2, ±{second:.0f} at round 3)"
    ) in said
    # One look with the whole error rate: the t quantile at 1 degree of freedom (scipy).
    from scipy import stats  # here, not at collection: each xdist worker collects every file

    alone = stats.t.ppf(1 - ALPHA / 2, 1)
    assert round(alone) == 18
    assert said.endswith(f"--latency-budget 2 ends latency at round 2 (one look, ±{alone:.0f})")


def test_a_time_budget_and_a_deployment_are_said_as_such() -> None:
    said = fewer_repeats(_plan(budget="5m"), 3, urls=True)
    assert said is not None and said.endswith(
        "its rule runs rounds, each asking both deployments again, until it decides or the "
        "rounds that fit in --latency-budget 5m are spent"
    )


@pytest.mark.parametrize(
    ("repeats", "budget", "extra"),
    [
        (5, "15", {}),  # the default
        (7, "15", {}),  # above it
        (2, "2", {}),  # latency ends at round 2 anyway
        (2, "15", {"reuse": True}),  # a stored run: no latency rounds
    ],
)
def test_nothing_is_said_when_it_costs_nothing(
    repeats: int, budget: str, extra: dict[str, bool]
) -> None:
    assert fewer_repeats(_plan(budget=budget), repeats, **extra) is None
    assert fewer_repeats(_plan(concurrency=4), 2) is None  # a burst: no latency verdict


@pytest.mark.slow
def test_compare_says_it_once_on_stderr(tmp_path: Path) -> None:
    sandbox = build_sandbox(tmp_path / "s", {}, repeats=2)  # compare.repeats = 2 there
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "main", "--repeats", "1",
        "--latency-budget", "3", "--quiet",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    notes = [line for line in done.stderr.splitlines() if "--repeats 1 is below" in line]
    assert notes == [
        "harness: note: --repeats 1 is below compare.repeats (2): quality is scored on 1 round "
        "a side. Latency does not stop there: its rule looks first at round 2 and may run up to "
        "3 rounds (--latency-budget), each booting both services again; its early looks spend "
        f"little of its error rate (its interval: ±{plan(1, 3).boundary(2):.0f} rounds' "
        f"standard errors at round 2, ±{plan(1, 3).boundary(3):.0f} at round 3), so even a large "
        "change is usually called a round or two later. --latency-budget 2 ends latency at "
        f"round 2 (one look, ±{plan(2, 2).boundary(2):.0f})"
    ], done.stderr
