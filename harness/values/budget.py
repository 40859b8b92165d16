"""A compare's latency budget: the most rounds it may run, as a count or a time.

    parse_budget("12") -> LatencyBudget(rounds=12)      `compare.latency_budget`, --latency-budget
    parse_budget("5m") -> LatencyBudget(seconds=300.0)

A value, apart from the rule that spends it (`harness.verdict.latency_rule`, which re-exports
these names), so that reading a config validates a budget without importing a stage. Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MOST_ROUNDS = 100  # beyond this "more rounds" is not advice
DEFAULT_BUDGET = "15"  # rounds: 86% of simulated heavy-load A/As end "no difference" (README)
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class LatencyBudget:
    """The most latency rounds a compare may run: a count, or a time their rounds must fit in."""

    rounds: int | None = None
    seconds: float | None = None

    def rounds_within(self, repeats: int, first_round_seconds: float) -> int:
        """The rounds the sequential plan is made for, fixed before its first look: at least
        `repeats` (quality needs them), at most MOST_ROUNDS; a time budget is divided by the
        first round's duration (boots included), which says nothing of the latency ratio."""
        if self.rounds is not None:
            wanted = self.rounds
        else:
            assert self.seconds is not None
            per_round = max(first_round_seconds, 1e-3)
            wanted = int(self.seconds // per_round)
        return max(repeats, min(wanted, MOST_ROUNDS))


def parse_budget(value: str | int) -> LatencyBudget:
    """ "12" (rounds), "300s", "5m" or "1h" (a time) into a LatencyBudget; ValueError naming the
    accepted forms otherwise."""
    text = str(value).strip().lower()
    forms = f"a round count (1 to {MOST_ROUNDS}, like 12) or a time like 300s or 5m"
    if text.isdigit():
        rounds = int(text)
        # 1 is allowed: `--repeats 1 --latency-budget 1` is exactly one round (whose latency
        # verdict says it is too few to tell boots from a change).
        if not 1 <= rounds <= MOST_ROUNDS:
            raise ValueError(f"{value!r} is not {forms}")
        return LatencyBudget(rounds=rounds)
    number, unit = text[:-1], text[-1:]
    try:
        seconds = float(number) * _UNITS[unit]
    except (KeyError, ValueError):
        raise ValueError(f"{value!r} is not {forms}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{value!r} is not {forms}")
    return LatencyBudget(seconds=seconds)
