"""Latency rounds past compare.repeats, until the sequential rule decides or the budget is spent.

    total = planned_rounds(budget, repeats, first_round_seconds)
    if settled(sessions, repeats, total): stop

`runner.run_interleaved` plays rounds 1..repeats as always (quality is scored on those alone),
then, for a pair measured together at concurrency 1, one more time-paired round at a time
(`Repeat.latency_only`) while `settled` says the latency rule (harness.verdict.latency_rule) has
not decided and fewer than `total` rounds ran.  `total` is fixed after the first round, before
the rule's first look, so the rule's boundaries are those of a design made in advance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from harness.values.types import Repeat
from harness.verdict.details import paired_rounds
from harness.verdict.latency_rule import LatencyBudget, look, plan, round_estimate


class _Session(Protocol):
    repeats: list[Repeat]

    def items(self) -> list[tuple[str, str]]: ...


def planned_rounds(budget: LatencyBudget, repeats: int, first_round_seconds: float) -> int:
    """The rounds the rule is planned for: the budget's count (or its time over the first
    round's duration), never fewer than `repeats`."""
    return budget.rounds_within(repeats, first_round_seconds)


def settled(
    sessions: Sequence[_Session],
    repeats: int,
    total: int,
    tolerance: float,
    max_errors: int | None = None,
) -> bool:
    """Whether to stop after the rounds played so far: the rule decided, the budget is spent,
    a round failed or paired nothing, or a side's quality rounds (the first `repeats`) hold more
    errored answers than `max_errors` (the run is invalid: no latency round can change that)."""
    base, cand = sessions
    played = len(base.repeats)
    if played >= total:
        return True
    if played < repeats:
        return False
    if any(rep.failure is not None for s in sessions for rep in s.repeats):
        return True
    if max_errors is not None and any(
        sum(not r.ok for rep in s.repeats[:repeats] for r in rep.results) > max_errors
        for s in sessions
    ):
        return True
    ids = [query_id for query_id, _ in base.items()]
    rounds = paired_rounds(ids, base.repeats, cand.repeats)
    if len(rounds) < played:
        return True
    estimates = [round_estimate(b, c, base_first=o) for b, c, o in rounds]
    return look(estimates, plan(repeats, total), tolerance=tolerance).verdict is not None
