"""Which repeats of a run a verdict uses, and a repeat's answers by query id: the first step of
every rule in `harness.verdict` (`validity` re-exports both), kept apart so that the values a
comparison holds (`twobytwo`'s tables) can be computed without the validity rules. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.values.types import QueryResult, RefRun, Repeat

# A failed teardown still collected every answer: a warning, not a reason to throw them away.
WARNING_STAGES = frozenset({"teardown"})


def usable(run: RefRun, *, latency: bool = False) -> tuple[Repeat, ...]:
    """The repeats whose answers are used: none after a build failure, else every repeat that
    did not fail, or failed only at teardown; rounds run for latency only (`Repeat.latency_only`,
    past compare.repeats) only when `latency`: quality is scored on the first `repeats` alone."""
    if run.build_failure is not None:
        return ()
    return tuple(
        rep
        for rep in run.repeats
        if (rep.failure is None or rep.failure.stage in WARNING_STAGES)
        and (latency or not rep.latency_only)
    )


def by_query(rep: Repeat) -> Mapping[str, QueryResult]:
    """A repeat's answers by query id (the last answer of a query asked twice), each built only
    when looked up (`harness.values.answers.Answers.by_query`)."""
    return rep.answers.by_query()
