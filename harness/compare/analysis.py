"""compare's analysis of two runs measured together: scored, tested, checked against the corpus
and the [gate.floors] (read back from the comparison cache when nothing changed).

    comparison, cached = analyse(plan, gold, settings, floors, (baseline, candidate), redact=False)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from harness.gate.floors import Floor, check_floors
from harness.values.types import GoldSet, RefRun
from harness.verdict.comparison import CompareSettings, Comparison

if TYPE_CHECKING:  # only the type: the runner is imported when something is measured
    from harness.driver.runner import RunPlan


def analyse(
    plan: RunPlan,
    gold: GoldSet,
    settings: CompareSettings,
    floors: Sequence[Floor],
    runs: tuple[RefRun, RefRun],
    *,
    redact: bool,
    order: Sequence[str] | None = None,
) -> tuple[Comparison, bool]:
    """(the comparison of `runs` over `gold` (the plan's gold set, judgements and all), whether
    it was read back from the cache); with `order` (a sequential compare), over the queries
    asked, by the sequential rule, and never cached.  `redact`: no cache entry is read or
    written (an entry holds query texts)."""
    from harness.gold.corpus import load_corpus_ids
    from harness.results.cache import cached_compare
    from harness.verdict.decide import compare

    baseline, candidate = runs
    if plan.observer is not None:
        plan.observer.phase("analysis", "scoring, paired tests, latency")
    corpus = plan.config.corpus
    corpus_ids = load_corpus_ids(corpus)[0] if corpus is not None else None
    # The gold set as the repository names it: the checkout's absolute path means nothing in a
    # saved comparison or a pull-request comment.
    named = replace(gold, source=_in_repo(gold.source, plan.config.repo))
    if order is not None:
        from harness.verdict.asked import compare_asked

        comparison = compare_asked(named, baseline, candidate, settings, list(order), corpus_ids)
        cached = False
    else:
        comparison, cached = cached_compare(
            plan.results_dir,
            named,
            baseline,
            candidate,
            settings,
            lambda: compare(named, baseline, candidate, settings, corpus_ids),
            corpus_hash=plan.corpus_hash,
            use=not redact,
        )
    floors_gold = gold
    if order is not None:  # a sequential compare: the floors too over the queries it asked
        from harness.verdict.asked import asked_gold, asked_ids

        floors_gold = asked_gold(gold, asked_ids(list(order), runs))
    return _with_floors(comparison, floors, plan, floors_gold, candidate), cached


def _with_floors(
    comparison: Comparison,
    floors: Sequence[Floor],
    plan: RunPlan,
    gold: GoldSet,
    candidate: RefRun,
) -> Comparison:
    """The comparison carrying [gate.floors] checked on the candidate over `gold` (the queries
    the compare asked), when any is set."""
    if not floors:
        return comparison
    max_errors = plan.config.compare.max_errors
    return replace(comparison, floors=check_floors(floors, gold, candidate, max_errors=max_errors))


def _in_repo(path: str, repo: Path) -> str:
    """`path` relative to the repository when it is inside it, else as it is."""
    try:
        return str(Path(path).resolve().relative_to(repo.resolve()))
    except ValueError:
        return path
