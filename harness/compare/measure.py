"""Both sides of a compare measured together, the way the run allows: block by block in a
seeded order (compare.sequential), two running deployments by URL, or two refs checked out,
built and booted.

    order, why_not = sequential_order(plan, settings, reuse=False)   # None: the whole gold set
    baseline, candidate = measure(plan, gold, settings, "main", "feat/x", repeats=3, order=order)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.values.types import GoldSet, RefRun
from harness.verdict.comparison import CompareSettings
from harness.verdict.latency_rule import MIN_LOOK, LatencyBudget, parse_budget
from harness.verdict.latency_rule import plan as design

if TYPE_CHECKING:  # only the type: the runner is imported when something is measured
    from harness.driver.runner import RunPlan


def _latency_budget(plan: RunPlan) -> LatencyBudget:
    """compare.latency_budget (--latency-budget overrides it in the config)."""
    return parse_budget(plan.config.compare.latency_budget)


def fewer_repeats(
    plan: RunPlan, repeats: int, *, reuse: bool = False, urls: bool = False
) -> str | None:
    """What `--repeats N` below compare.repeats costs, in words, or None when it costs nothing
    worth a word: quality is scored on N rounds a side, and the latency rule
    (`harness.verdict.latency_rule`), whose first look is at round N, goes on round by round up
    to its budget, which N does not lower: at its first looks the rule spends little of its
    error rate and has N - 1 degrees of freedom between rounds, so its interval there is many
    standard errors wide (the numbers are its own boundaries, this budget's)."""
    default = plan.config.compare.repeats
    if repeats >= default or reuse or plan.concurrency > 1 or plan.ray is not None:
        return None  # a fixed-size burst, a stored run, a worker's rounds: no latency rounds
    budget = _latency_budget(plan)
    again = "asking both deployments again" if urls else "booting both services again"
    said = (
        f"--repeats {repeats} is below compare.repeats ({default}): quality is scored on "
        f"{repeats} round{'s' * (repeats != 1)} a side"
    )
    if budget.rounds is None:  # a time: the rounds it holds are known after the first
        return (
            f"{said}. Latency does not stop there: its rule runs rounds, each {again}, until "
            "it decides or the rounds that fit in --latency-budget "
            f"{plan.config.compare.latency_budget} are spent"
        )
    rounds = max(repeats, budget.rounds)
    if rounds <= max(repeats, 1):
        return None  # latency is judged on those rounds too: nothing more to say
    shape = design(repeats, rounds)
    first = max(repeats, MIN_LOOK)
    unit = "rounds' standard errors "
    widths = ", ".join(
        f"±{shape.boundary(k):.0f} {unit * (k == first)}at round {k}"
        for k in range(first, min(first + 2, rounds + 1))
    )
    alone = design(first, first).boundary(first)
    return (
        f"{said}. Latency does not stop there: its rule looks first at round {first} and may "
        f"run up to {rounds} rounds (--latency-budget), each {again}; its "
        f"early looks spend little of its error rate (its interval: {widths}), so even a large "
        f"change is usually called a round or two later. --latency-budget {first} ends latency "
        f"at round {first} (one look, ±{alone:.0f})"
    )


def sequential_order(
    plan: RunPlan, settings: CompareSettings, *, reuse: bool
) -> tuple[tuple[str, ...] | None, str | None]:
    """(the order the queries are asked in under compare.sequential (the default), or None for
    the fixed design; why this run cannot be sequential when it was asked for, or None: when
    sequential is only the default, a run that cannot be is the fixed design, quietly)."""
    asked_for = plan.config.compare.sequential
    if asked_for is False:
        return None, None
    why = (
        "--concurrency N > 1 sends the queries as a burst"
        if plan.concurrency > 1
        else "--ray runs each round on a worker"
        if plan.ray is not None
        else "--reuse-runs reuses a stored run of the whole gold set"
        if reuse
        else None
    )
    if why is not None:
        return None, (why if asked_for else None)
    from harness.verdict.quality_sequential import query_order

    return query_order([query_id for query_id, _ in plan.asked.items], settings.seed), None


def measure(
    plan: RunPlan,
    gold: GoldSet,
    settings: CompareSettings,
    baseline: str,
    candidate: str,
    *,
    repeats: int,
    urls: bool = False,
    reuse: bool = False,
    order: Sequence[str] | None = None,
) -> tuple[RefRun, RefRun]:
    """Both sides, measured together: `baseline` and `candidate` are refs, or with `urls` the
    base URLs of two deployments; with `order` (`sequential_order`), block by block until the
    sequential rule decides (by `gold`, the plan's gold set, judgements and all); with `reuse`,
    stored runs that match are reused (quality only)."""
    from harness.driver.runner import run_deployed, run_pair

    budget = _latency_budget(plan)
    if order is not None:
        from harness.driver.blocks import run_sequential_pair
        from harness.verdict.asked import sequential_design

        block, look = sequential_design(gold, settings, order)
        first, second, _ = run_sequential_pair(
            plan,
            baseline,
            candidate,
            repeats=repeats,
            order=order,
            block=block,
            look=look,
            latency_budget=budget,
            urls=urls,
        )
        return first, second
    if urls:
        return run_deployed(plan, baseline, candidate, repeats=repeats, latency_budget=budget)
    # Both sides measured together unless `reuse`: latency is what a re-compare is most often
    # for, and a stored run cannot be paired with a new one.
    return run_pair(
        plan, baseline, candidate, repeats=repeats, reuse=reuse, latency_budget=budget
    )
