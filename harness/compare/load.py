"""compare --rate: the load phase after the timed rounds, both sides open loop at each rate on
the same arrival schedule (`harness.driver.load_rounds`), judged by `harness.verdict.load`.

    load = measure_load(plan, settings, "main", "feat/x", LoadAsk(rates=(10.0, 80.0)))
    comparison = with_load(comparison, load)       # harness.verdict.load_join
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.replay.schedule import DEFAULT_DURATION, RateDuration
from harness.verdict.comparison import CompareSettings
from harness.verdict.load import Load, Slo, load_verdict

if TYPE_CHECKING:  # only the type: the runner is imported when something is measured
    from harness.driver.runner import RunPlan


@dataclass(frozen=True)
class LoadAsk:
    """What compare --rate asks: the rates, each round's length, rounds per side and rate, the
    arrival process and the objective (None: no --slo)."""

    rates: tuple[float, ...]
    duration: RateDuration = DEFAULT_DURATION
    pairs: int = 3
    arrivals: str = "poisson"
    slo: Slo | None = None


def measure_load(
    plan: RunPlan,
    settings: CompareSettings,
    baseline: str,
    candidate: str,
    ask: LoadAsk,
    *,
    urls: bool = False,
) -> Load:
    """Both sides at every rate of `ask`, one service at a time, rounds alternating; the
    schedule's seed is the comparison's (--seed), recorded in the Load."""
    from harness.driver.load_rounds import play_load
    from harness.driver.runner import RefSession, SharedReading
    from harness.text.scrub import safe_url

    if plan.observer is not None:
        rates = ", ".join(f"{r:g}/s" for r in ask.rates)
        plan.observer.phase("load", f"open loop at {rates}")
        plan.observer.planned(2 * ask.pairs * len(ask.rates))
    reading = SharedReading()
    sessions = [
        RefSession(plan, side, safe_url(ref) if urls else ref, url=ref if urls else None,
                   option=f"--{side}", reading=reading)
        for side, ref in (("baseline", baseline), ("candidate", candidate))
    ]
    seed = settings.seed  # --seed, else compare.seed: the same schedule in every compare
    with contextlib.ExitStack() as stack:
        entered = [stack.enter_context(s) for s in sessions]
        rounds = play_load(
            entered,
            rates=ask.rates,
            duration=ask.duration,
            pairs=ask.pairs,
            seed=seed,
            arrivals=ask.arrivals,
        )
    return load_verdict(
        rounds,
        slo=ask.slo,
        tolerance=settings.latency_tolerance,
        seed=seed,
        arrivals=ask.arrivals,
        duration=str(ask.duration),
    )
